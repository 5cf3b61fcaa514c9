"""Capture stage, after torchrun exits: manifests a rank left `starting`/`running` (it died by a
signal it could not catch) are rewritten with what the launcher observed. No torch: torchrun's
summaries come from the committed CPU captures, the manifests are written here; the summary is read
from run's console.log, each line stamped, as it reads from a plain torchrun log."""

from __future__ import annotations

import json
from pathlib import Path

from ncclscope.capture.postmortem import RankExit, settle_manifests, torchrun_exits

CAPTURES = Path(__file__).resolve().parents[2] / "samples" / "capture"


def test_torchrun_summary_gives_every_failed_rank() -> None:
    crash = torchrun_exits((CAPTURES / "crash" / "logs" / "torchrun.log").read_text())
    assert crash[3].exit_code == -9 and crash[3].signal == "SIGKILL"
    hang = torchrun_exits((CAPTURES / "hang" / "logs" / "torchrun.log").read_text())
    assert sorted(hang) == [0, 1, 2, 3]
    assert hang[1] == RankExit(rank=1, exit_code=143, pid=2911) and hang[1].signal is None
    mismatch = torchrun_exits((CAPTURES / "mismatch" / "logs" / "torchrun.log").read_text())
    assert mismatch[1].signal == "SIGABRT"
    assert torchrun_exits((CAPTURES / "clean" / "logs" / "torchrun.log").read_text()) == {}


SUMMARY = """\
Root Cause (first observed failure):
[0]:
  time      : 2026-11-23_01:11:07
  host      : node7
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 501)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 501
Other Failures:
[1]:
  time      : 2026-11-23_01:11:07
  host      : node7
  rank      : 3 (local_rank: 1)
  exitcode  : 7 (pid: 503)
"""


def _manifest(d: Path, rank: int, status: str, pid: int) -> Path:
    p = d / f"rank{rank}.json"
    p.write_text(json.dumps({"rank": rank, "pid": pid, "status": status, "host": "node7"}))
    return p


def _console(text: str) -> str:
    """The summary as run's console.log holds it: each line stamped with its arrival and stream."""
    return "".join(
        f"2026-11-23T01:11:07.{i:06d}Z [stderr] {ln}" for i, ln in enumerate(text.splitlines(True))
    )


def test_settle_rewrites_only_unfinished_manifests(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text(_console(SUMMARY))
    paths = [
        _manifest(tmp_path, 0, "failed", 500),
        _manifest(tmp_path, 1, "running", 501),
        _manifest(tmp_path, 2, "starting", 502),
        _manifest(tmp_path, 3, "running", 503),
        _manifest(tmp_path, 4, "running", 999),
    ]
    before_failed = paths[0].read_text()
    assert settle_manifests(paths, log, returncode=1, timed_out=False) == [1, 2, 3, 4]
    assert paths[0].read_text() == before_failed  # a rank that wrote its own end keeps it
    m = [json.loads(p.read_text()) for p in paths]
    assert m[1]["status"] == "killed" and m[1]["exit_code"] == -9 and m[1]["error"] == "killed by SIGKILL"
    seen = m[1]["launcher_observed"]
    assert (
        seen["signal"] == "SIGKILL"
        and seen["status_before"] == "running"
        and seen["torchrun_returncode"] == 1
    )
    assert seen["source"] == "console.log" and m[1]["host"] == "node7"  # the rest of the manifest stays
    assert m[2]["status"] == "lost" and m[2]["launcher_observed"]["status_before"] == "starting"
    assert (
        m[3]["status"] == "exited" and m[3]["exit_code"] == 7 and m[3]["launcher_observed"]["signal"] is None
    )
    assert m[4]["status"] == "lost"  # rank 4 is not in the summary; a pid torchrun never named proves nothing


def test_settle_after_the_outer_deadline_says_so(tmp_path: Path) -> None:
    log = tmp_path / "torchrun.log"
    log.write_text("torchrun was killed before it printed a summary\n")
    p = _manifest(tmp_path, 0, "running", 10)
    assert settle_manifests([p], log, returncode=-9, timed_out=True) == [0]
    m = json.loads(p.read_text())
    assert (
        m["status"] == "lost"
        and "outer deadline" in m["error"]
        and m["launcher_observed"]["timed_out"] is True
    )


def test_a_pid_mismatch_is_not_this_process(tmp_path: Path) -> None:
    log = tmp_path / "torchrun.log"
    log.write_text(SUMMARY)
    p = _manifest(tmp_path, 1, "running", 777)  # torchrun restarted the worker; 501 was another process
    settle_manifests([p], log, returncode=1, timed_out=False)
    assert json.loads(p.read_text())["status"] == "lost"
