"""CLI: the terminal never changes log text (no emoji codes, no hard wrap when piped), odd values are
marked by a symbol (not colour alone), a closed pipe keeps the analysis' exit status, and `-` at a
terminal says it reads stdin. Bundled samples and generated logs only."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "logs"
MISMATCH = sorted(str(p) for p in SAMPLES.glob("nccl1267_*.log"))  # a version-mismatch error: exit 1
LONG = "x" * 400
LOG = (
    "host:100:1234 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
    f"host:100:1234 [0] NCCL WARN :x: failed at host:100:1234 :smile: {LONG} end\n"
)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)


def _log(tmp_path: Path) -> Path:
    p = tmp_path / "r.log"
    p.write_text(LOG, encoding="utf-8")
    return p


def test_log_text_keeps_colons_and_emoji_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["analyze", "-q", str(_log(tmp_path))])
    out = capsys.readouterr().out
    assert "host:100:1234" in out and ":x: failed" in out and ":smile:" in out
    assert "💯" not in out and "❌" not in out and "😄" not in out


def test_piped_output_keeps_long_lines_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["analyze", "-q", str(_log(tmp_path))])
    out = capsys.readouterr().out
    assert any(LONG in ln and ln.rstrip().endswith("end") for ln in out.splitlines())


def test_odd_values_are_marked_without_colour(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["analyze", "-q", *MISMATCH]) == 1
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    rows = [ln for ln in out.splitlines() if "2.14.3" in ln and "│" in ln]  # the minority's version
    assert rows and all("⚠ 2.14.3" in ln for ln in rows)


class _ClosedAfter(io.TextIOBase):
    """A stdout whose reader goes away after `n` characters (as `| head` does)."""

    def __init__(self, n: int) -> None:
        self.n, self.got = n, []  # type: ignore[var-annotated]

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        if sum(map(len, self.got)) + len(s) > self.n:
            raise BrokenPipeError(32, "Broken pipe")
        self.got.append(s)
        return len(s)

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no descriptor")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_closed_pipe_keeps_the_analysis_status(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedAfter(50))
    assert main(["analyze", "-q", "--format", fmt, *MISMATCH]) == 1  # the error finding, not Rich's 1 or 0
    monkeypatch.setattr(sys, "stdout", _ClosedAfter(50))
    healthy = str(SAMPLES / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log")
    assert main(["analyze", "-q", "--format", fmt, healthy]) == 0


@pytest.mark.slow
def test_head_exits_with_the_analysis_status(tmp_path: Path) -> None:
    """A real pipe closed by the reader: the child's exit status is the analysis' own (0: warnings only;
    Rich's broken-pipe handler made it 1, "an error finding"), stderr quiet."""
    log = tmp_path / "big.log"
    log.write_text(LOG * 2000, encoding="utf-8")  # enough output to fill a pipe
    code = "import sys; from ncclscope.cli import run; sys.argv = ['ncclscope', *sys.argv[1:]]; run()"
    args = [sys.executable, "-c", code, "analyze", "-q", str(log)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err and "bug" not in err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_stdin_at_a_terminal_says_it_is_waiting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", _Tty(""))
    main(["analyze", "-q", "--format", "json", "-"])
    assert "reading the log from stdin" in capsys.readouterr().err


def test_stdin_from_a_pipe_says_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LOG.encode())))
    main(["analyze", "-q", "--format", "json", "-"])
    out = capsys.readouterr()
    assert "stdin" not in out.err and json.loads(out.out)["findings"]


@pytest.mark.parametrize("mark", ["\u200e", "\u200f", "\u061c", "\u202e", "\u2067"])
def test_bidi_marks_never_reach_the_terminal(
    mark: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "r.log"
    p.write_text(LOG.replace(":x:", f"abc{mark}def"), encoding="utf-8")
    main(["analyze", "-q", str(p)])
    out = capsys.readouterr().out
    assert mark not in out and f"abc\\u{ord(mark):04x}def" in out


def test_trace_and_dump_evidence_is_not_cited_as_line_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = ROOT / "samples" / "traces" / "param_dlrm_8rank"
    dumps = ROOT / "samples" / "hang" / "flight_gloo_torch2.13" / "a_rank_skips"
    main(["analyze", "-q", "--trace", str(traces)])
    main(["analyze", "-q", str(dumps)])
    out = tmp_path / "r.md"
    main(["report", "-q", "-o", str(out), str(traces)])
    text = capsys.readouterr().out + out.read_text(encoding="utf-8")
    assert "collective #0 alltoall" in text and "(Flight Recorder)" in text
    assert ".gz:0" not in text and "rank_0:0" not in text


def test_the_terminal_ranks_table_is_folded() -> None:
    """1,000 ranks alike and one odd: the table shows the odd one and counts the rest."""
    from ncclscope.report import terminal
    from ncclscope.report.views_ranks import RankCells, RankRow, RanksTable

    rows = [RankRow(RankCells(rank=i, nccl_version="2.21.5"), (), ("x",)) for i in range(1000)]
    rows[517] = RankRow(RankCells(rank=517, nccl_version="2.19.3"), ("nccl_version",), ("x",))
    table = terminal.ranks_table(RanksTable(("rank", "nccl_version"), tuple(rows), ()))
    assert table.row_count == 1 and "999 more ranks" in str(table.caption)
