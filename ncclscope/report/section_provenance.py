"""Report stage, provenance section: how the report was made (version, command, coverage, redaction) and
what was read (inputs summarised per directory, collapsed), with the notes on the input.

Data: a `Made` (typed, from `facts.provenance`), stored in the document as its tree and read back typed
by the layouts (`of(doc)`, after any redaction); the notes are their own data-only section (`notes`),
shown here. Layouts: Markdown and HTML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ncclscope.report import facts
from ncclscope.report.fold import MAX_INPUTS, InputRow, fold_inputs
from ncclscope.report.html_tables import REDACTED_NOTE, e
from ncclscope.report.md_text import code, table, text
from ncclscope.report.section import Document, Provenance, Section

if TYPE_CHECKING:
    from ncclscope.session import Session


class LogInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str
    lines: int | None


class TraceInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str
    rank: int | None
    events: int | None


class Coverage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    lines: int
    nccl_lines: int
    recognized: int
    unknown: int


class Made(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How the report was made, and what was read."""

    ncclscope: str
    python: str
    polars: str
    command: str | None
    redacted: bool
    inputs: tuple[LogInput, ...]
    traces: tuple[TraceInput, ...]
    coverage: Coverage


def build(s: Session, p: Provenance) -> Made:
    return msgspec.convert(facts.provenance(s, p.command, p.redacted), Made)


def of(doc: Document) -> Made:
    """The section's data, typed, from a (possibly redacted) document."""
    return msgspec.convert(doc["provenance"], Made)


def _folded(p: Made) -> list[InputRow]:
    return fold_inputs(((i.path, i.lines) for i in p.inputs), ((t.path, t.rank, t.events) for t in p.traces))


def markdown(doc: Document) -> list[str]:
    p = of(doc)
    c = p.coverage
    pct = f"{100.0 * c.recognized / c.nccl_lines:.1f}%" if c.nccl_lines else "n/a"
    out = [
        "## How this report was made",
        "",
        f"- ncclscope {text(p.ncclscope)} (Python {text(p.python)}, Polars {text(p.polars)})",
    ]
    if p.command:
        out.append(f"- command: {code(p.command)}")
    out.append(
        f"- coverage: {c.lines} lines, {c.nccl_lines} NCCL lines, {pct} recognized, {c.unknown} unknown"
    )
    if p.redacted:
        out.append(
            "- redacted: host names, IP/MAC addresses, user names in paths and pointers are replaced "
            "by consistent pseudonyms (`host-1`, `ip-1.2`, `user-1`, `0xptr-1`)"
        )
    out.append("")
    if p.inputs or p.traces:
        out += [
            "<details>",
            f"<summary>Inputs: {len(p.inputs)} logs, {len(p.traces)} traces</summary>",
            "",
        ]
        rows = _folded(p)
        out += table(["input", "lines / events"], [_input(i) for i in rows[:MAX_INPUTS]])
        if len(rows) > MAX_INPUTS:
            rest = rows[MAX_INPUTS:]
            out += ["", f"{len(rest)} more directories ({sum(r.files for r in rest):,} files) not shown."]
        out += ["", "</details>", ""]
    if doc["notes"]:
        out += ["Notes on the input:", ""] + [f"- {text(n)}" for n in doc["notes"]] + [""]
    return out


def _input(i: InputRow) -> list[str]:
    if i.files > 1:
        return [text(i.path) + f" ({i.files:,} files)", f"{i.amount:,} {i.what}"]
    rank = f" (rank {i.rank})" if i.what == "events" else ""
    return [text(i.path) + text(rank), f"{i.amount:,} {i.what}"]


def html(doc: Document, _figures: dict[str, str]) -> str:
    p = of(doc)
    c = p.coverage
    pct = f"{100.0 * c.recognized / c.nccl_lines:.1f}%" if c.nccl_lines else "n/a"
    items = [("ncclscope", f"{p.ncclscope} (Python {p.python}, Polars {p.polars})")]
    if p.command:
        items.append(("command", p.command))
    items.append(
        (
            "coverage",
            f"{c.lines} lines, {c.nccl_lines} NCCL lines, {pct} recognized, {c.unknown} unknown",
        )
    )
    if p.redacted:
        items.append(("redacted", REDACTED_NOTE))
    dl = "".join(
        f"<dt>{e(k)}</dt><dd><code>{e(v)}</code></dd>"
        if k == "command"
        else f"<dt>{e(k)}</dt><dd>{e(v)}</dd>"
        for k, v in items
    )
    rows = _folded(p)
    inputs = "".join(
        f"<tr><td>{e(i.path)}{f' ({i.files:,} files)' if i.files > 1 else ''}</td><td>"
        + (f"rank {e(i.rank)}, " if i.what == "events" and i.files == 1 else "")
        + f"{i.amount:,} {i.what}</td></tr>"
        for i in rows[:MAX_INPUTS]
    )
    if len(rows) > MAX_INPUTS:
        rest = rows[MAX_INPUTS:]
        inputs += (
            f"<tr><td>… {len(rest)} more directories</td><td>{sum(r.files for r in rest):,} files</td></tr>"
        )
    n_in = f"{len(p.inputs):,} logs, {len(p.traces):,} traces"
    notes = "".join(f"<li>{e(n)}</li>" for n in doc["notes"])
    return (
        f"<dl>{dl}</dl>"
        + (
            f"<details><summary>Inputs: {n_in}</summary><table><tr><th>input</th><th></th></tr>"
            f"{inputs}</table></details>"
            if inputs
            else ""
        )
        + (f"<p>Notes on the input:</p><ul>{notes}</ul>" if notes else "")
    )


SECTION = Section(
    "provenance",
    build,
    "how the report was made",
    title="How this report was made",
    menu="How it was made",
    markdown=markdown,
    html=html,
    schema=Made,
)
