"""Align stage, hangs: per-communicator facts from NCCL COLL lines (last opCount per rank, mismatches).

The COLL frame is big (one row per collective per rank: millions on large jobs) while the Init
lines that map a COLL row to its communicator are few. A row's communicator and rank depend only
on (host, pid, comm_ptr, rank_hint, nranks) — the Init line of that process and pointer gives
commId, rank and size, the row's own rank hint and size are the fallbacks — so every function
here first aggregates the COLL frame by those keys (`_PRE`), resolves the few resulting rows
against the Init lines, and fetches the text of the handful of evidence rows by row index. Lazy
and vectorised throughout.
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
    """Columns `cols` of the COLL rows at row indices `idx` (a gather: no pass over the big frame)."""
    return logs.collectives.select(cols).gather(idx)


def coll_progress(logs: LogFrames) -> pl.DataFrame:
    """Per (communicator, rank): last opCount seen in COLL lines and the op it launched (the first
    line carrying that opCount), with the number of COLL lines."""
    if logs.collectives.is_empty():
        return S.empty(COLL_PROGRESS)
    first_max = pl.col("_i").filter(pl.col("_m") == pl.col("_m").max()).min()
    pre = (logs.collectives.lazy().select(*_PRE, pl.col("op_count").alias("_m")).with_row_index("_i")
           .filter(pl.col("_m").is_not_null())
           .group_by(_PRE).agg(pl.col("_m").max(), first_max, pl.len().cast(pl.Int64).alias("n_coll")))
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
    if logs.collectives.is_empty():
        return S.empty(MISMATCHES)
    sig_cols = ["op", "count", "datatype"]
    # Integer keys only on the big frame: the op name as its categorical code, the communicator as
    # (number of its commId among the Init lines, 0 for none; size).
    rows = (logs.collectives.lazy().with_row_index("_i")
            .filter(~pl.col("op").is_in(["Send", "Recv"]) & pl.col("op_count").is_not_null())
            .select("_i", *_PRE, "op_count", pl.col("op").cast(pl.Categorical).to_physical().alias("_op"),
                    "count", "datatype"))
    rows = _resolve(rows, logs, numbered=True)
    keys = ["_cid", "cnranks", "op_count"]
    bad = (rows.group_by(keys).agg([pl.col(c).n_unique().alias(f"_n{c}") for c in ["_op", "count", "datatype"]])
           .filter(pl.any_horizontal(pl.col("^_n.*$") > 1)).select(keys).collect())
    if bad.is_empty():  # the usual case: one pass over the COLL frame
        return S.empty(MISMATCHES)
    hit = rows.join(bad.lazy(), on=keys, how="semi").select(*keys, "comm_id", "crank", "_i").collect()
    sig = pl.format("{} count {} datatype {}", *sig_cols).alias("sig")
    hit = pl.concat([hit, _rows(logs, hit["_i"], ["path", "line", "text", *sig_cols])], how="horizontal")
    g = (hit.with_columns(sig).sort("line", "_i").group_by(keys, maintain_order=True)
         .agg(pl.col("crank").alias("ranks"), pl.col("sig").alias("sigs"), pl.col("path").first(),
              pl.col("line").first(), pl.col("text").first(), pl.col("comm_id").first())
         .with_columns(_comm_key()))
    return S.conform(g, MISMATCHES).sort("comm", "op_count")
