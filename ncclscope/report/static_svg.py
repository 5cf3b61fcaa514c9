"""Report stage, static figures: a Plotly figure's data drawn as one self-contained SVG, without JavaScript.

Notebooks keep Plotly figures as a JSON mimetype that only a live Jupyter front end draws; GitHub,
nbviewer and `nbconvert --to html` show nothing for it. This module draws the same data (the
scatter, bar and heatmap traces the report's figures use, their axes, subplots, annotations and
legend) as SVG, so the notebook API can ship it beside the interactive figure. It is a faithful
sketch, not Plotly: no hover, no menus (only the traces visible at first are drawn).

Every string from the figure is log-derived data: Plotly's small HTML subset (`<br>`, `<b>`, entities)
is reduced to plain lines, control and bidi characters are dropped, and the rest is XML-escaped.
Same figure → same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ncclscope.report import static_svg_traces as T
from ncclscope.report.static_svg_parts import Axis, lines_of, num, text_el
from ncclscope.report.static_svg_parts import seq as _seq

WIDTH = 900  # px when the figure sets none (Plotly fills its container; a notebook cell is ~900 px)
HEIGHT = 450
TITLE_SIZE = 16
LEGEND_ROW = 18  # px per legend row, drawn under the plot


def _ref(trace: dict[str, Any], axis: str) -> str:
    return str(trace.get(f"{axis}axis") or axis).replace(f"{axis}axis", axis) or axis


def _layout_key(name: str) -> str:  # x2 -> xaxis2
    return f"{name[0]}axis{name[1:]}"


def _categories(layout_axis: dict[str, Any], values: Sequence[object]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for v in values:
        if v is not None:
            seen.setdefault(str(v), None)
    cats = list(seen)
    order = str(layout_axis.get("categoryorder") or "")
    if order.startswith("category"):
        cats.sort(key=_natural, reverse=order.endswith("descending"))
    return tuple(cats)


def _natural(s: str) -> tuple[int, float, str]:
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


def _axis(
    name: str, layout: dict[str, Any], traces: list[dict[str, Any]], box: tuple[float, float, float, float]
) -> Axis:
    lay = dict(layout.get(_layout_key(name)) or {})
    horizontal = name.startswith("x")
    values = [v for t in traces for v in T.axis_values(t, name[0])]
    is_cat = lay.get("type") == "category" or any(isinstance(v, str) for v in values)
    cats = _categories(lay, values) if is_cat else ()
    if lay.get("range") and len(_seq(lay["range"])) == 2 and not cats:
        lo_v, hi_v = (float(v) for v in _seq(lay["range"]))
    elif cats:
        lo_v, hi_v = -0.5, len(cats) - 0.5
    else:
        lo_v, hi_v = T.auto_range(traces, name[0])
    if lay.get("autorange") == "reversed":
        lo_v, hi_v = hi_v, lo_v
    d0, d1 = (float(v) for v in (_seq(lay.get("domain")) or [0.0, 1.0])[:2])
    left, top, right, bottom = box
    if horizontal:
        lo, hi = left + d0 * (right - left), left + d1 * (right - left)
    else:
        lo, hi = bottom - d0 * (bottom - top), bottom - d1 * (bottom - top)
    title = lay.get("title")
    text = title.get("text", "") if isinstance(title, dict) else (title or "")
    return Axis(name, lo, hi, (lo_v, hi_v), cats, lay.get("visible", True) is not False, str(text))


def _equal_scale(xa: Axis, ya: Axis) -> tuple[Axis, Axis]:
    """`scaleanchor`: one data unit is as long on y as on x (widen the range of the roomier axis)."""
    xs = abs(xa.hi - xa.lo) / abs(xa.range[1] - xa.range[0] or 1)
    ys = abs(ya.hi - ya.lo) / abs(ya.range[1] - ya.range[0] or 1)
    s = min(xs, ys)

    def widen(a: Axis, scale: float) -> Axis:
        mid, half = sum(a.range) / 2, (a.range[1] - a.range[0]) / 2 * scale / s
        return Axis(a.name, a.lo, a.hi, (mid - half, mid + half), a.categories, a.visible, a.title)

    return widen(xa, xs), widen(ya, ys)


def to_svg(fig: dict[str, Any]) -> str:
    """The figure (`go.Figure.to_dict()`) as one SVG document."""
    layout = dict(fig.get("layout") or {})
    traces = [t for t in (fig.get("data") or []) if t.get("visible", True) not in (False, "legendonly")]
    width = float(layout.get("width") or WIDTH)
    height = float(layout.get("height") or HEIGHT)
    m = {
        "l": 60.0,
        "r": 30.0,
        "t": 60.0,
        "b": 50.0,
        **{
            k: float(v)
            for k, v in (layout.get("margin") or {}).items()
            if k in "lrtb" and isinstance(v, (int, float))
        },
    }
    legend = T.legend_entries(fig.get("data") or [], layout)
    per_row = max(1, int((width - m["l"]) // 170))
    extra = LEGEND_ROW * math.ceil(len(legend) / per_row) + (8 if legend else 0)
    box = (m["l"], m["t"], width - m["r"], height - m["b"])
    body: list[str] = []
    axes: dict[tuple[str, str], tuple[Axis, Axis]] = {}
    for xn, yn in sorted({(_ref(t, "x"), _ref(t, "y")) for t in traces} or {("x", "y")}):
        mine = [t for t in traces if (_ref(t, "x"), _ref(t, "y")) == (xn, yn)]
        xa, ya = _axis(xn, layout, mine, box), _axis(yn, layout, mine, box)
        if (layout.get(_layout_key(yn)) or {}).get("scaleanchor") and not (xa.categories or ya.categories):
            xa, ya = _equal_scale(xa, ya)
        axes[(xn, yn)] = (xa, ya)
        body.append(T.axes_frame(xa, ya))
    shown = {id(t) for t in traces}
    for i, t in enumerate(fig.get("data") or []):
        if id(t) in shown:
            xa, ya = axes[(_ref(t, "x"), _ref(t, "y"))]
            body.append(T.draw(t, i, xa, ya, layout, traces))
    for a in _seq(layout.get("annotations")):
        body.append(_annotation(a, box, axes))
    title = layout.get("title")
    ttext = title.get("text", "") if isinstance(title, dict) else (title or "")
    body.append(text_el(m["l"], 24, ttext, size=TITLE_SIZE, color="#222", baseline="middle"))
    body.append(T.legend(legend, m["l"], height + 4, per_row))
    h = height + extra
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ncclscope-figure" viewBox="0 0 {num(width)} {num(h)}" '
        f'width="{num(width)}" height="{num(h)}" font-family="Helvetica, Arial, sans-serif">'
        f"<title>{lines_of(ttext)[0] if ttext else 'figure'}</title>"
        f'<rect width="100%" height="100%" fill="white"/>{"".join(b for b in body if b)}</svg>'
    )


def _annotation(
    a: dict[str, Any], box: tuple[float, float, float, float], axes: dict[tuple[str, str], tuple[Axis, Axis]]
) -> str:
    left, top, right, bottom = box

    def place(axis: str) -> float | None:
        ref = str(a.get(f"{axis}ref") or axis)
        v = a.get(axis, 0.5)
        if ref.startswith("paper") or ref.endswith("domain"):
            f = float(v) if isinstance(v, (int, float)) else 0.5
            return left + f * (right - left) if axis == "x" else bottom - f * (bottom - top)
        for (xn, yn), (xa, ya) in axes.items():
            if axis == "x" and xn == ref:
                return xa.px(v)
            if axis == "y" and yn == ref:
                return ya.px(v)
        return None

    x, y = place("x"), place("y")
    if x is None or y is None:
        return ""
    font = a.get("font") or {}
    anchor = {"left": "start", "right": "end"}.get(str(a.get("xanchor")), "middle")
    base = {"top": "hanging", "bottom": "auto"}.get(str(a.get("yanchor")), "middle")
    return text_el(
        x,
        y,
        a.get("text", ""),
        size=float(font.get("size") or 12),
        color=font.get("color", "#444"),
        anchor=anchor,
        baseline=base,
    )
