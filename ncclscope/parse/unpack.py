"""Parse stage, compressed inputs: gzip, zstd, xz, bzip2 and zlib (files or stdin) streamed with caps.

A compressed input is recognised by its first bytes, not its name (`compression`), and what it holds
is sniffed again: gzip inside gzip is unpacked twice (`open_stream`). Output comes in pieces of at most
`PIECE` bytes, so a bomb never expands in one call; once `Tuning.expansion_floor_bytes` are out,
more than `max_expansion_ratio` output bytes per input byte, or more than `max_decompressed_bytes`
in all, raise `LimitError` naming the cap. What was decompressed before damage, a cap or the end is
always handed out first: the error comes at the next read. Concatenated members (gzip, xz, bzip2)
are read on; a gzip member whose CRC or size trailer is wrong keeps what it decoded, with a note;
text after the last gzip member is read as text, other bytes there (zero padding, junk) are ignored
with a note. The stdlib does the decoding (`zlib`, `lzma`, `bz2`); zstd is `zstandard`'s.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO

from ncclscope.errors import InputError, LimitError
from ncclscope.parse.decoding import Readable, Recoded, text_encoding
from ncclscope.parse.inflate import CODECS, GZIP_MAGIC, IN
from ncclscope.tuning import DEFAULT, Tuning

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZ2_MAGIC = b"BZh"
_BZ2_BLOCK = (b"1AY&SY", b"\x17rE8P\x90")  # a bzip2 stream's first block, or its end (an empty stream)
# First bytes that make Polars' CSV reader decompress a buffer on its own (zlib's `x^`, `x\x9c`, …).
SNIFFED_BY_POLARS = (GZIP_MAGIC, ZSTD_MAGIC, b"x\x01", b"x^", b"x\x9c", b"x\xda")
HEAD = 64  # bytes `compression` wants to see (zlib is told from text by decoding them)
NESTING = 4  # compressed data inside compressed data, unpacked this many times at most


def compression(head: bytes) -> str | None:
    """'gzip' | 'zstd' | 'xz' | 'bz2' | 'zlib' | None from an input's first bytes (`HEAD` of them: a text
    line may start with `BZh9` or `x^`; bzip2's block magic, and zlib's header check and a clean decode
    of what follows, tell them apart)."""
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if head[:4] == ZSTD_MAGIC:
        return "zstd"
    if head[:6] == XZ_MAGIC:
        return "xz"
    if head[:3] == BZ2_MAGIC and head[3:4].isdigit() and head[4:10] in _BZ2_BLOCK:
        return "bz2"
    if _zlib(head):
        return "zlib"
    return None


def _zlib(head: bytes) -> bool:
    if len(head) < 8 or head[0] != 0x78 or int.from_bytes(head[:2], "big") % 31:
        return False
    try:
        z = zlib.decompressobj()
        out = z.decompress(head, 1 << 16)
    except zlib.error:
        return False
    return bool(out) or z.eof or len(head) >= HEAD  # (a dynamic block's tables may fill the head)


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
        self._pieces = CODECS[kind](self)

    def raw_read(self, n: int = IN) -> bytes:
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
            except _DAMAGE as e:
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

    def unread(self, head: bytes) -> None:
        """Put bytes read from the start back in front (`open_stream` looked at them)."""
        self._buf = head + self._buf

    def fail(self, e: BaseException) -> None:
        """End the stream with `e`, raised at the next read."""
        self._buf, self._error = b"", e

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


_DAMAGE = (LimitError, EOFError, OSError, zlib.error, InputError)


def open_stream(raw: Readable, path: str, tuning: Tuning = DEFAULT, *, closes: bool = True) -> Readable:
    """`raw` as the bytes it holds: decompressed (again, for gzip inside gzip) while its first bytes say
    so, up to `NESTING` times; a stream with its first bytes put back otherwise. A decompressed stream is
    an `Unpacked` whose `notes` gather every layer's."""
    stream: Readable = raw
    notes: list[str] | None = None
    for _ in range(NESTING):
        try:
            head = _peek(stream)
        except _DAMAGE as e:  # damaged before its first bytes: raised again at the first read
            assert isinstance(stream, Unpacked)
            stream.fail(e)
            return stream
        kind = compression(head)
        if kind is None:
            return _as_text(stream, head, closes)
        u = Unpacked(Prefixed(head, stream, closes=closes), kind, path, tuning)
        u.notes = notes if notes is not None else u.notes
        notes, stream = u.notes, u
    return stream


def _as_text(stream: Readable, head: bytes, closes: bool) -> Readable:
    """The stream with `head` put back, re-encoded as UTF-8 when it is UTF-16/32 (`decoding`)."""

    if isinstance(stream, Unpacked):
        stream.unread(head)
    else:
        stream = Prefixed(head, stream, closes=closes)
    encoding = text_encoding(head)
    return stream if encoding is None else Recoded(stream, encoding)


SPLICE_MAX = 64 << 20  # plain files up to this size are searched for a gzip member appended to the text
_MEMBER = GZIP_MAGIC + b"\x08"  # gzip's magic and its one method, deflate


class Spliced:
    """A text file with gzip data appended (`cat rank0.log rank1.log.gz`, a rotation that appended a
    compressed part): the text, then what the gzip member(s) hold, within the caps."""

    def __init__(self, raw: Readable, path: str, tuning: Tuning = DEFAULT) -> None:
        self.raw, self.path, self.tuning = raw, path, tuning
        self.buf, self.text = b"", 0
        self.inner: Unpacked | None = None
        self.plain = False
        self.notes: list[str] = []

    def seek(self, pos: int, whence: int = 0) -> int:
        """A cut of the file (`pieces._Span`) reads its bytes as they are, gzip data or not."""
        self.buf, self.inner, self.plain = b"", None, True
        return int(self.raw.seek(pos, whence))  # type: ignore[attr-defined]

    def read(self, n: int = -1, /) -> bytes:
        if self.plain:
            return self.raw.read(n)
        if self.inner is not None:
            return self.inner.read(n)
        data = self.buf + self.raw.read(IN if n < 0 else max(n, IN))
        at = data.find(_MEMBER)
        if at < 0:  # keep a possible magic's first bytes for the next read
            keep = 2 if data.endswith(_MEMBER[:2]) else 1 if data.endswith(_MEMBER[:1]) else 0
            out, self.buf = data[: len(data) - keep], data[len(data) - keep :]
            if not out and self.buf:  # (the end of the input)
                out, self.buf = self.buf, b""
            self.text += len(out)
            return out
        self.inner = Unpacked(Prefixed(data[at:], self.raw), "gzip", self.path, self.tuning)
        self.inner.notes = self.notes
        self.notes.append(f"{self.path}: gzip data after {self.text + at} bytes of text, read decompressed")
        self.buf = b""
        return data[:at] if at else self.inner.read(n)

    def close(self) -> None:
        close = getattr(self.raw, "close", None)
        if close is not None:
            close()


def spliced(path: str, raw: BinaryIO, tuning: Tuning = DEFAULT) -> Spliced | None:
    """A `Spliced` view of a plain file that holds a gzip member after its text (None if it does not, or
    is too big to search: `SPLICE_MAX`)."""
    import mmap
    import os

    try:
        size = os.fstat(raw.fileno()).st_size
        if not 0 < size <= SPLICE_MAX:
            return None
        with mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm.find(_MEMBER) < 0:
                return None
    except (OSError, ValueError):
        return None
    raw.seek(0)
    return Spliced(raw, path, tuning)


def _peek(stream: Readable) -> bytes:
    head = b""
    while len(head) < HEAD and (more := stream.read(HEAD - len(head))):
        head += more
    return head


def read_all(path: str, raw: BinaryIO, tuning: Tuning = DEFAULT) -> tuple[bytes, list[str]]:
    """The whole content of a (possibly compressed) file, within the caps; (bytes, notes)."""
    u = open_stream(raw, path, tuning)
    if not isinstance(u, Unpacked):
        return u.read(), []
    data = u.read()
    u.read(1)  # raises what stopped it early (damage, a cap), if anything did
    return data, u.notes


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"
