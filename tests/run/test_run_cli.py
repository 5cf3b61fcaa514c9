"""`ncclscope run` end to end with a fake launcher (tests/run/fake_launcher.py): the job's exit status
passed through (0, 3, a signal), the user's environment kept, per-process NCCL files, the manifest,
console.log, Ctrl-C forwarded to the job, reports written, a used directory refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.conftest import FAKE, REPO, RunCli, manifest, node_dir

FAKE_CMD = [sys.executable, str(FAKE)]


@pytest.mark.parametrize(("args", "status"), [([], 0), (["--exit", "3"], 3), (["--signal", "SIGKILL"], 137)])
def test_exits_with_the_commands_own_status(
    run_cli: RunCli, tmp_path: Path, args: list[str], status: int
) -> None:
    out = tmp_path / "run"
    done = run_cli(["--out", str(out), "--no-snapshot", "--no-analyze", "--", *FAKE_CMD, *args])
    assert done.returncode == status, done.stderr
    m = manifest(out)
    assert m["exit_status"] == status and m["status"] == "ended"
    assert m["signal"] == ("SIGKILL" if status == 137 else None)
    assert m["returncode"] == (-9 if status == 137 else status)
    how = "killed by SIGKILL" if status == 137 else f"exited with status {status}"
    assert f"the command {how}" in done.stderr


def test_records_the_evidence_and_reports(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "run"
    seen = tmp_path / "env.json"
    done = run_cli(
        ["--out", str(out), "--no-snapshot", "--", *FAKE_CMD, "--env-json", str(seen), "--exit", "3"],
        env={"NCCL_DEBUG": "WARN"},
    )
    assert done.returncode == 3, done.stderr
    job_env = json.loads(seen.read_text())
    node = node_dir(out)
    # the user's NCCL_DEBUG is kept, and said so; ncclscope's own settings are set
    assert job_env["NCCL_DEBUG"] == "WARN"
    assert "kept NCCL_DEBUG=WARN (yours)" in done.stderr
    assert job_env["NCCL_DEBUG_FILE"] == f"{node}/nccl/nccl.%h.%p.log"
    assert "set  NCCL_DEBUG_FILE=" in done.stderr
    entry = next(e for e in manifest(out)["env"] if e["names"] == ["NCCL_DEBUG"])  # type: ignore[union-attr]
    assert entry["action"] == "kept" and entry["value"] == "WARN" and entry["source"]
    # one NCCL file per process, %h and %p expanded by the process itself
    assert len(list((node / "nccl").glob("nccl.*.*.log"))) == 2
    console = (node / "console.log").read_text()
    assert "[stdout] rank 0 says hello" in console and "[stderr] rank 1 warns on stderr" in console
    assert "rank 0 says hello" in done.stdout  # the job's output still reaches the user
    # alone in --out: the reports cover all of it and sit at its top
    for name in ("report.md", "report.html", "report.json"):
        assert (out / name).stat().st_size > 0
    report = json.loads((out / "report.json").read_text())
    assert {r["rank"] for r in report["ranks"]} == {0, 1}
    assert "verdict: " in done.stderr
    listed = manifest(out)["files"]
    assert isinstance(listed, list) and "console.log" in listed and "run.json" in listed
    assert sum(f.startswith("nccl/") for f in listed) == 2


def test_no_analyze_writes_no_report_and_no_fr_sets_no_dump_path(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "run"
    seen = tmp_path / "env.json"
    done = run_cli(
        [
            "--out",
            str(out),
            "--no-snapshot",
            "--no-analyze",
            "--no-fr",
            "--",
            *FAKE_CMD,
            "--env-json",
            str(seen),
        ]
    )
    assert done.returncode == 0
    assert not list(out.glob("report.*")) and "next: ncclscope analyze" in done.stderr
    assert not any(k.startswith("TORCH_FR_") for k in json.loads(seen.read_text()) if k not in os.environ)
    assert not (node_dir(out) / "flight").exists()


def test_a_used_run_directory_is_refused_before_the_command_runs(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_cli(["--out", str(out), "--no-snapshot", "--no-analyze", "--", *FAKE_CMD]).returncode == 0
    marker = tmp_path / "ran.json"
    done = run_cli(["--out", str(out), "--no-snapshot", "--", *FAKE_CMD, "--env-json", str(marker)])
    assert done.returncode == 2 and "already holds a run" in done.stderr
    assert not marker.exists()


def test_a_command_that_cannot_start_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    done = run_cli(["--out", str(tmp_path / "r"), "--no-snapshot", "--", "/no/such/launcher"])
    assert done.returncode == 2 and "cannot start" in done.stderr
    m = manifest(tmp_path / "r")
    assert m["status"] == "not started" and "cannot start" in str(m["error"])


def test_ctrl_c_is_forwarded_to_the_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [
        sys.executable,
        "-m",
        "ncclscope",
        "run",
        "--out",
        str(out),
        "--no-snapshot",
        "--no-analyze",
        "--",
    ]
    proc = subprocess.Popen(
        [*argv, *FAKE_CMD, "--wait"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        console = None
        while time.monotonic() < deadline:
            found = list(out.glob("*/console.log"))
            if found and "ready" in found[0].read_text():
                console = found[0]
                break
            time.sleep(0.1)
        assert console is not None, "the fake launcher never said ready"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "launcher got SIGINT" in console.read_text()
    m = manifest(out)
    assert m["forwarded_signals"] == ["SIGINT"] and m["exit_status"] == 130
    assert b"forwarded SIGINT" in err


def test_a_failed_analysis_still_exits_with_the_jobs_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import ncclscope.run
    from ncclscope.cli import main

    def broken(_layout: object) -> None:
        raise RuntimeError("analysis blew up")

    monkeypatch.setattr(ncclscope.run, "diagnose", broken)
    rc = main(["run", "--out", str(tmp_path / "r"), "--no-snapshot", "--", *FAKE_CMD, "--exit", "5"])
    assert rc == 5
    assert "the analysis failed (RuntimeError: analysis blew up)" in capfd.readouterr().err


def test_an_unwritable_run_directory_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = run_cli(["--out", str(blocker / "sub"), "--no-snapshot", "--", *FAKE_CMD])
    assert done.returncode == 2 and "ncclscope: error:" in done.stderr and "Traceback" not in done.stderr
