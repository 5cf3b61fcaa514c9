"""Run stage, tee: console.log lines carry a UTC stamp and their stream; bytes are kept as they are;
long lines are cut, a last line without a newline is kept."""

from __future__ import annotations

import io
import os
import re
import threading
from pathlib import Path

from ncclscope.run.tee import MAX_LINE, ConsoleLog, pump, unstamped

STAMPED = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z \[(stdout|stderr)\] ")


def _pump(tmp_path: Path, data: bytes) -> tuple[bytes, list[bytes]]:
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed, daemon=True)  # a pipe holds 64 KiB; the reader drains it
    writer.start()
    log = ConsoleLog(tmp_path / "console.log")
    echo = io.BytesIO()
    with os.fdopen(r, "rb") as src:
        pump(src, echo, log, b"stdout")
    log.close()
    writer.join()
    return echo.getvalue(), (tmp_path / "console.log").read_bytes().split(b"\n")[:-1]


def test_lines_are_stamped_and_echoed_unchanged(tmp_path: Path) -> None:
    data = b"a [rank0]: \x1b[31mred\x1b[0m\nprogress 10%\rprogress 20%\nlast"
    echo, lines = _pump(tmp_path, data)
    assert echo == data
    assert len(lines) == 3
    assert all(STAMPED.match(ln) for ln in lines)
    assert lines[0].endswith(b"a [rank0]: \x1b[31mred\x1b[0m")
    assert lines[2].endswith(b"] last")


def test_a_huge_line_is_cut_into_bounded_pieces(tmp_path: Path) -> None:
    _echo, lines = _pump(tmp_path, b"x" * (3 * MAX_LINE + 10) + b"\n")
    assert len(lines) == 4
    assert all(len(STAMPED.sub(b"", ln)) <= MAX_LINE for ln in lines)


def test_unstamped_gives_back_the_lines_as_printed(tmp_path: Path) -> None:
    data = b"  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 501)\n[2026-11-27T20:20:21.000000Z [stdout] x\n"
    _echo, _lines = _pump(tmp_path, data)
    assert unstamped((tmp_path / "console.log").read_text()) == data.decode()
