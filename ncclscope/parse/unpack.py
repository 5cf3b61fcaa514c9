"""Parse stage, compressed inputs: `.gz` / `.zst` (files or stdin) streamed with caps on what they expand to.

A compressed input is recognised by its first bytes, not its name. Output comes in pieces of at most
`PIECE` bytes, so a bomb never expands in one call; once `Tuning.expansion_floor_bytes` are out,
more than `max_expansion_ratio` output bytes per input byte, or more than `max_decompressed_bytes`
in all, raise `LimitError` naming the cap. What was decompressed before damage, a cap or the end is
always handed out first: the error comes at the next read. Concatenated gzip members are read on;
bytes after the last one (zero padding, junk) are ignored with a note.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import BinaryIO, Protocol

from ncclscope.errors import InputError, LimitError
from ncclscope.tuning import DEFAULT, Tuning

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# First bytes that make Polars' CSV reader decompress a buffer on its own (zlib's `x^`, `x\x9c`, …).
SNIFFED_BY_POLARS = (GZIP_MAGIC, ZSTD_MAGIC, b"x\x01", b"x^", b"x\x9c", b"x\xda")
PIECE = 1 << 20  # decompressed bytes produced per step, at most
_IN = 1 << 16  # compressed bytes read per step


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


def compression(head: bytes) -> str | None:
    """'gzip' | 'zstd' | None from an input's first bytes."""
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if head[:4] == ZSTD_MAGIC:
        return "zstd"
    return None


class Prefixed:
    """A stream with bytes already read from its start put back in front (a pipe cannot seek)."""

    def __init__(self, head: bytes, raw: Readable, *, closes: bool = True) -> None:
        self.head, self.raw, self.closes = head, raw, closes  # (stdin is never closed)

    def read(self, n: int = -1, /) -> bytes:
        if not self.head:
            return self.raw.read(n)
        if n < 0:
            out, self.head = self.head + self.raw.read(), b""
            return out
        out, self.head = self.head[:n], self.head[n:]
        return out

    def close(self) -> None:
        close = getattr(self.raw, "close", None)
        if self.closes and close is not None:
            close()


class Unpacked:
    """Decompressed view of `raw` (`read(n)` like a file); `notes` says what was odd about it."""

    def __init__(self, raw: Readable, kind: str, path: str, tuning: Tuning = DEFAULT) -> None:
        self.raw, self.path, self.tuning = raw, path, tuning
        self.bytes_in = self.bytes_out = 0
        self.notes: list[str] = []
        self._buf = b""
        self._error: BaseException | None = None
        self._pieces = _gunzip(self) if kind == "gzip" else _unzstd(self)

    def raw_read(self, n: int = _IN) -> bytes:
        data = self.raw.read(n)
        self.bytes_in += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all with n < 0); b'' at the end. An error comes after the bytes before it."""
        if self._error is not None and not self._buf:
            err, self._error = self._error, None
            self._pieces = iter(())
            raise err
        parts, size = [self._buf], len(self._buf)
        while (n < 0 or size < n) and self._error is None:
            try:
                piece = next(self._pieces, b"")
            except (LimitError, EOFError, OSError, zlib.error, InputError) as e:
                self._error = e
                break
            if not piece:
                break
            self._account(len(piece))
            parts.append(piece)
            size += len(piece)
        data = b"".join(parts)
        if n < 0 or len(data) <= n:
            self._buf = b""
            if not data and self._error is not None:
                return self.read(n)
            return data
        self._buf = data[n:]
        return data[:n]

    def _account(self, n: int) -> None:
        t = self.tuning
        self.bytes_out += n
        if self.bytes_out > t.max_decompressed_bytes:
            self._error = LimitError(
                f"{self.path}: decompressed data passed {_size(t.max_decompressed_bytes)}; the rest was not read "
                "(cap max_decompressed_bytes: --max-decompressed-bytes raises it)"
            )
        elif (
            self.bytes_out > t.expansion_floor_bytes
            and self.bytes_out > t.max_expansion_ratio * self.bytes_in
        ):
            self._error = LimitError(
                f"{self.path}: expands more than {t.max_expansion_ratio}x ({_size(self.bytes_out)} out of "
                f"{_size(self.bytes_in)}), a decompression bomb?; the rest was not read "
                "(cap max_expansion_ratio: --max-expansion-ratio raises it)"
            )

    def close(self) -> None:
        close = getattr(self.raw, "close", None)
        if close is not None:
            close()


def _gunzip(u: Unpacked) -> Iterator[bytes]:
    """Every gzip member in turn; after the last, any other bytes are noted and ignored."""
    z = zlib.decompressobj(wbits=31)
    members, data, full = 1, b"", False
    while True:
        if z.eof:  # between members: another one, or the bytes after the last
            while len(data) < 2 and (more := u.raw_read()):
                data += more
            if not data:
                break
            if data[:2] != GZIP_MAGIC:
                _note_trailing(u, data, members)
                break
            z, members = zlib.decompressobj(wbits=31), members + 1
        elif not data and not full:  # (a full piece may leave output pending inside zlib: drain it first)
            data = u.raw_read()
            if not data:
                raise EOFError("compressed data ends early (truncated gzip)")
        out = z.decompress(data, PIECE)
        full = len(out) >= PIECE
        data = z.unused_data if z.eof else z.unconsumed_tail
        if out:
            yield out
    if members > 1:
        u.notes.append(f"{u.path}: {members} concatenated gzip members, read one after the other")


def _note_trailing(u: Unpacked, data: bytes, members: int) -> None:
    junk = len(data)
    zeros = not data.strip(b"\0")
    while (more := u.raw_read(1 << 20)) and junk < (64 << 20):  # count a little further, never all of it
        junk += len(more)
        zeros = zeros and not more.strip(b"\0")
    what = "zero padding" if zeros else "data that is not gzip"
    u.notes.append(
        f"{u.path}: {'at least ' if more else ''}{junk} bytes of {what} after the last of {members} "
        "gzip member(s), ignored; everything before them was read"
    )


def _unzstd(u: Unpacked) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{u.path}: reading zstd data needs the zstandard package (pip install zstandard)"
        ) from None

    class _Counted:
        def read(self, n: int = -1, /) -> bytes:
            return u.raw_read(n if n > 0 else _IN)

    # A frame may ask for a window of up to 2 GiB (--long=31): refused above 128 MiB, zstd's own default.
    dctx = zstandard.ZstdDecompressor(max_window_size=1 << 27)
    reader = dctx.stream_reader(_Counted(), read_size=_IN, read_across_frames=True)  # type: ignore[arg-type]
    while True:
        try:
            out = reader.read(PIECE)
        except zstandard.ZstdError as e:
            raise EOFError(f"damaged or truncated zstd data ({e})") from None
        if not out:
            return
        yield out


def read_all(path: str, raw: BinaryIO, tuning: Tuning = DEFAULT) -> tuple[bytes, list[str]]:
    """The whole content of a (possibly compressed) file, within the caps; (bytes, notes)."""
    head = raw.read(4)
    kind = compression(head)
    if kind is None:
        return head + raw.read(), []
    u = Unpacked(Prefixed(head, raw), kind, path, tuning)
    data = u.read()
    u.read(1)  # raises what stopped it early (damage, a cap), if anything did
    return data, u.notes


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"
