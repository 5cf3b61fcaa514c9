"""CLI stage, `ncclscope rules`: list every finding rule with its id, severity and heuristic."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ncclscope.cli import app
from ncclscope.cli.console import stdout_console


@app.command()
def rules() -> None:
    """List the finding rules (id, severity, group, heuristic and thresholds)."""
    from ncclscope.findings import all_rules

    t = Table("id", "severity", "group", "what it checks", show_lines=True)
    for r in all_rules():
        t.add_row(escape(r.id), r.severity, r.group, escape(r.doc))
    stdout_console().print(t)
