"""Report stage, hang section: how far each rank got, ranks in the same state folded into one row.

Data: one `views_hang.HangRank` per rank (typed; stored in the document as its JSON-like tree, a list
of rows, and read back typed by `of(doc)` after any redaction). Layouts: Markdown (the folded table,
culprits and the detector first) and HTML (the folded table, every rank collapsed in a sortable,
filterable table below, culprits first, and the hang figure). NCCL's opCount is printed in hex with
`0x`, as the log prints it; PyTorch's sequence numbers in decimal, in columns of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ncclscope.report import views_hang
from ncclscope.report.facts import cell
from ncclscope.report.fold import HANG_LABELS, culprits_first, fold_hang, hang_columns, state_cell
from ncclscope.report.html_tables import MAX_ROWS, e, filter_box
from ncclscope.report.md_text import table, text
from ncclscope.report.section import Document, Provenance, Section
from ncclscope.report.views_hang import HangRank

if TYPE_CHECKING:
    from ncclscope.session import Session

MD_STATES = 64  # rows of the folded Markdown table
HTML_STATES = 64  # rows of the folded HTML table
Hang = tuple[HangRank, ...]  # the section's data: one row per rank, in rank order


def build(s: Session, _p: Provenance) -> list[dict[str, Any]]:
    """The typed rows, as the document's tree: a list of rows (the document stores a Struct as its tree,
    a sequence of them as it is given)."""
    return [msgspec.structs.asdict(r) for r in views_hang.ranks(views_hang.hang(s))]


def of(doc: Document) -> Hang:
    """The section's data, typed, from a (possibly redacted) document."""
    return msgspec.convert(doc["hang"], Hang)


def markdown(doc: Document) -> list[str]:
    rows = of(doc)
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
    rows = of(doc)
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
    every = "".join(
        f"<tr{' class=behind' if r.behind else ''}><td>{e(cell(r.rank))}</td><td>{e(cell(r.host))}</td>"
        + "".join(f"<td>{e(state_cell(r, c))}</td>" for c in cols)
        + f'<td class="flag">{e(r.flag)}</td></tr>'
        for r in culprits_first(rows)[:MAX_ROWS]
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
    schema=Hang,
)
