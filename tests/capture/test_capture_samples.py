"""Capture stage, the committed CPU captures (samples/capture): each holds what EVIDENCE.md says it
holds, and `ncclscope analyze` names its fault. No torch needed: these are files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ncclscope.cli import main

CAPTURES = Path(__file__).resolve().parents[2] / "samples" / "capture"
# sample -> (ranks, injected rank, finding analyze must name or None)
SAMPLES = {
    "clean": (2, None, None),
    "straggler": (4, 2, "straggler"),
    "hang": (4, 1, "collective-hang"),
    "crash": (4, 3, "rank-exited"),
    "mismatch": (4, 1, "collective-mismatch"),
}


def _launcher_log(root: Path) -> Path:
    """torchrun's output: `logs/torchrun.log` in captures made before capture ran through `run`, run's
    `console.log` since (samples/capture/regenerate.sh makes the latter)."""
    old = root / "logs" / "torchrun.log"
    return old if old.exists() else root / "console.log"


def _log(name: str, rank: int) -> str:
    return (CAPTURES / name / "logs" / f"rank{rank}.log").read_text(errors="replace")


@pytest.mark.parametrize("name", list(SAMPLES))
def test_sample_layout(name: str) -> None:
    nranks, culprit, _ = SAMPLES[name]
    root = CAPTURES / name
    run = json.loads((root / "capture.json").read_text())
    assert run["world_size"] == nranks and run["backend"] == "gloo"
    assert [f["ranks"] for f in run["faults"]] == ([] if culprit is None else [[culprit]])
    for rank in range(nranks):
        m = json.loads((root / "manifest" / f"rank{rank}.json").read_text())
        assert m["rank"] == rank and m["versions"]["torch"].startswith("2.13.0")
        with gzip.open(root / "traces" / f"rank{rank}.pt.trace.json.gz", "rt") as fh:
            assert json.load(fh)["distributedInfo"]["rank"] == rank
        assert f"ncclscope-capture rank={rank} init backend=gloo" in _log(name, rank)
    assert _launcher_log(root).exists()
    assert all(p.stat().st_size < 1_000_000 for p in root.rglob("*") if p.is_file())


def test_samples_show_the_lines_evidence_md_quotes() -> None:
    assert "Timed out waiting 10000ms for" in _log("hang", 0)
    assert "terminated by SIGTERM" in _log("hang", 1)
    assert "exitcode  : -9" in _launcher_log(CAPTURES / "crash").read_text()
    assert _log("crash", 3).rstrip().endswith("rank=3 step=4 begin")
    assert "Is there a distributed collective mismatch in your code?" in _log("mismatch", 1)
    assert not list((CAPTURES / "clean").rglob("nccl_trace_rank_*"))
    assert not (CAPTURES / "crash" / "flight" / "nccl_trace_rank_3").exists()


@pytest.mark.parametrize("name", list(SAMPLES))
def test_analyze_names_the_sample_fault(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, culprit, finding = SAMPLES[name]
    capsys.readouterr()
    assert main(["analyze", str(CAPTURES / name), "--format", "json", "--quiet"]) in (0, 1)
    findings = json.loads(capsys.readouterr().out)["findings"]
    if finding is None:
        assert not [f for f in findings if f["severity"] == "error"], findings
        return
    named = [f for f in findings if f["id"] == finding and f["ranks"] == [culprit]]
    assert named, [(f["id"], f["ranks"]) for f in findings]
