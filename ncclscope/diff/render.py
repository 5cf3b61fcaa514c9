"""Diff stage, renderers: a `RunDiff` as a Rich table, as JSON, or as a Markdown section for a ticket.

Every value and evidence line comes from logs: Rich markup is escaped, Markdown cells are escaped and
evidence sits in fenced code blocks. Redaction (`redactor`) is applied to the JSON view before any
renderer lays it out, so the three formats carry the same pseudonyms.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ncclscope.diff.model import RunDiff
from ncclscope.report.md_text import code, fenced, text

MAX_LISTED = 60  # differences shown by the terminal and Markdown renderers (JSON has them all)
_DETAILS = 12  # per-size rows of a result shown in Markdown


def view(d: RunDiff, redactor: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """The JSON view of a diff, redacted when a redactor (`report.redact.Redactor.tree`) is given."""
    doc = d.to_json()
    return redactor(doc) if redactor is not None else doc


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _val(v: object, category: str = "environment") -> str:
    if v is None:
        return "(unset)" if category == "environment" else "(not printed)"
    return str(v)


def _headline(doc: dict[str, Any]) -> str:
    n, total = doc["relevant"], len(doc["differences"])
    if n == 0:
        return "No relevant difference" + (f" ({total} listed for completeness)" if total else "")
    return f"{n} relevant difference{'s' if n != 1 else ''}, most likely cause first"


def to_terminal(doc: dict[str, Any], con: Console) -> None:
    con.print(f"[b]ncclscope diff[/b]  A: {escape(doc['a'])}  B: {escape(doc['b'])}")
    con.print(_headline(doc))
    diffs = doc["differences"][:MAX_LISTED]
    if diffs:
        t = Table(show_lines=False, header_style="bold")
        for col in ("#", "category", "what", "scope", "A", "B", "evidence (A / B)"):
            t.add_column(col, overflow="fold")
        for i, x in enumerate(diffs, 1):
            ev = " / ".join(
                f"{PurePath(e['path']).name}:{e['line']}" for e in (x["evidence_a"][:1] + x["evidence_b"][:1])
            )
            mark = "" if x["relevant"] else " [dim](not relevant)[/dim]"
            t.add_row(
                str(i),
                escape(x["category"]),
                escape(x["key"]) + mark,
                escape(x["scope"]),
                escape(_val(x["a"], x["category"])),
                escape(_val(x["b"], x["category"])),
                escape(ev),
            )
        con.print(t)
    if len(doc["differences"]) > MAX_LISTED:
        con.print(f"… {len(doc['differences']) - MAX_LISTED} more (see --format json)")
    for note in doc["notes"]:
        con.print(f"[dim]note: {escape(note)}[/dim]")


def _evidence(x: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for side in ("a", "b"):
        for e in x[f"evidence_{side}"]:
            lines.append(f"{side.upper()} {e['path']}:{e['line']}  {e['text']}")
    return lines


def to_markdown(doc: dict[str, Any]) -> str:
    out = [f"## ncclscope diff: {text(doc['a'])} → {text(doc['b'])}", "", f"**{_headline(doc)}.**", ""]
    diffs = doc["differences"][:MAX_LISTED]
    if diffs:
        out += ["| # | category | what | scope | A | B |", "|---|---|---|---|---|---|"]
        for i, x in enumerate(diffs, 1):
            what = text(x["key"]) + ("" if x["relevant"] else " (not relevant)")
            cells = [
                str(i),
                text(x["category"]),
                what,
                text(x["scope"]),
                text(_val(x["a"], x["category"])),
                text(_val(x["b"], x["category"])),
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    for i, x in enumerate(diffs, 1):
        ev, det = _evidence(x), x.get("details") or []
        if not ev and not det:
            continue
        out += [f"<details><summary>{i}. {text(x['key'])}</summary>", ""]
        if det:
            out += ["| size | A | B |", "|---|---|---|"]
            out += [
                f"| {text(r['label'])} | {text(_val(r['a'], 'results'))} | {text(_val(r['b'], 'results'))} |"
                for r in det[:_DETAILS]
            ]
            out.append("")
        if ev:
            out += [fenced(ev), ""]
        out += ["</details>", ""]
    out += [f"- note: {text(n)}" for n in doc["notes"]]
    out.append(f"\n<sub>{code('ncclscope diff')} {text(doc['schema'])}</sub>")
    return "\n".join(out).rstrip() + "\n"
