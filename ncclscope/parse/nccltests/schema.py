"""Parse stage, nccl-tests: the declared schemas of the frames the reader builds.

Kept here until they move to `ncclscope.schema` with the other stages' schemas.
"""

from __future__ import annotations

import polars as pl

Schema = dict[str, pl.DataType | type[pl.DataType]]

# One row per (result line, placement): nccl-tests prints out-of-place then in-place on one line.
# `line` is 0 for rows read from `-J` JSON (then `text` names the entry).
NCCLTESTS_RESULTS: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "run": pl.Int64,  # k-th `# nThread …` header of the file (0 before the first)
    "op": pl.Utf8,  # all_reduce, all_gather, … from the program name (`all_reduce_perf`); null when never named
    "size_bytes": pl.Int64,
    "count": pl.Int64,
    "dtype": pl.Utf8,
    "redop": pl.Utf8,  # sum, none, … (absent from some pre-2.13 tables)
    "root": pl.Int64,  # -1 when the collective has none
    "placement": pl.Utf8,  # "out" | "in"
    "time_us": pl.Float64,
    "algbw_gbps": pl.Float64,
    "busbw_gbps": pl.Float64,
    "wrong": pl.Int64,  # `#wrong` elements (2.13+); null when N/A or when the table has an `error` column
    "max_error": pl.Float64,  # the `error` column of nccl-tests < 2.13 (maximum deviation), else null
    "text": pl.Utf8,
}

NCCLTESTS_DEVICES: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "run": pl.Int64,
    "rank": pl.Int64,
    "group": pl.Int64,
    "pid": pl.Int64,
    "host": pl.Utf8,
    "device": pl.Int64,  # CUDA device index
    "busid": pl.Utf8,  # as printed: 0x35 (< 2.14.1) or 0000:02:00
    "gpu_name": pl.Utf8,
    "text": pl.Utf8,
}

# One row per run that printed its footer.
NCCLTESTS_SUMMARY: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,  # the `# Avg bus bandwidth` line (or the out-of-bounds line when only it was printed)
    "run": pl.Int64,
    "avg_busbw_gbps": pl.Float64,
    "oob_values": pl.Int64,  # `# Out of bounds values : N`
    "oob_line": pl.Int64,
    "text": pl.Utf8,
    "oob_text": pl.Utf8,
}

# One row per run: its `# nThread …` header and what the lines around it name.
NCCLTESTS_RUNS: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "run": pl.Int64,
    "op": pl.Utf8,
    "tests_version": pl.Utf8,  # `# nccl-tests version X` (2.18.5+)
    "nccl_library": pl.Int64,  # NCCL_VERSION_CODE of the loaded library, e.g. 22809
    "nthreads": pl.Int64,
    "ngpus": pl.Int64,
    "min_bytes": pl.Int64,
    "max_bytes": pl.Int64,
    "warmup_iters": pl.Int64,
    "iters": pl.Int64,
    "text": pl.Utf8,
}


def empty(schema: Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(df: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    cols = [
        (pl.col(n).cast(t, strict=False) if n in df.columns else pl.lit(None, dtype=t).alias(n))
        for n, t in schema.items()
    ]
    return df.select(cols)
