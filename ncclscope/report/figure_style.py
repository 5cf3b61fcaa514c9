"""Report stage, figure style: colours, layout, the Plotly template and text escaping every figure shares.

Shared by `figures` and the topology figures (`figures_topology*`), which import it and not each other.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go

TRANSPORT_COLORS = {
    "P2P": "#2ca02c",
    "SHM": "#ff7f0e",
    "NET/IB GDR": "#1f77b4",
    "NET/IB": "#17becf",
    "NET/Socket": "#d62728",
    "COLLNET": "#9467bd",
    "ring order (no connection line)": "#7f7f7f",
    "tree (child → parent)": "#bcbd22",
}
HOST_COLORS = [
    "#4c78a8",
    "#f58518",
    "#54a24b",
    "#b279a2",
    "#e45756",
    "#72b7b2",
    "#eeca3b",
    "#9d755d",
    "#ff9da6",
    "#bab0ac",
]
OP_COLORS = ["#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d"]
MAX_TIMELINE = 20_000
MAX_COLLS = 2_000
LAYOUT = {"margin": {"l": 50, "r": 20, "t": 60, "b": 40}, "height": 480}
_AXIS = {"gridcolor": "#ebebeb", "linecolor": "#cccccc", "zerolinecolor": "#dddddd", "automargin": True}


@lru_cache(maxsize=1)
def _template() -> go.layout.Template:
    # A small white template: Plotly's named ones weigh ~10 kB per figure and take 0.25 s to apply.
    return go.layout.Template(
        layout={
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
            "font": {"family": "Helvetica, Arial, sans-serif", "size": 12},
            "xaxis": _AXIS,
            "yaxis": _AXIS,
            "hoverlabel": {"align": "left"},
            "colorway": OP_COLORS,
        }
    )


def new_figure(*data: Any) -> go.Figure:
    """A figure on the report's template (never Plotly's global default)."""
    return go.Figure(data=list(data), layout=go.Layout(template=_template()))


def empty_figure(title: str, message: str) -> go.Figure:
    """A blank figure that says, in its middle, why there is nothing to plot."""
    fig = new_figure()
    fig.add_annotation(
        text=message,
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
        showarrow=False,
        font={"size": 15, "color": "#666"},
    )
    fig.update_layout(
        title=title, xaxis={"visible": False}, yaxis={"visible": False}, **{**LAYOUT, "height": 260}
    )
    return fig


def escape_text(text: str) -> str:
    # Plotly renders a subset of HTML in annotation and hover text; log-derived text stays text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def transport_color(label: str) -> str:
    """A transport's colour; net plugins' IB flavours (IBext, IBext_v8, …) take plain IB's."""
    if label in TRANSPORT_COLORS:
        return TRANSPORT_COLORS[label]
    plain = re.sub(r"^NET/IB\w*", "NET/IB", label)
    if plain in TRANSPORT_COLORS:
        return TRANSPORT_COLORS[plain]
    return _OTHER_NET if label.startswith("NET/") else _OTHER


_OTHER_NET = "#e377c2"  # a net plugin's own transport (AWS Libfabric, …)
_OTHER = "#8c564b"
