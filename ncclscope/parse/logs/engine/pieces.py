"""Parse stage, pieces: cut a set of log inputs into units of work of about one size, read one unit.

A piece is either a run of whole inputs (small files together, so that per-call costs are paid once
per piece, not per file) or one segment of a big plain file, cut at a line end. Compressed inputs
and stdin are one segment each, read whole in order. Line numbers of a segment start at 1; the merge
shifts them by the lines of the segments before (`Segment.part` > 0 only for cut files).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import polars as pl

from ncclscope.parse.decoding import text_encoding
from ncclscope.parse.inputs import STDIN
from ncclscope.parse.logs.engine.reader import ReadStats, _numbered, _open, file_size
from ncclscope.parse.unpack import HEAD, compression
from ncclscope.tuning import DEFAULT, Tuning

_SCAN = 1 << 20  # bytes read at a time while looking for the line end after a cut


@dataclass(frozen=True)
class Segment:
    path: str
    start: int = 0
    end: int | None = None  # None: to the end of the input
    part: int = 0  # index of this segment in its file (0 for whole inputs)
    source: str | None = None  # the file that holds the bytes, when not `path` (stdin's spool: `spool.py`)


@dataclass(frozen=True)
class Piece:
    index: int
    segments: tuple[Segment, ...]
    size: int  # bytes on disk (0 when unknown: stdin, unreadable)


def _compressed(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)  # (xz, bzip2, zlib and UTF-16/32 are told by more than 4 bytes)
            return compression(head) is not None or text_encoding(head) is not None
    except OSError:
        return False


def _cuts(path: str, size: int, steps: Sequence[int]) -> list[int]:
    """Byte offsets just after a newline (0 first, `size` last); the k-th cut about `steps[k]` bytes
    after the one before (the last step repeats)."""
    out = [0]
    with open(path, "rb") as fh:
        target = steps[0]
        while target < size:
            fh.seek(target)
            pos = target
            while True:
                buf = fh.read(_SCAN)
                if not buf:
                    pos = size
                    break
                nl = buf.find(b"\n")
                if nl >= 0:
                    pos += nl + 1
                    break
                pos += len(buf)
            if pos >= size:
                break
            out.append(pos)
            target = pos + steps[min(len(out) - 1, len(steps) - 1)]
    out.append(size)
    return out


def plan(
    paths: Sequence[str],
    tuning: Tuning = DEFAULT,
    step: int | Sequence[int] | None = None,
    sources: Mapping[str, str] | None = None,
) -> list[Piece]:
    """Pieces of about `step` bytes (default `tuning.piece_bytes`), in input order. A sequence of steps
    sizes the pieces in turn (the last repeats): pieces that get smaller toward the end let processes
    sharing them finish together. A run of small files is cut where a file ends nearest to its step
    (up to 1.5x it: equal files split evenly); a big plain file is cut at line ends. `sources`: the file
    holding an input's bytes where it is not the input's name (stdin's spool), read as one segment."""
    given = step if step is not None else tuning.piece_bytes
    sizes = [max(1, s) for s in ([given] if isinstance(given, int) else given)] or [tuning.piece_bytes]
    pieces: list[Piece] = []
    run: list[Segment] = []
    held = 0

    def step_of(k: int) -> int:
        return sizes[min(k, len(sizes) - 1)]

    def close() -> None:
        nonlocal run, held
        if run:
            pieces.append(Piece(len(pieces), tuple(run), held))
            run, held = [], 0

    for path in paths:
        if sources and path in sources:
            source = sources[path]
            if held + file_size(source) / 2 > step_of(len(pieces)):  # type: ignore[operator]
                close()
            run.append(Segment(path, source=source))
            held += file_size(source) or 0
            continue
        size = file_size(path)
        if size is not None and size > step_of(len(pieces)) and not _compressed(path):
            close()
            cuts = _cuts(path, size, sizes[len(pieces) :] or sizes[-1:])
            for k, (a, b) in enumerate(itertools.pairwise(cuts)):
                pieces.append(Piece(len(pieces), (Segment(path, a, b, k),), b - a))
            continue
        if held + (size or 0) / 2 > step_of(len(pieces)):  # the file would end nearer the next piece
            close()
        run.append(Segment(path))
        held += size or 0
    close()
    return pieces


class _Span:
    """The bytes [start, end) of a seekable file."""

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        self.fh = fh
        self.left = end - start
        fh.seek(start)

    def read(self, n: int = -1, /) -> bytes:
        if self.left <= 0:
            return b""
        b = self.fh.read(self.left if n < 0 else min(n, self.left))
        self.left -= len(b)
        return b

    def rewind(self, n: int) -> None:
        """Step back n bytes (read again by the next `read`; the reader's `_lines`)."""
        self.fh.seek(-n, 1)
        self.left += n

    def close(self) -> None:
        self.fh.close()


def read_segment(seg: Segment, stats: ReadStats, tuning: Tuning = DEFAULT) -> Iterator[pl.DataFrame]:
    """Numbered lines (`path`, `line`, `raw`) of one segment, lines counted from 1; binary lines removed.
    Notes on damage land in `stats.notes`; those on binary and long lines are the caller's (`count_notes`)."""
    fh = _open(seg.path, tuning, source=seg.source)
    src: BinaryIO = fh if seg.end is None else _Span(fh, seg.start, seg.end)  # type: ignore[assignment]
    try:
        yield from _numbered(src, seg.path, stats, tuning)
    finally:
        if fh is not sys.stdin.buffer and seg.path != STDIN:
            fh.close()
