"""Parse stage, the decoders behind `unpack.Unpacked`: gzip (members, damaged trailers, text after the
last), zstd, xz, bzip2 and zlib, each a generator of decompressed pieces of at most `PIECE` bytes.

A decoder reads its compressed bytes through `Source.raw_read` (which counts them for the caps) and
writes what was odd about them to `Source.notes`. The stdlib (`zlib`, `lzma`, `bz2`, and Python 3.14's
`compression.zstd`) or the `zstandard` wheel decodes; nothing here parses a format by hand.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

from ncclscope.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
PIECE = 1 << 20  # decompressed bytes produced per step, at most
IN = 1 << 16  # compressed bytes read per step


class Source(Protocol):
    """What a decoder reads from and reports to (`unpack.Unpacked`)."""

    path: str
    notes: list[str]

    def raw_read(self, n: int = IN) -> bytes: ...


def _gunzip(u: Source) -> Iterator[bytes]:
    """Every gzip member in turn; after the last, text is read as text and other bytes noted and ignored."""
    z = zlib.decompressobj(wbits=31)
    members, data, full = 1, b"", False
    while True:
        if z.eof:  # between members: another one, or the bytes after the last
            while len(data) < 2 and (more := u.raw_read()):
                data += more
            if not data:
                break
            if data[:2] != GZIP_MAGIC:
                yield from _after_last(u, data, members)
                break
            z, members = zlib.decompressobj(wbits=31), members + 1
        elif not data and not full:  # (a full piece may leave output pending inside zlib: drain it first)
            data = u.raw_read()
            if not data:
                raise EOFError("compressed data ends early (truncated gzip)")
        before = z.copy()  # (a bad trailer loses the output of the call that reads it: done again from here)
        try:
            out = z.decompress(data, PIECE)
        except zlib.error as e:
            out, data = _salvage(before, data, e)
            if "check" not in str(
                e
            ):  # damage inside the data, not its trailer: what it decoded, then the end
                yield out
                raise
            u.notes.append(
                f"{u.path}: gzip member {members} has a wrong {_trailer(e)} trailer ({e}); "
                "kept the data it decoded"
                + ("" if _trailer(e) == "size" else ", some of which may be damaged")
            )
            z, full = zlib.decompressobj(wbits=31), False
            z.decompress(gzip_empty())  # (eof: the next turn looks for another member)
            if out:
                yield out
            continue
        full = len(out) >= PIECE
        data = z.unused_data if z.eof else z.unconsumed_tail
        if out:
            yield out
    if members > 1:
        u.notes.append(f"{u.path}: {members} concatenated gzip members, read one after the other")


def gzip_empty() -> bytes:
    """An empty gzip member (fed to a fresh decompressor to put it at a member's end)."""
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00"


def _trailer(e: zlib.error) -> str:
    return "size" if "length" in str(e) else "CRC"


def _salvage(before: zlib._Decompress, data: bytes, e: zlib.error) -> tuple[bytes, bytes]:
    """(what the member decoded, the bytes after it) when its trailer is wrong: the longest start of
    `data` that decodes without the error gives the output; the trailer's end follows it."""
    lo, hi = 0, len(data)  # data[:lo] decodes cleanly, data[:hi] raises
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            before.copy().decompress(data[:mid], PIECE)
            lo = mid
        except zlib.error:
            hi = mid
    out = before.decompress(data[:lo], PIECE)
    # `hi` bytes complete the check that failed: the CRC (4 more bytes of size follow) or the size.
    end = hi if _trailer(e) == "size" else hi + 4
    return out, data[end:]


def _after_last(u: Source, data: bytes, members: int) -> Iterator[bytes]:
    """The bytes after the last gzip member: a log appended in plain text is read on, anything else noted."""
    while len(data) < 4096 and (more := u.raw_read()):
        data += more
    sample = data[:4096]
    if sample.strip(b"\0") and b"\0" not in sample and _texty(sample):
        u.notes.append(f"{u.path}: plain text after the last of {members} gzip member(s), read as text")
        yield data
        while more := u.raw_read():
            yield more
        return
    _note_trailing(u, data, members)


def _note_trailing(u: Source, data: bytes, members: int) -> None:
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


def _texty(sample: bytes) -> bool:
    """Mostly printable: text, not binary junk (a decoded sample of UTF-8, tabs and line ends)."""
    text = sample.decode("utf-8", "replace")
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\r\n\f\v\x1b"))
    return odd <= len(text) // 50


def _unzstd(u: Source) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:  # Python 3.14's own module (the `zstandard` wheel is a dependency before it)
        yield from _stdlib_zstd(u)
        return

    class _Counted:
        def read(self, n: int = -1, /) -> bytes:
            return u.raw_read(n if n > 0 else IN)

    # A frame may ask for a window of up to 2 GiB (--long=31): refused above 128 MiB, zstd's own default.
    dctx = zstandard.ZstdDecompressor(max_window_size=1 << 27)
    reader = dctx.stream_reader(_Counted(), read_size=IN, read_across_frames=True)  # type: ignore[arg-type]
    while True:
        try:
            out = reader.read(PIECE)
        except zstandard.ZstdError as e:
            raise EOFError(f"damaged or truncated zstd data ({e})") from None
        if not out:
            return
        yield out


class _Decoder(Protocol):
    @property
    def eof(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...
    @property
    def needs_input(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...


def _stdlib(make: Callable[[], _Decoder], name: str) -> Callable[[Source], Iterator[bytes]]:
    """Streams of `lzma` / `bz2` decompressors: concatenated streams read on, as `xz` and `bzip2 -d` do."""

    def run(u: Source) -> Iterator[bytes]:
        d, data = make(), b""
        while True:
            if d.eof:
                data = d.unused_data or u.raw_read()
                if not data.strip(b"\0"):  # the end, or zero padding after the last stream
                    return
                d = make()
            elif d.needs_input:
                data = u.raw_read()
                if not data:
                    raise EOFError(f"compressed data ends early (truncated {name})")
            else:
                data = b""
            try:
                out = d.decompress(data, PIECE)
            except (lzma.LZMAError, OSError, ValueError) as e:
                raise EOFError(f"damaged {name} data ({e})") from None
            if out:
                yield out

    return run


class _Zlib:
    """zlib's decompressor with the `needs_input` / `unused_data` of the others."""

    def __init__(self) -> None:
        self.z = zlib.decompressobj()
        self.needs_input = True

    @property
    def eof(self) -> bool:
        return self.z.eof

    @property
    def unused_data(self) -> bytes:
        return self.z.unused_data

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        try:
            out = self.z.decompress(self.z.unconsumed_tail + data, max(0, max_length))
        except zlib.error as e:
            raise ValueError(str(e)) from None
        self.needs_input = not self.z.unconsumed_tail and len(out) < max_length
        return out


def _stdlib_zstd(u: Source) -> Iterator[bytes]:
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise InputError(
            f"{u.path}: reading zstd data needs the zstandard package (pip install zstandard)"
        ) from None
    yield from _stdlib(lambda: zstd.ZstdDecompressor(), "zstd")(u)


CODECS: dict[str, Callable[[Source], Iterator[bytes]]] = {
    "gzip": _gunzip,
    "zstd": _unzstd,
    "xz": _stdlib(lambda: lzma.LZMADecompressor(), "xz"),
    "bz2": _stdlib(lambda: bz2.BZ2Decompressor(), "bzip2"),
    "zlib": _stdlib(_Zlib, "zlib"),
}
