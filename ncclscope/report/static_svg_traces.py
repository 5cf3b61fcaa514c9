"""Report stage, static figures' traces: scatter (lines, markers, text), grouped bars and heatmaps as SVG.

Heatmaps are drawn by `static_svg_heatmap`. Axes get Plotly's look:
light grid lines, "nice" numeric ticks (1, 2, 5 × 10^k) and category labels thinned to fit.
"""

from __future__ import annotations

import math
from typing import Any

from ncclscope.report.static_svg_parts import Axis, color_of, num, seq, text_el

DEFAULT_COLORS = ("#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d")
MAX_TICK_LABEL = 28  # characters of a category label shown under an axis
LEGEND_WIDTH = 170  # px per legend entry


# --- ranges and axes -------------------------------------------------------------------------------


def axis_values(t: dict[str, Any], axis: str) -> list[Any]:
    """The values a trace puts on its x or y axis (a heatmap's cells span its coordinates)."""
    vals = seq(t.get(axis))
    if not vals and t.get("type") == "heatmap":
        z = seq(t.get("z"))
        n = len(seq(z[0])) if axis == "x" and z else len(z)
        vals = list(range(n))
    return vals


def finite_numbers(vals: list[Any]) -> list[float]:
    out = []
    for v in vals:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def auto_range(traces: list[dict[str, Any]], axis: str) -> tuple[float, float]:
    """Plotly's autorange, roughly: the data's extent padded by 5%; bars start at zero; heatmap cells whole."""
    lo, hi = math.inf, -math.inf
    for t in traces:
        vals = finite_numbers(axis_values(t, axis))
        if not vals:
            continue
        a, b = min(vals), max(vals)
        if t.get("type") == "heatmap":
            step = (b - a) / (len(vals) - 1) if len(vals) > 1 else 1.0
            a, b = a - step / 2, b + step / 2
        elif t.get("type") == "bar" and axis == "y":
            a, b = min(a, 0.0), max(b, 0.0)
        lo, hi = min(lo, a), max(hi, b)
    if lo > hi:
        return (-1.0, 1.0)
    if lo == hi:
        return (lo - 1, hi + 1)
    labelled = axis == "y" and any(t.get("type") == "bar" and t.get("text") is not None for t in traces)
    pad = (hi - lo) * (0.12 if labelled else 0.05)  # room above a bar for its label
    bars_from_zero = any(t.get("type") == "bar" for t in traces) and axis == "y" and lo == 0
    return (lo if bars_from_zero else lo - pad, hi + pad)


def nice_ticks(a: float, b: float, count: int = 6) -> list[float]:
    lo, hi = min(a, b), max(a, b)
    raw = (hi - lo) / max(count, 1)
    if raw <= 0 or not math.isfinite(raw):
        return [lo]
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def tick_label(v: float) -> str:
    if abs(v) >= 1e6 or (v and abs(v) < 1e-3):
        return f"{v:.3g}"
    return f"{v:,.6f}".rstrip("0").rstrip(".")


def axes_frame(xa: Axis, ya: Axis) -> str:
    """Grid lines, tick labels and titles of one subplot."""
    out: list[str] = []
    left, right = sorted((xa.lo, xa.hi))
    top, bottom = sorted((ya.lo, ya.hi))
    if xa.visible:
        out.append(_ticks(xa, True, (top, bottom)))
        out.append(text_el((left + right) / 2, bottom + 38, xa.title, size=12, anchor="middle"))
    if ya.visible:
        out.append(_ticks(ya, False, (left, right)))
        if ya.title:
            x = max(14.0, left - 40)
            out.append(text_el(x, (top + bottom) / 2, ya.title, size=12, anchor="middle", rotate=-90))
    return "".join(out)


def _ticks(a: Axis, horizontal: bool, across: tuple[float, float]) -> str:
    if a.categories:
        stride = max(1, math.ceil(len(a.categories) / max(1, int(abs(a.hi - a.lo) // 14))))
        marks = [(c, a.px(c)) for c in a.categories[::stride]]
        rotate = horizontal and max((len(c) for c in a.categories), default=0) * 7 > abs(a.hi - a.lo) / len(
            a.categories
        )
        labels = [(c if len(c) <= MAX_TICK_LABEL else c[: MAX_TICK_LABEL - 1] + "…", p) for c, p in marks]
    else:
        rotate = False
        labels = [(tick_label(v), a.px(v)) for v in nice_ticks(*a.range)]
    out = []
    for label, p in labels:
        if p is None:
            continue
        if horizontal:
            out.append(
                f'<line x1="{num(p)}" x2="{num(p)}" y1="{num(across[0])}" y2="{num(across[1])}" '
                'stroke="#ebebeb"/>'
            )
            out.append(
                text_el(
                    p,
                    across[1] + 14,
                    label,
                    size=11,
                    anchor="end" if rotate else "middle",
                    rotate=-35 if rotate else 0,
                )
            )
        else:
            out.append(
                f'<line x1="{num(across[0])}" x2="{num(across[1])}" y1="{num(p)}" y2="{num(p)}" '
                'stroke="#ebebeb"/>'
            )
            out.append(text_el(across[0] - 6, p, label, size=11, anchor="end", baseline="middle"))
    return "".join(out)


# --- traces -------------------------------------------------------------------------------------------


def _color(t: dict[str, Any], index: int, layout: dict[str, Any]) -> str:
    way = seq((layout.get("template") or {}).get("layout", {}).get("colorway")) or list(DEFAULT_COLORS)
    marker = t.get("marker") or {}
    line = t.get("line") or {}
    for c in (line.get("color"), marker.get("color")):
        if isinstance(c, str):
            return color_of(c)
    return color_of(way[index % len(way)])


def draw(
    t: dict[str, Any], index: int, xa: Axis, ya: Axis, layout: dict[str, Any], siblings: list[dict[str, Any]]
) -> str:
    """One trace, drawn on its axes."""
    kind = t.get("type") or "scatter"
    if kind == "bar":
        bars = [s for s in siblings if s.get("type") == "bar" and s.get("xaxis") == t.get("xaxis")]
        slot = next((k for k, b in enumerate(bars) if b is t), 0)
        return _bars(
            t, _color(t, index, layout), xa, ya, slot, max(1, len(bars)), layout.get("barmode") == "group"
        )
    if kind == "heatmap":
        from ncclscope.report.static_svg_heatmap import heatmap

        return heatmap(t, xa, ya)
    if kind in ("scatter", "scattergl"):
        return _scatter(t, _color(t, index, layout), xa, ya)
    return ""


def _scatter(t: dict[str, Any], color: str, xa: Axis, ya: Axis) -> str:
    mode = str(t.get("mode") or "lines+markers")
    pts = [(xa.px(x), ya.px(y)) for x, y in zip(seq(t.get("x")), seq(t.get("y")), strict=False)]
    out = []
    if "lines" in mode:
        line = t.get("line") or {}
        d, pen = [], "M"
        for x, y in pts:
            if x is None or y is None:
                pen = "M"
                continue
            d.append(f"{pen}{num(x)} {num(y)}")
            pen = "L"
        width = line.get("width", 2)
        dash = ' stroke-dasharray="4 3"' if line.get("dash") not in (None, "solid") else ""
        if d:
            out.append(
                f'<path d="{"".join(d)}" fill="none" stroke="{color}" '
                f'stroke-width="{num(float(width))}"{dash}/>'
            )
    marker = t.get("marker") or {}
    if "markers" in mode:
        sizes, colors = seq(marker.get("size", 6)), seq(marker.get("color", color))
        for i, (x, y) in enumerate(pts):
            size = sizes[i % len(sizes)] if sizes else 6
            if x is None or y is None or not isinstance(size, (int, float)) or size <= 0:
                continue
            fill = color_of(colors[i % len(colors)], color) if colors else color
            out.append(
                f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(size / 2)}" fill="{fill}" stroke="white"/>'
            )
    if "text" in mode:
        font = t.get("textfont") or {}
        for (x, y), label in zip(pts, seq(t.get("text")), strict=False):
            if x is not None and y is not None:
                out.append(
                    text_el(
                        x,
                        y,
                        label,
                        size=float(font.get("size") or 11),
                        color=font.get("color", "#222"),
                        anchor="middle",
                        baseline="middle",
                    )
                )
    return "".join(out)


def _bars(t: dict[str, Any], color: str, xa: Axis, ya: Axis, slot: int, slots: int, group: bool) -> str:
    marker = t.get("marker") or {}
    colors = seq(marker.get("color", color))
    outline = marker.get("line") or {}
    strokes = seq(outline.get("color"))
    width = abs(xa.hi - xa.lo) / max(1, len(xa.categories) or len(seq(t.get("x")))) * 0.8
    bar = width / slots if group else width
    base = ya.px(0.0)
    out = []
    texts = seq(t.get("text"))
    for i, (x, y) in enumerate(zip(seq(t.get("x")), seq(t.get("y")), strict=False)):
        cx, top = xa.px(x), ya.px(y)
        if cx is None or top is None or base is None:
            continue
        left = cx - width / 2 + (slot * bar if group else 0)
        fill = color_of(colors[i % len(colors)], color) if colors else color
        stroke = color_of(strokes[i % len(strokes)], "none") if strokes else "none"
        edge = (
            ""
            if stroke.startswith("rgba(0,0,0,0") or stroke == "none"
            else f' stroke="{stroke}" stroke-width="3"'
        )
        out.append(
            f'<rect class="bar" x="{num(left)}" y="{num(min(top, base))}" width="{num(bar)}" '
            f'height="{num(abs(base - top))}" fill="{fill}"{edge}/>'
        )
        if i < len(texts) and texts[i] is not None:
            out.append(text_el(left + bar / 2, min(top, base) - 3, texts[i], size=10, anchor="middle"))
    return "".join(out)


# --- legend -------------------------------------------------------------------------------------------


def legend_entries(data: list[dict[str, Any]], layout: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, colour) of each trace the legend lists: Plotly shows a legend once there are two traces."""
    named = [t for t in data if t.get("name") and t.get("type", "scatter") != "heatmap"]
    if len(named) < 2 and not any(t.get("showlegend") for t in named):
        return []
    out: dict[str, str] = {}
    for i, t in enumerate(named):
        if t.get("showlegend", True) is not False:
            out.setdefault(str(t["name"]), _color(t, i, layout))
    return list(out.items())


def legend(entries: list[tuple[str, str]], left: float, top: float, per_row: int) -> str:
    out = []
    for k, (name, color) in enumerate(entries):
        x = left + (k % per_row) * LEGEND_WIDTH
        y = top + (k // per_row) * 18 + 9
        out.append(f'<rect x="{num(x)}" y="{num(y - 5)}" width="14" height="10" fill="{color}"/>')
        out.append(text_el(x + 20, y, name[:24], size=11, baseline="middle"))
    return "".join(out)
