"""Report stage, topology figure: ranks on a circle grouped by host, per-channel rings, trees and
connections as arrows coloured by transport, with a channel picker. Above `RANK_VIEW_MAX_RANKS`
ranks, one mark per host instead (`figures_topology_hosts`), with a menu to draw one host's ranks."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import polars as pl

from ncclscope.report.figure_style import (
    HOST_COLORS,
    LAYOUT,
    empty_figure,
    escape_text,
    new_figure,
    transport_color,
)

# Up to this many ranks every rank is drawn (a label per rank stays readable on a 620 px circle);
# above it, one mark per host with a host menu. `topology_figure(..., max_ranks=…)` overrides it.
RANK_VIEW_MAX_RANKS = 64


def _positions(nodes: pl.DataFrame) -> dict[int, tuple[float, float]]:
    n = max(nodes.height, 1)
    return {
        int(r): (math.cos(math.pi / 2 - 2 * math.pi * i / n), math.sin(math.pi / 2 - 2 * math.pi * i / n))
        for i, r in enumerate(nodes["rank"].to_list())
    }


def _edge_trace(
    edges: list[tuple[int, int]],
    pos: dict[int, tuple[float, float]],
    label: str,
    channel: int | None,
    first: bool,
    dash: str,
) -> go.Scatter:
    xs: list[float | None] = []
    ys: list[float | None] = []
    sizes: list[int] = []
    text: list[str] = []
    for a, b in edges:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        # Shift each direction a little to its right, so a→b and b→a stay two visible lines.
        dx, dy = x2 - x1, y2 - y1
        norm = math.hypot(dx, dy) or 1.0
        ox, oy = 0.02 * dy / norm, -0.02 * dx / norm
        xm, ym = x1 + 0.6 * dx + ox, y1 + 0.6 * dy + oy
        xs += [x1 + ox, xm, x2 + ox, None]
        ys += [y1 + oy, ym, y2 + oy, None]
        sizes += [0, 10, 0, 0]
        hover = f"channel {channel}: {a} → {b}<br>{label}"
        text += [hover, hover, hover, ""]
    color = transport_color(label)
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines+markers",
        name=label,
        legendgroup=label,
        showlegend=first,
        line={"color": color, "width": 1.6, "dash": dash},
        marker={"symbol": "arrow", "angleref": "previous", "size": sizes, "color": color},
        hovertext=text,
        hoverinfo="text",
        meta=[channel],
    )


def topology_figure(
    edges: pl.DataFrame, nodes: pl.DataFrame, *, note: str | None = None, max_ranks: int = RANK_VIEW_MAX_RANKS
) -> go.Figure:
    """Ranks on a circle grouped by host; rings, trees and connections per channel, coloured by transport.

    More than `max_ranks` ranks on two hosts or more: one mark per host, links between hosts by
    transport and channel count, and a menu that draws one host's ranks (figures_topology_hosts).
    """
    title = "Topology: rings, trees and connections per channel"
    if nodes.is_empty() or edges.is_empty():
        return empty_figure(
            title,
            note
            or "no ring, tree or connection lines in the logs "
            "(NCCL prints them at init with NCCL_DEBUG=INFO)",
        )
    if nodes.height > max_ranks and nodes["host"].n_unique() > 1:
        from ncclscope.report.figures_topology_hosts import host_topology_figure

        return host_topology_figure(edges, nodes)
    pos = _positions(nodes)
    edges = edges.filter(
        pl.col("src_rank").is_in(list(pos))
        & pl.col("dst_rank").is_in(list(pos))
        & (pl.col("src_rank") != pl.col("dst_rank"))
    )
    channels = sorted(set(edges["channel"].fill_null(-1).to_list()))
    fig = new_figure()
    seen: set[str] = set()
    for ch in channels:
        sub = edges.filter(pl.col("channel").fill_null(-1) == ch)
        for label in sorted(set(sub["label"].to_list())):
            pairs = [
                (int(a), int(b))
                for a, b in sub.filter(pl.col("label") == label).select("src_rank", "dst_rank").iter_rows()
            ]
            dash = "dot" if label.startswith("tree") else "solid"
            fig.add_trace(_edge_trace(pairs, pos, label, ch if ch >= 0 else None, label not in seen, dash))
            seen.add(label)
    n_edge_traces = len(fig.data)
    _add_nodes(fig, nodes, pos)
    _channel_menu(fig, channels, n_edge_traces)
    lim = 1.35
    fig.update_layout(
        title=title,
        xaxis={"visible": False, "range": [-lim, lim]},
        yaxis={"visible": False, "range": [-lim, lim], "scaleanchor": "x"},
        legend={"title": "transport"},
        **{**LAYOUT, "height": 620},
    )
    return fig


def _add_nodes(fig: go.Figure, nodes: pl.DataFrame, pos: dict[int, tuple[float, float]]) -> None:
    hosts = list(dict.fromkeys(nodes["host"].to_list()))
    color = {h: HOST_COLORS[i % len(HOST_COLORS)] for i, h in enumerate(hosts)}
    rows = nodes.to_dicts()
    fig.add_trace(
        go.Scatter(
            x=[pos[r["rank"]][0] for r in rows],
            y=[pos[r["rank"]][1] for r in rows],
            mode="markers+text",
            text=[str(r["rank"]) for r in rows],
            textposition="middle center",
            textfont={"color": "white", "size": 10},
            marker={
                "size": 22,
                "color": [color[r["host"]] for r in rows],
                "line": {"color": "white", "width": 1},
            },
            hovertext=[
                f"rank {r['rank']} · {escape_text(r['host'])} · GPU {r.get('cuda_dev')}" for r in rows
            ],
            hoverinfo="text",
            name="ranks",
            showlegend=False,
        )
    )
    for h in hosts:
        ranks = [r["rank"] for r in rows if r["host"] == h]
        x = sum(pos[r][0] for r in ranks) / len(ranks)
        y = sum(pos[r][1] for r in ranks) / len(ranks)
        norm = math.hypot(x, y) or 1.0
        # Outside the circle, growing away from it, so a long host name never covers a rank.
        fig.add_annotation(
            x=1.14 * x / norm,
            y=1.14 * y / norm,
            text=f"<b>{escape_text(h)}</b>",
            xanchor="left" if x > 0.2 * norm else "right" if x < -0.2 * norm else "center",
            yanchor="bottom" if y > 0.7 * norm else "top" if y < -0.7 * norm else "middle",
            showarrow=False,
            font={"color": color[h], "size": 12},
        )


def _channel_menu(fig: go.Figure, channels: list[int], n_edge_traces: int) -> None:
    if len(channels) <= 1:
        return
    metas = [t.meta[0] if t.meta else None for t in fig.data[:n_edge_traces]]

    def vis(ch: int | None) -> list[bool]:
        return [ch is None or m == ch for m in metas] + [True]

    buttons = [{"label": "all channels", "method": "restyle", "args": [{"visible": vis(None)}]}]
    buttons += [
        {"label": f"channel {c}", "method": "restyle", "args": [{"visible": vis(c)}]}
        for c in channels
        if c >= 0
    ]
    fig.update_layout(
        updatemenus=[{"buttons": buttons, "x": 0, "y": 1.08, "xanchor": "left", "yanchor": "bottom"}]
    )
