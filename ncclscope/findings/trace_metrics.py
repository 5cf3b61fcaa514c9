"""Findings stage, traces: the numbers behind the trace rules (pure functions over trace frames)."""

from __future__ import annotations

import polars as pl

# NVLink bandwidth per direction per GPU (vendor figures) for SXM parts; PCIe cards are left out on
# purpose: their GPU-to-GPU path (PCIe switch, NVLink bridge or none) is not in the trace.
NVLINK_GBPS: tuple[tuple[str, float], ...] = (
    ("V100-SXM", 150.0),
    ("A100-SXM", 300.0),
    ("H100 80GB HBM3", 450.0),
    ("H100 SXM", 450.0),
    ("H200", 450.0),
    ("GB200", 900.0),
    ("B200", 900.0),
)


def straggler_stats(
    per_rank: pl.DataFrame, colls: pl.DataFrame, min_delay_us: float, rel_delay: float = 0.0
) -> tuple[pl.DataFrame, dict[str, float]]:
    """Per rank over complete, consistent collectives: n, late, late_share, median_lateness_us,
    transfer_us (median transfer time of its collectives), relative_lateness (median lateness over
    that), wait_caused_us. A collective is held up by its last rank ("late") when that rank came
    >= `min_delay_us` and >= `rel_delay` × the collective's transfer time after the second-last.
    Collectives with no transfer time (no rank's end known) are left out."""
    # Gloo calls whose spans were filtered out have no end: without a transfer time there is nothing
    # to hold their lateness against, and a zero would flag every jitter.
    ok = colls.filter(
        pl.col("complete")
        & pl.col("consistent")
        & (pl.col("n_ranks") >= 2)
        & pl.col("transfer_us").is_not_null()
    ).select("coll_id", "n_ranks", pl.col("transfer_us").clip(lower_bound=0.0).alias("_xfer"))
    p = per_rank.join(ok, on="coll_id", how="inner")
    if p.is_empty():
        return pl.DataFrame(), {"n": 0, "held": 0}
    late = (
        pl.col("is_last")
        & (pl.col("delay_caused_us") >= min_delay_us)
        & (pl.col("delay_caused_us") >= rel_delay * pl.col("_xfer"))
    )
    caused = (
        pl.when(pl.col("is_last")).then(pl.col("delay_caused_us") * (pl.col("n_ranks") - 1)).otherwise(0.0)
    )
    stats = (
        p.group_by("rank")
        .agg(
            pl.len().alias("n"),
            late.sum().alias("late"),
            pl.col("lateness_us").median().alias("median_lateness_us"),
            pl.col("_xfer").median().alias("transfer_us"),
            caused.sum().alias("wait_caused_us"),
            pl.col("host").first(),
            pl.col("path").first(),
        )
        .with_columns(
            (pl.col("late") / pl.col("n")).alias("late_share"),
            (pl.col("median_lateness_us") / pl.col("transfer_us").clip(lower_bound=1.0)).alias(
                "relative_lateness"
            ),
        )
        .sort("rank")
    )
    held = {"n": float(ok.height), "held": float(p.filter(late)["coll_id"].n_unique())}
    return stats, held


def union_length(df: pl.DataFrame, by: str | list[str] = "rank") -> pl.DataFrame:
    """Total length of the union of [start_us, end_us) intervals per `by` (overlaps counted once).

    Sorted by start, each interval adds what it reaches past the furthest end before it in its group.
    The sort keeps the input order of ties (deterministic sums, and Polars' stable multi-key sort is
    ~6x faster here than its default).
    """
    keys = [by] if isinstance(by, str) else by
    if df.is_empty():
        return pl.DataFrame(schema={**{k: df.schema.get(k, pl.Int64) for k in keys}, "len_us": pl.Float64})
    return _union_sorted(df.sort([*keys, "start_us"], maintain_order=True), keys)


def _union_sorted(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    # Rows already in start order within each group (group_by keeps it); the running maximum is taken
    # inside each group's aggregation (half the time of a window over the frame).
    reach = pl.col("end_us").cum_max().shift(1)
    added = (pl.col("end_us") - pl.max_horizontal("start_us", reach)).clip(lower_bound=0.0)
    return df.group_by(keys).agg(added.sum().alias("len_us"))


def exposed_comm(kernels: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Per rank: comm_us, compute_us, exposed_us, exposed_share (of the step window), overlap_pct."""
    src = steps if not steps.is_empty() else kernels
    win = src.group_by("rank").agg(pl.col("start_us").min().alias("_w0"), pl.col("end_us").max().alias("_w1"))
    k = (
        kernels.join(win, on="rank", how="inner")
        .select(
            "rank",
            pl.max_horizontal("start_us", "_w0").alias("start_us"),
            pl.min_horizontal("end_us", "_w1").alias("end_us"),
            "is_comm",
        )
        .filter(pl.col("end_us") > pl.col("start_us"))
    )
    # One sort for the three unions (comm, compute, every kernel): each group keeps the sorted order.
    k = k.sort("rank", "start_us", maintain_order=True)
    u = _union_sorted(k, ["rank", "is_comm"])

    def part(comm: bool, name: str) -> pl.DataFrame:
        return u.filter(pl.col("is_comm") == comm).select("rank", pl.col("len_us").alias(name))

    every = _union_sorted(k, ["rank"]).rename({"len_us": "all_us"})
    per = (
        win.join(part(True, "comm_us"), on="rank", how="inner")
        .join(part(False, "compute_us"), on="rank", how="left")
        .join(every, on="rank", how="left")
        .with_columns(pl.col("compute_us").fill_null(0.0))
    )
    overlap = pl.col("comm_us") + pl.col("compute_us") - pl.col("all_us")
    return per.select(
        "rank",
        (pl.col("_w1") - pl.col("_w0")).alias("step_us"),
        "comm_us",
        "compute_us",
        (pl.col("all_us") - pl.col("compute_us")).alias("exposed_us"),
        ((pl.col("all_us") - pl.col("compute_us")) / (pl.col("_w1") - pl.col("_w0"))).alias("exposed_share"),
        (100 * overlap / pl.col("comm_us")).alias("overlap_pct"),
    ).sort("rank")


def busbw_reference(ranks: pl.DataFrame, per_rank: pl.DataFrame) -> tuple[str, float] | None:
    """(GPU model, NVLink GB/s) when every rank is on one host of a known NVLink GPU, else None."""
    gpus = ranks["gpu"].drop_nulls().unique().to_list()
    if len(gpus) != 1:
        return None
    link = next((bw for key, bw in NVLINK_GBPS if key in gpus[0]), None)
    if link is None:
        return None
    hosts = per_rank["host"]
    if hosts.null_count() == 0 and hosts.len():
        one_host = hosts.n_unique() == 1
    else:
        ws, ng = ranks["world_size"], ranks["n_gpus"]
        one_host = ws.null_count() == 0 and bool((ws <= ng).all())
    return (gpus[0], link) if one_host else None


def _period(sizes: list[int]) -> int | None:
    n = len(sizes)
    for p in range(1, n // 2 + 1):
        if n % p == 0 and sizes == sizes[:p] * (n // p):
            return p
    return None


def micro_step_repeats(colls: pl.DataFrame, min_bytes: int = 2**20) -> pl.DataFrame:
    """(rank, step, group) whose gradient reductions in one step are one sequence repeated >= 2 times."""
    c = colls.filter(
        pl.col("op").is_in(["allreduce", "reduce_scatter"])
        & pl.col("step").is_not_null()
        & pl.col("msg_bytes").is_not_null()
    )
    if c.is_empty():
        return pl.DataFrame()
    group = pl.coalesce(pl.lit("pg ") + pl.col("pg_name"), pl.lit("stream ") + pl.col("stream").cast(pl.Utf8))
    seqs = (
        c.sort("rank", pl.coalesce("launch_us", "start_us"))
        .with_columns(group.alias("group"))
        .group_by("rank", "step", "group", "op", maintain_order=True)
        .agg(pl.col("msg_bytes").alias("sizes"), pl.col("path").first())
    )
    rows = []
    # One small list per (rank, step, group): a loop over groups, not over events.
    for r in seqs.iter_rows(named=True):
        p = _period(r["sizes"])
        if p is not None and sum(r["sizes"][:p]) >= min_bytes:
            rows.append(
                {**r, "period": p, "repeats": len(r["sizes"]) // p, "period_bytes": sum(r["sizes"][:p])}
            )
    return pl.DataFrame(rows) if rows else pl.DataFrame()
