"""Hang rules end to end: `ncclscope.analyze` on fixture logs and dumps, JSON metrics, terminal
verdict sentence, CLI exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ncclscope
from ncclscope.cli import main
from ncclscope.findings import all_rules
from ncclscope.report import json_report

from .fixtures import fr_scenario, scenario, write_dumps

HANG_RULES = {"collective-hang", "collective-mismatch", "rank-exited", "watchdog-timeout"}


def test_rules_are_registered_with_docs() -> None:
    rules = {r.id: r for r in all_rules()}
    assert HANG_RULES <= set(rules)
    for rid in HANG_RULES:
        assert rules[rid].group == "hang" and len(rules[rid].doc) > 80


def test_analyze_class_a_findings_and_metrics(tmp_path: Path) -> None:
    s = ncclscope.analyze(scenario("a", 8, culprit=3, detector=0).write(tmp_path))
    hang = [f for f in s.findings if f.id == "collective-hang"]
    assert len(hang) == 1 and hang[0].severity == "error" and hang[0].ranks == (3,)
    m = hang[0].metrics
    assert m["class"] == "a" and m["culprit_ranks"] == [3] and m["first_detectors"] == [0]
    assert m["seq"] == 40 and m["op"] == "ALLREDUCE" and m["confidence"] in ("high", "medium")
    assert "commId" in str(m["communicator"])
    wd = [f for f in s.findings if f.id == "watchdog-timeout"]
    assert wd and set(wd[0].ranks) == set(range(8)) - {3}
    doc = json.loads(json_report.render(s))
    got = next(f for f in doc["findings"] if f["id"] == "collective-hang")
    assert got["metrics"]["class"] == "a" and got["evidence"]


def test_analyze_class_c_and_d(tmp_path: Path) -> None:
    s = ncclscope.analyze(scenario("c", 8, culprit=2).write(tmp_path / "c"))
    assert {f.id for f in s.findings} >= {"collective-hang", "collective-mismatch"}
    mm = next(f for f in s.findings if f.id == "collective-mismatch")
    assert mm.ranks == (2,)
    s = ncclscope.analyze(scenario("d", 8, culprit=5).write(tmp_path / "d"))
    exited = [f for f in s.findings if f.id == "rank-exited" and f.severity == "error"]
    assert [f.ranks for f in exited] == [(5,)]
    assert "out of memory" in exited[0].evidence[0].text


def test_dumps_through_analyze(tmp_path: Path) -> None:
    paths = write_dumps(tmp_path, fr_scenario("a", 4, culprit=1))
    s = ncclscope.analyze(paths)
    hang = next(f for f in s.findings if f.id == "collective-hang")
    assert hang.ranks == (1,) and hang.metrics["source"] == "flight"


def test_terminal_report_opens_with_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    paths = scenario("b", 4).write(tmp_path)
    assert main(["analyze", "-q", *paths]) == 1
    first = capsys.readouterr().out.strip().splitlines()[0]
    # Scenario b holds an IB completion error: the diagnosis leads with it and folds the (b) hang under it.
    assert first.startswith("ERROR: IB completion error status 12") and "explains" in first


def test_unsafe_dump_exit_code_2_no_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import pickle

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {tmp_path / 'PWNED'}",))

    p = tmp_path / "nccl_trace_rank_0"
    p.write_bytes(pickle.dumps({"version": "2.10", "entries": [Evil()]}, protocol=2))
    assert main(["analyze", "-q", str(p)]) == 2
    out = capsys.readouterr()
    assert "refused" in out.err and "Traceback" not in out.err + out.out
    assert not (tmp_path / "PWNED").exists()
