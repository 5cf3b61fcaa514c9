"""Report stage, topology figure at scale, drill-down: the host menu of the host view.

Each menu entry fills a few fixed traces (one per transport, the host's ranks, the other hosts it
links to) with that host's data and pans to where they are drawn, beside the overview circle.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go
import polars as pl

from ncclscope.report.figure_style import escape_text
from ncclscope.report.figure_style import transport_color as _color

DETAIL_X = 10.0  # the drill-down is drawn around (DETAIL_X, 0); the overview around (0, 0)
OVERVIEW_X = [-1.45, 1.45]
OVERVIEW_Y = [-1.3, 1.3]
# Every menu entry sets the height again: after a window resize Plotly's responsive mode forgets a
# fixed height, and the next relayout would shrink the figure to its container's default.
HEIGHT = 720
_GREY = "#9e9e9e"


def _detail_slots(fig: go.Figure, labels: list[str]) -> list[int]:
    """Empty traces the host menu fills: one per transport, then the host's ranks, then its peers."""
    first = len(fig.data)
    shown = {t.legendgroup for t in fig.data if t.showlegend is not False}
    for label in labels:
        fig.add_trace(
            go.Scatter(
                x=[],
                y=[],
                mode="lines+markers",
                name=label,
                legendgroup=label,
                showlegend=label not in shown,  # a transport only used inside hosts still gets its entry
                line={"color": _color(label), "width": 1.6},
                marker={"symbol": "arrow", "angleref": "previous", "size": [], "color": _color(label)},
                hoverinfo="text",
                meta=["detail", label],
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[],
            y=[],
            mode="markers+text",
            showlegend=False,
            textposition="middle center",
            textfont={"color": "white", "size": 10},
            marker={"size": 24, "color": "#4c78a8", "line": {"color": "white"}},
            hoverinfo="text",
            meta=["detail", "ranks"],
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[],
            y=[],
            mode="markers+text",
            showlegend=False,
            textposition="middle right",
            textfont={"size": 10, "color": "#444"},
            marker={"size": 12, "color": _GREY, "symbol": "square"},
            hoverinfo="text",
            meta=["detail", "other hosts"],
        )
    )
    return list(range(first, len(fig.data)))


def _views(e: pl.DataFrame) -> pl.DataFrame:
    """Each edge as seen from a host: its own ranks by number, other hosts by name."""
    rank = pl.lit("r") + pl.col("src_rank").cast(pl.Utf8), pl.lit("r") + pl.col("dst_rank").cast(pl.Utf8)
    intra = pl.col("src_host") == pl.col("dst_host")
    mine = e.select(
        pl.col("src_host").alias("owner"),
        rank[0].alias("a"),
        pl.when(intra).then(rank[1]).otherwise(pl.lit("h") + pl.col("dst_host")).alias("b"),
        "label",
        "channel",
    )
    theirs = e.filter(~intra).select(
        pl.col("dst_host").alias("owner"),
        (pl.lit("h") + pl.col("src_host")).alias("a"),
        rank[1].alias("b"),
        "label",
        "channel",
    )
    return (
        pl.concat([mine, theirs])
        .group_by("owner", "a", "b", "label")
        .agg(pl.col("channel").unique().sort().alias("channels"))
        .sort("owner", "label", "a", "b")
    )


def _ring(keys: list[str], radius: float) -> dict[str, tuple[float, float]]:
    n = max(len(keys), 1)
    return {
        k: (
            DETAIL_X + radius * math.cos(math.pi / 2 - 2 * math.pi * i / n),
            radius * math.sin(math.pi / 2 - 2 * math.pi * i / n),
        )
        for i, k in enumerate(keys)
    }


def _channels_text(chs: list[int | None]) -> str:
    shown = [str(c) for c in chs if c is not None]
    return (
        f"channel {shown[0]}"
        if len(shown) == 1
        else f"{len(shown)} channels: {', '.join(shown[:12])}" + (", …" if len(shown) > 12 else "")
    )


def _detail(
    host: dict[str, Any], ranks: pl.DataFrame, view: pl.DataFrame, labels: list[str]
) -> dict[str, list[Any]]:
    """The restyle payload that draws one host: per slot x, y, hover, arrow sizes, text."""
    keys = [f"r{r}" for r in ranks["rank"].to_list()]
    peers = sorted({k for k in [*view["a"].to_list(), *view["b"].to_list()] if k.startswith("h")})
    pos = {**_ring(keys, 0.55), **_ring(peers, 1.25)}
    name = {k: (f"rank {k[1:]}" if k.startswith("r") else escape_text(k[1:])) for k in pos}
    out: dict[str, list[Any]] = {"x": [], "y": [], "hovertext": [], "marker.size": [], "text": []}
    for label in labels:
        xs: list[float | None] = []
        ys: list[float | None] = []
        hover: list[str] = []
        for a, b, chs in view.filter(pl.col("label") == label).select("a", "b", "channels").iter_rows():
            (x1, y1), (x2, y2) = pos[a], pos[b]
            dx, dy = x2 - x1, y2 - y1
            norm = math.hypot(dx, dy) or 1.0
            ox, oy = 0.015 * dy / norm, -0.015 * dx / norm  # a→b and b→a side by side
            text = f"{name[a]} → {name[b]}<br>{label}, {_channels_text(chs)}"
            xs += [round(x1 + ox, 4), round(x1 + 0.6 * dx + ox, 4), round(x2 + ox, 4), None]
            ys += [round(y1 + oy, 4), round(y1 + 0.6 * dy + oy, 4), round(y2 + oy, 4), None]
            hover += ["", text, "", ""]  # on the arrow only: one copy per link keeps the menu small
        _append(out, xs, ys, hover, [0, 9, 0, 0] * (len(xs) // 4), [])
    gpu = dict(zip(ranks["rank"].to_list(), ranks["cuda_dev"].to_list(), strict=True))
    _append(
        out,
        [round(pos[k][0], 4) for k in keys],
        [round(pos[k][1], 4) for k in keys],
        [f"rank {k[1:]} · {escape_text(host['host'])} · GPU {gpu[int(k[1:])]}" for k in keys],
        24,
        [k[1:] for k in keys],
    )
    _append(
        out,
        [round(pos[k][0], 4) for k in peers],
        [round(pos[k][1], 4) for k in peers],
        [f"{name[k]} (another host)" for k in peers],
        12,
        [name[k] for k in peers],
    )
    return out


def _append(
    out: dict[str, list[Any]], xs: list[Any], ys: list[Any], hover: list[str], size: Any, text: list[str]
) -> None:
    out["x"].append(xs)
    out["y"].append(ys)
    out["hovertext"].append(hover)
    out["marker.size"].append(size)
    out["text"].append(text)


def host_menu(fig: go.Figure, e: pl.DataFrame, nodes: pl.DataFrame, hosts: pl.DataFrame, title: str) -> None:
    """Add the drill-down traces and the menu: 'all hosts' (the overview, titled `title`), then each host."""
    labels = sorted(set(e["label"].to_list()))
    slots = _detail_slots(fig, labels)
    views = {str(k[0]): v for k, v in _views(e).partition_by("owner", as_dict=True).items()}
    empty_view = pl.DataFrame(
        schema={"a": pl.Utf8, "b": pl.Utf8, "label": pl.Utf8, "channels": pl.List(pl.Int64)}
    )
    by_host = {str(k[0]): v.sort("rank") for k, v in nodes.partition_by("host", as_dict=True).items()}
    overview = {"xaxis.range": OVERVIEW_X, "yaxis.range": OVERVIEW_Y, "title.text": title, "height": HEIGHT}
    buttons: list[dict[str, Any]] = [{"label": "all hosts", "method": "relayout", "args": [overview]}]
    for h in hosts.to_dicts():
        data = _detail(h, by_host[h["host"]], views.get(h["host"], empty_view), labels)
        n_peers = len(data["x"][-1])
        layout = {
            "xaxis.range": [DETAIL_X - 1.9, DETAIL_X + 1.9],
            "yaxis.range": [-1.6, 1.6],
            "height": HEIGHT,
            "title.text": f"Topology: {escape_text(h['host'])}, ranks {h['lo']}–{h['hi']}, "
            f"links to {n_peers} other host{'s' if n_peers != 1 else ''}",
        }
        buttons.append(
            {
                "label": f"{escape_text(h['host'])} (ranks {h['lo']}–{h['hi']})",
                "method": "update",
                "args": [data, layout, slots],
            }
        )
    fig.update_layout(
        updatemenus=[
            {
                "buttons": buttons,
                "x": 0,
                "y": 1.09,
                "xanchor": "left",
                "yanchor": "bottom",
                "active": 0,
                "showactive": True,
            }
        ]
    )
