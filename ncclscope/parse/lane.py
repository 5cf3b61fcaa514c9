"""Parse stage, shape lane: lines of a family with one varying field (COLL's opCount), parsed once per shape.

COLL lines are most of a big log and differ mostly in one field. Before any per-line work, every raw
line that holds the two literals the grammar puts around that field (`G.neighbours`, for COLL
`: opCount ` and ` sendbuff `) is cut there: the token between them is kept, and the rest of the line —
its *shape*, the text before plus the text after — is hashed (two 64-bit hashes plus both lengths).
One representative line per distinct shape, with the token replaced by `0` (a valid value), goes
through the general path (`prepare` + `match_families`: the grammar's regexes). A shape is accepted
when its representative comes out as that family, prefixed, at INFO level, with the field reading 0 at
the only occurrence of the literal; then every line of the shape gets the representative's columns and
its own path, line, text and token value (checked with the field's own rule, cast as the general path
casts it). Lines of rejected shapes, bad tokens or over `MAX_TEXT` characters take the general path.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.parse import fastpath
from ncclscope.parse.families import FAMILIES
from ncclscope.parse.transform import TABLES, typed_fields

MAX_TEXT = 2000  # characters of the original line kept in `text` (evidence)
_KEY = ["_h1", "_h2"]  # 2 x 64-bit hashes of the text before and after the token


def _cut(raw: pl.DataFrame, before: str, after: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(candidate rows with `_tok` and the shape key, other rows) of (`path`, `line`, `raw`)."""
    r = pl.col("raw")
    n = r.str.len_bytes()
    lf = raw.lazy().with_row_index("_i").with_columns(
        (r.str.find(before, literal=True) + len(before)).alias("_a"), r.str.find(after, literal=True).alias("_b"))
    ok = (pl.col("_b") > pl.col("_a")).fill_null(False) & (n <= MAX_TEXT)
    both = lf.with_columns(ok.alias("_in")).collect(engine="streaming")  # morsels on every core, order kept
    cand = both.filter(pl.col("_in")).lazy().select(
        "_i", "path", "line", "raw", r.str.slice(pl.col("_a"), pl.col("_b") - pl.col("_a")).alias("_tok"),
        pl.col("_a").alias("_la"), (n - pl.col("_b")).alias("_lb"),
        r.str.head(pl.col("_a")).hash().alias("_h1"), r.str.tail(n - pl.col("_b")).hash().alias("_h2"),
    ).collect(engine="streaming")
    return cand, both.filter(~pl.col("_in")).select("_i", *raw.columns)


def split_lane(raw: pl.DataFrame, prepare: Callable[[pl.DataFrame], pl.DataFrame]
               ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(COLL rows in the collectives schema, raw rows left for the general path).

    `prepare` is the general path's line splitter (`logs.prepare`), applied to the representatives only.
    """
    lanes = fastpath.VARYING
    if "coll" not in lanes or raw.height < fastpath.SMALL:
        return S.empty(S.COLLECTIVES), raw
    fam, var = "coll", lanes["coll"]
    before, after = G.neighbours(fam)[var]
    cand, rest = _cut(raw, before, after)
    if cand.height == 0:
        return S.empty(S.COLLECTIVES), raw
    tok_ok = pl.col("_tok").str.contains(rf"^(?:{G.rule_regex(var, capture=False)})$")
    reps = cand.filter(pl.struct(_KEY).is_first_distinct()).with_columns(pl.int_range(pl.len()).alias("_rep"))
    good = _accepted(reps.select("path", pl.col("_rep").alias("line"), (
        pl.col("raw").str.head(pl.col("_la")) + pl.lit("0") + pl.col("raw").str.tail(pl.col("_lb"))).alias("raw")),
        prepare, fam, var, before)
    good = reps.select([*_KEY, "_rep"]).join(good, on="_rep").drop("_rep")
    rows = cand.join(good, on=_KEY, how="left", maintain_order="left").with_columns(
        (tok_ok & pl.col("_good").fill_null(False)).alias("_hit"))
    if not rows["_hit"].all():
        rest = pl.concat([rest, rows.filter(~pl.col("_hit")).select(rest.columns)]).sort("_i")
        rows = rows.filter(pl.col("_hit"))
    typed = typed_fields(rows.select(pl.col("_tok").alias(f"f_{var}")), fam)
    out = rows.with_columns(typed[var], pl.col("raw").alias("text"))
    return S.conform(out, S.COLLECTIVES), rest.drop("_i")


def _accepted(reps: pl.DataFrame, prepare: Callable[[pl.DataFrame], pl.DataFrame],
              fam: str, var: str, before: str) -> pl.DataFrame:
    """Per representative (`_rep`) that parses as family `fam` with `var` == 0: its columns and `_good`."""
    table = FAMILIES[fam].table
    once = reps.filter(pl.col("raw").str.count_matches(before, literal=True) == 1)
    df = prepare(once)
    matched, _ = fastpath.match_families(df.filter(pl.col("prefixed") & (pl.col("level") == "INFO")))
    got = matched.tables.get(table, S.empty(TABLES[table])).filter(pl.col(var) == 0)
    return got.drop("path", "text", var).rename({"line": "_rep"}).with_columns(pl.lit(True).alias("_good"))
