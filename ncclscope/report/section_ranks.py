"""Report stage, ranks section: the ranks × configuration table, odd cells (a minority's value) marked ⚠.

Data: a `views_ranks.RanksTable` (typed: the columns, one row per process with its cells, odd columns
and findings), stored in the document as its JSON-like tree and read back typed by `of(doc)` after any
redaction. Layouts: Markdown and HTML (the ranks that stand out, the rest counted; in HTML every rank
collapsed below) and the terminal's Rich table. Odd cells carry the ⚠ mark everywhere, never colour alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ncclscope.report import views_ranks
from ncclscope.report.facts import cell
from ncclscope.report.fold import fold_ranks
from ncclscope.report.html_tables import MAX_ROWS, e, filter_box
from ncclscope.report.md_text import table, text
from ncclscope.report.section import Document, Provenance, Section
from ncclscope.report.views_ranks import RankRow, RanksTable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ncclscope.session import Session

ODD = "⚠"  # the odd-value mark of every layout
TERMINAL_RANKS = 64
_HEAD = {"cuda_dev": "dev"}


def build(s: Session, _p: Provenance) -> RanksTable:
    return views_ranks.ranks_table(s)


def of(doc: Document) -> RanksTable:
    """The section's data, typed, from a (possibly redacted) document."""
    return msgspec.convert(doc["ranks"], RanksTable)


def markdown(doc: Document) -> list[str]:
    t = of(doc)
    if not t.rows:
        return []
    cols = t.columns
    fold = fold_ranks(t)
    body = []
    for r in fold.rows:
        cells = [
            (f"**{ODD} " + text(cell(r.cells.value(c))) + "**")
            if c in r.odd
            else text(cell(r.cells.value(c)))
            for c in cols
        ]
        body.append(cells + [text(", ".join(r.findings))])
    out = ["## Ranks × configuration", ""]
    if t.odd_columns:
        out += [
            f"Cells marked **{ODD}** differ from most ranks (columns: {text(', '.join(t.odd_columns))}).",
            "",
        ]
    out += table([*cols, "findings"], body)
    if fold.hidden:
        common = f" and the same findings ({text(', '.join(fold.common))})" if fold.common else ""
        out += ["", f"{fold.hidden:,} more ranks with no odd value{common} are not shown."]
    return out + [""]


def _rank_row(r: RankRow, cols: tuple[str, ...]) -> str:
    cells = "".join(
        f"<td{' class=odd' if c in r.odd else ''}>{ODD + ' ' if c in r.odd else ''}{e(cell(r.cells.value(c)))}</td>"
        for c in cols
    )
    return f'<tr>{cells}<td class="flag">{e(", ".join(r.findings))}</td></tr>'


def ranks_html(doc: Document, limit: int = MAX_ROWS) -> str:
    """The ranks that stand out (odd values, uncommon findings); every rank, collapsed, below."""
    t = of(doc)
    if not t.rows:
        return '<p class="muted">No rank could be identified (no Init lines or rank tags in the logs).</p>'
    cols = t.columns
    head = "<tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "<th>findings</th></tr>"
    fold = fold_ranks(t)
    shown = "".join(_rank_row(r, cols) for r in fold.rows)
    table = f'<div class="scroll"><table class="sortable">{head}{shown}</table></div>'
    odd = (
        f'<p class="muted">Cells marked ⚠ differ from most ranks ({e(", ".join(t.odd_columns))}).</p>'
        if t.odd_columns
        else ""
    )
    if not fold.hidden:
        return odd + table
    common = f" and the same findings ({e(', '.join(fold.common))})" if fold.common else ""
    every = "".join(_rank_row(r, cols) for r in t.rows[:limit])
    more = f" (first {limit:,})" if len(t.rows) > limit else ""
    return (
        f'{odd}{table}<p class="muted">{fold.hidden:,} more ranks with no odd value{common}.</p>'
        f"<details><summary>Every rank ({len(t.rows):,}){more}</summary>{filter_box()}"
        f'<div class="scroll tall"><table class="sortable">{head}{every}</table></div></details>'
    )


def html(doc: Document, _figures: dict[str, str]) -> str:
    return ranks_html(doc)


def ranks_table(t: RanksTable, limit: int = TERMINAL_RANKS) -> Table:
    """The ranks table for a terminal, folded as in the reports; odd cells marked ⚠, and red."""
    from rich.table import Table

    from ncclscope.report.safe_text import escape

    cols = t.columns
    out = Table(*[_HEAD.get(c, c) for c in cols], title=f"ranks × configuration ({ODD}: odd value)")
    fold = fold_ranks(t, cap=limit)
    for r in fold.rows:
        out.add_row(
            *[
                f"[red]{ODD} {_term(r.cells.value(c))}[/red]" if c in r.odd else _term(r.cells.value(c))
                for c in cols
            ]
        )
    if fold.hidden:
        common = f" and the same findings ({', '.join(fold.common)})" if fold.common else ""
        out.caption = escape(f"{fold.hidden:,} more ranks with no odd value{common} (see --format json)")
    return out


def _term(v: object) -> str:
    from ncclscope.report.safe_text import escape

    return "" if v is None else escape(str(v))


def terminal(doc: Document, con: Console) -> None:
    t = of(doc)
    if t.rows:
        con.print(ranks_table(t))


SECTION = Section(
    "ranks",
    build,
    "ranks × configuration, odd cells marked",
    title="Ranks × configuration",
    menu="Ranks",
    markdown=markdown,
    html=html,
    terminal=terminal,
    schema=RanksTable,
)
