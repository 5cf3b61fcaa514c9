"""Report stage, Perfetto export: timed log lines (NCCL init, WARN, COLL lines, PyTorch) as instants.

A line is on the rank whose process (path, host, pid) printed it, else on the rank its launcher
prefix or its own text names; lines of no known rank go to one process of their own. Only lines
with a timestamp are exported; their times get the same clock offset as that host's (or rank's) traces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ncclscope.report.perfetto_events import (
    MAX_LOG_EVENTS,
    ORDER_LOG,
    args_json,
    as_events,
    clean_text,
    correct,
    empty,
)

if TYPE_CHECKING:
    from ncclscope.session import Session


def _kinds() -> dict[str, tuple[str, pl.Expr, tuple[str, ...]]]:
    """frame name → (thread, event name, columns kept in args)."""
    return {
        "inits": (
            "NCCL init",
            pl.lit("init ") + pl.col("phase").fill_null("?"),
            ("func", "comm_id", "nranks", "nnodes"),
        ),
        "warnings": (
            "NCCL WARN",
            pl.col("level").fill_null("WARN") + pl.lit(" ") + pl.col("family").fill_null("other"),
            ("family", "message", "src_file", "src_line"),
        ),
        "collectives": (
            "NCCL COLL",
            pl.col("op").fill_null("?"),
            ("op_count", "count", "nranks", "comm_ptr"),
        ),
        "torch": (
            "PyTorch",
            pl.lit("torch ") + pl.col("kind").fill_null("?"),
            ("pg_name", "seq", "op_type", "timeout_ms"),
        ),
    }


def _process_ranks(ranks: pl.DataFrame) -> pl.DataFrame:
    keys = ranks.filter(pl.col("rank").is_not_null() & pl.col("path").is_not_null())
    return keys.group_by("path", "host", "pid").agg(pl.col("rank").min().alias("_rank"))


def timed_rows(s: Session, name: str, offsets: pl.DataFrame) -> pl.DataFrame:
    """The timed rows of log frame `name`, with `_rank` resolved and `ts_us` clock-corrected."""
    df: pl.DataFrame = getattr(s.logs, name)
    if "ts_us" not in df.columns:
        return df.clear().with_columns(pl.lit(None, pl.Int64).alias("_rank"))
    df = df.filter(pl.col("ts_us").is_not_null())
    if df.is_empty():
        return df.with_columns(pl.lit(None, pl.Int64).alias("_rank"))
    df = df.join(_process_ranks(s.ranks), on=["path", "host", "pid"], how="left")
    own = [pl.col("rank")] if name == "torch" else []
    df = df.with_columns(pl.coalesce("_rank", *own, "rank_hint").alias("_rank"))
    # A frame's own `rank` column may be a communicator rank: offsets by rank go through `_rank`.
    if not offsets.is_empty() and str(offsets["basis"][0]) == "rank":
        return _correct_by_rank(df, offsets)
    return correct(df, offsets, ("ts_us",))


def _correct_by_rank(df: pl.DataFrame, offsets: pl.DataFrame) -> pl.DataFrame:
    off = offsets.select(pl.col("rank").alias("_rank"), "clock_offset_us")
    df = df.join(off, on="_rank", how="left")
    return df.with_columns(pl.col("ts_us") - pl.col("clock_offset_us").fill_null(0.0)).drop("clock_offset_us")


def log_events(s: Session, offsets: pl.DataFrame) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Instants for every timed init, WARN, COLL and PyTorch line, and notes on what was capped."""
    parts: list[pl.DataFrame] = []
    notes: list[str] = []
    for name, (thread, label, keep) in _kinds().items():
        df = timed_rows(s, name, offsets)
        if df.is_empty():
            continue
        if df.height > MAX_LOG_EVENTS:
            notes.append(f"{df.height:,} timed {thread} lines: the first {MAX_LOG_EVENTS:,} are in the trace")
            df = df.sort("ts_us", "path", "line").head(MAX_LOG_EVENTS)
        ranked = pl.col("_rank").is_not_null()
        where = (
            pl.coalesce(pl.col("host"), pl.lit("?"))
            + pl.lit(":")
            + pl.coalesce(pl.col("pid").cast(pl.Utf8), pl.col("path"))
        )
        parts.append(
            as_events(
                df,
                rank=pl.col("_rank"),
                proc=pl.when(ranked).then(pl.lit("rank")).otherwise(pl.lit("unranked")),
                thread=pl.when(ranked).then(pl.lit(thread)).otherwise(pl.lit(thread + " · ") + where),
                order=pl.lit(ORDER_LOG),
                ph=pl.lit("i"),
                name=label,
                cat=pl.lit("log"),
                ts_us=pl.col("ts_us"),
                scope=pl.lit("t"),
                args=args_json("path", "line", *keep, clean_text().alias("text")),
            )
        )
    return (pl.concat(parts) if parts else empty()), tuple(notes)


def evidence_times(s: Session, offsets: pl.DataFrame) -> pl.DataFrame:
    """(path, line, ts_us) of every timed line of every log frame, clock-corrected: where findings go."""
    parts = [
        timed_rows(s, n, offsets).select("path", "line", "ts_us")
        for n in s.logs.table_names()
        if "ts_us" in getattr(s.logs, n).columns
    ]
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema={"path": pl.Utf8, "line": pl.Int64, "ts_us": pl.Float64})
    return pl.concat(parts).unique(["path", "line"], keep="first", maintain_order=True)
