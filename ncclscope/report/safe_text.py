"""Report stage, terminal safety: log-derived text made inert before it reaches a terminal.

A log line can hold ESC sequences (clear-screen, set-title, OSC 8 links), C1 controls (U+0080-U+009F,
U+009B is a CSI on its own), other control characters and bidi overrides. `printable` writes each
as a visible `\\uXXXX` escape (valid in JSON strings too); `escape` also escapes Rich markup.
"""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1, bidi marks (ALM, LRM, RLM) embeddings/overrides/isolates, line and
# paragraph separators, and lone surrogates (an undecodable byte of a file name), which no UTF-8 stream
# can write.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def printable(text: str) -> str:
    """`text` with every control character but tab and newline written as `\\uXXXX`."""
    if text.isprintable():  # the common case, at C speed (False also for tab and newline)
        return text
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    """`printable`, with newlines and tabs escaped too (a note or error must stay one line)."""
    return printable(text).replace("\n", "\\n").replace("\t", " ")


def escape(text: str) -> str:
    """`printable`, then Rich markup escaped: for log text inside a markup string."""
    from rich.markup import escape as markup_escape  # Rich on first use: JSON and HTML never need it

    return markup_escape(printable(text))
