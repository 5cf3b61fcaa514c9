"""gloo / torchrun evidence: the committed CPU captures (samples/capture, torch 2.13 + gloo) and the
same logic on built NCCL dumps. Answers are written here by hand from samples/capture/EVIDENCE.md;
nothing reads the captures' manifests (they hold the injected fault)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ncclscope.cli import main
from ncclscope.hang import build_hang_view
from ncclscope.hang import exits as X
from ncclscope.hang.progress import torch_rows, untracked_groups
from ncclscope.parse import read_logs
from ncclscope.parse.flight.read import read_flight
from ncclscope.parse.inputs import classify_inputs

from .fixtures import fr_dump, fr_entry, fr_scenario, write_dumps

CAPTURES = Path(__file__).resolve().parents[2] / "samples" / "capture"
# capture -> (class, culprits) the verdict must give
WANT = {"hang": ("a", (1,)), "crash": ("d", (3,)), "mismatch": ("c", (1,))}


def _logs(name: str) -> list[str]:
    return sorted(str(p) for p in (CAPTURES / name / "logs").glob("*.log"))


def _dumps(name: str) -> list[str]:
    return sorted(str(p) for p in (CAPTURES / name / "flight").glob("nccl_trace_rank_*"))


@pytest.mark.parametrize("name", list(WANT))
def test_capture_logs_and_dumps(name: str) -> None:
    rep = build_hang_view(read_logs(_logs(name)), read_flight(_dumps(name)))
    v = rep.verdicts[0]
    assert (v.klass, v.culprits) == WANT[name], v.sentence
    assert v.source == "flight" and v.seq == 71


@pytest.mark.parametrize("name", list(WANT))
def test_capture_logs_alone(name: str) -> None:
    """Without dumps the verdict comes from gloo's errors and torchrun's report (lower confidence)."""
    v = build_hang_view(read_logs(_logs(name))).verdicts[0]
    assert (v.klass, v.culprits) == WANT[name], v.sentence
    assert v.source == "gloo" and v.confidence in ("low", "medium")


def test_gloo_dumps_have_no_completion_tracking() -> None:
    assert untracked_groups(read_flight(_dumps("hang"))) == {"0"}
    assert untracked_groups(read_flight([])) == set()


def test_nccl_dumps_keep_their_completion_semantics(tmp_path: Path) -> None:
    """The same shape, one rank's dump a collective behind while everything enqueued has completed:
    with NCCL (entries marked completed) that rank's dump is merely older, not a hang (e); with gloo
    (entries never marked, only retired) the rank behind never entered (a)."""

    def dumps(backend: str) -> dict[int, dict[str, object]]:
        out = {}
        for r in range(4):
            top = 10 if r == 2 else 11
            ents = [fr_entry(i, i + 1) for i in range(top)]
            if backend == "gloo":
                for e in ents:
                    e.update(
                        profiling_name="gloo:all_reduce",
                        state="scheduled",
                        time_discovered_started_ns=None,
                        time_discovered_completed_ns=None,
                        retired=True,
                    )
            out[r] = fr_dump(ents, top, top, 4)
        return out

    nccl = build_hang_view(read_logs([]), read_flight(write_dumps(tmp_path / "n", dumps("nccl")))).verdicts[0]
    gloo = build_hang_view(read_logs([]), read_flight(write_dumps(tmp_path / "g", dumps("gloo")))).verdicts[0]
    assert nccl.klass == "e" and not nccl.hang_evidence
    assert (gloo.klass, gloo.culprits, gloo.seq) == ("a", (2,), 11)


def test_torchrun_report_is_read_and_root_cause_is_not_blamed() -> None:
    lf = read_logs(_logs("hang"))
    rep = build_hang_view(lf)
    torch = X.with_file_rank(torch_rows(lf), X.file_ranks(lf))
    ex = X.launcher_exits(torch).sort("rank")
    assert ex["exit_code"].to_list() == [1, 143, 1, 1]
    assert ex.filter(pl.col("root_cause"))["rank"].to_list() == [0]  # torchrun's "Root Cause": a waiting rank
    # torchrun sent SIGTERM to ranks 1 and 3 (pids in its `Sending process … closing signal` lines)
    assert ex["stopped_by_launcher"].to_list() == [False, True, False, True]
    assert X.waiting_ranks(torch) == {0, 2, 3}
    assert rep.exited == () and 0 not in rep.verdicts[0].culprits


def test_crash_signal_and_mismatch_abort() -> None:
    crash = read_logs(_logs("crash"))
    ex = X.launcher_exits(X.with_file_rank(torch_rows(crash), X.file_ranks(crash)))
    row = ex.filter(pl.col("rank") == 3).row(0, named=True)
    assert (row["exit_code"], row["signal"], row["stopped_by_launcher"]) == (-9, "SIGKILL", False)
    assert [r for r, _ in build_hang_view(crash).exited] == [3]
    mism = read_logs(_logs("mismatch"))
    g = X.gloo_facts(X.with_file_rank(torch_rows(mism), X.file_ranks(mism)))
    sm = g.filter(pl.col("kind") == "gloo_size_mismatch")
    assert sm["rank"].to_list() == [1] and (sm["numel_in"][0], sm["numel_out"][0]) == (512, 384)


def test_watchdog_sigabrt_after_a_timeout_is_an_echo() -> None:
    """NCCL's watchdog takes a timed-out process down with SIGABRT: those ranks are waiters, not dead first."""
    exits = pl.DataFrame(
        {
            "rank": [0, 1, 2],
            "exit_code": [-6, -6, -6],
            "signal": ["SIGABRT"] * 3,
            "pid": [1, 2, 3],
            "root_cause": [True, False, False],
            "stopped_by_launcher": [False] * 3,
            "path": ["t.log"] * 3,
            "line": [1, 2, 3],
            "text": ["x"] * 3,
        },
        schema=X.EXITS,
    )
    assert X.died_ranks(exits, waiters={0, 2}, logged={0, 1, 2}) == {
        1: X.died_ranks(exits, {0, 2}, {0, 1, 2})[1]
    }
    assert X.died_ranks(exits, waiters=set(), logged=set()) == {}  # all aborted, no logs: nobody singled out
    assert set(X.died_ranks(exits.head(1), waiters=set(), logged=set())) == {0}


def test_file_rank_from_tags_or_name(tmp_path: Path) -> None:
    (tmp_path / "rank7.log").write_text(
        "RuntimeError: [a/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete\n"
    )
    (tmp_path / "worker.out").write_text(
        "[rank4]:[I1121 22:03:25.309211824 reducer.cpp:1228] Reducer: x\nhello\n"
    )
    lf = read_logs([str(tmp_path / "rank7.log"), str(tmp_path / "worker.out")])
    fr = dict(X.file_ranks(lf).iter_rows())
    assert fr == {str(tmp_path / "rank7.log"): 7, str(tmp_path / "worker.out"): 4}


def test_json_flight_dump_on_the_command_line_is_a_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_dumps(tmp_path, fr_scenario("a", 3, culprit=2), fmt="json")
    assert classify_inputs(paths).dumps == tuple(paths)
    assert classify_inputs([str(tmp_path)]).dumps == tuple(sorted(paths))
    capsys.readouterr()
    assert main(["analyze", *paths, "--format", "json", "--quiet"]) in (0, 1)
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [f["ranks"] for f in found if f["id"] == "collective-hang"] == [[2]]
