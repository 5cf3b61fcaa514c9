"""Report stage, hang section: how far each rank got, ranks in the same state folded into one row.

Data: one row per rank (`views_hang.hang`). Layouts: Markdown (the folded table, culprits and the
detector first) and HTML (the folded table, every rank collapsed in a sortable, filterable table below,
and the hang figure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclscope.report import views_hang
from ncclscope.report.facts import cell, hang_flag
from ncclscope.report.fold import FLAG_ORDER, HANG_LABELS, fold_hang, hang_columns, op_count
from ncclscope.report.html_tables import MAX_ROWS, e, filter_box
from ncclscope.report.md_text import table, text
from ncclscope.report.section import Document, Provenance, Section

if TYPE_CHECKING:
    from ncclscope.session import Session

MD_STATES = 64  # rows of the folded Markdown table
HTML_STATES = 64  # rows of the folded HTML table


def build(s: Session, _p: Provenance) -> list[dict[str, Any]]:
    return views_hang.hang(s).to_dicts()


def markdown(doc: Document) -> list[str]:
    rows = doc["hang"]
    if not rows:
        return []
    cols = hang_columns(rows)
    folded = fold_hang(rows)
    body = [
        [text(h.who), text(h.where)]
        + [text(v) for v in h.state]
        + [f"**{h.flag}**" if h.behind and h.flag else h.flag]
        for h in folded[:MD_STATES]
    ]
    head = ["ranks", "host"] + [HANG_LABELS[c] for c in cols] + [""]
    out = ["## Hang view: how far each rank got", ""]
    if len(folded) < len(rows):
        out += [f"{len(rows):,} ranks in {len(folded)} rows: ranks in the same state share a row.", ""]
    out += table(head, body)
    if len(folded) > MD_STATES:
        out += ["", f"{len(folded) - MD_STATES} more states not shown (see --format json)."]
    return out + [""]


def hang_html(doc: Document) -> str:
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
        for h in fold_hang(rows)[:HTML_STATES]
    )
    out = f'<div class="scroll"><table><tr><th>ranks</th><th>host</th>{labels}<th></th></tr>{folded}</table></div>'
    if len(rows) <= 1:
        return out
    first = sorted(rows, key=lambda r: (FLAG_ORDER.get(hang_flag(r), 9), r["rank"] is None, r["rank"] or 0))
    every = "".join(
        f"<tr{' class=behind' if r['behind'] else ''}><td>{e(cell(r['rank']))}</td><td>{e(cell(r['host']))}</td>"
        + "".join(f"<td>{e(op_count(r[c]) if c == 'last_op_count' else cell(r[c]))}</td>" for c in cols)
        + f'<td class="flag">{e(hang_flag(r))}</td></tr>'
        for r in first[:MAX_ROWS]
    )
    return (
        f"{out}<details><summary>Every rank ({len(rows):,}), culprits first; click a heading to sort</summary>"
        f'{filter_box()}<div class="scroll tall"><table class="sortable"><tr><th>rank</th><th>host</th>{labels}'
        f"<th></th></tr>{every}</table></div></details>"
    )


def html(doc: Document, figures: dict[str, str]) -> str:
    return hang_html(doc) + figures.get("fig-hang", "")


SECTION = Section(
    "hang",
    build,
    "how far each rank got",
    title="Hang view: how far each rank got",
    menu="Hang view",
    markdown=markdown,
    html=html,
)
