"""Run stage, `--stacks`: a job that goes quiet gets one stack dump per Python process (its rank
from RANK), once per stall; without py-spy the run goes on and says why there are none."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ncclscope.run import RunOptions, prepare, record

QUIET_JOB = (sys.executable, "-c", "import time; print('step 0', flush=True); time.sleep(4)")
FAKE_PYSPY = f"""#!{sys.executable}
import sys
pid = sys.argv[sys.argv.index("--pid") + 1]
print(f"Process {{pid}}: python -c ...")
print('Thread 0x7F00 (idle): "MainThread"')
print("    <module> (<string>:1)")
"""


def _job(tmp_path: Path) -> RunOptions:
    return RunOptions(
        command=QUIET_JOB, out_dir=tmp_path / "run", probes=(), host="n1", stacks=True, stall_s=1.0
    )


def test_a_quiet_job_gets_one_dump_per_python_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    spy = bin_dir / "py-spy"
    spy.write_text(FAKE_PYSPY)
    spy.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    pids: list[int] = []
    rec = record(prepare(_job(tmp_path), environ={**os.environ, "RANK": "7"}), on_start=pids.append)
    assert rec.ended.exit_status == 0
    assert len(rec.stacks) == 1  # one round per stall, however long it lasts
    md = rec.stacks[0].read_text()
    assert f"## rank 7, pid {pids[0]}: ok" in md and '"MainThread"' in md
    assert rec.stacks[0].parent == rec.layout.stacks_dir


def test_without_pyspy_the_run_goes_on_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rec = record(prepare(_job(tmp_path), environ=dict(os.environ)))
    assert rec.ended.exit_status == 0 and rec.stacks == ()
    assert any("py-spy is not on PATH" in n for n in rec.notes)
