"""Report stage, Perfetto export: the events of a session as one flat frame (EVENTS), before ids.

Collectives lined up across ranks (clock-corrected) with a flow from each rank's arrival to the
last arrival, send/recv and unaligned kernels, profiler steps; `perfetto_logs` adds timed log lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from ncclscope.session import Session

# One row per event; `rank` null means the job's own process (`proc` says which).
EVENTS: dict[str, Any] = {
    "rank": pl.Int64,
    "proc": pl.Utf8,  # "rank" | "job" (findings without a rank, notes) | "unranked" (log lines of no known rank)
    "thread": pl.Utf8,
    "order": pl.Int64,  # thread order inside its process
    "ph": pl.Utf8,  # X slice | i instant | s/f flow start/end
    "name": pl.Utf8,
    "cat": pl.Utf8,
    "ts_us": pl.Float64,  # clock-corrected epoch µs (null: no time, placed at the start)
    "dur_us": pl.Float64,
    "scope": pl.Utf8,  # instants: t thread, p process, g global
    "flow_id": pl.Int64,
    "args": pl.Utf8,  # JSON object
}
ORDER_STEPS, ORDER_COLL, ORDER_P2P, ORDER_LOG, ORDER_FINDINGS = 0, 1, 2, 3, 4
# Logs with millions of COLL lines: at most this many events per kind of log line, earliest first.
MAX_LOG_EVENTS = 200_000
TEXT_CHARS = 300
FLOW_NAME = "arrival → last arrival"
OFFSETS: dict[str, Any] = {
    "basis": pl.Utf8,
    "host": pl.Utf8,
    "rank": pl.Int64,
    "clock_offset_us": pl.Float64,
    "spread_us": pl.Float64,
    "n_samples": pl.Int64,
}


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENTS)


def as_events(df: pl.DataFrame, **cols: pl.Expr) -> pl.DataFrame:
    missing = pl.lit(None)
    return df.select([cols.get(c, missing).cast(t).alias(c) for c, t in EVENTS.items()])


def args_json(*exprs: pl.Expr | str) -> pl.Expr:
    fixed = [pl.col(e) if isinstance(e, str) else e for e in exprs]
    return pl.struct([e.fill_nan(None) if _is_float(e) else e for e in fixed]).struct.json_encode()


def _is_float(e: pl.Expr) -> bool:
    name = e.meta.output_name(raise_if_undetermined=False) or ""
    return name.endswith("_us")


def clean_text() -> pl.Expr:
    # Control characters stay out of the trace: some JSON readers refuse them even escaped.
    return pl.col("text").str.replace_all(r"[\x00-\x1f\x7f]", " ").str.slice(0, TEXT_CHARS)


# --- clocks and hosts ------------------------------------------------------------------------


def rank_hosts(s: Session) -> pl.DataFrame:
    """rank → host, from the logs' ranks table, then the traces' and the alignment's hosts."""
    parts: list[pl.DataFrame] = [s.ranks.select("rank", "host")]
    frames = [
        s.traces.ranks if s.traces is not None else None,
        s.aligned_traces.per_rank if s.aligned_traces is not None else None,
    ]
    for df in frames:
        if df is not None and {"rank", "host"} <= set(df.columns):
            parts.append(df.select("rank", "host"))
    both = pl.concat(parts).filter(pl.col("rank").is_not_null() & pl.col("host").is_not_null())
    return both.group_by("rank", maintain_order=True).agg(pl.col("host").first()).sort("rank")


def clock_offsets(s: Session) -> pl.DataFrame:
    """The alignment's clock offsets (OFFSETS): per host, or per rank when a trace named no host."""
    clock = s.aligned_traces.clock if s.aligned_traces is not None else None
    if clock is None or clock.is_empty():
        return pl.DataFrame(schema=OFFSETS)
    return clock.select(
        "basis", "host", "rank", pl.col("offset_us").alias("clock_offset_us"), "spread_us", "n_samples"
    )


def correct(df: pl.DataFrame, offsets: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    """Subtract each row's clock offset (by its host or rank, as the offsets were estimated) from `cols`."""
    if offsets.is_empty():
        return df
    key = str(offsets["basis"][0])
    off = offsets.select(key, "clock_offset_us").drop_nulls(key)
    df = df.join(off, on=key, how="left").with_columns(pl.col("clock_offset_us").fill_null(0.0))
    return df.with_columns(*(pl.col(c) - pl.col("clock_offset_us") for c in cols)).drop("clock_offset_us")


def _with_host(df: pl.DataFrame, hosts: pl.DataFrame) -> pl.DataFrame:
    h = hosts.rename({"host": "_h"})
    df = df.join(h, on="rank", how="left")
    return df.with_columns(pl.coalesce(*(["host"] if "host" in df.columns else []), "_h").alias("host")).drop(
        "_h"
    )


def split_overlaps(df: pl.DataFrame, thread: str, start: str, dur: str) -> pl.DataFrame:
    """Move slices that overlap without nesting (async gloo ops) onto extra threads, `… · lane 2` on.

    One thread's slices must nest or follow each other: Perfetto cuts a slice that ends after its
    parent. Each slice goes to the first lane where it nests, parents (longer) first at a time.
    """
    if df.is_empty():
        return df
    df = df.with_row_index("_i").sort("rank", thread, start, dur, descending=[False, False, False, True])
    lanes: list[int] = []
    stacks: list[list[float]] = []
    key: tuple[object, object] | None = None
    for rank, th, a, d in df.select("rank", thread, start, dur).iter_rows():
        if (rank, th) != key:
            key, stacks = (rank, th), []
        b = a + (d or 0.0)
        for n, stack in enumerate([*stacks, []]):
            while stack and stack[-1] <= a:
                stack.pop()
            if not stack or b <= stack[-1]:
                break
        if n == len(stacks):
            stacks.append(stack)
        stack.append(b)
        lanes.append(n)
    lane = pl.Series("_lane", lanes, dtype=pl.Int64)
    out = df.with_columns(lane).with_columns(
        pl.when(pl.col("_lane") > 0)
        .then(pl.col(thread) + pl.lit(" · lane ") + (pl.col("_lane") + 1).cast(pl.Utf8))
        .otherwise(pl.col(thread))
        .alias(thread)
    )
    return out.sort("_i").drop("_i", "_lane")


# --- traces ----------------------------------------------------------------------------------


def collective_events(s: Session) -> pl.DataFrame:
    """Lined-up collectives as slices (already corrected by the alignment) and their flows."""
    per = s.aligned_traces.per_rank if s.aligned_traces is not None else None
    if per is None or per.is_empty():
        return empty()
    per = per.filter(pl.col("arrival_us").is_not_null() & pl.col("rank").is_not_null()).with_columns(
        (pl.lit("collectives · ") + pl.col("group")).alias("_thread"),
        (pl.col("end_us") - pl.col("arrival_us")).clip(lower_bound=0).fill_null(0.0).alias("_dur"),
    )
    per = split_overlaps(per, "_thread", "arrival_us", "_dur")
    slices = as_events(
        per,
        rank=pl.col("rank"),
        proc=pl.lit("rank"),
        thread=pl.col("_thread"),
        order=pl.lit(ORDER_COLL),
        ph=pl.lit("X"),
        name=pl.col("op").fill_null("?"),
        cat=pl.lit("collective"),
        ts_us=pl.col("arrival_us"),
        dur_us=pl.col("_dur"),
        args=args_json(
            "coll_id",
            "group",
            "index",
            "step",
            "msg_bytes",
            "skew_us",
            "wait_us",
            "lateness_us",
            "is_last",
            "delay_caused_us",
            "event",
            "path",
        ),
    )
    return pl.concat([slices, _flows(per)])


def _flows(per: pl.DataFrame) -> pl.DataFrame:
    # A flow binds to the slice that encloses its time on its thread: mid-slice, never on an edge.
    mid = pl.col("arrival_us") + pl.col("_dur") / 2
    ok = per.filter(pl.col("_dur") > 0)
    last = ok.filter(pl.col("is_last")).select(
        "coll_id",
        pl.col("rank").alias("_last_rank"),
        pl.col("_thread").alias("_last_thread"),
        mid.alias("_last_mid"),
        pl.col("arrival_us").alias("_last_arrival"),
    )
    src = (
        ok.filter(~pl.col("is_last"))
        .join(last, on="coll_id")
        .sort("coll_id", "rank")
        .with_row_index("_fid", offset=1)
    )
    args = args_json(
        "coll_id",
        pl.col("_last_rank").alias("last_rank"),
        (pl.col("_last_arrival") - pl.col("arrival_us")).alias("waited_us"),
    )
    common = {
        "proc": pl.lit("rank"),
        "order": pl.lit(ORDER_COLL),
        "name": pl.lit(FLOW_NAME),
        "cat": pl.lit("flow"),
        "flow_id": pl.col("_fid"),
        "args": args,
    }
    starts = as_events(
        src, rank=pl.col("rank"), thread=pl.col("_thread"), ph=pl.lit("s"), ts_us=mid, **common
    )
    ends = as_events(
        src,
        rank=pl.col("_last_rank"),
        thread=pl.col("_last_thread"),
        ph=pl.lit("f"),
        ts_us=pl.col("_last_mid"),
        **common,
    )
    return pl.concat([starts, ends])


def raw_collective_events(s: Session, offsets: pl.DataFrame, hosts: pl.DataFrame) -> pl.DataFrame:
    """Send/recv and waits (never lined up), or every collective when nothing was lined up."""
    tc = s.traces.collectives if s.traces is not None else None
    if tc is None or tc.is_empty():
        return empty()
    per = s.aligned_traces.per_rank if s.aligned_traces is not None else None
    rows = tc.filter(pl.col("start_us").is_not_null() & pl.col("rank").is_not_null())
    if per is not None and per.height:
        rows = rows.filter(pl.col("is_p2p").fill_null(False) | (pl.col("op") == "wait"))
    rows = correct(_with_host(rows, hosts), offsets, ("start_us", "end_us"))
    where = pl.coalesce(
        pl.lit("stream ") + pl.col("stream").cast(pl.Utf8),
        pl.lit("pg ") + pl.col("pg_name"),
        pl.col("source"),
    )
    kind = pl.when(pl.col("is_p2p").fill_null(False)).then(pl.lit("send/recv · ")).otherwise(pl.lit("ops · "))
    events = as_events(
        rows,
        rank=pl.col("rank"),
        proc=pl.lit("rank"),
        thread=kind + where,
        order=pl.lit(ORDER_P2P),
        ph=pl.lit("X"),
        name=pl.col("op").fill_null("?"),
        cat=pl.lit("collective"),
        ts_us=pl.col("start_us"),
        dur_us=(pl.col("end_us") - pl.col("start_us")).clip(lower_bound=0).fill_null(0.0),
        args=args_json("pg_name", "seq", "msg_bytes", "event", "path"),
    )
    return split_overlaps(events, "thread", "ts_us", "dur_us")


def step_events(s: Session, offsets: pl.DataFrame, hosts: pl.DataFrame) -> pl.DataFrame:
    steps = s.traces.steps if s.traces is not None else None
    if steps is None or steps.is_empty():
        return empty()
    steps = steps.filter(pl.col("start_us").is_not_null() & pl.col("rank").is_not_null())
    steps = correct(_with_host(steps, hosts), offsets, ("start_us", "end_us"))
    return as_events(
        steps,
        rank=pl.col("rank"),
        proc=pl.lit("rank"),
        thread=pl.lit("profiler steps"),
        order=pl.lit(ORDER_STEPS),
        ph=pl.lit("X"),
        name=pl.lit("ProfilerStep#") + pl.col("step").cast(pl.Utf8),
        cat=pl.lit("step"),
        ts_us=pl.col("start_us"),
        dur_us=(pl.col("end_us") - pl.col("start_us")).clip(lower_bound=0).fill_null(0.0),
        args=args_json("step", "path"),
    )
