"""One session through every renderer: the terminal, Markdown and HTML flag the same odd cells.

The odd cells are decided once, in the report document; a renderer that decided on its own (the
terminal used to flag nothing on a 2/2 split of NCCL versions while the reports flagged both)
fails here.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import polars as pl
import pytest

from ncclscope.report import RENDERERS, Options, document_for, section_ranks, terminal

from .conftest import make_session, ranks_frame


def _split_session(split: str) -> object:
    ranks = ranks_frame().head(4)
    if split == "2/2":
        versions = ["2.19.3", "2.19.3", "2.14.3", "2.14.3"]
    else:  # 3/1
        versions = ["2.19.3", "2.19.3", "2.19.3", "2.14.3"]
    return make_session(ranks=ranks.with_columns(pl.Series("nccl_version", versions)), with_traces=False)


def _terminal_odd(s: object) -> set[tuple[int, str]]:
    doc = document_for(s)  # type: ignore[arg-type]
    table = terminal.ranks_table(section_ranks.of(doc))
    heads = [str(c.header) for c in table.columns]
    cells = [list(c._cells) for c in table.columns]
    ranks = [int(x) for x in cells[heads.index("rank")]]
    return {
        (ranks[i], doc["ranks"]["columns"][j])
        for j, col in enumerate(cells)
        for i, v in enumerate(col)
        if str(v).startswith("[red]")
    }


def _markdown_odd(s: object) -> set[tuple[int, str]]:
    md = RENDERERS["markdown"].render(s, Options())  # type: ignore[arg-type]
    lines = md.split("## Ranks × configuration", 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [ln for ln in lines if ln.startswith("| ")]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    out = set()
    for ln in rows[1:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))]
        rank = int(cells[head.index("rank")].strip("*⚠ "))
        out |= {(rank, head[j]) for j, c in enumerate(cells) if c.startswith("**⚠")}
    return out


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, bool]]] = []
        self._odd: bool | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._odd, self._text = ("class", "odd") in attrs, ""

    def handle_data(self, data: str) -> None:
        if self._odd is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._odd is not None and self.rows:
            self.rows[-1].append((self._text, self._odd))
            self._odd = None


def _html_odd(s: object) -> set[tuple[int, str]]:
    page = RENDERERS["html"].render(s, Options())  # type: ignore[arg-type]
    section = page.split('id="ranks"', 1)[1]
    table = section.split("<tr><th>rank</th>", 1)[1].split("</table>", 1)[0]
    p = _Cells()
    p.feed("<table><tr><th>rank</th>" + table + "</table>")
    head = [t for t, _ in p.rows[0]]
    return {(int(r[0][0]), head[j]) for r in p.rows[1:] for j, (_t, odd) in enumerate(r) if odd}


@pytest.mark.parametrize("split", ["2/2", "3/1"])
def test_every_renderer_flags_the_same_odd_cells(split: str) -> None:
    s = _split_session(split)
    doc = document_for(s)  # type: ignore[arg-type]
    expected = {(r["cells"]["rank"], c) for r in doc["ranks"]["rows"] for c in r["odd"]}
    versions = {
        (r["cells"]["rank"], "nccl_version")
        for r in doc["ranks"]["rows"]
        if split == "2/2" or r["cells"]["nccl_version"] == "2.14.3"
    }
    assert versions <= expected  # a tie marks both sides, a 3/1 split the one
    assert _terminal_odd(s) == expected
    assert _markdown_odd(s) == expected
    assert _html_odd(s) == expected
