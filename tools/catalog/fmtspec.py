"""printf format strings: split into literal text and conversions; decide if a format is recognisable."""

from __future__ import annotations

import re
from dataclasses import dataclass

CONV_RE = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
    r"(?P<len>hh|h|ll|l|L|q|j|z|Z|t)?(?P<conv>[diouxXeEfFgGaAcspnm%])"
)
MIN_LITERAL = 4  # literal non-space characters a format needs to get a grammar rule


@dataclass(frozen=True, slots=True)
class Conv:
    flags: str
    width: str
    conv: str


Segment = str | Conv


def segments(fmt: str) -> list[Segment]:
    """Literal runs (str) and conversions (Conv); `%%` becomes a literal `%`, `%n` disappears."""
    out: list[Segment] = []
    pos = 0

    def lit(s: str) -> None:
        if not s:
            return
        if out and isinstance(out[-1], str):
            out[-1] += s
        else:
            out.append(s)

    for m in CONV_RE.finditer(fmt):
        lit(fmt[pos : m.start()])
        pos = m.end()
        c = m.group("conv")
        if c == "%":
            lit("%")
        elif c != "n":
            out.append(Conv(m.group("flags") or "", m.group("width") or "", c))
    lit(fmt[pos:])
    return out


def match_line(fmt: str) -> str:
    """The part of a format that a single log line shows: the first line, trailing space stripped."""
    return fmt.split("\n", 1)[0].rstrip()


def literal_chars(fmt: str) -> int:
    return sum(
        len(s.replace(" ", "").replace("\t", "")) for s in segments(match_line(fmt)) if isinstance(s, str)
    )


def recognisable(fmt: str | None) -> tuple[bool, str | None]:
    """(True, None) or (False, reason)."""
    if fmt is None:
        return False, "format is not a string literal"
    line = match_line(fmt)
    if not line.strip():
        return False, "first line is empty (the text starts with a newline or is blank)"
    if literal_chars(fmt) < MIN_LITERAL:
        return False, f"fewer than {MIN_LITERAL} literal non-space characters on the first line"
    return True, None
