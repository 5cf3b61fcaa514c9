"""Report stage, figure sections of the HTML page: the topology, and the traces' arrivals and timeline.

Layout only: the figures are built with the page (`figures.session_figures`) and handed to every HTML
layout as panels by element id; an empty figure is one muted line saying why.
"""

from __future__ import annotations

from ncclscope.report.section import Document, Section


def topology(_doc: Document, figures: dict[str, str]) -> str:
    return figures.get("fig-topology", "")


def traces(_doc: Document, figures: dict[str, str]) -> str:
    return figures.get("fig-arrivals", "") + figures.get("fig-timeline", "")


TOPOLOGY = Section(
    "topology",
    None,
    "rings, trees and connections per channel",
    title="Topology",
    menu="Topology",
    html=topology,
)
TRACES = Section(
    "traces", None, "collective arrivals and per-rank timeline", title="Traces", menu="Traces", html=traces
)
