"""Report stage, environment section: the job's shape, versions, transports and NCCL_* settings.

Data: `facts.environment` (each value with the processes that printed it; `mixed` where ranks differ).
Layouts: Markdown and HTML (values that differ across ranks marked ⚠ in Markdown, `odd` in HTML; the
NCCL variables collapsed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclscope.report import facts
from ncclscope.report.html_tables import e
from ncclscope.report.md_text import code, table, text
from ncclscope.report.section import Document, Provenance, Section

if TYPE_CHECKING:
    from ncclscope.session import Session


def build(s: Session, _p: Provenance) -> dict[str, Any]:
    return facts.environment(s)


def _md_values(vals: list[dict[str, Any]], mixed: bool) -> str:
    parts = [f"{text(v['value'])} ({v['count']})" for v in vals[:8]]
    more = f" … +{len(vals) - 8}" if len(vals) > 8 else ""
    return ("⚠ " if mixed else "") + ", ".join(parts) + more


def markdown(doc: Document) -> list[str]:
    env = doc["environment"]
    sh = env["shape"]
    shape = f"{sh['ranks']} ranks · {sh['processes']} processes · {sh['hosts']} hosts · {sh['communicators']} communicators"
    out = ["## Environment", "", shape, ""]
    rows = [
        [text(r["name"]), _md_values(r["values"], r["mixed"])] for r in env["versions"] + env["transports"]
    ]
    if rows:
        out += table(["", "value (processes)"], rows) + [""]
    if env["env"]:
        mixed = sum(1 for r in env["env"] if r["mixed"])
        out += [
            "<details>",
            f"<summary>NCCL environment: {len(env['env'])} variables set"
            + (f", {mixed} differ across ranks" if mixed else "")
            + "</summary>",
            "",
        ]
        out += table(
            ["variable", "value (processes)"],
            [[code(r["name"]).replace("|", "\\|"), _md_values(r["values"], r["mixed"])] for r in env["env"]],
        )
        out += ["", "</details>", ""]
    return out


def _html_values(vals: list[dict[str, Any]]) -> str:
    return ", ".join(f"{e(v['value'])} <span class=muted>({int(v['count'])})</span>" for v in vals[:12]) + (
        f" … +{len(vals) - 12}" if len(vals) > 12 else ""
    )


def html(doc: Document, _figures: dict[str, str]) -> str:
    env = doc["environment"]
    sh = env["shape"]
    rows = "".join(
        f"<tr><th>{e(r['name'])}</th><td{' class=odd' if r['mixed'] else ''}>{_html_values(r['values'])}</td></tr>"
        for r in env["versions"] + env["transports"]
    )
    envs = "".join(
        f"<tr><td><code>{e(r['name'])}</code></td><td{' class=odd' if r['mixed'] else ''}>"
        f"{_html_values(r['values'])}</td></tr>"
        for r in env["env"]
    )
    env_table = (
        (
            f"<details><summary>NCCL environment: {len(env['env'])} variables set</summary>"
            f"<table><tr><th>variable</th><th>value (processes)</th></tr>{envs}</table></details>"
        )
        if envs
        else ""
    )
    return (
        f"<p>{sh['ranks']} ranks · {sh['processes']} processes · {sh['hosts']} hosts · "
        f"{sh['communicators']} communicators</p><table>{rows}</table>{env_table}"
    )


SECTION = Section(
    "environment",
    build,
    "job shape, versions, transports, NCCL_*",
    title="Environment",
    menu="Environment",
    markdown=markdown,
    html=html,
)
