"""Run stage, the outer deadline capture gives `run`: at the deadline the command and every process below
it (a child in a session of its own, as torchrun's workers are) get SIGTERM; run.json says it timed out."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ncclscope.run import RunOptions, prepare, record

CHILD = (
    "import subprocess, sys, time\n"
    "c = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
    "print(c.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def test_the_deadline_ends_the_command_and_its_own_session_children(tmp_path: Path) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    opts = RunOptions((sys.executable, "-c", CHILD), tmp_path / "o", host="h", probes=(), deadline_s=2.0)
    rec = record(prepare(opts, {"PATH": os.environ.get("PATH", "")}))
    e = rec.ended
    assert e.timed_out and e.signal == "SIGTERM" and e.elapsed_s < 15
    pid = int(rec.layout.console_log.read_text().split("] ")[1].split()[0])
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    m = json.loads(rec.layout.manifest.read_text())
    assert m["timed_out"] is True and m["exit_status"] == 143
    assert any("deadline" in n for n in m["notes"])
