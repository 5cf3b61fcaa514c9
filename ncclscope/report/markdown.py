"""Report stage, Markdown: a report to paste into a GitHub/GitLab ticket, or a Jira one (`flavor="jira"`).

The verdict and the finding counts first, then each section of `report.sections.SECTIONS` that has a
Markdown layout, in order (health, findings with their evidence in collapsible `<details>`, hang view,
ranks × configuration with odd values marked, environment, nccl-tests, how it was made). Every
log-derived string is escaped by the layouts: quoted lines sit in fenced code blocks (never
interpreted), other text has its HTML and Markdown metacharacters escaped. The Jira flavour runs the
same layouts with Jira's inline escaping, then sets their blocks in Jira wiki markup (`md_jira`).
"""

from __future__ import annotations

from typing import Any

from ncclscope.report import md_jira, md_text, sections
from ncclscope.report.md_text import FLAVORS, code, fenced, text

__all__ = ["FLAVORS", "code", "fenced", "render_doc", "text"]

_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵", "ok": "🟢"}


def render_doc(doc: dict[str, Any], flavor: str = "markdown") -> str:
    """Markdown for a report document built by `document.build` (and redacted, when asked); `flavor`:
    "markdown" (GitHub/GitLab) or "jira" (Jira wiki markup)."""
    with md_text.flavor(flavor):
        v = doc["verdict"]
        counts = sections.counts_of(doc)
        tally = " · ".join(
            f"{n} {k}{'s' if n != 1 and k != 'info' else ''}"
            for k, n in (("error", counts.error), ("warning", counts.warning), ("info", counts.info))
        )
        out = [
            "# ncclscope report",
            "",
            f"> {_ICON[v['severity']]} **{text(v['text'])}**",
            ">",
            f"> {tally}",
            "",
        ]
        for sec in sections.SECTIONS:
            if sec.markdown is not None:
                out += sec.markdown(doc)
    md = "\n".join(out).rstrip("\n") + "\n"
    return md_jira.blocks(md) if flavor == "jira" else md
