"""Findings stage, fatal trails: a WARN whose error NCCL carried back out of the API call that hit it.

NCCL's NCCLCHECK prints `file:line -> <ncclResult_t>` at every frame an error passes through (src/include/
checks.h, INFO level). A WARN whose own thread's trail then reaches the API boundary (`group.cc`: the group
or async init job that ncclCommInitRank*/ncclGroupEnd wait for; `init.cc`: communicator creation) with a
non-zero result failed the call: whatever its family's usual weight, that WARN ended the operation (RCCL's
`Failed to find reverse path` then `paths.cc -> 3 … group.cc:68 -> 3 [Async thread]` is an init that
failed, not a topology hint). The trail is read until the thread's next WARN.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ncclscope.findings.registry import Context

# Source files where an error leaves NCCL through its API (relative to src/, with or without a build path).
API_BOUNDARY = r"(?:^|/)(?:group|init)\.cc$"
_KEYS = ["path", "host", "pid", "tid"]


@dataclass(frozen=True)
class FatalTrail:
    """The trail frame at the API boundary a WARN's error reached: where, and the result code."""

    src_file: str
    src_line: int
    code: int
    line: int  # the trail line's own line in the input

    def words(self) -> str:
        return f"NCCL returned error {self.code} through {self.src_file.rsplit('/', 1)[-1]}:{self.src_line}"


def _keyed(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        pl.col("host").fill_null(""), pl.col("pid").fill_null(-1), pl.col("tid").fill_null(-1)
    )


def fatal_trail(ctx: Context, rows: pl.DataFrame) -> FatalTrail | None:
    """The first API-boundary trail frame (non-zero code) that follows one of `rows` (WARN lines) on its
    own thread before that thread's next WARN; None when no row's error left NCCL that way."""
    trail = ctx.logs.trail
    if trail.is_empty() or rows.is_empty():
        return None
    warns = _keyed(ctx.logs.warnings.filter(pl.col("level") == "WARN")).select(*_KEYS, "line")
    mine = _keyed(rows).select(*_KEYS, "line").unique()
    nxt = (
        mine.join(warns.rename({"line": "_w"}), on=_KEYS, how="left")
        .with_columns(pl.when(pl.col("_w") > pl.col("line")).then(pl.col("_w")).alias("_w"))
        .group_by(*_KEYS, "line")
        .agg(pl.col("_w").min().alias("_until"))
    )
    t = _keyed(trail).filter(
        (pl.col("code").fill_null(0) != 0) & pl.col("src_file").fill_null("").str.contains(API_BOUNDARY)
    )
    hit = (
        nxt.join(t.select(*_KEYS, pl.col("line").alias("_t"), "src_file", "src_line", "code"), on=_KEYS)
        .filter(
            (pl.col("_t") > pl.col("line")) & (pl.col("_until").is_null() | (pl.col("_t") < pl.col("_until")))
        )
        .sort("_t")
    )
    if hit.is_empty():
        return None
    r = hit.row(0, named=True)
    return FatalTrail(str(r["src_file"]), int(r["src_line"] or 0), int(r["code"]), int(r["_t"]))
