"""The reader's chunking: block size and cuts at line ends do not change the lines read, nor their numbers."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ncclscope.parse.logs.engine import pieces
from ncclscope.parse.logs.engine.reader import ReadStats, count_notes, read_chunks
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


@pytest.mark.parametrize("block", [4 << 20, 4 << 10])  # small blocks: a piece's reader steps back in it
def test_cuts_at_line_ends_read_every_line_once(tmp_path: Path, block: int) -> None:
    path = _input(tmp_path)
    whole = ReadStats()
    tuning = Tuning(read_block_bytes=block)
    want = pl.concat(list(read_chunks(path, whole, tuning)))
    parts, offset, stats = [], 0, ReadStats()
    for piece in pieces.plan([path], Tuning(), 100_000):
        (seg,) = piece.segments
        st = ReadStats()
        part = pl.concat(list(pieces.read_segment(seg, st, tuning)))
        parts.append(part.with_columns(pl.col("line") + offset))
        offset += st.lines
        stats.lines += st.lines
        stats.binary_lines += st.binary_lines
        stats.long_lines += st.long_lines
    assert len(parts) > 10
    assert_frame_equal(pl.concat(parts), want)
    assert count_notes(path, stats) == count_notes(path, whole) and stats.lines == whole.lines


@pytest.mark.parametrize("odd", ["\x01", "\r"])
def test_a_plain_file_read_by_stepping_back_gives_the_lines_of_a_stream(tmp_path: Path, odd: str) -> None:
    """Plain files are stepped back to the start of a block's last, unfinished line (no copy of the block);
    streams (gzip) carry that line over. Random lines (empty, multi-byte characters, NUL, a control byte
    that sends a block to the Python splitter or a CR before the line end, lines longer than a block, one
    cut as over-long, no final newline) read in small blocks: the same frames and counts. (The two odd
    bytes are apart: a CR line end is kept by the Python splitter and dropped by Polars' CSV reader, in
    either way of reading.)"""
    rng = random.Random(7)
    parts = []
    for k in range(6_000):
        kind = rng.random()
        if kind < 0.05:
            parts.append("")
        elif kind < 0.08:
            parts.append("é∑😀" * rng.randint(1, 50))
        elif kind < 0.10:
            parts.append("x" * rng.randint(3_000, 20_000))  # longer than a block, not cut
        elif kind < 0.12:
            parts.append(f"bin\x00{odd}{k}")
        else:
            parts.append(
                f"h:1:1 [0] NCCL INFO line {k} " + "y" * rng.randint(0, 200) + (odd if kind > 0.95 else "")
            )
    parts[3000] = "z" * 400_000  # cut: longer than 4 x max_line_chars by more than a block
    body = ("\n".join(parts) + "\nno newline at the end").encode()
    plain, packed = tmp_path / "in.log", tmp_path / "in.log.gz"
    plain.write_bytes(body)
    packed.write_bytes(gzip.compress(body))
    for block in (1 << 10, 4 << 10, 64 << 10):
        tuning = Tuning(read_block_bytes=block, max_line_chars=64 << 10)
        a, b = ReadStats(), ReadStats()
        got = pl.concat(list(read_chunks(str(plain), a, tuning))).drop("path")
        want = pl.concat(list(read_chunks(str(packed), b, tuning))).drop("path")
        assert_frame_equal(got, want)
        assert (a.lines, a.binary_lines, a.long_lines) == (b.lines, b.binary_lines, b.long_lines)
        assert a.lines == len(parts) + 1 and a.long_lines >= 1
