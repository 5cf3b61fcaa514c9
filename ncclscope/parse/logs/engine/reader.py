"""Parse stage, reader: stream one log (file, `.gz`, `.zst`, or `-`) as Polars chunks of numbered lines.

Files are read in blocks, never whole: a 2 GB log stays within a few blocks of memory. Bad input is
data, not an exception: undecodable bytes are replaced, lines holding NUL bytes (binary runs) are
dropped and counted, an over-long line is cut (still counted as one line), a truncated gzip keeps
the lines read before the damage, and so does a decompression cap (`ncclscope.parse.unpack`). Each
problem becomes one counted note.
"""

from __future__ import annotations

import io
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, cast

import polars as pl

from ncclscope.errors import InputError, LimitError
from ncclscope.parse.archive import open_input
from ncclscope.parse.bounds import MAX_LINE
from ncclscope.parse.decoding import clean, text_encoding
from ncclscope.parse.inputs import STDIN
from ncclscope.parse.unpack import (
    HEAD,
    SNIFFED_BY_POLARS,
    Prefixed,
    Unpacked,
    compression,
    open_stream,
    spliced,
)
from ncclscope.tuning import DEFAULT, Tuning

BLOCK = DEFAULT.read_block_bytes  # bytes per read (one Polars chunk of lines)


@dataclass
class ReadStats:
    """What one input looked like; turned into notes by the caller."""

    lines: int = 0
    binary_lines: int = 0
    long_lines: int = 0
    notes: list[str] = field(default_factory=list)
    widest: int = 0  # characters of the longest line kept so far
    replaced_lines: int = 0  # lines holding bytes that are not UTF-8 (kept, shown as U+FFFD)


def _open(path: str, tuning: Tuning = DEFAULT, source: str | None = None) -> BinaryIO:
    """The input's bytes; decompressed as they are read (`unpack`, within the caps of `tuning`) when its
    first bytes are compressed data's, whatever its name (stdin too); a member of an archive by its
    `archive!member` name (`archive`). `source`: the file holding them instead (stdin's spool), named
    `path` in notes."""
    if source is not None:
        try:
            fh = open(source, "rb")  # noqa: SIM115 - closed by the caller
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}") from None
        return open_stream(fh, path, tuning)  # type: ignore[return-value]
    try:
        raw: BinaryIO = sys.stdin.buffer if path == STDIN else open_input(path)
        head = raw.read(HEAD)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    if compression(head) is not None or text_encoding(head) is not None:
        return open_stream(Prefixed(head, raw, closes=path != STDIN), path, tuning)  # type: ignore[return-value]
    if path == STDIN or not raw.seekable():
        return Prefixed(head, raw, closes=path != STDIN)  # type: ignore[return-value]
    raw.seek(0)
    return spliced(path, raw, tuning) or raw  # type: ignore[return-value]


def _blocks(fh: BinaryIO, path: str, stats: ReadStats, block: int = BLOCK) -> Iterator[bytes]:
    """Blocks of the input; damage or a cap ends it with a note, after the bytes read before."""
    try:
        while True:
            try:
                b = fh.read(block)
            except LimitError as e:
                stats.notes.append(f"{e}; the lines before were kept")
                return
            except (EOFError, zlib.error, OSError) as e:
                what = (
                    "compressed data ends early or is damaged" if isinstance(fh, Unpacked) else "read failed"
                )
                stats.notes.append(f"{path}: {what} ({e}); kept the lines read before")
                return
            if not b:
                return
            yield b
    finally:
        stats.notes.extend(getattr(fh, "notes", ()))


def _rewinder(fh: BinaryIO) -> Callable[[int], None] | None:
    """A way to step a seekable input back by n bytes (a plain file, or a cut of one with a `rewind`
    method: `pieces._Span`); None for a stream (stdin, decompression)."""
    rewind = getattr(fh, "rewind", None)
    if callable(rewind):
        return cast("Callable[[int], None]", rewind)
    if isinstance(fh, io.BufferedReader) and fh.seekable():
        plain = fh

        def back(n: int) -> None:
            plain.seek(-n, io.SEEK_CUR)

        return back
    return None


def _lines(
    fh: BinaryIO, path: str, stats: ReadStats, block: int = BLOCK, max_line: int = MAX_LINE
) -> Iterator[tuple[bytes, bool]]:
    """Yield (bytes, partial): byte blocks of whole lines (~`block` each); a line longer than 4*max_line bytes
    is cut. `partial`: the block ends in the start of a line that the next block reads again whole (a
    seekable input is stepped back to it rather than copying the block's whole lines out: ~60 ms per
    128 MiB); the caller drops that last line."""
    rewind = _rewinder(fh)
    carry = b""
    skipping = False  # inside the tail of an over-long line
    for b in _blocks(fh, path, stats, block):
        if skipping:
            nl = b.find(b"\n")
            if nl < 0:
                continue
            b, skipping = b[nl:], False
        last_nl = b.rfind(b"\n")
        if last_nl < 0:
            carry += b
            if len(carry) > max_line * 4:  # one line longer than we keep: cut it, skip to its end (counted
                carry = carry[: max_line * 4]  # once, with the lines cut in `_cut_long`)
                skipping = True
            continue
        tail = len(b) - last_nl - 1
        if tail and not carry and rewind is not None:
            rewind(tail)  # the next block starts with this line
            yield b, True
            continue
        yield carry + b[: last_nl + 1], False
        carry = b[last_nl + 1 :]
    if carry:
        yield carry, False


# Blocks up to this size are split by Python, not Polars' CSV reader: its ~350 us fixed cost and buffers
# (17 KB held per 4.9 KB block) made a directory of tiny logs cost ~26 KB per file while read; Python's split
# takes 11 us for 4 KB, 211 us for 237 KB against the reader's 423 us (even at ~800 KB: 684 against 766).
SMALL_BLOCK = 256 << 10


def _to_frame(block: bytes, path: str, first_line: int, *, ascii_text: bool = False) -> pl.DataFrame:
    """Numbered lines of `block`; `ascii_text`: the block is known to be ASCII (read as strict UTF-8,
    ~10% faster than the lossy decoder, the same text)."""
    if len(block) <= SMALL_BLOCK and b"\x01" not in block and not block.startswith(SNIFFED_BY_POLARS):
        lines = block.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if b"\r" in block:  # as Polars' reader: one CR before a line end is not the line's
            lines = [s.removesuffix("\r") for s in lines]
        return _numbered_frame(pl.Series("raw", lines, dtype=pl.Utf8), path, first_line)
    try:  # Polars' CSV reader splits lines in parallel, with \x01 as a "separator" no log line holds
        if b"\x01" in block or block.startswith(SNIFFED_BY_POLARS):  # Polars would decompress `x^…`
            raise ValueError("control character in the text, or a compression magic number first")
        raw = pl.read_csv(
            block,
            has_header=False,
            separator="\x01",
            quote_char=None,
            new_columns=["raw"],
            schema={"raw": pl.Utf8},
            encoding="utf8" if ascii_text else "utf8-lossy",
            truncate_ragged_lines=True,
            comment_prefix=None,
        )["raw"].fill_null("")
    except (pl.exceptions.PolarsError, ValueError):
        lines = block.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        raw = pl.Series("raw", lines, dtype=pl.Utf8)
    return _numbered_frame(raw, path, first_line)


def _numbered_frame(raw: pl.Series, path: str, first_line: int) -> pl.DataFrame:
    n = raw.len()
    return pl.DataFrame({"raw": raw}).select(
        pl.lit(path).alias("path"),
        pl.int_range(first_line, first_line + n, dtype=pl.Int64).alias("line"),
        pl.col("raw"),
    )


_ODD = "[\ufffd\x01-\x08\x0e-\x1f\x7f]"  # undecodable bytes and control characters


def _binary(raw: pl.Series, block: bytes) -> pl.Series:
    """Lines that are binary data: a NUL byte, or mostly undecodable bytes / control characters."""
    # Binary data almost always holds a NUL byte or invalid UTF-8 (decoded to U+FFFD): look closer only then.
    lossy = raw.str.contains("\ufffd", literal=True)
    if b"\x00" not in block and not lossy.any():
        return pl.Series("binary", [False] * raw.len(), dtype=pl.Boolean)
    nul = raw.str.contains("\x00", literal=True)
    odd = raw.str.contains(_ODD)
    chars = raw.str.len_chars().clip(lower_bound=1)
    share = raw.str.count_matches(_ODD) / chars
    # Text in a legacy 8-bit encoding (CP1251, Latin-1) is mostly undecodable but half or more printable
    # ASCII; random bytes are ~37% printable ASCII. Such a line is kept, its bytes shown as U+FFFD.
    ascii_text = raw.str.count_matches("[ -~]") / chars >= 0.5
    return nul | (odd & (share > 0.3) & ~ascii_text & (raw.str.len_chars() >= 8))


def read_chunks(path: str, stats: ReadStats, tuning: Tuning = DEFAULT) -> Iterator[pl.DataFrame]:
    """Numbered lines (`path`, `line`, `raw`) of one input, chunk by chunk; binary lines removed."""
    fh = _open(path, tuning)
    try:
        yield from _numbered(fh, path, stats, tuning)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    stats.notes.extend(count_notes(path, stats, tuning))


def count_notes(path: str, stats: ReadStats, tuning: Tuning = DEFAULT) -> list[str]:
    """The notes on an input's binary and over-long lines (after any note on damage)."""
    out = []
    if stats.binary_lines:
        out.append(f"{path}: skipped {stats.binary_lines} line(s) of binary data")
    if stats.replaced_lines:
        out.append(f"{path}: {stats.replaced_lines} line(s) held bytes that are not UTF-8, shown as \ufffd")
    if stats.long_lines:
        out.append(
            f"{path}: {stats.long_lines} line(s) longer than {tuning.max_line_chars} characters were cut"
        )
    return out


def _numbered(fh: BinaryIO, path: str, stats: ReadStats, tuning: Tuning) -> Iterator[pl.DataFrame]:
    next_line = 1
    max_line = tuning.max_line_chars
    for raw_block, partial in _lines(fh, path, stats, tuning.read_block_bytes, max_line):
        block = clean(raw_block, partial)  # lone CRs, NUL holes (`decoding`)
        ascii_text = block.isascii()
        df = _to_frame(block, path, next_line, ascii_text=ascii_text)
        if partial:  # the line after the block's last line end: read again with the next block
            df = df.slice(0, df.height - 1)
        next_line += df.height
        stats.lines += df.height
        clean_text = ascii_text and b"\x00" not in block  # the common case, checked at memory speed
        binary = None if clean_text else _binary(df["raw"], block)
        nb = 0 if binary is None else int(binary.sum())
        if binary is not None and nb:
            stats.binary_lines += nb
            df = df.filter(~binary)
        if not ascii_text:  # bytes that are not UTF-8: shown as U+FFFD, the line kept
            stats.replaced_lines += int(df["raw"].str.contains("\ufffd", literal=True).sum())
        longest = df["raw"].str.len_bytes().max()
        if not isinstance(longest, int):
            longest = 0
        elif not clean_text:  # bytes == characters on ASCII text
            chars = df["raw"].str.len_chars().max()
            longest = chars if isinstance(chars, int) else 0
        stats.widest = max(stats.widest, longest)
        if longest > max_line:
            df = _cut_long(df, max_line, stats)
        yield df


def _cut_long(df: pl.DataFrame, max_line: int, stats: ReadStats) -> pl.DataFrame:
    """`df` with every line cut to `max_line` characters (what the parser reads of a line; counted in `stats`),
    the text copied out: a slice is a view into the block's buffer, and a batch of such lines held every
    block whole (1 MB lines: ~0.9 MiB of RSS per MB read, bench_memory.py `mb_lines`)."""
    stats.long_lines += int((df["raw"].str.len_chars() > max_line).sum())
    return df.with_columns(pl.concat_str([pl.col("raw").str.slice(0, max_line), pl.lit("")]).alias("raw"))


def file_size(path: str) -> int | None:
    """Size of a regular file, None for stdin or what cannot be stat'ed (read in order, errors reported there)."""
    try:
        return os.stat(path).st_size if path != STDIN else None
    except OSError:
        return None
