"""CLI: `rules`, `analyze --strict` and `coverage` on bundled samples only (no ../shared needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.findings import all_rules

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CLEAN = SAMPLES / "complete" / "mlperf50dell_2x8_h200_bert.log.gz"
KNOWN = "node-a:100:101 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
ODD = "node-a:100:101 [0] NCCL INFO Something NCCL never printed 42\n"


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("NO_COLOR", "1")


def test_rules_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    missing = [r.id for r in all_rules() if r.id not in out]
    assert not missing


def test_strict_fails_on_an_unknown_nccl_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text(KNOWN, encoding="utf-8")
    bad.write_text(KNOWN + ODD, encoding="utf-8")
    assert main(["analyze", "--strict", str(good)]) == 0
    assert main(["analyze", str(bad)]) == 0  # unknown lines are data, not a failure...
    assert main(["analyze", "--strict", str(bad)]) == 1  # ...unless --strict asks
    assert "--strict" in capsys.readouterr().err


def test_coverage_counts_and_shows_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "r.log"
    log.write_text(KNOWN * 3 + ODD, encoding="utf-8")
    assert main(["coverage", "--show-unknown", "5", str(log)]) == 0
    out = capsys.readouterr().out
    assert "recognized 3 of 4 NCCL lines (75.00%)" in out
    assert f"{log}:4:" in out and "Something NCCL never printed" in out


def test_coverage_on_a_bundled_complete_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert CLEAN.exists()
    assert main(["coverage", str(CLEAN)]) == 0
    last = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("recognized")][-1]
    got, total = (int(x) for x in last.split()[1:4:2])
    assert total > 500 and got == total


@pytest.mark.parametrize("command", [["analyze"], ["report", "-f", "md", "-o", "{out}"]])
def test_a_warning_is_one_line_on_a_narrow_terminal(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "r0.log").write_text(KNOWN, encoding="utf-8")
    (tmp_path / "in" / "notes.json").write_text('{"a": 1}', encoding="utf-8")  # skipped: a counted note
    args = [a.replace("{out}", str(tmp_path / "r.md")) for a in command]
    assert main([*args, str(tmp_path / "in"), "-q"]) == 0
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert (
        len(warnings) == 1
        and warnings[0].startswith("warning: skipped 1 file(s)")
        and warnings[0].endswith(")")
    )


MISMATCH = sorted(str(p) for p in (SAMPLES / "logs").glob("nccl1267_*.log"))  # version-mismatch: an error
WARN_ONLY = "node-a:100:101 [0] NCCL WARN something no rule explains\n"


def _ids(capsys: pytest.CaptureFixture[str]) -> list[str]:
    import json

    return [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]


def test_ignore_drops_a_rule_and_its_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "-q", "-f", "json", *MISMATCH]) == 1
    assert "version-mismatch" in _ids(capsys)
    assert main(["analyze", "-q", "-f", "json", "--ignore", "version-mismatch", *MISMATCH]) == 0
    assert "version-mismatch" not in _ids(capsys)


def test_select_keeps_only_the_named_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "-q", "-f", "json", "--select", "net-,init-incomplete", *MISMATCH]) == 0
    ids = _ids(capsys)
    assert ids and all(i.startswith("net-") or i == "init-incomplete" for i in ids)


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_a_pattern_naming_no_rule_is_a_usage_error(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "-q", option, "version-mismatchh", *MISMATCH]) == 2
    assert "names no rule" in capsys.readouterr().err


@pytest.mark.parametrize(("fail_on", "code"), [("error", 0), ("warning", 1), ("info", 1), ("never", 0)])
def test_fail_on_picks_the_failing_severity(
    fail_on: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "r.log"
    log.write_text(KNOWN + WARN_ONLY, encoding="utf-8")  # one warning finding, no error
    assert main(["analyze", "-q", "--fail-on", fail_on, str(log)]) == code


def test_report_fails_on_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.md"
    assert main(["report", "-q", "-o", str(out), *MISMATCH]) == 0  # a report written is a success...
    assert main(["report", "-q", "-o", str(out), "--fail-on", "error", *MISMATCH]) == 1  # ...unless asked
    assert "--ignore=" not in out.read_text(encoding="utf-8")
    assert main(["report", "-q", "-o", str(out), "--ignore", "config", *MISMATCH]) == 0
    assert "version-mismatch" not in out.read_text(encoding="utf-8").split("## How this report")[0]


def test_rules_with_an_id_shows_that_rule_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "version-mismatch"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("version-mismatch (error, config)") and "cudaDriverVersion" in out
    assert "net-socket-fallback" not in out
    assert main(["rules", "no-such-rule"]) == 2


def test_rules_json_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["rules", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)["rules"]
    assert [r["id"] for r in got] == [r.id for r in all_rules()]
    assert all(r["doc"] and r["severity"] in ("error", "warning", "info") for r in got)


def test_coverage_json_and_a_huge_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    log = tmp_path / "r.log"
    log.write_text(KNOWN * 3 + ODD, encoding="utf-8")
    assert main(["coverage", "-f", "json", "--show-unknown", "5", str(log)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == {"lines": 4, "nccl_lines": 4, "recognized": 3, "unknown": 1}
    assert doc["unknown_lines"][0]["line"] == 4
    assert main(["coverage", "--show-unknown", "99999999999999999999", str(log)]) == 2  # not an overflow bug
