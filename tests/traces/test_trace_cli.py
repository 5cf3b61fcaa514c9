"""CLI stage, traces: `ncclscope analyze --trace DIR` end to end, and a bad trace as exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_fixtures import DLRM

from ncclscope.cli import main


def test_analyze_trace_dir_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "--trace", str(DLRM), "--format", "json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0  # warnings only
    by_id = {f["id"]: f for f in out["findings"]}
    assert by_id["straggler"]["ranks"] == [7]
    assert set(by_id["straggler"]["metrics"]) >= {"median_lateness_us", "late_share", "wait_caused_us"}
    assert "comm-overhead" in by_id


def test_analyze_trace_dir_as_plain_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(DLRM), "--format", "json", "--quiet"]) == 0
    assert any(f["id"] == "straggler" for f in json.loads(capsys.readouterr().out)["findings"])


def test_bad_trace_is_exit_2_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "rank0.json"
    bad.write_text('{"traceEvents": []}')
    assert main(["analyze", "--trace", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ncclscope: error:") and "\n" not in err and "no events" in err
