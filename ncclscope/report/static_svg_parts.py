"""Report stage, static figures' parts: safe SVG text, colours, coordinates and the data → page mapping.

Shared by `static_svg` (the page) and `static_svg_traces` (the traces). Every string drawn comes through
`lines_of`: Plotly's HTML subset becomes plain lines, control and bidi characters are dropped, the rest
is XML-escaped.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

_TAG = re.compile(r"<[^>]*>")
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
# C0/C1 controls, bidi embeddings/overrides/isolates and marks (LRM, RLM, ALM): never in the SVG.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def lines_of(text: object) -> list[str]:
    """Plotly text (a small HTML subset) → plain lines, safe for XML."""
    out = []
    for part in _BR.split(str(text)):
        plain = html.unescape(_TAG.sub("", part))
        out.append(html.escape(_UNSAFE.sub("", plain.replace("\t", " ")), quote=True))
    return out


def num(v: float) -> str:
    """A coordinate as short, stable text."""
    r = round(v, 2)
    return str(int(r)) if r == int(r) else f"{r:.2f}".rstrip("0")


def text_el(
    x: float,
    y: float,
    text: object,
    *,
    size: float = 12,
    color: str = "#444",
    anchor: str = "start",
    baseline: str = "auto",
    weight: str = "normal",
    rotate: float = 0,
) -> str:
    """An SVG <text>, several lines stacked under each other."""
    lines = lines_of(text)
    if not lines or lines == [""]:
        return ""
    shift = {"middle": -(len(lines) - 1) * size * 0.6, "hanging": 0.0}.get(
        baseline, -(len(lines) - 1) * size * 1.2
    )
    rot = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
    spans = "".join(
        f'<tspan x="{num(x)}" dy="{num(0 if i == 0 else size * 1.2)}">{ln}</tspan>'
        for i, ln in enumerate(lines)
    )
    return (
        f'<text x="{num(x)}" y="{num(y + shift)}" font-size="{num(size)}" fill="{color_of(color)}" '
        f'text-anchor="{anchor}" dominant-baseline="{baseline}" font-weight="{weight}"{rot}>{spans}</text>'
    )


_COLOR = re.compile(r"^(#[0-9a-fA-F]{3,8}|rgba?\([0-9., ]+\)|[a-zA-Z]{3,20})$")


def color_of(c: object, default: str = "#444") -> str:
    """A colour Plotly accepts and SVG understands; anything else is the default (never raw markup)."""
    s = str(c).strip() if c is not None else ""
    return s if _COLOR.match(s) else default


@dataclass(frozen=True)
class Axis:
    """One axis: where it lies on the page and how data maps onto it."""

    name: str  # x, x2, y, …
    lo: float  # page pixel of the range's start
    hi: float  # page pixel of the range's end
    range: tuple[float, float]
    categories: tuple[str, ...]  # empty for a numeric axis
    visible: bool
    title: str

    def px(self, v: object) -> float | None:
        """The page coordinate of a data value (None for a gap or a value the axis does not hold)."""
        if v is None:
            return None
        if self.categories:
            try:
                pos = float(self.categories.index(str(v)))
            except ValueError:
                return None
        else:
            try:
                pos = float(v)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return None
            if not math.isfinite(pos):
                return None
        a, b = self.range
        return self.lo + (pos - a) / ((b - a) or 1.0) * (self.hi - self.lo)


def seq(v: Any) -> list[Any]:
    if v is None:
        return []
    if hasattr(v, "tolist"):
        v = v.tolist()
    return list(v) if isinstance(v, (list, tuple)) else [v]
