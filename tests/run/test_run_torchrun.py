"""`ncclscope run -- torchrun --nproc-per-node 2 user_job.py` for real, on the CPU with gloo: a rank
that hangs, one that crashes, one that runs out of memory. Each time the wrapper exits with torchrun's
status, the run directory holds the per-rank logs, the launcher's output, the node snapshot and the
reports, and the verdict names rank 1."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.run.conftest import HERE, RunCli, manifest, node_dir

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def torchrun() -> list[str]:
    exe = Path(sys.executable).parent / "torchrun"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]


# What the report must say about each fault: (finding id, rank).
EXPECTED = {"hang": "collective-hang", "crash": "rank-exited", "oom": "rank-exited"}


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_user_job_under_torchrun_names_the_faulty_rank(run_cli: RunCli, tmp_path: Path, fault: str) -> None:
    out = tmp_path / "run"
    job = [
        *torchrun(),
        "--nproc-per-node",
        "2",
        str(HERE / "user_job.py"),
        f"--{fault}-rank",
        "1",
        "--timeout",
        "5",
    ]
    snapshot = [] if fault == "hang" else ["--no-snapshot"]
    done = run_cli(["--out", str(out), *snapshot, "--", *job], timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]  # torchrun's own status when a worker fails
    node = node_dir(out)
    m = manifest(out)
    assert m["exit_status"] == 1 and m["launcher"]["torchrun"] is True  # type: ignore[index]
    # torchrun's own per-rank files, and every rank's lines in console.log tagged with the global rank
    ranks = {p.parent.name for p in node.glob(".torchrun/*/attempt_0/*/stdout.log")}
    assert ranks == {"0", "1"}
    console = (node / "console.log").read_text(errors="replace")
    assert "[rank0]:" in console and "[rank1]:" in console and "ChildFailedError" in console
    if fault == "hang":
        assert (node / "snapshot.md").read_text().count("## ") >= 6
        assert m["snapshot"]["versions"]["torch"]  # type: ignore[index]
    report = json.loads((out / "report.json").read_text())
    found = {f["id"]: f["ranks"] for f in report["findings"]}
    assert found.get(EXPECTED[fault]) == [1], found
    assert report["verdict"]["ranks"] == [1], report["verdict"]  # the diagnosis names the faulty rank
    assert (out / "report.md").exists() and (out / "report.html").exists()
    verdict = next(ln for ln in done.stderr.splitlines() if "verdict:" in ln)
    assert re.search(r"\b[Rr]ank(?:s|\(s\))? 1\b", verdict), verdict
