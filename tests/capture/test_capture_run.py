"""Capture stage, end to end on the CPU: torchrun + gloo with 2 ranks, a clean run and each
fault CI checks (straggler, hang, crash), the outer deadline, and `ncclscope analyze` on the output.
Capture runs through `run`: its console.log, run.json and (for the hang) its node snapshot are checked
too, and the CLI's own diagnosis once (a crash, which ends fast).
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ncclscope.capture import CaptureOptions, CaptureResult, parse_faults, run_capture
from ncclscope.run.supervise import KILL_GRACE_S

pytestmark = [pytest.mark.torch, pytest.mark.slow]

NPROC = 2
TIMEOUT_S = 5.0
FAULTS = {
    "clean": [],
    "straggler": ["straggler:rank=1,delay_ms=20"],
    "hang": ["hang:rank=1"],
    "crash": ["crash:rank=1"],
}
# What `ncclscope analyze` must name for each fault (rank 1 in each).
EXPECTED = {"straggler": "straggler", "hang": "collective-hang", "crash": "rank-exited"}


@pytest.fixture(scope="session")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], CaptureResult]:
    """Runs each fault's capture once per session, on first use."""
    done: dict[str, CaptureResult] = {}

    def get(name: str) -> CaptureResult:
        if name not in done:
            out = tmp_path_factory.mktemp("capture") / name
            done[name] = run_capture(
                CaptureOptions(
                    out_dir=out,
                    nproc_per_node=NPROC,
                    backend="gloo",
                    faults=parse_faults(FAULTS[name]),
                    timeout_s=TIMEOUT_S,
                    # one snapshot is enough (its probes cost CPU that would blur the timing faults)
                    snapshot=name == "hang",
                )
            )
        return done[name]

    return get


def _manifest(res: CaptureResult, rank: int) -> dict[str, object]:
    return json.loads((res.out_dir / "manifest" / f"rank{rank}.json").read_text())  # type: ignore[no-any-return]


def _log(res: CaptureResult, rank: int) -> str:
    return (res.out_dir / "logs" / f"rank{rank}.log").read_text(errors="replace")


def _flight(res: CaptureResult, rank: int) -> dict[str, object]:
    # Our own dump from a run made in this test: plain pickle is fine here.
    return pickle.loads((res.out_dir / "flight" / f"nccl_trace_rank_{rank}").read_bytes())  # type: ignore[no-any-return]


def _last_enqueued(res: CaptureResult, rank: int) -> int:
    status = _flight(res, rank)["pg_status"]
    assert isinstance(status, dict)
    return int(status["0"]["last_enqueued_collective"])


def _gloo_ops(res: CaptureResult, rank: int) -> list[dict[str, object]]:
    with gzip.open(res.out_dir / "traces" / f"rank{rank}.pt.trace.json.gz", "rt") as fh:
        doc = json.load(fh)
    assert doc["distributedInfo"]["rank"] == rank and doc["distributedInfo"]["backend"] == "gloo"
    return [
        e for e in doc["traceEvents"] if e.get("ph") == "X" and str(e.get("name", "")).startswith("gloo:")
    ]


def test_clean_run(capture: Callable[[str], CaptureResult]) -> None:
    res = capture("clean")
    assert res.returncode == 0 and not res.timed_out and res.elapsed_s < 60
    for rank in range(NPROC):
        m = _manifest(res, rank)
        assert m["status"] == "completed" and m["rank"] == rank and m["local_rank"] == rank
        assert m["pid"] and m["host"] and m["world_size"] == NPROC and m["faults"] == []
        assert isinstance(m["versions"], dict) and m["versions"]["torch"]
        assert isinstance(m["env"], dict) and m["env"]["TZ"] == "UTC" and m["env"]["NCCL_DEBUG"] == "INFO"
        names = {str(e["name"]) for e in _gloo_ops(res, rank)}
        assert {"gloo:all_reduce", "gloo:all_gather", "gloo:broadcast", "gloo:all_to_all"} <= names
        assert f"ncclscope-capture rank={rank} step=5 end" in _log(res, rank)
    assert not list((res.out_dir / "flight").iterdir())  # dumps are written only when a run fails
    run = json.loads((res.out_dir / "capture.json").read_text())
    assert (
        run["returncode"] == 0
        and run["world_size"] == NPROC
        and run["argv"][-1] == "ncclscope.capture.worker"
    )
    console = (res.out_dir / "console.log").read_text()
    assert re.search(r"^\S+Z \[std(out|err)\] ", console, re.MULTILINE)  # run's stamped tee
    rec = json.loads((res.out_dir / "run.json").read_text())
    assert rec["exit_status"] == 0 and rec["node_dir"] == "." and rec["launcher"]["torchrun"] is True
    wait = next(e for e in rec["env"] if e["names"] == ["TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC"])
    assert wait["value"] == "5000" and "capture" in wait["why"]
    assert not (res.out_dir / "snapshot.md").exists()


def test_straggler_makes_the_others_wait(capture: Callable[[str], CaptureResult]) -> None:
    res = capture("straggler")
    assert res.returncode == 0 and not res.timed_out
    waited = statistics.median(float(e["dur"]) for e in _gloo_ops(res, 0)) / 1000  # type: ignore[arg-type]
    assert waited > 10, f"rank 0 waited a median {waited:.1f} ms; rank 1 was delayed 20 ms"
    assert _manifest(res, 1)["faults"] and not _manifest(res, 0)["faults"]


def test_hang_ends_at_the_process_group_timeout(capture: Callable[[str], CaptureResult]) -> None:
    res = capture("hang")
    assert res.returncode != 0 and not res.timed_out and res.elapsed_s < 90
    assert "Timed out waiting 5000ms" in _log(res, 0)
    assert "terminated by SIGTERM" in _log(res, 1)
    assert _manifest(res, 0)["status"] == "failed" and _manifest(res, 1)["status"] == "terminated"
    # The worker runs under torch's elastic @record: torchrun's failure summary holds the real error.
    assert "Timed out waiting 5000ms" in (res.out_dir / "console.log").read_text()
    assert "## versions" in (res.out_dir / "snapshot.md").read_text()  # run's node snapshot
    # Rank 1 never entered the collective rank 0 timed out in.
    assert _last_enqueued(res, 1) == _last_enqueued(res, 0) - 1
    assert (res.out_dir / "traces" / "rank1.pt.trace.json.gz").exists()  # written before the fault


def test_crash_leaves_a_silent_rank(capture: Callable[[str], CaptureResult]) -> None:
    res = capture("crash")
    assert res.returncode != 0 and not res.timed_out
    launcher = (res.out_dir / "console.log").read_text()
    assert "exitcode  : -9" in launcher and "rank      : 1 (local_rank: 1)" in launcher
    progress = [ln for ln in _log(res, 1).splitlines() if "ncclscope-capture" in ln]
    assert "Traceback" not in _log(res, 1) and progress[-1].endswith("rank=1 step=4 begin")
    assert not (res.out_dir / "flight" / "nccl_trace_rank_1").exists()
    assert (res.out_dir / "flight" / "nccl_trace_rank_0").exists()
    # SIGKILL left rank 1's manifest `running`; the launcher rewrote it from torchrun's summary.
    m = _manifest(res, 1)
    observed = m["launcher_observed"]
    assert m["status"] == "killed" and m["exit_code"] == -9 and res.settled == (1,)
    assert (
        isinstance(observed, dict)
        and observed["signal"] == "SIGKILL"
        and observed["status_before"] == "running"
    )
    # Rank 0 either sees gloo fail first (`failed`) or torchrun's SIGTERM, sent once it reaps rank 1,
    # arrives first (`terminated`): a race between two processes, both an echo of rank 1's death.
    assert _manifest(res, 0)["status"] in ("failed", "terminated")
    assert "launcher_observed" not in _manifest(res, 0)


def test_outer_deadline_ends_a_hang_and_flushes_evidence(tmp_path: Path) -> None:
    deadline = 40.0
    res = run_capture(
        CaptureOptions(
            out_dir=tmp_path / "o",
            nproc_per_node=NPROC,
            backend="gloo",
            faults=parse_faults(["hang:rank=1"]),
            timeout_s=300,
            run_timeout_s=deadline,
            snapshot=False,
        )
    )
    assert res.timed_out and res.elapsed_s < deadline + KILL_GRACE_S + 15
    terminated = 0
    for rank in range(NPROC):
        path = tmp_path / "o" / "manifest" / f"rank{rank}.json"
        if not path.exists():  # a very slow machine may not have started this worker yet
            continue
        m = _manifest(res, rank)
        pid = int(m["pid"])  # type: ignore[call-overload]
        assert (
            not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )
        if m["status"] == "terminated":
            terminated += 1
            assert (tmp_path / "o" / "flight" / f"nccl_trace_rank_{rank}").exists()
    assert terminated, "no rank unwound on SIGTERM"
    assert json.loads((tmp_path / "o" / "capture.json").read_text())["timed_out"] is True
    assert json.loads((tmp_path / "o" / "run.json").read_text())["timed_out"] is True


def test_cli_capture_diagnoses_like_run(tmp_path: Path) -> None:
    """`ncclscope capture` ends as `ncclscope run` does: reports in the run directory and the verdict
    printed, naming the rank the fault was injected on; its own exit status (0: evidence captured)."""
    out = tmp_path / "cap"
    args = ["capture", "--backend", "gloo", "--nproc-per-node", "2", "--timeout", "5", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "ncclscope", *args, "-q", "--no-snapshot", "--inject", "crash:rank=1,code=3"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = next(ln for ln in done.stderr.splitlines() if "verdict:" in ln)
    assert verdict.startswith("ncclscope capture: verdict:") and re.search(
        r"\b[Rr]ank(?:s|\(s\))? 1\b", verdict
    ), verdict
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"]["ranks"] == [1], report["verdict"]
    assert (out / "report.md").exists() and (out / "report.html").exists()
    assert (out / "run.json").exists() and (out / "capture.json").exists()


def _analyze(out: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    from ncclscope.cli import main

    capsys.readouterr()
    code = main(["analyze", str(out), "--format", "json", "--quiet"])
    text = capsys.readouterr().out
    assert code in (0, 1), text
    return json.loads(text)["findings"]  # type: ignore[no-any-return]


# Detection belongs to the analysis rules: `straggler` from traces (issue 4); `collective-hang` and
# `rank-exited` from PyTorch-side evidence (issue 3: gloo Flight Recorder dumps, gloo errors, torchrun's report).
@pytest.mark.parametrize("fault", list(EXPECTED))
def test_analyze_names_the_injected_fault_and_rank(
    fault: str, capture: Callable[[str], CaptureResult], capsys: pytest.CaptureFixture[str]
) -> None:
    findings = _analyze(capture(fault).out_dir, capsys)
    named = [f for f in findings if f["id"] == EXPECTED[fault] and f["ranks"] == [1]]
    assert named, f"no {EXPECTED[fault]} finding for rank 1; got {[(f['id'], f['ranks']) for f in findings]}"
    if fault == "straggler":
        metrics = named[0]["metrics"]
        assert isinstance(metrics, dict) and 10_000 < float(metrics["median_lateness_us"]) < 40_000


def test_analyze_finds_no_fault_in_the_clean_run(
    capture: Callable[[str], CaptureResult], capsys: pytest.CaptureFixture[str]
) -> None:
    findings = _analyze(capture("clean").out_dir, capsys)
    assert not [f for f in findings if f["severity"] == "error"], findings
    # CPU timing noise may show up as sub-millisecond lateness; an injected-size delay may not.
    late = [f for f in findings if f["id"] == "straggler" and _lateness_us(f) > 5_000]
    assert not late, late


def _lateness_us(finding: dict[str, object]) -> float:
    metrics = finding.get("metrics")
    return abs(float(metrics.get("median_lateness_us", 0))) if isinstance(metrics, dict) else 0.0
