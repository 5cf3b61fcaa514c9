"""The real corpus: every file parses, >= 98% of NCCL lines are recognised, the coverage CLI says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.parse import classify_inputs, read_logs

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus_logs(corpus_dir: Path) -> list[str]:
    return list(classify_inputs([str(corpus_dir)]).logs)


def test_every_corpus_file_parses(corpus_logs: list[str]) -> None:
    assert len(corpus_logs) >= 99
    for path in corpus_logs:
        lf = read_logs([path])
        assert lf.inputs[0].lines > 0, path


def test_corpus_coverage_at_least_98_percent(corpus_logs: list[str]) -> None:
    cov = read_logs(corpus_logs).coverage
    assert cov.nccl_lines > 900
    assert cov.recognized / cov.nccl_lines >= 0.98, cov
    assert cov.unknown == cov.nccl_lines - cov.recognized


def test_coverage_cli(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["coverage", str(corpus_dir), "--show-unknown", "5"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("recognized "))
    pct = float(line.rsplit("(", 1)[1].rstrip("%)"))
    assert pct >= 98.0
