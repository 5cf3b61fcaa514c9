"""Parse stage, timestamps: distrust the sub-second part NCCL 2.26.2 writes.

NCCL 2.26.2's debug.cc formats the `%Nf` field of NCCL_DEBUG_TIMESTAMP_FORMAT as
`tv_nsec / (1000000 / 10^N)` into N characters: the first N digits of the *microseconds*, not of
the fraction of a second (2.26.3 divides by 1000000000). Any instant below 0.1 s into a second
is misread, by up to ~0.9 s (about 10% of lines). Lines of a process that printed
`NCCL version 2.26.2` keep whole seconds only; within a second, line order stands.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl

from ncclscope.frames import LogFrames

BAD_VERSION = r"^2\.26\.2(?:[+-]|$)"
_US = 1_000_000.0


def _affected_paths(logs: LogFrames) -> list[str]:
    v = logs.versions
    if v.is_empty():
        return []
    bad = v.filter((pl.col("kind") == "nccl") & pl.col("value").str.contains(BAD_VERSION))
    return sorted(bad["path"].drop_nulls().unique().to_list())


def distrust_subseconds(logs: LogFrames) -> LogFrames:
    """`logs` with the sub-second part of NCCL-prefixed timestamps dropped in NCCL 2.26.2 files,
    plus one note per file saying how many lines were cut to whole seconds."""
    paths = _affected_paths(logs)
    if not paths:
        return logs
    hit = pl.col("path").is_in(paths) & pl.col("host").is_not_null() & pl.col("ts_us").is_not_null()
    frac = hit & ((pl.col("ts_us") % _US) != 0)
    changes: dict[str, pl.DataFrame] = {}
    counts: dict[str, int] = {}
    for f in dataclasses.fields(logs):
        df = getattr(logs, f.name)
        if not isinstance(df, pl.DataFrame) or not {"path", "host", "ts_us"} <= set(df.columns):
            continue
        cut = df.filter(frac).group_by("path").len()
        if cut.is_empty():
            continue
        for p, k in cut.iter_rows():
            counts[str(p)] = counts.get(str(p), 0) + int(k)
        changes[f.name] = df.with_columns(
            pl.when(frac)
            .then((pl.col("ts_us") / _US).floor() * _US)
            .otherwise(pl.col("ts_us"))
            .alias("ts_us")
        )
    if not changes:
        return logs
    notes = tuple(
        f"{p}: NCCL 2.26.2 writes wrong sub-second timestamps (fixed in 2.26.3); {k} row(s) "
        "kept to whole seconds, ordered by line within a second"
        for p, k in sorted(counts.items())
    )
    fields: dict[str, Any] = {**changes, "notes": logs.notes + notes}
    return dataclasses.replace(logs, **fields)
