"""Report stage, environment section: the job's shape, versions, transports and NCCL_* settings.

Data: an `Environment` (typed; each value with the number of processes that printed it, `mixed` where
ranks differ), built from `facts.environment` and stored in the document as its JSON-like tree, which
the layouts read back typed (`of(doc)`, after any redaction). Layouts: Markdown and HTML (values that
differ across ranks marked ⚠ in Markdown, `odd` in HTML; the NCCL variables collapsed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ncclscope.report import facts
from ncclscope.report.html_tables import e
from ncclscope.report.md_text import code, table, text
from ncclscope.report.section import Document, Provenance, Section

if TYPE_CHECKING:
    from ncclscope.session import Session


class Count(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One value and how many processes printed it."""

    value: str
    count: int


class Setting(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A version, transport or variable: its values, most common first; `mixed` when ranks differ."""

    name: str
    values: tuple[Count, ...]
    mixed: bool


class Shape(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ranks: int
    processes: int
    hosts: int
    communicators: int


class Environment(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The environment fingerprint: job shape, versions, transports and NCCL_* settings."""

    shape: Shape
    versions: tuple[Setting, ...]
    transports: tuple[Setting, ...]
    env: tuple[Setting, ...]


def build(s: Session, _p: Provenance) -> Environment:
    return msgspec.convert(facts.environment(s), Environment)


def of(doc: Document) -> Environment:
    """The section's data, typed, from a (possibly redacted) document."""
    return msgspec.convert(doc["environment"], Environment)


def _md_values(vals: tuple[Count, ...], mixed: bool) -> str:
    parts = [f"{text(v.value)} ({v.count})" for v in vals[:8]]
    more = f" … +{len(vals) - 8}" if len(vals) > 8 else ""
    return ("⚠ " if mixed else "") + ", ".join(parts) + more


def markdown(doc: Document) -> list[str]:
    env = of(doc)
    sh = env.shape
    shape = (
        f"{sh.ranks} ranks · {sh.processes} processes · {sh.hosts} hosts · {sh.communicators} communicators"
    )
    out = ["## Environment", "", shape, ""]
    rows = [[text(r.name), _md_values(r.values, r.mixed)] for r in env.versions + env.transports]
    if rows:
        out += table(["", "value (processes)"], rows) + [""]
    if env.env:
        mixed = sum(1 for r in env.env if r.mixed)
        out += [
            "<details>",
            f"<summary>NCCL environment: {len(env.env)} variables set"
            + (f", {mixed} differ across ranks" if mixed else "")
            + "</summary>",
            "",
        ]
        out += table(
            ["variable", "value (processes)"],
            [[code(r.name).replace("|", "\\|"), _md_values(r.values, r.mixed)] for r in env.env],
        )
        out += ["", "</details>", ""]
    return out


def _html_values(vals: tuple[Count, ...]) -> str:
    return ", ".join(f"{e(v.value)} <span class=muted>({int(v.count)})</span>" for v in vals[:12]) + (
        f" … +{len(vals) - 12}" if len(vals) > 12 else ""
    )


def html(doc: Document, _figures: dict[str, str]) -> str:
    env = of(doc)
    sh = env.shape
    rows = "".join(
        f"<tr><th>{e(r.name)}</th><td{' class=odd' if r.mixed else ''}>{_html_values(r.values)}</td></tr>"
        for r in env.versions + env.transports
    )
    envs = "".join(
        f"<tr><td><code>{e(r.name)}</code></td><td{' class=odd' if r.mixed else ''}>"
        f"{_html_values(r.values)}</td></tr>"
        for r in env.env
    )
    env_table = (
        (
            f"<details><summary>NCCL environment: {len(env.env)} variables set</summary>"
            f"<table><tr><th>variable</th><th>value (processes)</th></tr>{envs}</table></details>"
        )
        if envs
        else ""
    )
    return (
        f"<p>{sh.ranks} ranks · {sh.processes} processes · {sh.hosts} hosts · "
        f"{sh.communicators} communicators</p><table>{rows}</table>{env_table}"
    )


SECTION = Section(
    "environment",
    build,
    "job shape, versions, transports, NCCL_*",
    title="Environment",
    menu="Environment",
    markdown=markdown,
    html=html,
    schema=Environment,
)
