"""The reader's chunking: block size and cuts at line ends do not change the lines read, nor their numbers."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ncclscope.parse.logs import pieces
from ncclscope.parse.logs.reader import ReadStats, count_notes, read_chunks
from ncclscope.tuning import Tuning


def _input(tmp: Path, gz: bool = False) -> str:
    body = "".join(f"h:1:1 [0] NCCL INFO line {k} " + "x" * (k % 300) + "\n" for k in range(20_000))
    body += "\x00\x01\x02 binary\n" + "y" * 300_000 + "\nlast line without a newline"
    p = tmp / ("in.log.gz" if gz else "in.log")
    if gz:
        p.write_bytes(gzip.compress(body.encode()))
    else:
        p.write_text(body)
    return str(p)


@pytest.mark.parametrize("gz", [False, True])
def test_block_size_does_not_change_the_lines(tmp_path: Path, gz: bool) -> None:
    path = _input(tmp_path, gz)
    a, b = ReadStats(), ReadStats()
    small = Tuning(read_block_bytes=64 << 10, max_line_chars=64 << 10)
    assert_frame_equal(pl.concat(list(read_chunks(path, a))), pl.concat(list(read_chunks(path, b, small))))
    assert (a.lines, a.binary_lines, a.long_lines, a.notes) == (
        b.lines,
        b.binary_lines,
        b.long_lines,
        b.notes,
    )
    assert a.lines == 20_003 and a.binary_lines == 1 and a.long_lines == 1


def test_cuts_at_line_ends_read_every_line_once(tmp_path: Path) -> None:
    path = _input(tmp_path)
    whole = ReadStats()
    want = pl.concat(list(read_chunks(path, whole)))
    parts, offset, stats = [], 0, ReadStats()
    for piece in pieces.plan([path], Tuning(), 100_000):
        (seg,) = piece.segments
        st = ReadStats()
        part = pl.concat(list(pieces.read_segment(seg, st, Tuning())))
        parts.append(part.with_columns(pl.col("line") + offset))
        offset += st.lines
        stats.lines += st.lines
        stats.binary_lines += st.binary_lines
        stats.long_lines += st.long_lines
    assert len(parts) > 10
    assert_frame_equal(pl.concat(parts), want)
    assert count_notes(path, stats) == count_notes(path, whole) and stats.lines == whole.lines
