"""Parse stage, application output: each Python exception line with the traceback and launcher record it ends.

A traceback is the rows of one output stream (one file, one rank tag) from `Traceback (most recent call
last):` to the first exception line after it (`ExcType: message`); its frame lines are not TORCH rows,
so blocks are found on the TORCH frame alone, vectorised: a block id per stream is the running count of
traceback starts. A block whose start follows `-- Process N terminated with the following error:`
(torch.multiprocessing.spawn) belongs to process N; one whose start is a torchrun ChildFailedError
record's `traceback : Traceback …` belongs to the rank of that record's `rank : R (local_rank: L)` line.
"""

from __future__ import annotations

import polars as pl

EXCEPTIONS: dict[str, pl.DataType | type[pl.DataType]] = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
    "rank": pl.Int64,  # the line's rank tag, or the torchrun record's rank
    "local_rank": pl.Int64,  # spawn's process index (`-- Process N terminated …`)
    "exc_type": pl.Utf8,
    "message": pl.Utf8,
    "kind": pl.Utf8,  # the TORCH kind of the line (exception, backend_error, gloo_peer_lost, …)
    "via": pl.Utf8,  # spawn | torchrun_table | traceback | line (an exception line outside a traceback)
    "block_line": pl.Int64,  # the `Traceback (most recent call last):` line
    "block_text": pl.Utf8,
    "link_line": pl.Int64,  # spawn's `-- Process N` line or the table's `rank :` line
    "link_text": pl.Utf8,
}
_RECORD_SPAN = 6  # a table record's `traceback :` line is 3 lines below its `rank :` line
_LINK_KINDS = ("traceback", "spawn", "launcher")


def exceptions(torch: pl.DataFrame) -> pl.DataFrame:
    """One row per exception line of the TORCH frame (`exc_type` set), linked to its traceback and launcher."""
    t = torch.filter(pl.col("kind").is_in(_LINK_KINDS) | pl.col("exc_type").is_not_null())
    if t.is_empty():
        return pl.DataFrame(schema=EXCEPTIONS)
    t = t.sort("path", "line").pipe(_streams).pipe(_blocks).pipe(_links)
    exc = t.filter(pl.col("exc_type").is_not_null())
    first = pl.int_range(pl.len()).over("path", "_s", "_blk") == 0  # only a block's first exception ends it
    in_block = (pl.col("_blk") > 0) & first
    via = (
        pl.when(~in_block)
        .then(pl.lit("line"))
        .when(pl.col("_local").is_not_null())
        .then(pl.lit("spawn"))
        .when(pl.col("_trank").is_not_null())
        .then(pl.lit("torchrun_table"))
        .otherwise(pl.lit("traceback"))
    )
    after = pl.col("text").str.find(pl.col("exc_type"), literal=True) + pl.col("exc_type").str.len_chars() + 1
    return (
        exc.with_columns(
            via.alias("via"),
            pl.when(in_block).then(pl.coalesce("_trank", "_s")).otherwise(pl.col("_s")).alias("rank"),
            pl.when(in_block).then(pl.col("_local")).otherwise(pl.col("local_rank")).alias("local_rank"),
            pl.when(in_block).then(pl.col("_start")).alias("block_line"),
            pl.when(in_block).then(pl.col("_stext")).alias("block_text"),
            pl.when(in_block).then(pl.col("_lline")).alias("link_line"),
            pl.when(in_block).then(pl.col("_ltext")).alias("link_text"),
            pl.col("text").str.slice(after.fill_null(0)).str.strip_chars().alias("message"),
        )
        .select(list(EXCEPTIONS))
        .cast(EXCEPTIONS)  # type: ignore[arg-type]
    )


def _streams(t: pl.DataFrame) -> pl.DataFrame:
    # The stream is the rank tag a wrapper or the line itself carries; launcher and spawn lines name
    # ranks in their text, which is not a tag.
    tag = pl.when(~pl.col("kind").is_in(["launcher", "spawn"])).then(pl.col("rank"))
    return t.with_columns(pl.coalesce("rank_hint", tag).alias("_s"))


def _blocks(t: pl.DataFrame) -> pl.DataFrame:
    start = (pl.col("kind") == "traceback") & pl.col("detail").is_in(["start", "table"])
    return t.with_columns(
        start.alias("_is_start"), start.cast(pl.Int64).cum_sum().over("path", "_s").alias("_blk")
    )


def _links(t: pl.DataFrame) -> pl.DataFrame:
    """Per block: its start line, spawn's process index and the torchrun record's rank, when they link."""
    over = ["path", "_s"]
    prev_spawn = (pl.col("kind").shift(1).over(over) == "spawn") & (
        pl.col("detail").shift(1).over(over) == "process_error"
    )
    is_rank = (pl.col("kind") == "launcher") & pl.col("detail").str.starts_with("rank ")
    t = t.with_columns(
        pl.when(is_rank).then(pl.col("rank")).forward_fill().over(over).alias("_rr"),
        pl.when(is_rank).then(pl.col("line")).forward_fill().over(over).alias("_rl"),
        pl.when(is_rank).then(pl.col("text")).forward_fill().over(over).alias("_rt"),
    )
    table = (
        pl.col("_is_start")
        & (pl.col("detail") == "table")
        & ((pl.col("line") - pl.col("_rl")) <= _RECORD_SPAN)
    )
    spawn = pl.col("_is_start") & prev_spawn
    t = t.with_columns(
        pl.when(spawn).then(pl.col("local_rank").shift(1).over(over)).alias("_local"),
        pl.when(table).then(pl.col("_rr")).alias("_trank"),
        pl.when(spawn)
        .then(pl.col("line").shift(1).over(over))
        .when(table)
        .then(pl.col("_rl"))
        .alias("_lline"),
        pl.when(spawn)
        .then(pl.col("text").shift(1).over(over))
        .when(table)
        .then(pl.col("_rt"))
        .alias("_ltext"),
        pl.when(pl.col("_is_start")).then(pl.col("line")).alias("_start"),
        pl.when(pl.col("_is_start")).then(pl.col("text")).alias("_stext"),
    )
    blk = ["path", "_s", "_blk"]
    return t.with_columns(
        pl.col(c).first().over(blk) for c in ("_local", "_trank", "_lline", "_ltext", "_start", "_stext")
    )
