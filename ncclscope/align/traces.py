"""Align stage, traces: line every collective up across ranks and time who arrived when.

Keys, best first: (process group, `Seq`) when the args carry it (torch ≥ 2.13); else the k-th
collective of each process group on each rank (`wait` dropped); else (pre-2024 traces, no group
info) the k-th NCCL kernel of each CUDA stream; gloo runs (no kernel, no group in any arg): the k-th
CPU collective (`c10d::<op>` call, else `gloo:<op>` span) of each process group (told by the parse
stage from the span's thread; one sequence per rank when it cannot tell), lined up only as far as
the ranks agree on the op sequence. Op, and size where it must agree, are checked. Arrival is the kernel start (gloo:
the call), corrected for its clock's offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ncclscope import schema as S
from ncclscope.align.clock import BLOCKING_OPS, apply_offsets, estimate_offsets
from ncclscope.parse.traces.read import TraceFrames

# Ops whose message size must be the same on every rank (all-to-all splits may differ).
_SAME_SIZE_OPS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce")
# Gloo collectives: `c10d::<op>` calls paired with their span, or bare `gloo:<op>` spans.
_CPU_SOURCES = ("cpu_op", "gloo")


@dataclass(frozen=True)
class AlignedCollectives:
    """Collectives lined up across ranks: per rank, per collective, and the clock offsets used."""

    per_rank: pl.DataFrame  # ALIGNED_RANKS
    collectives: pl.DataFrame  # ALIGNED_COLLECTIVES
    clock: pl.DataFrame  # CLOCK_OFFSETS
    n_ranks: int
    notes: tuple[str, ...] = ()
    groups: pl.DataFrame = field(default_factory=lambda: S.empty(S.TRACE_GROUPS))

    @property
    def n_aligned(self) -> int:
        """Collectives with every rank of their group present and op/size in agreement."""
        return self.collectives.filter(pl.col("complete") & pl.col("consistent")).height

    @property
    def n_mismatched(self) -> int:
        return self.collectives.filter(~pl.col("consistent")).height


def bus_factor(op: pl.Expr, n: pl.Expr) -> pl.Expr:
    """nccl-tests' busbw / algbw factor (PERFORMANCE.md): 2(n-1)/n all-reduce, (n-1)/n gathers/scatters."""
    nf = n.cast(pl.Float64)
    return (
        pl.when(op == "allreduce")
        .then(2 * (nf - 1) / nf)
        .when(op.is_in(["allgather", "reduce_scatter", "alltoall"]))
        .then((nf - 1) / nf)
        .otherwise(1.0)
    )


def _keys(c: pl.DataFrame) -> pl.DataFrame:
    # Gloo collectives keep their order key (their op sequences are checked) also once the parse
    # stage has told their process group (from the span's thread): they line up per group.
    mk = (
        pl.when(pl.col("seq").is_not_null())
        .then(pl.lit("seq"))
        .when(pl.col("source").is_in(_CPU_SOURCES))
        .then(pl.lit("gloo-order"))
        .when(pl.col("pg_name").is_not_null())
        .then(pl.lit("pg-order"))
        .otherwise(pl.lit("stream-order"))
    )
    group = (
        pl.when(pl.col("pg_name").is_not_null())
        .then(pl.lit("pg ") + pl.col("pg_name"))
        .when(pl.col("source").is_in(_CPU_SOURCES))
        .then(pl.lit("gloo"))
        .otherwise(pl.lit("stream ") + pl.col("stream").cast(pl.Utf8))
    )
    c = c.with_columns(
        mk.alias("match_key"), group.alias("group"), pl.coalesce("launch_us", "start_us").alias("_order")
    )
    order = pl.col("_order").rank("ordinal").over("rank", "group").cast(pl.Int64) - 1
    return c.with_columns(
        pl.when(pl.col("match_key") == "seq").then(pl.col("seq")).otherwise(order).alias("index")
    )


def _common_prefix(c: pl.DataFrame) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Order-matched gloo collectives up to the first index where the ranks' ops differ.

    Past that point the k-th op of one rank is not the k-th of another (a skipped or extra call, or
    a trace window cut elsewhere), so the rest of that group is left out, with a note.
    """
    order = c.filter(pl.col("match_key") == "gloo-order")
    bad = (
        order.group_by("group", "index")
        .agg(pl.col("op").n_unique().alias("_n"))
        .filter(pl.col("_n") > 1)
        .group_by("group")
        .agg(pl.col("index").min().alias("_cut"))
    )
    if bad.is_empty():
        return c, ()
    c = c.join(bad, on="group", how="left")
    keep = pl.col("_cut").is_null() | (pl.col("index") < pl.col("_cut"))
    at = (
        c.filter(pl.col("index") == pl.col("_cut"))
        .sort("rank")
        .group_by("group", "_cut", maintain_order=True)
        .agg(
            (pl.lit("rank ") + pl.col("rank").cast(pl.Utf8) + pl.lit(" ") + pl.col("op").fill_null("?"))
            .str.join(", ")
            .alias("_who")
        )
    )
    left = c.filter(~keep).group_by("group").len("_left")
    notes = tuple(
        f"{r['group']}: the ranks' op sequences differ at collective #{r['_cut']} ({r['_who']}); only the "
        f"first {r['_cut']} are lined up, {r['_left']} op(s) after it are left out"
        for r in at.join(left, on="group").sort("group").iter_rows(named=True)
    )
    return c.filter(keep).drop("_cut"), notes


def _median_of_others(pos: pl.Expr, n: pl.Expr) -> pl.Expr:
    # Median of a group's sorted arrivals with this row's own (at `pos`) left out.
    m = n - 1

    def pick(j: pl.Expr) -> pl.Expr:
        return pl.col("_sorted").list.get(pl.when(j < pos).then(j).otherwise(j + 1), null_on_oob=True)

    odd = pick((m - 1) // 2)
    even = (pick(m // 2 - 1) + pick(m // 2)) / 2
    return pl.when(m % 2 == 1).then(odd).otherwise(even)


def _per_rank(c: pl.DataFrame) -> pl.DataFrame:
    n = pl.len().over("coll_id")
    c = c.with_columns(
        pl.col("arrival_us").rank("ordinal").over("coll_id").cast(pl.Int64).alias("_pos"),
        n.cast(pl.Int64).alias("_n"),
    )
    srt = c.group_by("coll_id").agg(pl.col("arrival_us").sort().alias("_sorted"))
    c = c.join(srt, on="coll_id", how="left").with_columns(pl.col("_pos") - 1)
    first = pl.col("_sorted").list.first()
    last = pl.col("_sorted").list.last()
    second_last = pl.col("_sorted").list.get(pl.col("_n") - 2, null_on_oob=True)
    is_last = (pl.col("_pos") == pl.col("_n") - 1) & (pl.col("_n") >= 2)
    return c.with_columns(
        (pl.col("arrival_us") - first).alias("skew_us"),
        (last - pl.col("arrival_us")).alias("wait_us"),
        (pl.col("arrival_us") - _median_of_others(pl.col("_pos"), pl.col("_n"))).alias("lateness_us"),
        is_last.alias("is_last"),
        pl.when(is_last).then(pl.col("arrival_us") - second_last).otherwise(0.0).alias("delay_caused_us"),
    )


def _expected(c: pl.DataFrame, world: int) -> pl.Expr:
    return pl.coalesce(pl.col("group_size").max(), pl.lit(world if world else None, dtype=pl.Int64))


def _summarise(c: pl.DataFrame, world: int) -> pl.DataFrame:
    ops_same = pl.col("op").n_unique() == 1
    size_same = (~pl.col("op").first().is_in(list(_SAME_SIZE_OPS))) | (pl.col("msg_bytes").n_unique() == 1)
    agg = c.group_by("coll_id").agg(
        pl.col("match_key").first(),
        pl.col("group").first(),
        pl.col("index").first(),
        pl.col("op").first(),
        pl.col("step").min(),
        pl.len().cast(pl.Int64).alias("n_ranks"),
        _expected(c, world).cast(pl.Int64).alias("expected_ranks"),
        (ops_same & size_same).alias("consistent"),
        pl.col("msg_bytes").median().cast(pl.Int64).alias("msg_bytes"),
        pl.col("arrival_us").min().alias("first_arrival_us"),
        pl.col("arrival_us").max().alias("last_arrival_us"),
        pl.col("rank").sort_by("arrival_us").last().alias("last_rank"),
        (pl.col("end_us").max() - pl.col("end_us").min()).alias("end_spread_us"),
        pl.col("end_us").median().alias("_end"),
    )
    agg = agg.with_columns(
        (pl.col("n_ranks") >= pl.col("expected_ranks").fill_null(pl.col("n_ranks"))).alias("complete"),
        (pl.col("last_arrival_us") - pl.col("first_arrival_us")).alias("arrival_spread_us"),
        (pl.col("_end") - pl.col("last_arrival_us")).alias("transfer_us"),
    )
    algbw = pl.when(pl.col("transfer_us") > 0).then(pl.col("msg_bytes") / pl.col("transfer_us") / 1e3)
    agg = agg.with_columns(algbw.alias("algbw_gbps"))
    agg = agg.with_columns(
        (pl.col("algbw_gbps") * bus_factor(pl.col("op"), pl.col("n_ranks"))).alias("busbw_gbps")
    )
    return S.conform(
        agg.sort("first_arrival_us", "coll_id"), S.ALIGNED_COLLECTIVES
    )  # ties: by id, not by hash order


def align_traces(
    traces: TraceFrames | None, *, ranks: pl.DataFrame | None = None, comms: pl.DataFrame | None = None
) -> AlignedCollectives | None:
    """Line up `TraceFrames.collectives` across ranks.

    From the logs, when given: `ranks` (schema.RANKS) fills in hosts by global rank, and `comms`
    (schema.COMMS) names the communicator behind each process group.
    """
    if traces is None:
        return None
    coll, tr = traces.collectives, traces.ranks
    top = tr["world_size"].max() if tr.height else None
    world = int(top) if isinstance(top, (int, float)) else 0
    c = coll.filter(
        (pl.col("op") != "wait") & pl.col("start_us").is_not_null() & ~pl.col("is_p2p").fill_null(False)
    )
    notes = _p2p_note(coll)
    c = _fill_hosts(c, tr, ranks)
    c, cut = _common_prefix(_keys(c))
    notes += cut
    ids = (
        c.group_by("group", "index")
        .agg(pl.col("start_us").min().alias("_t"))
        .sort("_t", "group", "index")
        .with_row_index("coll_id")
        .select(pl.col("coll_id").cast(pl.Int64), "group", "index")
    )
    c = c.join(ids, on=["group", "index"], how="left")
    c = c.with_columns(
        pl.when(pl.col("op") == "allgather")
        .then(
            pl.coalesce("msg_bytes", pl.col("in_nelems") * pl.col("dtype_bytes") * pl.len().over("coll_id"))
        )
        .otherwise(pl.col("msg_bytes"))
        .alias("msg_bytes")
    )
    colls = _summarise(c.with_columns(pl.col("start_us").alias("arrival_us")), world)
    good = colls.filter(pl.col("complete") & pl.col("consistent") & pl.col("op").is_in(list(BLOCKING_OPS)))
    clock = estimate_offsets(
        c.join(good.select("coll_id"), on="coll_id").select("coll_id", "rank", "host", "end_us")
    )
    if clock.is_empty() and c.height:
        notes += (
            "clock offsets not estimated: no blocking collective has every rank of its group in the traces",
        )
    c = apply_offsets(
        c.with_columns(pl.col("start_us").alias("arrival_us")), clock, ("arrival_us", "launch_us", "end_us")
    )
    per = _per_rank(c)
    colls = _summarise(per, world)
    per = S.conform(per, S.ALIGNED_RANKS).sort("coll_id", "rank")
    return AlignedCollectives(
        per_rank=per,
        collectives=colls,
        clock=clock,
        n_ranks=tr["rank"].n_unique(),
        notes=notes,
        groups=_groups(c, comms),
    )


def _groups(c: pl.DataFrame, comms: pl.DataFrame | None) -> pl.DataFrame:
    g = c.group_by("group").agg(
        pl.col("pg_name").first(),
        pl.col("pg_desc").first(),
        pl.col("coll_id").n_unique().alias("collectives"),
        pl.col("rank").n_unique().alias("ranks"),
    )
    if comms is not None and not comms.is_empty() and "pg_name" in comms.columns:
        logs = (
            comms.filter(pl.col("pg_name").is_not_null())
            .group_by("pg_name")
            .agg(pl.col("comm_key").first(), pl.col("nranks").first().alias("comm_nranks"))
        )
        g = g.join(logs, on="pg_name", how="left")
    return S.conform(g.sort("group"), S.TRACE_GROUPS)


def _p2p_note(coll: pl.DataFrame) -> tuple[str, ...]:
    n = coll.filter(pl.col("is_p2p").fill_null(False)).height
    return (f"{n} send/recv op(s) not lined up (they pair per peer, not per group)",) if n else ()


def _fill_hosts(c: pl.DataFrame, tr: pl.DataFrame, ranks: pl.DataFrame | None) -> pl.DataFrame:
    """Host per rank: the trace's own `host_name`, else the host the logs give that rank."""
    if ranks is None or ranks.is_empty() or "host" not in ranks.columns:
        return c
    log_hosts = (
        ranks.filter(pl.col("rank").is_not_null() & pl.col("host").is_not_null())
        .group_by("rank")
        .agg(pl.col("host").first().alias("_log_host"))
    )
    return (
        c.join(log_hosts, on="rank", how="left")
        .with_columns(pl.coalesce("host", "_log_host").alias("host"))
        .drop("_log_host")
    )
