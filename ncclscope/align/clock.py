"""Align stage, traces: per-host (or per-rank) clock offsets from collective completions.

Every rank leaves a blocking collective (all-reduce, all-gather, reduce-scatter, all-to-all) within a
few µs of the others, whoever arrived late. So the median, over collectives, of each clock's
completion residual (its end minus the median end of that collective) is that clock's offset;
stragglers delay the completion for everyone and so do not bias it.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S

# Ops whose completion is simultaneous on all ranks (a rooted broadcast/reduce lets the root leave early).
BLOCKING_OPS = ("allreduce", "allgather", "reduce_scatter", "alltoall", "barrier")


def estimate_offsets(rows: pl.DataFrame) -> pl.DataFrame:
    """Offsets (CLOCK_OFFSETS) from `rows` with coll_id, rank, host, end_us of complete collectives.

    Hosts are the clocks when every row names one; otherwise each rank is its own clock. Offsets are
    relative to the clock of the lowest rank, which is taken as the reference (offset 0).
    """
    rows = rows.filter(pl.col("end_us").is_not_null() & (pl.len().over("coll_id") >= 2))
    if rows.is_empty():
        return S.empty(S.CLOCK_OFFSETS)
    by_host = rows["host"].null_count() == 0
    key = "host" if by_host else "rank"
    resid = rows.with_columns((pl.col("end_us") - pl.col("end_us").median().over("coll_id")).alias("resid"))
    per = (
        resid.group_by(key)
        .agg(
            pl.col("resid").median().alias("offset_us"),
            pl.len().alias("n_samples"),
            pl.col("rank").min().alias("min_rank"),
            ((pl.col("resid") - pl.col("resid").median()).abs().median()).alias("spread_us"),
        )
        .sort("min_rank")
    )
    ref = per["offset_us"][0]
    per = per.with_columns((pl.col("offset_us") - ref).alias("offset_us"), pl.lit(key).alias("basis"))
    if by_host:
        per = per.with_columns(pl.lit(None, dtype=pl.Int64).alias("rank"))
    else:
        per = per.with_columns(pl.lit(None, dtype=pl.Utf8).alias("host"))
    return S.conform(per, S.CLOCK_OFFSETS)


def apply_offsets(df: pl.DataFrame, offsets: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    """Subtract each row's clock offset from `cols` (rows of a clock with no estimate stay as they are)."""
    if offsets.is_empty():
        return df.with_columns(pl.lit(0.0).alias("clock_offset_us"))
    key = offsets["basis"][0]
    off = offsets.select(key, pl.col("offset_us").alias("clock_offset_us"))
    df = df.join(off, on=key, how="left").with_columns(pl.col("clock_offset_us").fill_null(0.0))
    return df.with_columns(*(pl.col(c) - pl.col("clock_offset_us") for c in cols))
