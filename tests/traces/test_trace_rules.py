"""Findings stage, trace rules: comm-overhead, low-busbw, sync-per-microbatch, and union arithmetic."""

from __future__ import annotations

import polars as pl
import pytest
from trace_fixtures import DLRM, SAMPLES

from ncclscope import schema as S
from ncclscope.align.traces import AlignedCollectives, align_traces
from ncclscope.findings import Context
from ncclscope.findings.rules_traces import comm_overhead, low_busbw, straggler, sync_per_microbatch
from ncclscope.findings.trace_metrics import union_length
from ncclscope.frames import LogFrames
from ncclscope.parse.traces.read import TraceFrames, read_traces


def _ctx(t: TraceFrames | None, a: AlignedCollectives | None = None) -> Context:
    return Context(
        logs=LogFrames(), ranks=S.empty(S.RANKS), comms=S.empty(S.COMMS), traces=t, aligned_traces=a
    )


@pytest.fixture(scope="module")
def dlrm() -> tuple[TraceFrames, AlignedCollectives]:
    t = read_traces([str(DLRM)])
    a = align_traces(t)
    assert a is not None
    return t, a


def test_union_length_counts_overlaps_once() -> None:
    df = pl.DataFrame(
        {"rank": [0, 0, 0, 1], "start_us": [0.0, 5.0, 20.0, 0.0], "end_us": [10.0, 12.0, 25.0, 1.0]}
    )
    got = dict(union_length(df).sort("rank").iter_rows())
    assert got == {0: 17.0, 1: 1.0}


def _union_by_hand(iv: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for s, e in sorted(iv):
        total += max(0.0, e - max(s, reach))
        reach = max(reach, e)
    return total


def test_union_length_unsorted_nested_and_tied_intervals() -> None:
    # Rows out of order, nested intervals, equal starts, groups interleaved: per group as by hand.
    rows = [
        (1, 7.0, 9.0),
        (0, 5.0, 6.0),
        (0, 0.0, 10.0),
        (1, 0.0, 2.0),
        (0, 5.0, 15.0),
        (1, 1.0, 1.5),
        (0, 20.0, 21.0),
        (1, 7.0, 8.0),
        (0, 0.0, 3.0),
    ]
    df = pl.DataFrame(rows, schema=["rank", "start_us", "end_us"], orient="row")
    got = dict(union_length(df).iter_rows())
    want = {r: _union_by_hand([(s, e) for q, s, e in rows if q == r]) for r in (0, 1)}
    assert got == want == {0: 16.0, 1: 4.0}


def test_comm_overhead_on_dlrm(dlrm: tuple[TraceFrames, AlignedCollectives]) -> None:
    (f,) = comm_overhead(_ctx(*dlrm))
    assert f.id == "comm-overhead" and 0.30 < float(f.metrics["exposed_share"]) < 0.45  # type: ignore[arg-type]
    assert 0 <= float(f.metrics["overlap_pct"]) < 20  # type: ignore[arg-type]


def test_rules_are_silent_without_traces() -> None:
    for r in (straggler, comm_overhead, low_busbw, sync_per_microbatch):
        assert list(r(_ctx(None))) == []


def test_low_busbw_skips_small_messages_on_dlrm(dlrm: tuple[TraceFrames, AlignedCollectives]) -> None:
    assert list(low_busbw(_ctx(*dlrm))) == []  # V100 NVLink known, but every message is < 64 MiB


def _big_allreduce(busbw_gbps: float, gpu: str, n_gpus: int) -> tuple[TraceFrames, AlignedCollectives]:
    ranks = S.conform(
        pl.DataFrame(
            {"rank": list(range(8)), "gpu": [gpu] * 8, "world_size": [8] * 8, "n_gpus": [n_gpus] * 8}
        ),
        S.TRACE_RANKS,
    )
    size = 256 * 2**20
    transfer = size / (busbw_gbps / 1.75) / 1e3
    colls = S.conform(
        pl.DataFrame(
            {
                "coll_id": [0, 1],
                "op": ["allreduce"] * 2,
                "n_ranks": [8, 8],
                "complete": [True, True],
                "consistent": [True, True],
                "msg_bytes": [size, size],
                "transfer_us": [transfer] * 2,
                "busbw_gbps": [busbw_gbps] * 2,
            }
        ),
        S.ALIGNED_COLLECTIVES,
    )
    per = S.conform(pl.DataFrame({"coll_id": [0] * 8, "rank": list(range(8))}), S.ALIGNED_RANKS)
    t = TraceFrames(
        collectives=S.empty(S.TRACE_COLLECTIVES),
        steps=S.empty(S.TRACE_STEPS),
        kernels=S.empty(S.TRACE_KERNELS),
        ranks=ranks,
        pgs=S.empty(S.TRACE_PGS),
    )
    return t, AlignedCollectives(per_rank=per, collectives=colls, clock=S.empty(S.CLOCK_OFFSETS), n_ranks=8)


def test_low_busbw_fires_on_one_nvlink_host() -> None:
    (f,) = low_busbw(_ctx(*_big_allreduce(40.0, "NVIDIA H100 80GB HBM3", 8)))
    assert f.metrics["link_gbps"] == 450.0 and f.metrics["median_busbw_gbps"] == pytest.approx(40.0)


@pytest.mark.parametrize(
    "bw, gpu, n_gpus",
    [
        (300.0, "NVIDIA H100 80GB HBM3", 8),  # healthy
        (40.0, "NVIDIA H100 80GB HBM3", 4),  # 8 ranks but 4 GPUs per host: cross-node, link unknown
        (40.0, "NVIDIA H100 PCIe", 8),  # PCIe card: GPU-to-GPU path unknown
    ],
)
def test_low_busbw_stays_silent_when_not_honest(bw: float, gpu: str, n_gpus: int) -> None:
    assert list(low_busbw(_ctx(*_big_allreduce(bw, gpu, n_gpus)))) == []


def _colls(sizes: list[int], ranks: int = 2) -> TraceFrames:
    rows = [
        {
            "rank": r,
            "op": "allreduce",
            "pg_name": "0",
            "step": 7,
            "msg_bytes": s,
            "launch_us": float(i),
            "start_us": float(i),
            "path": f"rank{r}.json",
        }
        for r in range(ranks)
        for i, s in enumerate(sizes)
    ]
    return TraceFrames(
        collectives=S.conform(pl.DataFrame(rows), S.TRACE_COLLECTIVES),
        steps=S.empty(S.TRACE_STEPS),
        kernels=S.empty(S.TRACE_KERNELS),
        ranks=S.empty(S.TRACE_RANKS),
        pgs=S.empty(S.TRACE_PGS),
    )


def test_sync_per_microbatch_fires_on_repeated_buckets() -> None:
    buckets = [25 * 2**20, 25 * 2**20, 9 * 2**20]
    (f,) = sync_per_microbatch(_ctx(_colls(buckets * 4)))
    assert f.metrics["repeats"] == 4 and f.metrics["period"] == 3 and f.ranks == (0, 1)


def test_sync_per_microbatch_silent_for_one_sync_per_step() -> None:
    assert list(sync_per_microbatch(_ctx(_colls([25 * 2**20, 25 * 2**20 + 4, 9 * 2**20])))) == []
    assert list(sync_per_microbatch(_ctx(_colls([64, 64, 64])))) == []  # tiny metric all-reduces
    # real 2024 trace: 5 gradient all-reduces per step, each step once
    t = read_traces([str(SAMPLES / "single_rank" / "hta_nccl_data_rank0_of2.json.gz")])
    assert list(sync_per_microbatch(_ctx(t, align_traces(t)))) == []
