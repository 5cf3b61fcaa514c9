"""Parse stage, COLL lines field by field: vectorised, with no cache whose hit rate decides the speed.

A COLL line is `<wrappers><host:pid:tid [dev]> NCCL INFO <op>: opCount <hex> sendbuff <ptr> … stream <ptr>`.
The grammar's `coll` rule is one fixed sequence of literals and space-free fields (`grammar.neighbours`),
so once a line is known to match that rule whole, every field sits between two literals at their
first occurrence: the line is checked with the rule's own regex (no capture groups, one pass; on
ASCII lines, which is all this path takes, `\\d` is `[0-9]`), the literals are found by substring
search and the fields cut out between them. The head before ` NCCL INFO ` (wrappers and prefix)
repeats for every line of a thread; each distinct head goes through the general prefix and wrapper
patterns once (`peel.parse_heads`). Lines that do not fit this plan exactly (another ` NCCL ` on the
line, a literal met in the head, text after the stream pointer, ANSI residue or trailing blanks in the
head, non-ASCII text, longer than MAX_TEXT) are left to the general path, which gives the same rows.
"""

from __future__ import annotations

import functools

import polars as pl

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.parse.logs import peel
from ncclscope.parse.logs.families import HEX_FIELDS
from ncclscope.parse.logs.peel import MAX_TEXT

MARKER = " NCCL INFO "
_FAM = "coll"
_DIRTY = peel.ANSI  # heads `peel.clean` would change (the line itself ends with a pointer)


def ascii_regex(pattern: str) -> str:
    """`pattern` for ASCII text: `\\d` outside character classes becomes `[0-9]` (Unicode digit classes
    make Polars' regex automaton several times bigger and slower; on ASCII text they match the same)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append("[0-9]" if pattern[i + 1] == "d" and not in_class else pattern[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


@functools.cache
def plan() -> tuple[str, tuple[str, ...], tuple[tuple[str, int, int], ...]]:
    """(the rule's regex from the marker to the end of the line, without its optional trailing `detail`;
    its literals in order; (field, index of the literal before it, index of the one after))."""
    nb = G.neighbours(_FAM)
    names = [G.base_field(n) for n in G.group_names(_FAM)]  # the rule's fields in order
    fields = sorted(nb, key=names.index)
    lits: list[str] = []
    spans = []
    for f in fields:
        before, after = nb[f]
        if not lits or lits[-1] != before:
            lits.append(before)
        lits.append(after)
        spans.append((f, len(lits) - 2, len(lits) - 1))
    # The rule is `first lit0 f0 lit1 … litN last (" " detail)?`: the same sequence, the detail left out.
    first, last = names[0], names[names.index(fields[-1]) + 1]
    parts = [G.rule_regex(first, capture=False)]
    for f, i, _ in spans:
        parts += [_escape(lits[i]), G.rule_regex(f, capture=False)]
    parts += [_escape(lits[-1]), G.rule_regex(last, capture=False)]
    return ascii_regex(MARKER + "".join(parts) + "$"), tuple(lits), tuple(spans)


def _escape(text: str) -> str:
    return "".join("\\" + c if c in "()[]{}.*+?|^$\\" else c for c in text)


def _typed(col: pl.Expr, field: str) -> pl.Expr:
    if S.COLLECTIVES[field] == pl.Int64:
        return col.str.to_integer(base=16 if field in HEX_FIELDS else 10, strict=False)
    return col


def take(raw: pl.DataFrame, *, full: bool) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(COLL rows, their heads, the other rows of `raw`). `raw` has path, line, raw; heads
    (`peel.parse_heads`) give each `_head` its prefix fields. COLL rows have path, line, text, `_head`
    and every COLLECTIVES field when `full`; else op, op_count, `_sig` (the text from count to
    datatype) and `_comm` (from the comm pointer to nranks), what `collfacts` needs."""
    regex, lits, spans = plan()
    ix = {f: (i, j) for f, i, j in spans}
    used = {0, len(lits) - 1, *ix["op_count"], ix["count"][0], ix["datatype"][1], ix["comm_ptr"][0], ix["nranks"][1]}
    if full:
        used |= {k for i, j in ix.values() for k in (i, j)}
    r = pl.col("raw")
    finds = [r.str.find(MARKER, literal=True).alias("_m"), r.str.find(" NCCL ", literal=True).alias("_n"),
             *[r.str.find(lits[i], literal=True).alias(f"_p{i}") for i in sorted(used)]]
    first = pl.min_horizontal(*[pl.col(f"_p{i}") for i in used])
    # one ` NCCL ` (the marker's), every literal after it, ASCII, the rule whole (nothing after the stream pointer)
    ok = ((pl.col("_n") == pl.col("_m")) & (first > pl.col("_m")) & (r.str.len_bytes() == r.str.len_chars())
          & r.str.contains(regex)).fill_null(False)
    cand = r.str.contains(lits[0], literal=True) & (r.str.len_bytes() <= MAX_TEXT)
    c = raw.lazy().with_row_index("_c").filter(cand).with_columns(finds).filter(ok)
    rows = (_all_fields(c, lits, spans) if full else _fact_fields(c, lits, ix)).collect()
    if rows.is_empty():
        return raw.clear(), _no_heads(), raw
    heads = peel.parse_heads(rows["_head"].unique())
    heads = heads.filter(~pl.col("_head").str.contains(_DIRTY))
    if heads.height < rows["_head"].n_unique():
        rows = rows.filter(pl.col("_head").is_in(heads["_head"].implode()))
    rest = raw if rows.is_empty() else raw.filter(pl.repeat(True, raw.height, eager=True).scatter(rows["_c"], False))
    return rows.drop("_c"), heads, rest


def _cut(i: int, j: int, lits: tuple[str, ...]) -> pl.Expr:
    a = pl.col(f"_p{i}") + len(lits[i])
    return pl.col("raw").str.slice(a, pl.col(f"_p{j}") - a)


def _base() -> list[pl.Expr]:
    r, start = pl.col("raw"), pl.col("_m") + len(MARKER)
    return [pl.col("_c"), pl.col("path"), pl.col("line"), r.alias("text"), r.str.head(start).alias("_head"),
            r.str.slice(start, pl.col("_p0") - start).alias("op")]


def _fact_fields(c: pl.LazyFrame, lits: tuple[str, ...], ix: dict[str, tuple[int, int]]) -> pl.LazyFrame:
    return c.select(*_base(), _typed(_cut(*ix["op_count"], lits), "op_count").alias("op_count"),
                    _cut(ix["count"][0], ix["datatype"][1], lits).alias("_sig"),
                    _cut(ix["comm_ptr"][0], ix["nranks"][1], lits).alias("_comm"))


def _all_fields(c: pl.LazyFrame, lits: tuple[str, ...], spans: tuple[tuple[str, int, int], ...]) -> pl.LazyFrame:
    last = len(lits) - 1  # the stream pointer: the rest of the line (nothing follows it on lines taken here)
    stream = pl.col("raw").str.slice(pl.col(f"_p{last}") + len(lits[last])).alias("stream")
    return c.select(*_base(), *[_typed(_cut(i, j, lits), f).alias(f) for f, i, j in spans], stream)


def sig_fields(sig: pl.Expr, comm: pl.Expr) -> list[pl.Expr]:
    """count, datatype from `_sig` and comm_ptr, nranks from `_comm` (typed as the rule's fields)."""
    _, lits, spans = plan()
    ix = {f: (i, j) for f, i, j in spans}
    mid, nr = lits[ix["count"][1]], lits[ix["nranks"][0]]
    a, b = sig.str.split_exact(mid, 1).struct, comm.str.split_exact(nr, 1).struct
    return [_typed(a.field("field_0"), "count").alias("count"), _typed(a.field("field_1"), "datatype").alias("datatype"),
            b.field("field_0").alias("comm_ptr"), _typed(b.field("field_1"), "nranks").alias("nranks")]


def _no_heads() -> pl.DataFrame:
    return peel.parse_heads(pl.Series("_head", [], dtype=pl.Utf8))


def with_heads(rows: pl.DataFrame, heads: pl.DataFrame) -> pl.DataFrame:
    """COLL rows with their prefix fields: the COLLECTIVES frame (`full` rows)."""
    return S.conform(rows.join(heads, on="_head", how="left", maintain_order="left").drop("_head"), S.COLLECTIVES)
