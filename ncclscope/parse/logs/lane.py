"""Parse stage, shape lane: lines of a family with one varying field (COLL's opCount), parsed once per shape.

COLL lines are most of a big log and differ mostly in one field. Before any per-line work, every raw
line that holds the two literals the grammar puts around that field (`G.neighbours`, for COLL
`: opCount ` and ` sendbuff `) is cut there: the token between them is kept, and the rest of the line —
its *shape*, the text before plus the text after — is hashed (two 64-bit hashes). One representative
line per new shape, with the token replaced by `0` (a valid value), goes through the general path
(`prepare` + `match_families`: the grammar's regexes). A shape is accepted when its representative
comes out as that family, prefixed, at INFO level, with the field reading 0 at the only occurrence of
the literal. Accepted shapes get a number and one row of columns (schema.COLL_SHAPES); every line of
an accepted shape becomes one compact row (path, line, its token checked with the field's own rule and
cast as the general path casts it, the shape number, its text). Shapes are remembered across the
batches of one read (accepted or not), so each is parsed once. Lines of rejected shapes, bad tokens or
over `MAX_TEXT` characters take the general path.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.frames import CollLines
from ncclscope.parse.logs import match
from ncclscope.parse.logs.families import FAMILIES
from ncclscope.parse.logs.transform import TABLES, typed_fields

MAX_TEXT = 2000  # characters of the original line kept in `text` (evidence)
_KEY = ["_h1", "_h2"]  # 2 x 64-bit hashes of the text before and after the token
_FAM = "coll"

Prepare = Callable[[pl.DataFrame], pl.DataFrame]


def _cut(raw: pl.DataFrame, before: str, after: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(candidate rows with `_i`, `_tok`, `_la`, `_lb` and the shape key, other rows with `_i`).

    The cut and the hashes run on Polars' streaming engine without the text column: morsels on
    every core, and the cut-out pieces of a morsel are freed before the next (no 250 MB of temporary
    strings on a big batch)."""
    r = pl.col("raw")
    a, b, n = pl.col("_a"), pl.col("_b"), pl.col("_n")
    keys = (raw.lazy().select((r.str.find(before, literal=True) + len(before)).alias("_a"),
                              r.str.find(after, literal=True).alias("_b"), r.str.len_bytes().alias("_n"), r)
            .select(((b > a).fill_null(False) & (n <= MAX_TEXT)).alias("_in"), r.str.slice(a, b - a).alias("_tok"),
                    a.alias("_la"), (n - b).alias("_lb"), r.str.head(a).hash().alias("_h1"),
                    r.str.tail(n - b).hash().alias("_h2"))
            .collect(engine="streaming"))
    both = pl.concat([raw.with_row_index("_i"), keys], how="horizontal")
    ok = keys["_in"]
    if ok.all():
        return both.drop("_in"), both.clear().select("_i", *raw.columns)
    return both.filter(ok).drop("_in"), both.filter(~ok).select("_i", *raw.columns)


class Lane:
    """The COLL lane of one read: the shapes seen so far (accepted or rejected) and their numbers."""

    def __init__(self, prepare: Prepare) -> None:
        self.prepare = prepare  # the general path's line splitter (`logs.prepare`), for representatives
        self.known = pl.DataFrame(schema={"_h1": pl.UInt64, "_h2": pl.UInt64, "shape": pl.Int64})  # null: rejected
        self.shapes = S.empty(S.COLL_SHAPES)  # every accepted shape so far
        self.next_shape = 0
        var = match.VARYING.get(_FAM)
        self.var = var
        self.before, self.after = G.neighbours(_FAM)[var] if var else ("", "")

    def split(self, raw: pl.DataFrame) -> tuple[CollLines, pl.DataFrame]:
        """(COLL lines taken by the lane, with the shapes first seen here; raw rows left for the general path)."""
        if self.var is None or raw.height < match.SMALL:
            return CollLines(), raw
        cand, rest = _cut(raw, self.before, self.after)
        if cand.height == 0:
            return CollLines(), raw
        first = self.next_shape
        # One line per shape of this batch: the first (a group-by on the two hashes, then a gather).
        first_rows = cand.lazy().with_row_index("_c").group_by(_KEY).agg(pl.col("_c").min()).collect()["_c"]
        reps = cand.gather(first_rows.sort())
        fresh = reps.join(self.known, on=_KEY, how="anti")
        if fresh.height:
            self._learn(fresh)
        rows = cand.join(self.known, on=_KEY, how="left", maintain_order="left")
        tok_ok = pl.col("_tok").str.contains(rf"^(?:{G.rule_regex(self.var, capture=False)})$")
        hit = (tok_ok & pl.col("shape").is_not_null()).alias("_hit")
        rows = rows.with_columns(hit)
        if not rows["_hit"].all():
            rest = pl.concat([rest, rows.filter(~pl.col("_hit")).select(rest.columns)]).sort("_i")
            rows = rows.filter(pl.col("_hit"))
        typed = typed_fields(rows.select(pl.col("_tok").alias(f"f_{self.var}")), _FAM)
        out = rows.select("path", "line", typed[self.var].alias("op_count"), "shape", pl.col("raw").alias("text"))
        new_shapes = self.shapes.filter(pl.col("shape") >= first)
        return CollLines(rows=S.conform(out, S.COLL_ROWS), shapes=new_shapes), rest.drop("_i")

    def own(self, df: pl.DataFrame) -> CollLines:
        """COLL rows from the general path (schema.COLLECTIVES), each its own shape."""
        out = CollLines.of(df, self.next_shape)
        self.next_shape += df.height
        return out

    def _learn(self, reps: pl.DataFrame) -> None:
        """Parse one representative per new shape; number the accepted ones, remember all of them."""
        assert self.var is not None
        numbered = reps.with_columns(pl.int_range(pl.len()).alias("_rep"))
        line = (pl.col("raw").str.head(pl.col("_la")) + pl.lit("0") + pl.col("raw").str.tail(pl.col("_lb")))
        good = _accepted(numbered.select("path", pl.col("_rep").alias("line"), line.alias("raw")),
                         self.prepare, self.var, self.before)
        good = good.sort("_rep").with_columns(
            pl.int_range(self.next_shape, self.next_shape + pl.len(), dtype=pl.Int64).alias("shape"))
        self.next_shape += good.height
        self.shapes = pl.concat([self.shapes, S.conform(good, S.COLL_SHAPES)])
        seen = numbered.select(*_KEY, "_rep").join(good.select("_rep", "shape"), on="_rep", how="left")
        self.known = pl.concat([self.known, seen.select(*_KEY, "shape")])


def _accepted(reps: pl.DataFrame, prepare: Prepare, var: str, before: str) -> pl.DataFrame:
    """Per representative (`_rep`) that parses as COLL with `var` == 0: its columns (no path/text/`var`)."""
    table = FAMILIES[_FAM].table
    once = reps.filter(pl.col("raw").str.count_matches(before, literal=True) == 1)
    df = prepare(once)
    matched, _ = match.match_families(df.filter(pl.col("prefixed") & (pl.col("level") == "INFO")))
    got = matched.tables.get(table, S.empty(TABLES[table])).filter(pl.col(var) == 0)
    return got.drop("path", "text", var).rename({"line": "_rep"})
