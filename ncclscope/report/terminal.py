"""Report stage, terminal: the report document (`report.document`) laid out for a Rich console.

The verdict and what was read, then the sections with a terminal layout in `report.sections.TERMINAL`
order (the ranks × configuration table with odd cells marked `⚠`, and red where colour is on: never
colour alone; nccl-tests; why we think so; health; every finding with its evidence), then any other
section with a terminal layout, in report order. Every log-derived string is escaped before it reaches
Rich (NCCL's `[0]` is Rich markup otherwise) and its control characters (ESC, C1) made visible. On a
terminal, long lines wrap with a hanging indent; piped, the console leaves them whole.
"""

from __future__ import annotations

from rich.console import Console

from ncclscope.report import sections
from ncclscope.report.document import Document
from ncclscope.report.safe_text import escape  # Rich markup escaped and control characters made visible
from ncclscope.report.section_ranks import ODD, ranks_table

__all__ = ["ODD", "ranks_table", "render"]


def render(doc: Document, con: Console) -> None:
    """Print the document: verdict, evidence summary, then each section's terminal layout."""
    con.print(f"[b]{escape(doc['verdict']['text'])}[/b]")
    con.print(f"[dim]{escape(sections.summary_of(doc))}[/dim]")
    first = [sections.by_key(k) for k in sections.TERMINAL]
    for sec in first + [s for s in sections.SECTIONS if s.key not in sections.TERMINAL]:
        if sec.terminal is not None:
            sec.terminal(doc, con)
