"""Parse stage, prepare: raw numbered lines -> one row per line with origin columns, prefix fields and `msg`.

The entry of the general path: the evidence text (capped at `peel.MAX_TEXT`), the cleaned line
(`peel.clean`) and its NCCL prefix, launcher wrappers and message (`peel.split`).
"""

from __future__ import annotations

import polars as pl

from ncclscope.parse.logs.lines import peel
from ncclscope.parse.logs.lines.peel import MAX_TEXT
from ncclscope.tuning import DEFAULT, Tuning


def prepare(raw: pl.DataFrame, tuning: Tuning = DEFAULT) -> pl.DataFrame:
    """(`path`, `line`, `raw`) -> one row per line with origin columns, prefix fields and `msg`."""
    longest = raw["raw"].str.len_bytes().max()
    text = (
        pl.col("raw").str.slice(0, MAX_TEXT)
        if isinstance(longest, int) and longest > MAX_TEXT
        else pl.col("raw")
    )
    df = raw.with_columns(text.alias("text"), pl.int_range(pl.len()).alias("_row"))
    df = peel.split(peel.clean(df, max_line=tuning.max_line_chars).drop("raw"))
    if not df["_row"].is_sorted():
        df = df.sort("_row")
    return df.drop("_row", "clean")
