"""Report stage, static figures' heatmaps: a Plotly heatmap as one embedded PNG inside the SVG.

One pixel per cell, scaled without smoothing: 2,000 collectives × 64 ranks stay a few kilobytes
instead of 128,000 rectangles. Missing cells are transparent. The colour key is one line of text
above the plot (lightest and darkest values).
"""

from __future__ import annotations

import base64
import itertools
import math
import re
import struct
import zlib
from typing import Any

from ncclscope.report.static_svg_parts import Axis, num, seq, text_el
from ncclscope.report.static_svg_traces import axis_values, finite_numbers, tick_label

_RGB = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)")


def _rgb(c: object) -> tuple[int, int, int]:
    s = str(c)
    m = _RGB.match(s)
    if m:
        r, g, b = (int(float(v)) for v in m.groups())
        return (r, g, b)
    if s.startswith("#") and len(s) == 7:
        return (int(s[1:3], 16), int(s[3:5], 16), int(s[5:7], 16))
    return (128, 128, 128)


def _scale(t: dict[str, Any]) -> list[tuple[float, tuple[int, int, int]]]:
    cs = t.get("colorscale")
    if isinstance(cs, str) or not cs:
        from plotly.colors import get_colorscale

        try:
            cs = get_colorscale(cs or "Viridis")
        except Exception:  # noqa: BLE001 - an unknown name: Plotly's default scale
            cs = get_colorscale("Viridis")
    return [(float(p), _rgb(c)) for p, c in seq(cs)]


def _shade(v: float, scale: list[tuple[float, tuple[int, int, int]]]) -> tuple[int, int, int]:
    for (p0, c0), (p1, c1) in itertools.pairwise(scale):
        if v <= p1:
            f = (v - p0) / ((p1 - p0) or 1)
            return (
                round(c0[0] + f * (c1[0] - c0[0])),
                round(c0[1] + f * (c1[1] - c0[1])),
                round(c0[2] + f * (c1[2] - c0[2])),
            )
    return scale[-1][1]


def heatmap(t: dict[str, Any], xa: Axis, ya: Axis) -> str:
    z = [seq(row) for row in seq(t.get("z"))]
    if not z or not z[0]:
        return ""
    cells = [v for row in z for v in row if isinstance(v, (int, float)) and math.isfinite(v)]
    lo = float(t["zmin"]) if isinstance(t.get("zmin"), (int, float)) else min(cells, default=0.0)
    hi = float(t["zmax"]) if isinstance(t.get("zmax"), (int, float)) else max(cells, default=1.0)
    scale = _scale(t)
    rows = []
    for row in z:
        px = bytearray()
        for v in row:
            ok = isinstance(v, (int, float)) and math.isfinite(v)
            f = min(1.0, max(0.0, (v - lo) / ((hi - lo) or 1))) if ok else 0.0
            px += bytes((*_shade(f, scale), 255 if ok else 0))
        rows.append(bytes(px))
    xs, ys = axis_values(t, "x"), axis_values(t, "y")
    x0, x1 = _edges(xa, xs)
    y0, y1 = _edges(ya, ys)
    if x0 is None or x1 is None or y0 is None or y1 is None:
        return ""
    png = base64.b64encode(png_rgba(rows, len(z[0]))).decode()
    left, right = sorted((x0, x1))
    top, bottom = sorted((y0, y1))
    # Row 0 of z is the first y value: at the top of the image when that axis runs downwards.
    tf = "" if y0 < y1 else f' transform="translate(0 {num(top + bottom)}) scale(1 -1)"'
    img = (
        f'<image x="{num(left)}" y="{num(top)}" width="{num(right - left)}" height="{num(bottom - top)}" '
        f'preserveAspectRatio="none" style="image-rendering:pixelated"{tf} '
        f'href="data:image/png;base64,{png}"/>'
    )
    bar = t.get("colorbar") or {}
    name = (bar.get("title") or {}).get("text", "") if isinstance(bar.get("title"), dict) else ""
    key = f"colour{' (' + str(name) + ')' if name else ''}: {tick_label(lo)} light → {tick_label(hi)} dark"
    bar = text_el(right, top - 6, key, size=10, anchor="end")
    return img + bar


def _edges(a: Axis, vals: list[Any]) -> tuple[float | None, float | None]:
    if a.categories:
        return (a.px(str(vals[0])) or 0.0) - _half(a), (a.px(str(vals[-1])) or 0.0) + _half(a)
    nums = finite_numbers(vals)
    if not nums:
        return None, None
    step = (nums[-1] - nums[0]) / (len(nums) - 1) if len(nums) > 1 else 1.0
    return a.px(nums[0] - step / 2), a.px(nums[-1] + step / 2)


def _half(a: Axis) -> float:
    return (a.hi - a.lo) / (a.range[1] - a.range[0] or 1) / 2


def png_rgba(rows: list[bytes], width: int) -> bytes:
    """A minimal PNG (8-bit RGBA, no filter) of `rows`, each `width` × 4 bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + r for r in rows)
    head = struct.pack(">IIBBBBB", width, len(rows), 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
