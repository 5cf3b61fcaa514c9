"""Report stage, hang view: how far each rank got (last NCCL opCount, PyTorch work sequence numbers).

A pure function of the log frames; ranks behind the most advanced one, and ranks of the world
communicator that printed nothing of the kind, are marked.
"""

from __future__ import annotations

from typing import Any

import polars as pl

HANG_SCHEMA: dict[str, Any] = {
    "rank": pl.Int64,
    "host": pl.Utf8,
    "last_op": pl.Utf8,
    "last_op_count": pl.Int64,
    "last_enqueued": pl.Int64,
    "last_started": pl.Int64,
    "last_completed": pl.Int64,
    "timeout_seq": pl.Int64,
    "behind": pl.Boolean,
    "silent": pl.Boolean,
    "path": pl.Utf8,
    "line": pl.Int64,
}


def _rank_of_rows(df: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """Add `grank`: the global rank that printed each row, via (host, pid[, GPU]); else the launcher tag."""
    r = ranks.filter(pl.col("pid").is_not_null() & pl.col("rank").is_not_null()).select(
        pl.col("host").fill_null(""), "pid", "cuda_dev", "rank"
    )
    r = r.with_columns(n=pl.len().over("host", "pid"))
    one = r.filter(pl.col("n") == 1).select("host", "pid", pl.col("rank").alias("_r1"))
    many = r.filter(pl.col("n") > 1).select("host", "pid", "cuda_dev", pl.col("rank").alias("_r2"))
    out = df.with_columns(pl.col("host").fill_null("")).join(one, on=["host", "pid"], how="left")
    out = out.join(many, on=["host", "pid", "cuda_dev"], how="left", nulls_equal=False)
    return out.with_columns(grank=pl.coalesce("_r1", "_r2", "rank_hint")).drop("_r1", "_r2")


def _last_coll(logs: Any, ranks: pl.DataFrame) -> pl.DataFrame:
    colls = logs.collectives.filter(pl.col("op_count").is_not_null())
    if colls.is_empty():
        return pl.DataFrame(
            schema={
                "rank": pl.Int64,
                "last_op": pl.Utf8,
                "last_op_count": pl.Int64,
                "path": pl.Utf8,
                "line": pl.Int64,
            }
        )
    # Several communicators: follow the largest (the world), whose opCounts line up across ranks.
    world = colls["nranks"].max()
    if world is not None:
        colls = colls.filter(pl.col("nranks") == world)
    colls = _rank_of_rows(colls, ranks).filter(pl.col("grank").is_not_null())
    last = colls.sort("op_count", "line").group_by("grank").agg(pl.all().last())
    return last.select(
        pl.col("grank").alias("rank"),
        pl.col("op").alias("last_op"),
        pl.col("op_count").alias("last_op_count"),
        "path",
        "line",
    )


def _last_torch(logs: Any) -> pl.DataFrame:
    t: pl.DataFrame = logs.torch.filter(pl.col("rank").is_not_null())
    return t.group_by("rank").agg(
        pl.col("last_enqueued").max(),
        pl.col("last_started").max(),
        pl.col("last_completed").max(),
        pl.col("seq").filter(pl.col("kind") == "watchdog_timeout").max().alias("timeout_seq"),
        pl.col("path").first().alias("t_path"),
        pl.col("line").first().alias("t_line"),
    )


def hang(s: Any) -> pl.DataFrame:
    """Per rank: the last collective (NCCL opCount) and PyTorch work sequence numbers it reached.

    `behind` marks ranks whose last opCount / enqueued sequence is below the most advanced rank's;
    `silent` marks ranks of the world communicator that printed nothing of the kind.
    """
    coll, torch = _last_coll(s.logs, s.ranks), _last_torch(s.logs)
    if coll.is_empty() and torch.is_empty():
        return pl.DataFrame(schema=HANG_SCHEMA)
    df = coll.join(torch, on="rank", how="full", coalesce=True)
    nranks = s.comms["nranks"].max() if "nranks" in s.comms.columns and s.comms.height else None
    if isinstance(nranks, int) and nranks <= 4096:
        df = pl.DataFrame({"rank": list(range(nranks))}, schema={"rank": pl.Int64}).join(
            df, on="rank", how="full", coalesce=True
        )
    hosts = (
        s.ranks.filter(pl.col("rank").is_not_null()).group_by("rank").agg(pl.col("host").drop_nulls().first())
    )
    df = df.join(hosts, on="rank", how="left")
    behind = pl.lit(False)
    for c in ("last_op_count", "last_enqueued", "last_completed"):
        behind = behind | (pl.col(c) < pl.col(c).max()).fill_null(False)
    progress = ["last_op_count", "last_enqueued", "last_started", "last_completed", "timeout_seq"]
    silent = pl.all_horizontal(pl.col(c).is_null() for c in progress)
    df = df.with_columns(
        behind=behind, silent=silent, path=pl.coalesce("path", "t_path"), line=pl.coalesce("line", "t_line")
    )
    return df.select(list(HANG_SCHEMA)).cast(HANG_SCHEMA).sort("rank")  # type: ignore[arg-type]
