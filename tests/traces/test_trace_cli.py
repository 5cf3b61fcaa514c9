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


CAPTURES = Path(__file__).resolve().parents[2] / "samples" / "capture"


def test_clean_cpu_capture_has_no_straggler(capsys: pytest.CaptureFixture[str]) -> None:
    """Natural gloo jitter (rank 0 last in 17 of 32 collectives by a median 137 µs, 0.11× the ~1.3 ms
    transfer time) is below the straggler rule's relative floor: no `straggler` finding at all."""
    main(["analyze", str(CAPTURES / "clean"), "--format", "json", "--quiet"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert not [f for f in findings if f["id"] == "straggler"], findings


def test_injected_cpu_straggler_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    """The 4-rank capture with rank 2 delayed 20 ms before every collective stays a persistent straggler."""
    main(["analyze", str(CAPTURES / "straggler"), "--format", "json", "--quiet"])
    (f,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["id"] == "straggler"]
    assert f["severity"] == "warning" and f["ranks"] == [2]
    assert 18_000 < f["metrics"]["median_lateness_us"] < 30_000 and f["metrics"]["relative_lateness"] >= 2
