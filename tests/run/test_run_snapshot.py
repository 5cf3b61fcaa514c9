"""Run stage, node snapshot: a missing tool, a failing probe and a hanging one are noted, never fatal;
probe output reaches snapshot.md inside a fence it cannot close."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ncclscope.run import RunOptions, prepare, record
from ncclscope.run.snapshot import Probe, take, to_markdown

PY = sys.executable


def test_missing_failing_and_hanging_probes_are_noted(tmp_path: Path) -> None:
    probes = (
        Probe("absent", ("ncclscope-no-such-tool-xyz",)),
        Probe("fails", (PY, "-c", "import sys; print('half'); sys.exit(4)")),
        Probe("hangs", (PY, "-c", "import time; time.sleep(30)"), timeout_s=0.5),
        Probe("fine", (PY, "-c", "print('```not a fence end')")),
    )
    opts = RunOptions(command=(PY, "-c", "print('job')"), out_dir=tmp_path / "run", probes=probes, host="n1")
    rec = record(prepare(opts, environ={"PATH": "/usr/bin:/bin"}))
    assert rec.ended.exit_status == 0
    status = {r.probe.name: r.status for r in rec.snapshot.results} if rec.snapshot else {}
    assert status == {"absent": "missing", "fails": "failed", "hangs": "timeout", "fine": "ok"}
    assert any("absent: missing" in n for n in rec.notes) and any("hangs: timeout" in n for n in rec.notes)
    m = json.loads(rec.layout.manifest.read_text())
    assert m["snapshot"]["probes"]["fails"]["detail"] == "exit status 4"
    md = rec.layout.snapshot.read_text()
    assert "````\n```not a fence end\n````" in md


def test_the_environment_section_lists_the_jobs_variables() -> None:
    snap = take({"NCCL_DEBUG": "INFO", "HOME": "/root", "TORCH_FR_BUFFER_SIZE": "2000"}, probes=())
    md = to_markdown(snap, "n1")
    assert "NCCL_DEBUG=INFO" in md and "TORCH_FR_BUFFER_SIZE=2000" in md and "HOME=" not in md
