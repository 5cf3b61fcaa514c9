"""Parse stage, streams: per (file, host, pid or rank tag) the span of its lines, from parts read apart.

A stream is what one process (or one rank tag of a launcher) printed to one file: first and last
line, number of lines, last timestamp and last line (schema.STREAMS), for the hang analysis. Parts
of a stream come from different batches, paths (COLL lines, inert lines, the general path) and
processes; each part carries the line of its first rank hint and of its last timestamp, so that the
merged stream is what one pass over all its lines in order would give.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ncclscope import schema as S

KEY = ["path", "host", "pid", "_rk"]
PART: S.Schema = {
    "path": pl.Utf8,
    "host": pl.Utf8,
    "pid": pl.Int64,
    "_rk": pl.Int64,
    "rank_hint": pl.Int64,
    "_rh_line": pl.Int64,
    "first_line": pl.Int64,
    "last_line": pl.Int64,
    "n_lines": pl.Int64,
    "last_ts_us": pl.Float64,
    "_ts_line": pl.Int64,
    "last_text": pl.Utf8,
}
SHIFTED = ("_rh_line", "first_line", "last_line", "_ts_line")  # line columns, shifted when a file was cut


def part(df: pl.DataFrame, *, pid: bool = True) -> pl.DataFrame:
    """Stream parts of rows in line order with path, line, host, pid, rank_hint, ts_us, text (lines with
    a pid or a rank hint only; `pid=False`: rows known to have none, keyed by their rank hint alone)."""
    hinted, timed = pl.col("rank_hint").is_not_null(), pl.col("ts_us").is_not_null()
    live = df.lazy().filter(pl.col("pid").is_not_null() | hinted) if pid else df.lazy().filter(hinted)
    rk = (
        pl.when(pl.col("pid").is_null()).then(pl.col("rank_hint")).alias("_rk")
        if pid
        else pl.col("rank_hint").alias("_rk")
    )
    out = (
        live.with_columns(rk)
        .group_by(KEY)
        .agg(
            pl.col("rank_hint").drop_nulls().first(),
            pl.col("line").filter(hinted).first().alias("_rh_line"),
            pl.col("line").first().alias("first_line"),
            pl.col("line").last().alias("last_line"),
            pl.len().cast(pl.Int64).alias("n_lines"),
            pl.col("ts_us").drop_nulls().last().alias("last_ts_us"),
            pl.col("line").filter(timed).last().alias("_ts_line"),
            pl.col("text").last().alias("last_text"),
        )
    )
    return S.conform(out.collect(), PART)


def from_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """Stream parts of runs of lines that share host, pid, rank hint and timestamp (COLL runs of one head)."""
    live = runs.filter(pl.col("pid").is_not_null() | pl.col("rank_hint").is_not_null())
    out = live.select(
        "path",
        "host",
        "pid",
        pl.when(pl.col("pid").is_null()).then(pl.col("rank_hint")).alias("_rk"),
        "rank_hint",
        pl.when(pl.col("rank_hint").is_not_null()).then(pl.col("first_line")).alias("_rh_line"),
        "first_line",
        "last_line",
        "n_lines",
        pl.col("ts_us").alias("last_ts_us"),
        (
            pl.col("ts_line")  # the last line with a timestamp (lines of a run may differ: `collfacts`)
            if "ts_line" in runs.columns
            else pl.when(pl.col("ts_us").is_not_null()).then(pl.col("last_line"))
        ).alias("_ts_line"),
        "last_text",
    )
    return merge([S.conform(out, PART)])


def merge(parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Parts of the same streams -> one row per stream (streams.PART columns)."""
    live = [p for p in parts if p.height]
    if not live:
        return S.empty(PART)
    df = pl.concat(live, how="vertical_relaxed")
    first_hint = pl.col("_rh_line") == pl.col("_rh_line").min()
    last_ts = pl.col("_ts_line") == pl.col("_ts_line").max()
    last = pl.col("last_line") == pl.col("last_line").max()
    out = df.group_by(KEY).agg(
        pl.col("rank_hint").filter(first_hint).first(),
        pl.col("_rh_line").min(),
        pl.col("first_line").min(),
        pl.col("last_line").max(),
        pl.col("n_lines").sum(),
        pl.col("last_ts_us").filter(last_ts).first(),
        pl.col("_ts_line").max(),
        pl.col("last_text").filter(last).first(),
    )
    return S.conform(out, PART)


def final(df: pl.DataFrame) -> pl.DataFrame:
    """Merged parts -> schema.STREAMS, ordered by file and first line."""
    return S.conform(df.sort(["path", "first_line"]), S.STREAMS)
