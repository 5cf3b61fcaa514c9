"""Report stage, Markdown: a report to paste into a GitHub/GitLab/Jira ticket.

The verdict and the finding counts first, then each section of `report.sections.SECTIONS` that has a
Markdown layout, in order (health, findings with their evidence in collapsible `<details>`, hang view,
ranks × configuration with odd values marked, environment, nccl-tests, how it was made). Every
log-derived string is escaped by the layouts: quoted lines sit in fenced code blocks (never
interpreted), other text has its HTML and Markdown metacharacters escaped.
"""

from __future__ import annotations

from typing import Any

from ncclscope.report import sections
from ncclscope.report.md_text import code, fenced, text

__all__ = ["code", "fenced", "render_doc", "text"]

_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵", "ok": "🟢"}


def render_doc(doc: dict[str, Any]) -> str:
    """Markdown for a report document built by `document.build` (and redacted, when asked)."""
    v = doc["verdict"]
    counts = sections.counts_of(doc)
    tally = " · ".join(
        f"{n} {k}{'s' if n != 1 and k != 'info' else ''}"
        for k, n in (("error", counts.error), ("warning", counts.warning), ("info", counts.info))
    )
    out = ["# ncclscope report", "", f"> {_ICON[v['severity']]} **{text(v['text'])}**", ">", f"> {tally}", ""]
    for sec in sections.SECTIONS:
        if sec.markdown is not None:
            out += sec.markdown(doc)
    return "\n".join(out).rstrip("\n") + "\n"
