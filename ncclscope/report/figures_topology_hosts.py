"""Report stage, topology figure at scale: one mark per host, links between hosts coloured by
transport and as wide as their channel count, and a host menu that draws one host's ranks, the
links among them and its links to other hosts (drawn beside the overview; the menu pans there).

Where the logs print connection lines, ring-order and tree edges (which carry no transport) are
left out: the connection lines of those channels already name the transport.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import polars as pl

from ncclscope.report.figure_style import LAYOUT, escape_text, new_figure
from ncclscope.report.figure_style import transport_color as color
from ncclscope.report.figures_topology_detail import HEIGHT, OVERVIEW_X, OVERVIEW_Y, host_menu

MAX_HOST_LABELS = 32  # hosts named on the overview circle (every k-th beyond that; all in hovers)
WIDTH_CLASSES = 4  # link widths: channel counts binned into this many widths
NO_LINK = "#9e9e9e"
_IN = 0.95


def _max_channels(links: pl.DataFrame) -> int:
    top = links["channels"].max() if links.height else 0
    return int(top) if isinstance(top, (int, float)) else 0


def host_frame(nodes: pl.DataFrame) -> pl.DataFrame:
    """One row per host in order of its lowest rank, with its rank range and place on the circle."""
    hosts = (
        nodes.group_by("host")
        .agg(pl.col("rank").min().alias("lo"), pl.col("rank").max().alias("hi"), pl.len().alias("n_ranks"))
        .sort("lo", "host")
        .with_row_index("idx")
    )
    angle = math.pi / 2 - 2 * math.pi * pl.col("idx") / max(hosts.height, 1)
    return hosts.with_columns(angle.cos().alias("x"), angle.sin().alias("y"))


def host_edges(edges: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """Edges with the host of each end; connection lines only, when the logs have any."""
    h = nodes.select("rank", "host")
    e = (
        edges.filter(pl.col("src_rank") != pl.col("dst_rank"))
        .join(h.rename({"rank": "src_rank", "host": "src_host"}), on="src_rank")
        .join(h.rename({"rank": "dst_rank", "host": "dst_host"}), on="dst_rank")
    )
    if (e["kind"] == "connection").any():
        e = e.filter(pl.col("kind") == "connection")
    return e


def host_links(e: pl.DataFrame) -> pl.DataFrame:
    """Links between two hosts (either direction) per transport: channels, connections, directions."""
    inter = e.filter(pl.col("src_host") != pl.col("dst_host"))
    a = pl.when(pl.col("src_host") < pl.col("dst_host")).then("src_host").otherwise("dst_host")
    b = pl.when(pl.col("src_host") < pl.col("dst_host")).then("dst_host").otherwise("src_host")
    return (
        inter.with_columns(a.alias("a"), b.alias("b"))
        .group_by("a", "b", "label")
        .agg(
            pl.col("channel").n_unique().alias("channels"),
            pl.len().alias("connections"),
            (pl.col("src_host") == pl.col("a")).sum().alias("a_to_b"),
        )
        .sort("label", "a", "b")
    )


def host_summary(e: pl.DataFrame, hosts: pl.DataFrame) -> pl.DataFrame:
    """Per host: its intra-node transports (links, channels) as text, and the main one for its colour."""
    intra = (
        e.filter(pl.col("src_host") == pl.col("dst_host"))
        .group_by("src_host", "label")
        .agg(
            pl.struct("src_rank", "dst_rank").n_unique().alias("links"),
            pl.col("channel").n_unique().alias("channels"),
        )
        .sort("src_host", "links", "label", descending=[False, True, False])
    )
    text = (
        intra.group_by("src_host", maintain_order=True)
        .agg(
            pl.col("label").first().alias("main"),
            (
                pl.col("label")
                + pl.lit(": ")
                + pl.col("links").cast(pl.Utf8)
                + pl.lit(" links on ")
                + pl.col("channels").cast(pl.Utf8)
                + pl.lit(" channels")
            )
            .str.join("<br>")
            .alias("intra"),
        )
        .rename({"src_host": "host"})
    )
    return hosts.join(text, on="host", how="left")


# --- the overview ------------------------------------------------------------------------------


def _link_traces(
    fig: go.Figure, links: pl.DataFrame, pos: dict[str, tuple[float, float]], n_hosts: int
) -> None:
    top = max(_max_channels(links), 1)
    step = 1.6 if n_hosts <= 32 else 1.0  # neighbours on a crowded circle are only pixels apart
    links = links.with_columns(
        ((pl.col("channels") * WIDTH_CLASSES + top - 1) // top).clip(1, WIDTH_CLASSES).alias("cls")
    )
    for (label, cls), grp in links.group_by("label", "cls", maintain_order=True):
        xs: list[float | None] = []
        ys: list[float | None] = []
        hover: list[str] = []
        for r in grp.iter_rows(named=True):
            (x1, y1), (x2, y2) = pos[r["a"]], pos[r["b"]]
            text = (
                f"{escape_text(r['a'])} ↔ {escape_text(r['b'])}<br>{label}: {r['channels']} channels, "
                f"{r['connections']} connections ({r['a_to_b']} one way, {r['connections'] - r['a_to_b']} back)"
            )
            # Just inside the circle of host marks, so a link between neighbours is not hidden under them.
            xs += [_IN * x1, _IN * (x1 + x2) / 2, _IN * x2, None]
            ys += [_IN * y1, _IN * (y1 + y2) / 2, _IN * y2, None]
            hover += ["", text, "", ""]
        lo, hi = (cls - 1) * top / WIDTH_CLASSES, cls * top / WIDTH_CLASSES
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=str(label),
                legendgroup=str(label),
                showlegend=not any(t.legendgroup == label for t in fig.data),
                line={"color": color(str(label)), "width": 0.8 + step * cls},
                hovertext=hover,
                hoverinfo="text",
                meta=[f"links {label}", f"{math.floor(lo) + 1}-{math.ceil(hi)} channels"],
            )
        )


def _host_marks(fig: go.Figure, summary: pl.DataFrame) -> None:
    """Host marks, one trace (and legend entry) per main intra-node transport."""
    n = summary.height
    size = max(7, min(18, 900 // max(n, 1)))
    summary = summary.with_columns(pl.col("main").fill_null("").alias("main"))
    for (main,), grp in summary.group_by("main", maintain_order=True):
        rows = grp.to_dicts()
        fig.add_trace(
            go.Scatter(
                x=grp["x"].to_list(),
                y=grp["y"].to_list(),
                mode="markers",
                name=f"host, {main} inside" if main else "host, no link line inside",
                marker={
                    "size": size,
                    "line": {"color": "white", "width": 1},
                    "color": color(str(main)) if main else NO_LINK,
                    "symbol": "square",
                },
                hovertext=[
                    f"<b>{escape_text(r['host'])}</b> · ranks {r['lo']}–{r['hi']} ({r['n_ranks']})<br>"
                    f"inside the host: {r['intra'] or 'no link lines'}"
                    for r in rows
                ],
                hoverinfo="text",
                customdata=grp["host"].to_list(),
                meta=["hosts"],
            )
        )
    step = max(1, math.ceil(n / MAX_HOST_LABELS))
    for r in summary.to_dicts()[::step]:
        x, y = r["x"], r["y"]
        fig.add_annotation(
            x=1.07 * x,
            y=1.07 * y,
            text=escape_text(r["host"]),
            showarrow=False,
            font={"size": 10, "color": "#444"},
            xanchor="left" if x > 0.2 else "right" if x < -0.2 else "center",
            yanchor="bottom" if y > 0.7 else "top" if y < -0.7 else "middle",
        )


def host_topology_figure(edges: pl.DataFrame, nodes: pl.DataFrame) -> go.Figure:
    """One mark per host on a circle; links between hosts by transport, wider for more channels;
    a host menu draws that host's ranks, their links and their links to other hosts."""
    e = host_edges(edges, nodes)
    hosts = host_frame(nodes)
    pos = {h: (x, y) for h, x, y in hosts.select("host", "x", "y").iter_rows()}
    links = host_links(e)
    top = _max_channels(links)
    title = (
        f"Topology: {nodes.height} ranks on {hosts.height} hosts — links between hosts by transport, "
        f"width ∝ channels (up to {top}); pick a host to see its ranks"
    )
    fig = new_figure()
    _link_traces(fig, links, pos, hosts.height)
    _host_marks(fig, host_summary(e, hosts))
    host_menu(fig, e, nodes, hosts, title)
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        xaxis={"visible": False, "range": OVERVIEW_X},
        yaxis={"visible": False, "range": OVERVIEW_Y, "scaleanchor": "x"},
        legend={"title": "lines: transport between hosts<br>marks: hosts, by the transport inside"},
        hovermode="closest",
        **{**LAYOUT, "height": HEIGHT, "margin": {"l": 20, "r": 20, "t": 90, "b": 20}},
    )
    return fig
