"""Parse → align → straggler on real gloo CPU traces with no `record_param_comms` (torch 2.13.0+cpu).

The sets are samples/traces/gloo_cpu_straggler/{delayed,clean} (see SOURCE.md there): each
collective is a `c10d::<op>` call on the main thread plus a `gloo:<op>` span that waits for it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from trace_fixtures import SAMPLES, Trace, load, write_set

from ncclscope import schema as S
from ncclscope.align.traces import AlignedCollectives, align_traces
from ncclscope.cli import main
from ncclscope.findings import Context
from ncclscope.findings.rules_traces import straggler
from ncclscope.frames import LogFrames
from ncclscope.parse.traces.read import TraceFrames, read_traces
from ncclscope.records import Finding

GLOO = SAMPLES / "gloo_cpu_straggler"
DELAYED, CLEAN = GLOO / "delayed", GLOO / "clean"
# Per rank and profiled window (2 steps): the DDP bucket + 3 sizes × 5 collectives, and 3 sends/recvs, per step.
PER_RANK = {
    "allreduce": 8,
    "allgather": 6,
    "reduce_scatter": 6,
    "broadcast": 6,
    "alltoall": 6,
    "send": 6,
    "recv": 6,
}
STEP_OPS = ["allreduce"] + ["allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall"] * 3


def _raw(folder: Path) -> dict[int, Trace]:
    traces = [load(p) for p in sorted(folder.glob("*.json.gz"))]
    return {t["distributedInfo"]["rank"]: t for t in traces}


def _complete(t: Trace) -> list[dict[str, Any]]:
    return [e for e in t["traceEvents"] if e.get("ph") == "X"]


def _analyse(folder: Path) -> tuple[TraceFrames, AlignedCollectives, list[Finding]]:
    t = read_traces([str(folder)])
    a = align_traces(t)
    assert a is not None
    ctx = Context(
        logs=LogFrames(), ranks=S.empty(S.RANKS), comms=S.empty(S.COMMS), traces=t, aligned_traces=a
    )
    return t, a, list(straggler(ctx))


@pytest.fixture(scope="module")
def delayed() -> tuple[TraceFrames, AlignedCollectives, list[Finding]]:
    return _analyse(DELAYED)


@pytest.fixture(scope="module")
def clean() -> tuple[TraceFrames, AlignedCollectives, list[Finding]]:
    return _analyse(CLEAN)


@pytest.mark.parametrize("folder", [DELAYED, CLEAN])
def test_real_gloo_trace_has_calls_and_spans_but_no_record_param_comms(folder: Path) -> None:
    for t in _raw(folder).values():
        names = Counter(e["name"] for e in _complete(t))
        assert t["distributedInfo"]["backend"] == "gloo"
        assert not [n for n in names if n == "record_param_comms" or n.startswith("nccl")]
        assert names["c10d::allreduce_"] == 8 and names["c10d::_reduce_scatter_base_"] == 6
        assert names["gloo:all_reduce"] == 14  # gloo runs reduce_scatter as an all-reduce
        assert not [n for n in names if n.startswith("gloo:reduce")]


def test_each_call_is_one_collective_timed_by_its_span(
    delayed: tuple[TraceFrames, AlignedCollectives, list[Finding]],
) -> None:
    t, _, _ = delayed
    c = t.collectives
    assert set(c["source"]) == {"cpu_op"} and c["end_us"].null_count() == 0 and not t.notes
    for rank in (0, 1):
        assert dict(Counter(c.filter(pl.col("rank") == rank)["op"].to_list())) == PER_RANK
    rs = c.filter(pl.col("op") == "reduce_scatter").sort("rank", "start_us").row(-1, named=True)
    assert (rs["event"], rs["in_nelems"], rs["out_nelems"], rs["dtype"]) == (
        "c10d::_reduce_scatter_base_",
        262144,
        131072,
        "float32",
    )
    assert rs["msg_bytes"] == 262144 * 4


def test_hand_check_first_collective_against_raw_json(
    delayed: tuple[TraceFrames, AlignedCollectives, list[Finding]],
) -> None:
    """Rank 1's first call and first gloo:all_reduce, straight from the JSON: arrival and end as loaded."""
    t, _, _ = delayed
    raw = _raw(DELAYED)[1]
    ev = sorted(_complete(raw), key=lambda e: e["ts"])
    call = next(e for e in ev if e["name"].startswith("c10d::"))
    span = next(e for e in ev if e["name"].startswith("gloo:"))
    base_us = raw["baseTimeNanoseconds"] / 1000
    row = t.collectives.filter(pl.col("rank") == 1).sort("start_us").row(0, named=True)
    assert (call["name"], span["name"], row["op"]) == ("c10d::allreduce_", "gloo:all_reduce", "allreduce")
    assert row["start_us"] == pytest.approx(base_us + call["ts"], abs=0.01)
    assert row["end_us"] == pytest.approx(base_us + span["ts"] + span["dur"], abs=0.01)
    assert row["in_nelems"] == 4680 and row["step"] == 2


def test_collectives_line_up_in_call_order(
    delayed: tuple[TraceFrames, AlignedCollectives, list[Finding]],
) -> None:
    _, a, _ = delayed
    c = a.collectives.sort("index")
    assert c.height == 32 and a.n_aligned == 32 and a.n_mismatched == 0
    assert set(c["match_key"]) == {"gloo-order"} and c["n_ranks"].to_list() == [2] * 32
    assert c["op"].to_list() == STEP_OPS * 2
    assert c["last_rank"].to_list() == [1] * 32
    # rank 1 sleeps 200 ms before each call (spread 197-202 ms); both leave together (median end spread 60 µs)
    assert c["arrival_spread_us"].min() > 190_000 and c["end_spread_us"].median() < 200  # type: ignore[operator]
    assert a.notes == ("24 send/recv op(s) not lined up (they pair per peer, not per group)",)


def test_sleeping_rank_is_the_straggler(
    delayed: tuple[TraceFrames, AlignedCollectives, list[Finding]],
) -> None:
    _, _, found = delayed
    (f,) = found
    assert (f.severity, f.ranks, f.metrics["pattern"]) == ("warning", (1,), "persistent")
    assert f.metrics["late_collectives"] == f.metrics["collectives"] == 32
    assert 195_000 < float(f.metrics["median_lateness_us"]) < 215_000  # type: ignore[arg-type]
    assert all("c10d::" in e.text for e in f.evidence)


def test_clean_run_names_no_straggler(clean: tuple[TraceFrames, AlignedCollectives, list[Finding]]) -> None:
    _, a, found = clean
    assert a.n_aligned == 32 and a.collectives.sort("index")["op"].to_list() == STEP_OPS * 2
    assert found == []


def test_cli_on_the_real_sets(capsys: pytest.CaptureFixture[str]) -> None:
    for folder, want in ((DELAYED, [[1]]), (CLEAN, [])):
        main(["analyze", "--trace", str(folder), "--format", "json", "--quiet"])
        out = json.loads(capsys.readouterr().out)
        assert [f["ranks"] for f in out["findings"] if f["id"] == "straggler"] == want


def _drop(traces: dict[int, Trace], rank: int, keep: Any) -> dict[int, Trace]:
    out = dict(traces)
    out[rank] = {**traces[rank], "traceEvents": [e for e in traces[rank]["traceEvents"] if keep(e)]}
    return out


def test_op_sequences_that_disagree_line_up_only_on_the_common_prefix(tmp_path: Path) -> None:
    """Rank 1 without its first `alltoall_base_` call and span (as if it skipped it): from index 5 on,
    its k-th call is not rank 0's, so only collectives 0-4 are lined up, with a note."""
    raw = _raw(CLEAN)
    ev = sorted(_complete(raw[1]), key=lambda e: e["ts"])
    call = next(e for e in ev if e["name"] == "c10d::alltoall_base_")
    span = next(e for e in ev if e["name"] == "gloo:all_to_all")
    a = align_traces(
        read_traces([str(write_set(_drop(raw, 1, lambda e: e is not call and e is not span), tmp_path))])
    )
    assert a is not None
    assert a.collectives.sort("index")["op"].to_list() == STEP_OPS[:5]
    assert a.n_aligned == 5 and a.n_mismatched == 0
    (note,) = [n for n in a.notes if "differ" in n]
    assert "collective #5 (rank 0 alltoall, rank 1 allreduce)" in note and "first 5" in note


def test_calls_without_spans_line_up_but_are_not_judged(tmp_path: Path) -> None:
    """With every gloo:* span filtered out, the calls still line up (arrivals), completion is unknown
    (a note), and the straggler rule judges nothing rather than a transfer time of zero."""
    raw = {
        r: _drop({r: t}, r, lambda e: not e.get("name", "").startswith("gloo:"))[r]
        for r, t in _raw(DELAYED).items()
    }
    t, a, found = _analyse(write_set(raw, tmp_path))
    assert t.collectives["end_us"].null_count() == t.collectives.height == 88
    assert len([n for n in t.notes if "no gloo:* span" in n]) == 2
    assert a.collectives.height == 32 and set(a.collectives["last_rank"]) == {1}
    assert found == []
