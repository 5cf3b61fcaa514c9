"""NCCL Inspector JSON lines: the reader, and inspector-straggler's reading of kernel times.

Records follow `plugins/profiler/inspector/inspector_json.cc` (compact JSON, one per line); the one
real record is DataDog/datadog-agent's copy of a dump (samples/inspector/SOURCE.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.findings import rules_nccl_reports as R
from ncclscope.parse.ncclreports.inspector import InspectorReader
from ncclscope.parse.ncclreports.read import read_nccl_reports
from ncclscope.parse.ncclreports.sniff import report_kind
from ncclscope.session import analyze

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "inspector"


def _rec(rank: int, sn: int, us: float | str, n: int = 4) -> str:
    return json.dumps(
        {
            "header": {"id": "0xabc", "comm_name": "x", "rank": rank, "n_ranks": n, "nnodes": 1},
            "metadata": {
                "inspector_output_format_version": "v4.0",
                "hostname": f"h{rank}",
                "pid": 100 + rank,
            },
            "coll_perf": {
                "coll": "AllReduce",
                "coll_sn": sn,
                "coll_msg_size_bytes": 1 << 20,
                "coll_exec_time_us": us,
                "coll_timing_source": "kernel_gpu",
                "coll_busbw_gbs": "nan",
            },
        }
    )


def _write(
    tmp: Path, late: int, extra_us: float, ops: int = 8, lost: dict[int, set[int]] | None = None
) -> Path:
    lost = lost or {}
    for rank in range(4):
        lines = [
            _rec(rank, sn, 2000.0 + (0 if rank == late else extra_us))
            for sn in range(1, ops + 1)
            if sn not in lost.get(rank, set())
        ]
        (tmp / f"h{rank}-pid{100 + rank}.log").write_text("\n".join(lines) + "\n")
    return tmp


def _stragglers(path: Path) -> list[tuple[int, ...]]:
    s = analyze([str(path)])
    return [f.metrics["rank"] for f in s.findings if f.id == "inspector-straggler"]  # type: ignore[misc]


def test_the_real_record_reads() -> None:
    p = SAMPLES / "real_datadog_record.log"
    assert report_kind(p.read_bytes()) == "inspector"
    r = read_nccl_reports([(str(p), "inspector")]).inspector
    assert r.select("comm", "rank", "n_ranks", "host", "op", "sn", "exec_us").row(0) == (
        "0xad56c683b0c4ef",
        1,
        3,
        "nanogpt-nccl-test-worker-0",
        "AllReduce",
        8995,
        5663.0,
    )


def test_the_sample_straggler_is_named_and_the_healthy_run_is_not() -> None:
    assert _stragglers(SAMPLES / "straggler") == [2]
    assert _stragglers(SAMPLES / "healthy") == []


@pytest.mark.parametrize(("extra_us", "named"), [(6000.0, True), (500.0, False), (1500.0, False)])
def test_thresholds_decide(tmp_path: Path, extra_us: float, named: bool) -> None:
    """6 ms of waiting on 2 ms kernels is a straggler; 0.5 ms is under `gap_us`; 1.5 ms (ratio 1.75) is
    under `ratio`. Without the thresholds every jitter would name a rank."""
    assert (_stragglers(_write(tmp_path, late=1, extra_us=extra_us)) == [1]) is named
    assert R.INSPECTOR_THRESHOLDS["ratio"].value == 2.0 and R.INSPECTOR_THRESHOLDS["gap_us"].value == 1000.0


def test_missing_records_are_unknown_never_late(tmp_path: Path) -> None:
    """Rank 3 lost most of its records (the ring dropped them): it is not named for them, and the
    finding says which operations each rank has no record of."""
    _write(tmp_path, late=1, extra_us=6000.0, lost={3: {1, 2, 3, 4, 5, 6}, 0: {8}})
    s = analyze([str(tmp_path)])
    (f,) = [f for f in s.findings if f.id == "inspector-straggler"]
    assert f.metrics["rank"] == 1
    assert f.metrics["operations_without_record"] == {"0": 1, "3": 6}
    assert "not counted as late" in f.why


def test_a_rank_with_no_file_is_unknown(tmp_path: Path) -> None:
    _write(tmp_path, late=1, extra_us=6000.0)
    (tmp_path / "h3-pid103.log").unlink()
    s = analyze([str(tmp_path)])
    (f,) = [f for f in s.findings if f.id == "inspector-straggler"]
    assert f.metrics["ranks_without_records"] == [3]


def test_bad_lines_are_notes_and_the_row_cap_holds(tmp_path: Path) -> None:
    p = tmp_path / "h0-pid1.log"
    p.write_text(_rec(0, 2, 10.0)[:40] + "\n" + _rec(0, 1, 10.0) + "\n" + _rec(0, 3, 10.0) + "\n[1]\n")
    r = InspectorReader(max_records=1)
    r.add(str(p), enumerate(p.read_text().splitlines(), start=1))
    assert r.frame().height == 1 and r.dropped == 1
    notes = r.notes()
    assert any("not JSON" in n for n in notes) and any("more not read" in n for n in notes)


def test_the_straggler_gets_its_global_rank_from_the_logs(tmp_path: Path) -> None:
    """Inspector's rank is the communicator's own; a log line of the same host:pid names the global rank."""
    _write(tmp_path, late=1, extra_us=6000.0)
    (tmp_path / "rank7.log").write_text(
        "h1:101:102 [0] NCCL INFO ncclCommInitRank comm 0x55d1 rank 7 nranks 8 cudaDev 0 nvmlDev 0 busId 41000 "
        "commId 0x00000000000000aa - Init COMPLETE\n"
    )
    s = analyze([str(tmp_path)])
    (f,) = [f for f in s.findings if f.id == "inspector-straggler"]
    assert f.ranks == (7,) and f.hosts == ("h1",)


def test_the_rule_documents_its_thresholds() -> None:
    doc = R.inspector_straggler.__doc__ or ""
    t = R.INSPECTOR_THRESHOLDS
    assert f"({int(t['min_ops'].value)})" in doc and f"({t['ratio'].value:g}×)" in doc
    assert f"({t['gap_us'].value / 1000:g} ms)" in doc and t["share"].value == 0.5 and "(half)" in doc
    assert all(x.reason for x in t.values())
