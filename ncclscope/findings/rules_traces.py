"""Findings stage, traces: stragglers, exposed communication, low bus bandwidth, sync per micro-batch.

Each rule reads `ctx.traces` (TraceFrames) and `ctx.aligned_traces` (AlignedCollectives) and
returns nothing when no trace was given.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.trace_metrics import (
    busbw_reference,
    exposed_comm,
    micro_step_repeats,
    straggler_stats,
)
from ncclscope.records import Evidence, Finding

LATE_SHARE = 0.5  # a persistent straggler is last in at least half of the collectives it is in…
MIN_LATENESS_US = 50.0  # …by a median of at least this much over the others' median arrival (absolute floor)…
REL_LATENESS = 2.0  # …and of at least this many times the median transfer time of those collectives
MIN_DELAY_US = 50.0  # a collective counts as held up when its last rank came this much after the second-last,
REL_DELAY = 2.0  # and at least this many times the collective's transfer time (its duration without waiting)
EXPOSED_SHARE = 0.30  # comm-overhead: exposed communication above this share of step time
LOW_BUSBW_SHARE = 0.25  # low-busbw: below this share of the NVLink bandwidth of the GPU model
LOW_BUSBW_MIN_BYTES = 64 * 2**20  # only bandwidth-bound messages


def _ev(row: dict[str, object], text: str) -> Evidence:
    return Evidence(path=str(row.get("path") or ""), line=0, text=text)


def _us(v: float) -> str:
    return f"{v / 1000:.2f} ms" if abs(v) >= 1000 else f"{v:.0f} µs"


@rule("straggler", "warning", "A rank arrives late at collectives and the others wait for it", group="traces")
def straggler(ctx: Context) -> Iterable[Finding]:
    """Persistent: one rank is the last to arrive (kernel start, gloo: its `c10d::<op>` call;
    clock-corrected) in >= 50% of the complete collectives it is in (those with a known transfer
    time), each time holding the group up by >= 50 µs after the second-last
    *and* by >= 2× the collective's transfer time (median end − last arrival: its duration without
    waiting); its median lateness (its arrival minus the median arrival of the others) is >= 50 µs and
    >= 2× the median transfer time of its collectives. Rotating: no such rank, yet >= 50% of the
    collectives are held up that way by their last rank. `wait_caused_us` = (n-1) × delay summed.

    Why a floor relative to the transfer time: on clean CPU gloo captures (2 and 4 ranks, 2-core host,
    idle and with 3 busy loops beside it) one rank is often last in 50–94% of collectives, by a
    median 65 µs–1.9 ms; that is 0.04–0.44× the transfer time (gloo collectives take 0.7–4.8 ms),
    and at most 38% of collectives are held up >= 2× their transfer time. Injected stragglers (5 and
    20 ms on CPU) come out at 6.4–26×, the real DLRM rank 7 at 13× (GPU collectives take ~10 µs)
    and the synthetic GPU stragglers (d = 0.5–10 ms) at >= 22×: 2× sits with a margin of >= 3 on both
    sides. A floor relative to the step time does not separate them (noise up to 1.5% of the step,
    DLRM rank 7 at 0.8%), so none is applied; an absolute floor above 50 µs would lose DLRM's rank 7."""
    a = ctx.aligned_traces
    if a is None or a.per_rank.is_empty():
        return []
    stats, held = straggler_stats(a.per_rank, a.collectives, MIN_DELAY_US, REL_DELAY)
    if stats.is_empty():
        return []
    bad = stats.filter(
        (pl.col("late_share") >= LATE_SHARE)
        & (pl.col("median_lateness_us") >= MIN_LATENESS_US)
        & (pl.col("relative_lateness") >= REL_LATENESS)
        & (pl.col("late") >= 2)
    )
    bad = bad.sort("wait_caused_us", descending=True)
    if bad.height:
        return [_persistent(r, a.per_rank, a.clock) for r in bad.iter_rows(named=True)]
    if held["n"] and held["held"] / held["n"] >= LATE_SHARE:
        return [_rotating(stats, held)]
    return []


def _on_group(w: dict[str, object]) -> str:
    """` on pg N` when the collective was lined up in a process group (not a stream or a rank's order)."""
    g = w.get("group")
    return f" on {g}" if isinstance(g, str) and g.startswith("pg ") else ""


def _persistent(r: dict[str, object], per: pl.DataFrame, clock: pl.DataFrame) -> Finding:
    rank = int(r["rank"])  # type: ignore[call-overload]
    worst = (
        per.filter((pl.col("rank") == rank) & pl.col("is_last"))
        .sort("delay_caused_us", descending=True)
        .head(3)
    )
    ev = tuple(
        _ev(
            w,
            f"collective #{w['coll_id']} {w['op']} ({w['event']}){_on_group(w)}: rank {rank} arrived "
            f"{_us(float(w['lateness_us']))} after the others' median; the group waited "
            f"{_us(float(w['delay_caused_us']))} for it alone",
        )
        for w in worst.iter_rows(named=True)
    )
    share = float(r["late_share"])  # type: ignore[arg-type]
    return Finding(
        id="straggler",
        severity="warning",
        title=f"Rank {rank} is a persistent straggler",
        why=(
            f"Rank {rank} arrived last in {r['late']} of {r['n']} collectives ({share:.0%}), a median "
            f"{_us(float(r['median_lateness_us']))} after the others; they spent "  # type: ignore[arg-type]
            f"{_us(float(r['wait_caused_us']))} (summed over ranks) waiting for it."  # type: ignore[arg-type]
        ),
        fix=(
            "Look at what rank runs before each collective: uneven data or sequence lengths, a slower or "
            "throttled GPU (clocks, thermals), CPU contention or a slow data loader on its host, or "
            "host-side work (logging, checkpointing) only that rank does."
        ),
        ranks=(rank,),
        evidence=ev,
        metrics={
            "rank": rank,
            "pattern": "persistent",
            "late_share": round(share, 4),
            "late_collectives": r["late"],
            "collectives": r["n"],
            "median_lateness_us": round(float(r["median_lateness_us"]), 1),  # type: ignore[arg-type]
            "wait_caused_us": round(float(r["wait_caused_us"]), 1),  # type: ignore[arg-type]
            "median_transfer_us": round(float(r["transfer_us"]), 1),  # type: ignore[arg-type]
            "relative_lateness": round(float(r["relative_lateness"]), 2),  # type: ignore[arg-type]
            "clock_basis": clock["basis"][0] if clock.height else None,
        },
    )


def _rotating(stats: pl.DataFrame, held: dict[str, float]) -> Finding:
    top = stats.sort("wait_caused_us", descending=True).head(4)
    ranks = tuple(int(x) for x in top["rank"])
    return Finding(
        id="straggler",
        severity="info",
        title="Collectives wait for a different late rank each time",
        why=(
            f"{int(held['held'])} of {int(held['n'])} collectives were held up >= {MIN_DELAY_US:.0f} µs (and at "
            f"least their transfer time) by their last rank, but no rank is last in half of them (rotating stragglers): ranks "
            f"{', '.join(map(str, ranks))} cost the most waiting."
        ),
        fix=(
            "Rotating lateness points at job-wide jitter rather than one bad rank: Python GC, data "
            "loading, variable sequence lengths, or OS noise; compare step-to-step variance per rank."
        ),
        ranks=ranks,
        metrics={
            "pattern": "rotating",
            "held_share": round(held["held"] / held["n"], 4),
            "median_lateness_us": round(float(top["median_lateness_us"][0]), 1),
            "late_share": round(float(top["late_share"][0]), 4),
            "wait_caused_us": round(float(stats["wait_caused_us"].sum()), 1),
            "per_rank": top.to_dicts(),
        },
    )


@rule("comm-overhead", "warning", "Communication is exposed for a large share of step time", group="traces")
def comm_overhead(ctx: Context) -> Iterable[Finding]:
    """Exposed communication = NCCL kernel time on the rank's GPU not overlapped by any other kernel
    or copy, inside the profiled steps (ProfilerStep#N; the whole GPU window when there are none).
    Fires when its median over ranks exceeds 30% of step time; reports overlap % = (comm ∩ compute) / comm."""
    t = ctx.traces
    if t is None or t.kernels.is_empty() or not t.kernels["is_comm"].any():
        return []
    per = exposed_comm(t.kernels, t.steps)
    if per.is_empty():
        return []
    share = float(per["exposed_share"].median())  # type: ignore[arg-type]
    if share <= EXPOSED_SHARE:
        return []
    overlap = float(per["overlap_pct"].median())  # type: ignore[arg-type]
    return [
        Finding(
            id="comm-overhead",
            severity="warning",
            title=f"Communication is exposed for {share:.0%} of step time",
            why=(
                f"Across {per.height} rank(s), a median {share:.0%} of the profiled step time the GPU only "
                f"communicates (NCCL kernels not hidden behind compute); {overlap:.0f}% of communication "
                "overlaps compute."
            ),
            fix=(
                "Overlap communication with compute (DDP bucket_cap_mb, FSDP prefetch / limit_all_gathers, "
                "async tensor parallel), cut its volume (gradient accumulation with no_sync, bf16/fp8 "
                "reduction), or check the link bandwidth (see low-busbw)."
            ),
            ranks=tuple(int(x) for x in per["rank"]),
            metrics={
                "exposed_share": round(share, 4),
                "overlap_pct": round(overlap, 1),
                "per_rank": per.to_dicts(),
            },
        )
    ]


@rule("low-busbw", "warning", "Collectives run far below the link's bandwidth", group="traces")
def low_busbw(ctx: Context) -> Iterable[Finding]:
    """Only where the link is known honestly: every rank on one host (same host name, or, without host
    names, world size <= GPUs the trace lists) on an SXM/NVLink GPU model ncclscope knows (V100 150,
    A100 300, H100/H200 450, B200 900 GB/s per direction). Messages >= 64 MiB; fires when their median
    busbw (nccl-tests factors; time = median end − last arrival) is < 25% of that. Cross-node links are
    not in a trace, so inter-node collectives are skipped."""
    t, a = ctx.traces, ctx.aligned_traces
    if t is None or a is None or a.collectives.is_empty():
        return []
    ref = busbw_reference(t.ranks, a.per_rank)
    if ref is None:
        return []
    gpu, link = ref
    big = a.collectives.filter(
        pl.col("complete")
        & pl.col("consistent")
        & pl.col("busbw_gbps").is_not_null()
        & (pl.col("msg_bytes") >= LOW_BUSBW_MIN_BYTES)
    )
    if big.is_empty():
        return []
    med = big["busbw_gbps"].median()
    bw = float(med) if isinstance(med, (int, float)) else 0.0
    if bw >= LOW_BUSBW_SHARE * link:
        return []
    return [
        Finding(
            id="low-busbw",
            severity="warning",
            title=f"Bus bandwidth {bw:.0f} GB/s on {gpu} NVLink ({link:.0f} GB/s)",
            why=(
                f"{big.height} collective(s) of >= 64 MiB reached a median bus bandwidth of {bw:.1f} GB/s, "
                f"under {LOW_BUSBW_SHARE:.0%} of the {link:.0f} GB/s NVLink of {gpu}."
            ),
            fix=(
                "Check the NCCL transport in the logs (P2P/CUMEM vs SHM or NET), NCCL_P2P_DISABLE / "
                "NCCL_P2P_LEVEL, NVLink health (nvidia-smi nvlink -s), and compare with nccl-tests."
            ),
            metrics={
                "median_busbw_gbps": round(bw, 2),
                "link_gbps": link,
                "gpu": gpu,
                "collectives": big.height,
            },
        )
    ]


@rule("sync-per-microbatch", "warning", "Gradients are all-reduced on every micro-step", group="traces")
def sync_per_microbatch(ctx: Context) -> Iterable[Finding]:
    """Within one ProfilerStep, the same sequence of gradient-sized (>= 1 MiB in total) all-reduce or
    reduce-scatter messages on one group repeats m >= 2 times: each micro-batch of gradient
    accumulation synchronises, i.e. backward runs without DDP's `no_sync()` (FSDP: without
    `set_requires_gradient_sync(False)`)."""
    a = ctx.aligned_traces
    t = ctx.traces
    if t is None or t.collectives.is_empty():
        return []
    rep = micro_step_repeats(t.collectives)
    if rep.is_empty():
        return []
    first = rep.row(0, named=True)
    return [
        Finding(
            id="sync-per-microbatch",
            severity="warning",
            title=f"Gradients are reduced {first['repeats']}× per step (once per micro-batch)",
            why=(
                f"In ProfilerStep#{first['step']}, the {first['period']} {first['op']} message(s) of group "
                f"{first['group']} ({first['period_bytes'] / 2**20:.1f} MiB) repeat {first['repeats']} times: "
                "gradient accumulation synchronises on every micro-step."
            ),
            fix=(
                "Wrap all but the last micro-batch's forward/backward in `with model.no_sync():` (DDP) or "
                "call `model.set_requires_gradient_sync(False)` (FSDP2) so gradients are reduced once per step."
            ),
            ranks=tuple(sorted(int(x) for x in rep["rank"].unique())),
            evidence=(
                Evidence(
                    path=str(first["path"]),
                    line=0,
                    text=f"ProfilerStep#{first['step']}: sizes {first['sizes'][:12]}",
                ),
            ),
            metrics={
                "repeats": first["repeats"],
                "period": first["period"],
                "steps": rep["step"].n_unique(),
                "aligned": a is not None,
            },
        )
    ]


CLOCK_SKEW_US = 1000.0  # clock-skew: report clocks more than this far from the reference


@rule("clock-skew", "info", "Trace clocks disagree between hosts", group="traces")
def clock_skew(ctx: Context) -> Iterable[Finding]:
    """Per-host (per-rank when hosts are unknown) clock offsets estimated from collective completions
    (every rank leaves a blocking collective within µs); reported when one exceeds 1 ms. Arrivals were
    already corrected by these offsets before any straggler was judged."""
    a = ctx.aligned_traces
    if a is None or a.clock.is_empty():
        return []
    off = a.clock.filter(pl.col("offset_us").abs() > CLOCK_SKEW_US).sort("offset_us", descending=True)
    if off.is_empty():
        return []
    basis = str(a.clock["basis"][0])
    who = [
        f"{r['host'] if basis == 'host' else 'rank ' + str(r['rank'])}: {_us(float(r['offset_us']))} "
        f"(±{_us(float(r['spread_us']))})"
        for r in off.iter_rows(named=True)
    ]
    return [
        Finding(
            id="clock-skew",
            severity="info",
            title=f"{off.height} {basis} clock(s) offset by more than 1 ms",
            why=(
                "Collective completions, which are simultaneous on every rank, put these clocks off the "
                f"reference ({basis} of the lowest rank): " + "; ".join(who) + ". Arrivals were corrected."
            ),
            fix="Run chrony/NTP (or PTP) on every node; until then compare traces only after this correction.",
            ranks=tuple(int(r) for r in off["rank"].drop_nulls()),
            hosts=tuple(str(h) for h in off["host"].drop_nulls()),
            metrics={"basis": basis, "offsets": a.clock.to_dicts()},
        )
    ]
