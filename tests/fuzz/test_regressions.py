"""Issue 12: every escape found by fuzzing, rebuilt from a few bytes, ends in a documented exit code
(0/1/2) with no traceback and says what it dropped; plus the findings frame and terminal safety."""

from __future__ import annotations

import dataclasses
import io
import re
import sys
from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.records import Finding

from .hostile import CASES, GOOD

_RAW_CONTROL = re.compile("[\x1b\x80-\x9f]")


def _main(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: bytes | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("name", sorted(CASES))
def test_escape_is_closed(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv, stdin, words = CASES[name](tmp_path)
    rc, out, err = _main([*argv, "-q"], capsys, monkeypatch, stdin)
    assert "Traceback" not in out + err and "hit a bug" not in err, err
    assert rc in (0, 1, 2), (rc, err)
    for w in words:
        assert w in out + err, (w, out, err)


def test_findings_frame_with_a_rank_beyond_int64(samples_dir: Path) -> None:
    from ncclscope.notebook import Analysis
    from ncclscope.session import analyze

    s = analyze([str(samples_dir / "logs" / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log")])
    forged = Finding("x", "error", "t", "w", "f", ranks=(1 << 63, 3))
    frame = Analysis(dataclasses.replace(s, findings=(forged,))).findings_frame
    assert frame["ranks"].to_list() == [[None, 3]]


def test_a_bug_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ncclscope.session

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(ncclscope.session, "analyze", broken)
    log = tmp_path / "r.log"
    log.write_text(GOOD)
    rc, _, err = _main(["analyze", str(log)], capsys, monkeypatch)
    assert rc == 3 and "Traceback" not in err
    assert err == "ncclscope hit a bug: RuntimeError: boom; rerun with --debug for the traceback\n"
    rc, _, err = _main(["analyze", str(log), "--debug"], capsys, monkeypatch)  # after the command works too
    assert rc == 3 and "Traceback (most recent call last)" in err and "RuntimeError: boom" in err


def test_no_raw_escape_or_c1_reaches_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = (
        "node-00:100:100 [0] NCCL WARN \x1b]0;set-title\x07 \x1b[2J clear \x1b]8;;http://x\x1b\\link"
        "\x1b]8;;\x1b\\ \x9b31m C1-CSI \u202edesrever\n"
    )
    log = tmp_path / "rank\x1b[31m0.log"
    log.write_text(GOOD + hostile * 3)
    for argv in (
        ["analyze", str(log)],
        ["analyze", str(log), "--format", "json"],
        ["coverage", str(log), "--show-unknown", "5"],
        ["analyze", str(tmp_path / "nope\x1b[2J.log")],
        *(["report", str(log), "-o", "-", "--format", f] for f in ("markdown", "json", "perfetto", "html")),
    ):
        rc, out, err = _main(argv, capsys, monkeypatch)
        assert rc in (0, 1, 2)
        assert not _RAW_CONTROL.search(out + err), (argv, out + err)
    assert (
        "\\u001b]0;set-title" in _main(["coverage", str(log), "--show-unknown", "5"], capsys, monkeypatch)[1]
    )


def test_no_color_and_NO_COLOR(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "r.log"
    log.write_text(GOOD + "node-00:100:100 [0] misc/socket.cc:50 NCCL WARN socket error\n")
    monkeypatch.setenv("FORCE_COLOR", "1")  # a terminal as far as Rich can tell
    assert "\x1b[" in _main(["analyze", str(log)], capsys, monkeypatch)[1]
    assert "\x1b[" not in _main(["analyze", str(log), "--no-color"], capsys, monkeypatch)[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in _main(["analyze", str(log)], capsys, monkeypatch)[1]


def test_version_and_completion(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from ncclscope import __version__

    assert _main(["--version"], capsys, monkeypatch)[:2] == (0, f"ncclscope {__version__}\n")
    monkeypatch.setenv("_NCCLSCOPE_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "ncclscope cov")
    monkeypatch.setenv("COMP_CWORD", "1")
    rc, out, _ = _main([], capsys, monkeypatch)
    assert rc == 0 and out.split() == ["coverage"]
