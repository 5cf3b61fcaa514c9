"""Report stage, HTML tables: the ranks table, the hang view and the provenance, folded (`report.fold`).

The rows that stand out (culprits, the detector, odd values) are shown; every rank follows in a
collapsed, sortable and filterable table (the page's script sorts `table.sortable` and filters with
`input.filter`); the inputs are listed per directory, collapsed.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ncclscope.report.facts import hang_flag, printable
from ncclscope.report.fold import (
    FLAG_ORDER,
    HANG_LABELS,
    MAX_INPUTS,
    fold_hang,
    fold_inputs,
    fold_ranks,
    hang_columns,
    op_count,
)

MAX_ROWS = 1024  # rows of a collapsed every-rank table
MAX_STATES = 64  # rows of the folded hang table
REDACTED_NOTE = (
    "host names, IP/MAC addresses, user names in paths and pointers are replaced by consistent "
    "pseudonyms (host-1, ip-1.2, user-1, 0xptr-1)"
)


def e(value: object) -> str:
    """Escaped text for HTML content and attribute values."""
    return escape(printable("" if value is None else str(value), limit=4000), quote=True)


def _cell(v: object) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "" if v is None else str(v)


def _rank_row(r: dict[str, Any], cols: list[str]) -> str:
    cells = "".join(
        f"<td{' class=odd' if c in r['odd'] else ''}>{'⚠ ' if c in r['odd'] else ''}{e(_cell(r['cells'][c]))}</td>"
        for c in cols
    )
    return f'<tr>{cells}<td class="flag">{e(", ".join(r["findings"]))}</td></tr>'


def ranks_html(doc: dict[str, Any], limit: int = MAX_ROWS) -> str:
    """The ranks that stand out (odd values, uncommon findings); every rank, collapsed, below."""
    t = doc["ranks"]
    if not t["rows"]:
        return '<p class="muted">No rank could be identified (no Init lines or rank tags in the logs).</p>'
    cols = t["columns"]
    head = "<tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "<th>findings</th></tr>"
    fold = fold_ranks(t)
    shown = "".join(_rank_row(r, cols) for r in fold.rows)
    table = f'<div class="scroll"><table class="sortable">{head}{shown}</table></div>'
    odd = (
        f'<p class="muted">Cells marked ⚠ differ from most ranks ({e(", ".join(t["odd_columns"]))}).</p>'
        if t["odd_columns"]
        else ""
    )
    if not fold.hidden:
        return odd + table
    common = f" and the same findings ({e(', '.join(fold.common))})" if fold.common else ""
    every = "".join(_rank_row(r, cols) for r in t["rows"][:limit])
    more = f" (first {limit:,})" if len(t["rows"]) > limit else ""
    return (
        f'{odd}{table}<p class="muted">{fold.hidden:,} more ranks with no odd value{common}.</p>'
        f"<details><summary>Every rank ({len(t['rows']):,}){more}</summary>{_filter()}"
        f'<div class="scroll tall"><table class="sortable">{head}{every}</table></div></details>'
    )


def _filter() -> str:
    return '<input class="filter" type="search" placeholder="filter rows (rank, host, value…)">'


def hang_html(doc: dict[str, Any]) -> str:
    """Ranks folded by state, culprits and the detector first; every rank, collapsed, sortable below."""
    rows = doc["hang"]
    if not rows:
        return ""
    cols = hang_columns(rows)
    labels = "".join(f"<th>{e(HANG_LABELS[c])}</th>" for c in cols)
    folded = "".join(
        f"<tr{' class=behind' if h.behind else ''}><td>{e(h.who)}</td><td>{e(h.where)}</td>"
        + "".join(f"<td>{e(v)}</td>" for v in h.state)
        + f'<td class="flag">{e(h.flag)}</td></tr>'
        for h in fold_hang(rows)[:MAX_STATES]
    )
    out = f'<div class="scroll"><table><tr><th>ranks</th><th>host</th>{labels}<th></th></tr>{folded}</table></div>'
    if len(rows) <= 1:
        return out
    first = sorted(rows, key=lambda r: (FLAG_ORDER.get(hang_flag(r), 9), r["rank"] is None, r["rank"] or 0))
    every = "".join(
        f"<tr{' class=behind' if r['behind'] else ''}><td>{e(_cell(r['rank']))}</td><td>{e(_cell(r['host']))}</td>"
        + "".join(f"<td>{e(op_count(r[c]) if c == 'last_op_count' else _cell(r[c]))}</td>" for c in cols)
        + f'<td class="flag">{e(hang_flag(r))}</td></tr>'
        for r in first[:MAX_ROWS]
    )
    return (
        f"{out}<details><summary>Every rank ({len(rows):,}), culprits first; click a heading to sort</summary>"
        f'{_filter()}<div class="scroll tall"><table class="sortable"><tr><th>rank</th><th>host</th>{labels}'
        f"<th></th></tr>{every}</table></div></details>"
    )


def provenance_html(doc: dict[str, Any]) -> str:
    p = doc["provenance"]
    c = p["coverage"]
    pct = f"{100.0 * c['recognized'] / c['nccl_lines']:.1f}%" if c["nccl_lines"] else "n/a"
    items = [("ncclscope", f"{p['ncclscope']} (Python {p['python']}, Polars {p['polars']})")]
    if p["command"]:
        items.append(("command", p["command"]))
    items.append(
        (
            "coverage",
            f"{c['lines']} lines, {c['nccl_lines']} NCCL lines, {pct} recognized, {c['unknown']} unknown",
        )
    )
    if p["redacted"]:
        items.append(("redacted", REDACTED_NOTE))
    dl = "".join(
        f"<dt>{e(k)}</dt><dd><code>{e(v)}</code></dd>"
        if k == "command"
        else f"<dt>{e(k)}</dt><dd>{e(v)}</dd>"
        for k, v in items
    )
    rows = fold_inputs(p)
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
    n_in = f"{len(p['inputs']):,} logs, {len(p['traces']):,} traces"
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
