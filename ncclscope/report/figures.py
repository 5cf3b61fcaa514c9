"""Report stage, figures: pure `…_figure(frame) -> go.Figure` builders over the frames of `views`.

Notebooks and the HTML report share them. An empty frame gives a figure that says why it is
empty (no trace given, no ring lines in the logs) instead of an error or a blank plot. No figure
uses WebGL, so the HTML report renders in a browser without a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go
import polars as pl

if TYPE_CHECKING:
    from ncclscope.session import Session

from ncclscope.report.figure_style import (  # noqa: F401 - re-exported for notebooks
    HOST_COLORS,
    LAYOUT,
    MAX_COLLS,
    MAX_TIMELINE,
    OP_COLORS,
    TRANSPORT_COLORS,
    empty_figure,
    escape_text,
    new_figure,
)

MAX_HANG_BARS = 24  # states shown in the hang figure (culprits and distinct states come first)

# --- traces ----------------------------------------------------------------------------------------


def arrivals_figure(arrivals: pl.DataFrame, *, note: str | None = None) -> go.Figure:
    """Heatmap ranks × collectives: how long after the first rank each rank arrived (ms)."""
    title = "Collective arrivals: ms after the first rank (ranks × collectives)"
    if arrivals.is_empty():
        return empty_figure(title, note or "no trace given (pass --trace with torch.profiler traces)")
    n = arrivals["coll"].n_unique()
    df = arrivals.filter(pl.col("coll") < MAX_COLLS)
    ranks = sorted(df["rank"].drop_nulls().unique().to_list())
    colls = sorted(df["coll"].unique().to_list())
    ri = {r: i for i, r in enumerate(ranks)}
    ci = {c: i for i, c in enumerate(colls)}
    z: list[list[float | None]] = [[None] * len(colls) for _ in ranks]
    info: list[list[str]] = [[""] * len(colls) for _ in ranks]
    for r in df.select("rank", "coll", "skew_us", "op", "group").iter_rows(named=True):
        if r["rank"] is None:
            continue
        i, j = ri[r["rank"]], ci[r["coll"]]
        z[i][j] = None if r["skew_us"] is None else round(r["skew_us"] / 1000.0, 6)
        info[i][j] = escape_text(f"{r['op']} · group {r['group']}")
    fig = new_figure(
        go.Heatmap(
            z=z,
            x=colls,
            y=[str(r) for r in ranks],
            customdata=info,
            colorscale="Reds",
            zmin=0,
            colorbar={"title": "ms late"},
            hovertemplate="rank %{y} · collective %{x}<br>%{customdata}<br>%{z:.3f} ms after the first<extra></extra>",
        )
    )
    shown = f" (first {MAX_COLLS} of {n})" if n > MAX_COLLS else ""
    fig.update_layout(
        title=title + shown,
        xaxis_title="collective (in order of first arrival)",
        yaxis={"title": "rank", "type": "category", "autorange": "reversed"},
        **LAYOUT,
    )
    return fig


def timeline_figure(timeline: pl.DataFrame, *, note: str | None = None) -> go.Figure:
    """Per-rank timeline of collectives (ms after the first), one colour per op."""
    title = "Per-rank timeline of collectives"
    if timeline.is_empty():
        return empty_figure(title, note or "no trace given (pass --trace with torch.profiler traces)")
    df = timeline.sort("start_ms").head(MAX_TIMELINE)
    fig = new_figure()
    for k, op in enumerate(sorted(df["op"].fill_null("?").unique().to_list())):
        sub = df.filter(pl.col("op").fill_null("?") == op)
        xs: list[float | None] = []
        ys: list[str | None] = []
        text: list[str] = []
        for r in sub.iter_rows(named=True):
            hover = escape_text(
                f"rank {r['rank']} · {op} · {r['group']}<br>{(r['dur_us'] or 0):.1f} µs, "
                f"{r['msg_bytes']} bytes"
            )
            xs += [r["start_ms"], r["end_ms"], None]
            ys += [str(r["rank"]), str(r["rank"]), None]
            text += [hover, hover, ""]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=op,
                hovertext=text,
                hoverinfo="text",
                line={"width": 10, "color": OP_COLORS[k % len(OP_COLORS)]},
            )
        )
    shown = f" (first {MAX_TIMELINE} of {timeline.height})" if timeline.height > MAX_TIMELINE else ""
    fig.update_layout(
        title=title + shown,
        xaxis_title="ms after the first collective",
        # Rank 0 on top, as in the arrival heatmap above it.
        yaxis={"title": "rank", "type": "category", "categoryorder": "category descending"},
        **LAYOUT,
    )
    return fig


# --- hang ---------------------------------------------------------------------------------------------


def hang_figure(hang: pl.DataFrame, *, note: str | None = None) -> go.Figure:
    """How far each rank got, one bar per state (ranks in the same state folded, culprits first):
    NCCL's last opCount (labelled in hex, as the log prints it) above, PyTorch's enqueued/completed
    SeqNum below: two counters, two axes."""
    from plotly.subplots import make_subplots

    from ncclscope.report.fold import fold_hang, op_count
    from ncclscope.report.views_hang import ranks

    title = "Hang view: last collective reached per rank"
    if hang.is_empty():
        return empty_figure(
            title,
            note
            or "no COLL lines (NCCL_DEBUG_SUBSYS=COLL) or ProcessGroupNCCL "
            "watchdog lines: nothing says how far each rank got",
        )
    rows = hang.to_dicts()
    by_rank = {r["rank"]: r for r in rows}
    folded = fold_hang(ranks(hang))[:MAX_HANG_BARS]
    x = [escape_text(f"{h.who}{' · ' + h.flag if h.flag else ''}") for h in folded]
    first = [by_rank.get(h.ranks[0] if h.ranks else None, {}) for h in folded]
    # Ranks behind get a thick red outline (their series keeps its colour, so the legend stays true).
    outline = {"color": ["#d62728" if h.behind else "rgba(0,0,0,0)" for h in folded], "width": 4}
    has_op = any(r.get("last_op_count") is not None for r in first)
    seq_cols = [
        (c, n)
        for c, n in (
            ("timed_out_seq", "timed-out SeqNum"),
            ("last_enqueued", "enqueued SeqNum"),
            ("last_completed", "completed SeqNum"),
        )
        if any(r.get(c) is not None for r in first)
    ]
    panels = [p for p, on in (("op", has_op), ("seq", bool(seq_cols))) if on]
    if not panels:
        return empty_figure(title, "no rank has an opCount or a work SeqNum to compare")
    titles = {"op": "NCCL opCount (labels in hex, as in the log)", "seq": "PyTorch work SeqNum (decimal)"}
    fig = make_subplots(
        rows=len(panels),
        cols=1,
        shared_xaxes=True,
        subplot_titles=[titles[p] for p in panels],
        figure=new_figure(),
    )
    if has_op:
        ops = [r.get("last_op_count") for r in first]
        fig.add_trace(
            go.Bar(
                x=x,
                y=ops,
                text=[op_count(v) for v in ops],
                name="last NCCL opCount",
                marker={"color": "#4c78a8", "line": outline},
                hovertemplate="%{x}: opCount %{text}<extra></extra>",
            ),
            row=panels.index("op") + 1,
            col=1,
        )
    for k, (col, name) in enumerate(seq_cols):
        fig.add_trace(
            go.Bar(
                x=x,
                y=[r.get(col) for r in first],
                name=name,
                marker={"color": ["#f58518", "#72b7b2", "#54a24b"][k], "line": outline},
                hovertemplate="%{x}: " + name + " %{y}<extra></extra>",
            ),
            row=panels.index("seq") + 1,
            col=1,
        )
    lag = [h.who for h in folded if h.behind]
    sub = f" — behind: ranks {', '.join(lag[:4])}" if lag else ""
    fig.update_layout(
        **{**LAYOUT, "height": 220 + 160 * len(panels)}, title=escape_text(title + sub), barmode="group"
    )
    fig.update_xaxes(type="category")
    return fig


# --- a session's figures --------------------------------------------------------------------------


def _trace_note(s: Session) -> str | None:
    if s.traces is None:
        return "no trace given (pass --trace DIR with torch.profiler traces)"
    return "the traces hold no NCCL or gloo collective"


def topology(s: Session) -> go.Figure:
    from ncclscope.report import views
    from ncclscope.report.figures_topology import topology_figure

    edges = views.topology_edges(s.logs)
    return topology_figure(edges, views.topology_nodes(s.ranks, edges))


def arrivals(s: Session) -> go.Figure:
    from ncclscope.report import views

    return arrivals_figure(views.arrivals(s), note=_trace_note(s))


def timeline(s: Session) -> go.Figure:
    from ncclscope.report import views

    return timeline_figure(views.timeline(s), note=_trace_note(s))


def hang(s: Session) -> go.Figure:
    from ncclscope.report import views_hang

    return hang_figure(views_hang.hang(s))


def session_figures(s: Session) -> dict[str, go.Figure]:
    """The HTML report's figures, keyed by their fixed element ids."""
    return {
        "fig-hang": hang(s),
        "fig-topology": topology(s),
        "fig-arrivals": arrivals(s),
        "fig-timeline": timeline(s),
    }
