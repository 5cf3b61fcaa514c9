"""Parse stage, reference parser: parse one line with the grammar itself into a frozen, typed record.

This is the reference the fast path is tested against (field for field), and the API notebooks use
for a single line: `parse_line("host:1:2 [0] NCCL INFO Using network IB")` returns a
`NetworkRecord(path=…, line=…, kind='using_network', net='IB', …)`. A Lark `Transformer` turns each
family's tree into the text of its fields; the shared `transform.to_table` then types them, so both
paths produce identical rows once their field text agrees.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import polars as pl
from lark import Token, Transformer, Tree
from lark.exceptions import LarkError

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.parse.logs.lines import match, peel
from ncclscope.parse.logs.lines.families import FAMILIES
from ncclscope.parse.logs.lines.transform import TABLES, to_table


@dataclasses.dataclass(frozen=True)
class _Span:
    name: str
    start: int
    end: int
    fields: tuple[_Span, ...]  # top-level field spans below this node (fields nested in fields dropped)


class FieldSpans(Transformer[Token, _Span]):
    """Tree -> the spans of its field rules (lowercase, not `_`-prefixed, not the family itself)."""

    def __init__(self, text: str) -> None:
        super().__init__(visit_tokens=False)
        self.text = text

    def __default__(self, data: Any, children: list[Any], meta: Any) -> _Span:
        below: list[_Span] = []
        for c in children:
            if isinstance(c, _Span):
                below.extend([c] if c.name else c.fields)
        name = str(data)
        start = getattr(meta, "start_pos", 0) if not getattr(meta, "empty", True) else 0
        end = getattr(meta, "end_pos", 0) if not getattr(meta, "empty", True) else 0
        is_field = not name.startswith("_") and name not in _STARTS
        return _Span(name if is_field else "", start, end, tuple(below))


_STARTS = frozenset(["prefix_std", "prefix_dev", "prefix_bare", "wrapper", *FAMILIES])


def field_text(text: str, start: str) -> dict[str, str] | None:
    """Parse `text` whole with one start rule; the text of each top-level field (first occurrence)."""
    try:
        tree = G.lark_parser().parse(text, start=start)
    except LarkError:
        return None
    span = FieldSpans(text).transform(tree) if isinstance(tree, Tree) else None
    out: dict[str, str] = {}
    for f in span.fields if span else ():
        out.setdefault(G.base_field(f.name), text[f.start : f.end])
    return out


def lark_family(msg: str) -> tuple[str, dict[str, str]] | None:
    """The first family (grammar order) whose rule parses `msg` whole, with its field text."""
    for fam in G.families():
        fields = field_text(msg, fam)
        if fields is not None:
            return fam, fields
    return None


def _record_class(table: str, schema: S.Schema) -> type:
    py: dict[Any, type] = {pl.Int64: int, pl.Float64: float, pl.Utf8: str, pl.Boolean: bool}
    fields = [(n, py.get(t, object) | None, dataclasses.field(default=None)) for n, t in schema.items()]
    name = "".join(w.capitalize() for w in table.split("_")) + "Record"
    return dataclasses.make_dataclass(name, fields, frozen=True, slots=True)


RECORD_TYPES: dict[str, type] = {t: _record_class(t, s) for t, s in TABLES.items()}


@functools.cache
def _line_frame_schema() -> dict[str, Any]:
    return {"path": pl.Utf8, "line": pl.Int64, "raw": pl.Utf8}


def parse_line(line: str, *, path: str = "<line>", lineno: int = 1) -> list[Any]:
    """Typed records (usually one; list fields give several) for one log line, via Lark; [] if none."""
    df = pl.DataFrame({"path": [path], "line": [lineno], "raw": [line]}, schema=_line_frame_schema())
    df = df.with_columns(pl.col("raw").str.slice(0, 2000).alias("text"), pl.int_range(pl.len()).alias("_row"))
    row = peel.split(peel.clean(df).drop("raw")).drop("_row", "clean")
    msg = row["msg"][0]
    found = lark_family(msg) if msg is not None else None
    if found is None:
        return []
    fam, fields = found
    names = next(n for f, _, n in match.family_patterns() if f == fam)
    every = {G.base_field(n) for n in names}  # absent optional fields are null columns, as in the fast path
    hit = row.with_columns(
        [pl.lit(fields.get(k), pl.Utf8).alias(f"f_{k}") for k in sorted(every | set(fields))]
    )
    table, rows, _ = to_table(fam, hit)
    cls = RECORD_TYPES[table]
    return [cls(**r) for r in rows.to_dicts()]
