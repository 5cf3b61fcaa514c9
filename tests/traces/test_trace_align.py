"""Align stage, traces: every collective of the real sets lined up, checked by hand against the raw JSON."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from trace_fixtures import DLRM, SAMPLES, load, nccl_kernels

from ncclscope.align.traces import AlignedCollectives, align_traces, bus_factor
from ncclscope.parse.traces.read import read_traces


@pytest.fixture(scope="module")
def dlrm() -> AlignedCollectives:
    a = align_traces(read_traces([str(DLRM)]))
    assert a is not None
    return a


def test_dlrm_every_collective_aligned(dlrm: AlignedCollectives) -> None:
    assert dlrm.n_ranks == 8
    assert dlrm.collectives.height == 8 and dlrm.n_aligned == 8 and dlrm.n_mismatched == 0
    assert dlrm.collectives["match_key"].unique().to_list() == ["stream-order"]
    assert dlrm.per_rank.height == 64


def test_dlrm_matches_reference_figures(dlrm: AlignedCollectives) -> None:
    c = dlrm.collectives
    # ../shared/reference/trace-schema.md §5: ends agree within 1–7 µs, starts spread 125 µs–7.6 ms,
    # rank 7 last for #0–#4, then ranks 5/4 for #5–#7.
    assert c["end_spread_us"].max() <= 7.0
    assert c["arrival_spread_us"].min() == pytest.approx(125, abs=2)
    assert c["arrival_spread_us"].max() == pytest.approx(7624, abs=2)
    assert c["last_rank"].to_list() == [7, 7, 7, 7, 7, 5, 5, 4]


def test_dlrm_hand_check_against_raw_json(dlrm: AlignedCollectives) -> None:
    """Recompute three collectives straight from the JSON with plain Python and compare."""
    raw = {
        t["distributedInfo"]["rank"]: nccl_kernels(t) for t in (load(p) for p in sorted(DLRM.glob("*.gz")))
    }
    offsets = dict(zip(dlrm.clock["rank"].to_list(), dlrm.clock["offset_us"].to_list(), strict=True))
    for k in (0, 4, 7):
        starts = {r: ks[k]["ts"] - offsets[r] for r, ks in raw.items()}
        last = max(starts, key=starts.__getitem__)
        got = dlrm.collectives.filter(pl.col("coll_id") == k).row(0, named=True)
        assert got["last_rank"] == last
        assert got["arrival_spread_us"] == pytest.approx(max(starts.values()) - min(starts.values()))
        rows = dlrm.per_rank.filter(pl.col("coll_id") == k)
        for r in rows.iter_rows(named=True):
            assert r["wait_us"] == pytest.approx(starts[last] - starts[r["rank"]])
    # collective #4 is the 394241-float all-reduce: busbw = S / t × 2(n-1)/n
    ar = dlrm.collectives.filter(pl.col("coll_id") == 4).row(0, named=True)
    assert ar["op"] == "allreduce" and ar["msg_bytes"] == 394241 * 4
    assert ar["busbw_gbps"] == pytest.approx(ar["msg_bytes"] / ar["transfer_us"] / 1e3 * 1.75)


def test_same_host_clock_offsets_are_microseconds(dlrm: AlignedCollectives) -> None:
    assert dlrm.clock["basis"].unique().to_list() == ["rank"]
    assert dlrm.clock["offset_us"].abs().max() <= 3.0


def test_sampled_two_of_128_ranks_are_matched_but_incomplete() -> None:
    a = align_traces(read_traces([str(SAMPLES / "hta_sampled_2rank")]))
    assert a is not None
    assert a.collectives.height == 10 and (a.collectives["n_ranks"] == 2).all()
    assert a.n_aligned == 0 and not a.collectives["complete"].any()
    assert a.clock.is_empty() and any("clock offsets not estimated" in n for n in a.notes)


def test_single_rank_b200_aligns_to_itself() -> None:
    a = align_traces(read_traces([str(SAMPLES / "single_rank" / "tracelens_b200_eager_rank0_of8.json.gz")]))
    assert a is not None and a.collectives.height == 1
    assert a.collectives["match_key"][0] == "pg-order" and a.collectives["expected_ranks"][0] == 8


def test_bus_factors() -> None:
    df = pl.DataFrame({"op": ["allreduce", "allgather", "alltoall", "broadcast"], "n": [8, 8, 4, 8]})
    got = df.select(bus_factor(pl.col("op"), pl.col("n")).alias("f"))["f"].to_list()
    assert got == pytest.approx([1.75, 0.875, 0.75, 1.0])


def test_no_traces_gives_none() -> None:
    assert align_traces(None) is None


def test_hosts_from_logs_drive_the_clock_and_pgs_join_communicators(tmp_path: Path) -> None:
    """Traces without host names; the logs' RANKS table says which host each rank is on."""
    import trace_fixtures as F

    from ncclscope import schema as S

    shifted = F.shift_clock(F.b200_set(n_colls=6), {4, 5, 6, 7}, 12_000.0)
    t = read_traces([str(F.write_set(shifted, tmp_path))])
    ranks = S.conform(pl.DataFrame({"rank": list(range(8)), "host": ["a"] * 4 + ["b"] * 4}), S.RANKS)
    comms = S.conform(pl.DataFrame({"comm_key": ["c3"], "nranks": [8], "pg_name": ["3"]}), S.COMMS)
    a = align_traces(t, ranks=ranks, comms=comms)
    assert a is not None and a.clock["basis"][0] == "host"
    assert a.clock.filter(pl.col("host") == "b")["offset_us"][0] == pytest.approx(12_000, abs=1)
    assert a.groups.select("group", "comm_key", "comm_nranks").row(0) == ("pg 3", "c3", 8)
