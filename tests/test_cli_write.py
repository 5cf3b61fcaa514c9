"""CLI: writing a report never destroys an input, never leaves half a file, and every write error is
exit 2 with one line (issue 31: `report rank1.log -o rank1.log` overwrote the log; `diff -o /dev/full`
exited 3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ncclscope.cli import main

LOG = "node-a:100:101 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"


def _log(tmp_path: Path) -> Path:
    p = tmp_path / "rank1.log"
    p.write_text(LOG, encoding="utf-8")
    return p


def test_report_onto_its_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _log(tmp_path)
    assert main(["report", "-q", str(log), "-o", str(log), "-f", "md"]) == 2
    assert log.read_text(encoding="utf-8") == LOG
    err = capsys.readouterr().err
    assert "is an input of this analysis" in err and len(err.strip().splitlines()) == 1


def test_report_onto_an_input_inside_a_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(tmp_path)
    assert main(["report", "-q", str(tmp_path), "-o", str(log), "-f", "md"]) == 2
    assert log.read_text(encoding="utf-8") == LOG


def test_report_onto_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out.md").mkdir()
    assert main(["report", "-q", str(_log(tmp_path)), "-o", str(tmp_path / "out.md")]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_report_replaces_a_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    out.write_text("old", encoding="utf-8")
    assert main(["report", "-q", str(_log(tmp_path)), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("# ncclscope report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md", "rank1.log"]  # no temporary left


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["report", "diff"])
def test_a_full_disk_is_exit_2_in_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(_log(tmp_path))
    args = ["report", "-q", log, "-o", "/dev/full", "-f", "md"] if command == "report" else []
    if command == "diff":
        args = ["diff", "-q", log, log, "-o", "/dev/full", "-f", "md"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write" in err[0] and "bug" not in err[0]


def test_diff_onto_an_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _log(tmp_path)
    assert main(["diff", "-q", str(log), str(log), "-o", str(log), "-f", "md"]) == 2
    assert log.read_text(encoding="utf-8") == LOG
