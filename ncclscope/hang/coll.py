"""Hang stage: per-communicator facts from NCCL COLL lines (last opCount per rank, mismatches).

The COLL frame is big (one row per collective per rank: millions on large jobs) while the Init
lines that map a COLL row to its communicator are few. A row's communicator and rank depend only
on (host, pid, comm_ptr, rank_hint, nranks) — the Init line of that process and pointer gives
commId, rank and size, the row's own rank hint and size are the fallbacks — so every function
here works on the compact COLL lines (`frames.CollLines`): every one of those keys is a property of
a line's shape, so the big frame is aggregated by its integer `shape`, the few shapes are resolved
against the Init lines (`_PRE`), and the handful of evidence rows are fetched by row index. Lazy and
vectorised throughout.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.frames import LogFrames

COLL_PROGRESS: S.Schema = {
    "comm": pl.Utf8,  # commId, else `nranks=N` when no Init line maps the pointer
    "rank": pl.Int64,
    "nranks": pl.Int64,
    "last_op_count": pl.Int64,
    "last_op": pl.Utf8,
    "last_count": pl.Int64,
    "last_datatype": pl.Int64,
    "n_coll": pl.Int64,
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}

MISMATCHES: S.Schema = {
    "comm": pl.Utf8,
    "op_count": pl.Int64,
    "ranks": pl.List(pl.Int64),  # ranks of the communicator at that opCount, in line order
    "sigs": pl.List(pl.Utf8),  # `<op> count <n> datatype <d>` of each of those lines
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}

# Everything a COLL row's communicator and rank depend on.
_PRE = ["host", "pid", "comm_ptr", "rank_hint", "nranks"]
# A communicator: commId plus size (a commId seen with two sizes stays two groups).
_COMM = ["comm_id", "cnranks"]


def _inits(logs: LogFrames) -> pl.LazyFrame:
    """Per (host, pid, comm_ptr): commId, rank and size from the Init lines; `_cid` numbers the
    commIds (1, 2, …; 0 for none) so that big frames can group by an integer."""
    ini = (logs.inits.lazy().filter(pl.col("comm_ptr").is_not_null() & pl.col("rank").is_not_null())
            .group_by("host", "pid", "comm_ptr")
            .agg(pl.col("comm_id").drop_nulls().first(), pl.col("rank").first().alias("_crank"),
                 pl.col("nranks").drop_nulls().first().alias("_cn")))
    return ini.with_columns(pl.col("comm_id").rank("dense").fill_null(0).alias("_cid"))


def _resolve(pre: pl.LazyFrame, logs: LogFrames, *, numbered: bool = False) -> pl.LazyFrame:
    """Rows keyed by `_PRE` with their communicator and rank: `comm_id` (null when no Init line maps
    the pointer), `crank`, `cnranks`; rows whose rank is unknown are dropped."""
    ini = _inits(logs) if numbered else _inits(logs).drop("_cid")
    c = pre.join(ini, on=["host", "pid", "comm_ptr"], how="left")
    c = c.with_columns(pl.col("_cid").fill_null(0)) if numbered else c
    return c.with_columns(pl.coalesce("_crank", "rank_hint").alias("crank"),
                          pl.coalesce("_cn", "nranks").alias("cnranks")).filter(pl.col("crank").is_not_null())


def _comm_key() -> pl.Expr:
    # Without an Init line the communicator is only known by its size (one comm per size assumed).
    return pl.coalesce("comm_id", pl.format("nranks={}", "cnranks")).alias("comm")


def _rows(logs: LogFrames, idx: pl.Series, cols: list[str]) -> pl.DataFrame:
    """Columns `cols` of the COLL lines at row indices `idx` (a gather and a join with the few shapes
    involved: no pass over the big frame)."""
    rows = logs.coll.rows.gather(idx)
    shape_cols = [c for c in cols if c not in rows.columns]
    if shape_cols:
        rows = rows.join(logs.coll.shapes.select("shape", *shape_cols), on="shape", how="left", maintain_order="left")
    return rows.select(cols)


def _per_shape(logs: LogFrames, *cols: str) -> pl.LazyFrame:
    """Shape number with columns `cols` of each shape (a few rows per process and communicator)."""
    return logs.coll.shapes.lazy().select("shape", *cols)


def coll_progress(logs: LogFrames) -> pl.DataFrame:
    """Per (communicator, rank): last opCount seen in COLL lines and the op it launched (the first
    line carrying that opCount), with the number of COLL lines."""
    if logs.coll.rows.is_empty():
        return S.empty(COLL_PROGRESS)
    first_max = pl.col("_i").filter(pl.col("_m") == pl.col("_m").max()).min()
    per_shape = (logs.coll.rows.lazy().select("shape", pl.col("op_count").alias("_m")).with_row_index("_i")
                 .filter(pl.col("_m").is_not_null())
                 .group_by("shape").agg(pl.col("_m").max(), first_max, pl.len().cast(pl.Int64).alias("n_coll")))
    pre = (per_shape.join(_per_shape(logs, *_PRE), on="shape")
           .group_by(_PRE).agg(pl.col("_m").max(), first_max, pl.col("n_coll").sum()))
    out = (_resolve(pre, logs).group_by(*_COMM, "crank")
           .agg(pl.col("_m").max().alias("last_op_count"), first_max, pl.col("n_coll").sum())
           .with_columns(_comm_key(), pl.col("cnranks").alias("nranks"), pl.col("crank").alias("rank"))
           .sort("comm", "rank").collect())
    last = _rows(logs, out["_i"], ["op", "count", "datatype", "path", "line", "text"]).rename(
        {"op": "last_op", "count": "last_count", "datatype": "last_datatype"})
    return S.conform(pl.concat([out.drop("_i"), last], how="horizontal"), COLL_PROGRESS)


def coll_mismatches(logs: LogFrames) -> pl.DataFrame:
    """(comm, op_count) where ranks launched different collectives (op, count or datatype differ).
    Send/Recv lines and lines without an opCount take no part."""
    if logs.coll.rows.is_empty():
        return S.empty(MISMATCHES)
    sig_cols = ["op", "count", "datatype"]
    # Per shape (few rows): its communicator as (number of its commId among the Init lines, 0 for
    # none; size), its rank and its signature as one integer; the big frame only joins integers.
    shapes = (_per_shape(logs, *_PRE, *sig_cols).filter(~pl.col("op").is_in(["Send", "Recv"]))
              .with_columns(pl.struct(sig_cols).rank("dense").alias("_sig")))
    shapes = _resolve(shapes, logs, numbered=True).select("shape", "_cid", "cnranks", "crank", "comm_id", "_sig")
    keys = ["_cid", "cnranks", "op_count"]
    rows = (logs.coll.rows.lazy().with_row_index("_i").filter(pl.col("op_count").is_not_null())
            .select("_i", "shape", "op_count").join(shapes, on="shape"))
    bad = (rows.group_by(keys).agg((pl.col("_sig").min() != pl.col("_sig").max()).alias("_bad"))
           .filter(pl.col("_bad")).select(keys).collect())
    if bad.is_empty():  # the usual case: one pass over the COLL rows
        return S.empty(MISMATCHES)
    hit = rows.join(bad.lazy(), on=keys, how="semi").select(*keys, "comm_id", "crank", "_i").collect()
    sig = pl.format("{} count {} datatype {}", *sig_cols).alias("sig")
    hit = pl.concat([hit, _rows(logs, hit["_i"], ["path", "line", "text", *sig_cols])], how="horizontal")
    g = (hit.with_columns(sig).sort("line", "_i").group_by(keys, maintain_order=True)
         .agg(pl.col("crank").alias("ranks"), pl.col("sig").alias("sigs"), pl.col("path").first(),
              pl.col("line").first(), pl.col("text").first(), pl.col("comm_id").first())
         .with_columns(_comm_key()))
    return S.conform(g, MISMATCHES).sort("comm", "op_count")
