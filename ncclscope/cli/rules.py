"""CLI stage, `ncclscope rules [ID…]`: the finding rules with their id, severity, group and heuristic.

With ids (or prefixes and groups, as `--select` takes them) only those rules, each in full; with
`--format json` one object per rule, for CI scripts.
"""

from __future__ import annotations

import json
from enum import Enum
from inspect import cleandoc
from typing import Annotated

import typer

from ncclscope.cli import app
from ncclscope.cli.console import echo, stdout_console
from ncclscope.cli.select import matches
from ncclscope.errors import InputError
from ncclscope.report.schema_version import SCHEMA_VERSION


class Format(str, Enum):
    text = "text"
    json = "json"


@app.command()
def rules(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="Rule ids, id prefixes (nccltests-) or groups; none: every rule.", show_default=False
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """List the finding rules (id, severity, group, heuristic and thresholds)."""
    from ncclscope.findings import all_rules

    chosen = all_rules()
    if ids:
        for p in ids:
            if not any(matches(r, p) for r in chosen):
                raise InputError(f"no rule {p!r} (see `ncclscope rules`)")
        chosen = [r for r in chosen if any(matches(r, p) for p in ids)]
    if fmt is Format.json:
        body = [
            {"id": r.id, "severity": r.severity, "group": r.group, "title": r.title, "doc": cleandoc(r.doc)}
            for r in chosen
        ]
        echo(json.dumps({"schema_version": SCHEMA_VERSION, "rules": body}, indent=2) + "\n")
        return
    out = stdout_console()
    if ids:  # in full, one after the other
        for r in chosen:
            out.print(f"{r.id} ({r.severity}, {r.group}): {r.title}", markup=False)
            out.print(cleandoc(r.doc) + "\n", markup=False)
        return
    from rich.markup import escape
    from rich.table import Table

    t = Table("id", "severity", "group", "what it checks", show_lines=True)
    for r in chosen:
        t.add_row(escape(r.id), r.severity, r.group, escape(r.doc))
    out.print(t)
