"""Parse stage, reader: stream one log (file, `.gz`, or `-`) as Polars chunks of numbered lines.

Files are read in blocks, never whole: a 2 GB log stays within a few blocks of memory. Bad input is
data, not an exception: undecodable bytes are replaced, lines holding NUL bytes (binary runs) are
dropped and counted, an over-long line is cut (still counted as one line), a truncated gzip keeps
the lines read before the damage. Each problem becomes one counted note.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import polars as pl

from ncclscope.errors import InputError
from ncclscope.parse.inputs import STDIN

BLOCK = 1 << 20  # bytes per read
CHUNK = 32 << 20  # bytes of text per Polars chunk
MAX_LINE = 64 << 10  # characters of one line that are parsed; the rest is cut


@dataclass
class ReadStats:
    """What one input looked like; turned into notes by the caller."""

    lines: int = 0
    binary_lines: int = 0
    long_lines: int = 0
    notes: list[str] = field(default_factory=list)


def _open(path: str) -> BinaryIO:
    if path == STDIN:
        return sys.stdin.buffer
    try:
        fh: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    if fh.read(2) == b"\x1f\x8b":
        fh.seek(0)
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    fh.seek(0)
    return fh


def _blocks(fh: BinaryIO, path: str, stats: ReadStats) -> Iterator[bytes]:
    while True:
        try:
            b = fh.read(BLOCK)
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as e:
            stats.notes.append(f"{path}: compressed data ends early or is damaged ({e}); kept the lines read before")
            return
        if not b:
            return
        yield b


def _lines(fh: BinaryIO, path: str, stats: ReadStats) -> Iterator[bytes]:
    """Yield ~CHUNK-sized byte blocks that end at a newline; over-long lines are cut at MAX_LINE."""
    buf = bytearray()
    skipping = False  # inside the tail of an over-long line
    for b in _blocks(fh, path, stats):
        if skipping:
            nl = b.find(b"\n")
            if nl < 0:
                continue
            b, skipping = b[nl:], False
        buf += b
        last_nl = buf.rfind(b"\n")
        if last_nl < 0 and len(buf) > MAX_LINE * 4:
            # One line longer than we keep: cut it, skip to its end.
            del buf[MAX_LINE * 4:]
            stats.long_lines += 1
            skipping = True
            continue
        if len(buf) >= CHUNK and last_nl >= 0:
            yield bytes(buf[: last_nl + 1])
            del buf[: last_nl + 1]
    if buf:
        yield bytes(buf)


def _to_frame(block: bytes, path: str, first_line: int) -> pl.DataFrame:
    text = block.decode("utf-8", errors="replace")
    text = text.removesuffix("\n")
    s = pl.Series("raw", [text]).str.split("\n").explode()
    return pl.DataFrame({"raw": s}).select(
        pl.lit(path).alias("path"), pl.int_range(first_line, first_line + s.len(), dtype=pl.Int64).alias("line"),
        pl.col("raw"))


def read_chunks(path: str, stats: ReadStats) -> Iterator[pl.DataFrame]:
    """Numbered lines (`path`, `line`, `raw`) of one input, chunk by chunk; binary lines removed."""
    fh = _open(path)
    next_line = 1
    try:
        for block in _lines(fh, path, stats):
            df = _to_frame(block, path, next_line)
            next_line += df.height
            stats.lines += df.height
            binary = df["raw"].str.contains("\x00", literal=True)
            nb = int(binary.sum())
            if nb:
                stats.binary_lines += nb
                df = df.filter(~binary)
            long = df["raw"].str.len_chars() > MAX_LINE
            if long.any():
                stats.long_lines += int(long.sum())
            yield df
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    if stats.binary_lines:
        stats.notes.append(f"{path}: skipped {stats.binary_lines} line(s) of binary data")
    if stats.long_lines:
        stats.notes.append(f"{path}: {stats.long_lines} line(s) longer than {MAX_LINE} characters were cut")
