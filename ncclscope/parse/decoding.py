"""Parse stage, text encodings: what the log reader is handed is UTF-8 with `\\n` line ends.

Logs saved on Windows or by PowerShell's `>` are UTF-16 (or UTF-32), with or without a byte order
mark: told by the mark or by the NUL pattern of ASCII text in them, and re-encoded as a stream
(`Recoded`). In a block of lines (`clean`): a lone CR ends a line (old Mac tools; a progress bar's
`bar\\rline` would otherwise hide the line after it), and a run of NULs in front of a line (the hole a
crashed node's file system leaves) is dropped so that the line after it is read. Undecodable bytes
are replaced later, by the reader, and counted there; no line holding readable text is dropped here.
"""

from __future__ import annotations

import codecs
import re
from typing import Protocol


class Readable(Protocol):
    """A binary stream: what the decoders read from (a file, a decompressor, stdin)."""

    def read(self, n: int = -1, /) -> bytes: ...


# Byte order marks, longest first (UTF-32 LE's starts like UTF-16 LE's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SHARE = 0.75  # units of ASCII text (one non-NUL byte, the rest NUL) that make a head UTF-16/32
# A NUL run at a line's start, or a long one inside it (a hole is page-sized), before text: the hole.
_HOLE = re.compile(rb"(?:(?:(?<=\n)|^)\x00+|\x00{64,})(?=[\t\x20-\x7e])")
# Control characters no text log holds (ESC does: colours): binary data, whose lines the reader drops whole.
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_CHUNK = 1 << 16


def text_encoding(head: bytes) -> str | None:
    """The encoding of a text whose first bytes are `head`, when it is not UTF-8 (or plain ASCII)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    for width in (4, 2):
        units = [head[i : i + width] for i in range(0, len(head) - width + 1, width)]
        if len(units) < 8:
            continue
        for order in ("le", "be"):
            hits = sum(1 for u in units if _ascii_unit(u, order))
            if hits >= _SHARE * len(units):
                return f"utf-{8 * width}-{order}"
    return None


def _ascii_unit(u: bytes, order: str) -> bool:
    ch, rest = (u[0], u[1:]) if order == "le" else (u[-1], u[:-1])
    return ch != 0 and not rest.strip(b"\x00")


def utf_width(head: bytes) -> int:
    """Bytes per code unit of the text `head` starts (1 for UTF-8)."""
    enc = text_encoding(head)
    return 1 if enc is None or enc == "utf-8-sig" else 4 if "32" in enc else 2


class Recoded:
    """A UTF-16/32 (or UTF-8 with a BOM) stream read as UTF-8 bytes; bad units become U+FFFD."""

    def __init__(self, raw: Readable, encoding: str) -> None:
        self.raw = raw
        self.decoder = codecs.getincrementaldecoder(encoding)("replace")
        self.buf = b""
        self.done = False
        self.notes: list[str] = list(getattr(raw, "notes", ()))

    def read(self, n: int = -1, /) -> bytes:
        while not self.done and (n < 0 or len(self.buf) < n):
            data = self.raw.read(_CHUNK)
            self.done = not data
            self.buf += self.decoder.decode(data, final=self.done).encode("utf-8", "replace")
        if n < 0 or n >= len(self.buf):
            out, self.buf = self.buf, b""
        else:
            out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def close(self) -> None:
        close = getattr(self.raw, "close", None)
        if close is not None:
            close()


def _hole(m: re.Match[bytes]) -> bytes:
    """Nothing for a hole in front of a line; a line end for one inside a line (the text after it was
    written after the crash: a line of its own)."""
    start = m.start()
    return b"" if start == 0 or m.string[start - 1 : start] == b"\n" else b"\n"


def clean(block: bytes, partial: bool = False) -> bytes:
    """`block` (whole lines) with lone CRs as line ends and NUL runs in front of lines dropped. `partial`:
    its text after the last `\\n` is read again with the next block, so it must stay one line."""
    if b"\r" not in block and b"\x00" not in block:
        return block
    cut = block.rfind(b"\n") + 1 if partial else len(block)
    head, tail = block[:cut], block[cut:]
    if b"\x00" in head:
        head = _HOLE.sub(_hole, head)
    if b"\r" in head and head.count(b"\r") != head.count(b"\r\n") and not _CONTROL.search(head):
        head = head.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return head + tail


def unit_codec(head: bytes) -> str:
    """A codec that decodes one code unit of the text `head` starts (a BOM's byte order made explicit)."""
    encoding = text_encoding(head)
    if encoding is None or encoding == "utf-8-sig":
        return "latin-1"
    if encoding in ("utf-16", "utf-32"):
        return f"{encoding}-{'le' if head[:2] == codecs.BOM_UTF16_LE else 'be'}"
    return encoding
