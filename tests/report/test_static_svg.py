"""Static SVG drawings of the figures (what GitHub and nbconvert show of a notebook): well-formed, the data
drawn (bars, heatmap pixels, edges, the culprit's label), log text kept as text, same bytes each time;
and the notebook figure puts the SVG beside Plotly's mimetype only inside a Jupyter kernel's display."""

from __future__ import annotations

import base64
import re
import struct
from xml.etree import ElementTree

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from ncclscope.notebook import Analysis
from ncclscope.report import figures
from ncclscope.report.notebook_figure import SVG, NotebookFigure, notebook_figure
from ncclscope.report.static_svg import to_svg

from .conftest import XSS, make_session

NS = "{http://www.w3.org/2000/svg}"


def _svg(fig: go.Figure) -> tuple[str, ElementTree.Element]:
    text = to_svg(fig.to_dict())
    return text, ElementTree.fromstring(text)


def _texts(root: ElementTree.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def test_hang_bars_are_drawn_with_the_culprit_labelled_and_outlined() -> None:
    fig = figures.hang(make_session())
    text, root = _svg(fig)
    bars = [r for r in root.iter(f"{NS}rect") if r.get("class") == "bar"]
    drawn = sum(len([y for y in t.y if y is not None]) for t in fig.data)
    assert len(bars) == drawn > 0
    labels = " ".join(_texts(root))
    culprit = [t for t in fig.data[0].x if "culprit" in t or "behind" in t]
    assert culprit and any(c.split(" ·")[0] in labels for c in culprit)
    assert 'stroke="#d62728"' in text  # the ranks behind keep their red outline
    if any(t.name == "last NCCL opCount" for t in fig.data):
        assert re.search(r">0x[0-9a-f]+<", text)  # opCount labelled in hex, as the log prints it


def test_heatmap_is_one_png_with_a_pixel_per_cell() -> None:
    s = make_session()
    fig = figures.arrivals(s)
    _, root = _svg(fig)
    (img,) = list(root.iter(f"{NS}image"))
    png = base64.b64decode(img.get("href", "").split(",", 1)[1])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", png[16:24])
    z = fig.data[0].z
    assert (width, height) == (len(z[0]), len(z))


def test_topology_edges_and_ranks_are_drawn() -> None:
    fig = figures.topology(make_session())
    _, root = _svg(fig)
    shown = [t for t in fig.data if t.visible is not False]
    edges = [t for t in shown if t.mode and "lines" in t.mode]
    assert len(list(root.iter(f"{NS}path"))) == len(edges)
    assert {str(r) for r in range(8)} <= set(_texts(root))  # every rank's label on its circle
    assert "gpu-node-a" in _texts(root) and "gpu-node-b" in _texts(root)  # host names, without <b>


def test_empty_figure_says_why(empty_session) -> None:  # type: ignore[no-untyped-def]
    fig = figures.arrivals(empty_session)
    _, root = _svg(fig)
    assert any("no trace given" in t for t in _texts(root))


def test_log_text_stays_text() -> None:
    payload = XSS + "\u202e\u200f\x1b[31m & <br>second line"
    fig = go.Figure(go.Bar(x=[payload, "b"], y=[1, 2], text=[payload, "x"]), layout={"title": payload})
    fig.add_annotation(text=payload, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    text, root = _svg(fig)
    assert root.tag == f"{NS}svg"
    assert not any(el.tag.endswith(("script", "img", "foreignObject")) for el in root.iter())
    assert not re.search("[\u202e\u200f\x1b]", text)
    assert "onerror" not in {k for el in root.iter() for k in el.attrib}
    assert any("window.__xss=1" in t for t in _texts(root))  # shown as text, not run


def test_same_figure_same_bytes() -> None:
    s = make_session()
    for build in (figures.hang, figures.topology, figures.arrivals, figures.timeline):
        assert to_svg(build(s).to_dict()) == to_svg(build(s).to_dict())


@pytest.fixture
def renderer():  # type: ignore[no-untyped-def]
    before = pio.renderers.default

    def use(name: str) -> None:
        pio.renderers.default = name

    yield use
    pio.renderers.default = before


def test_notebook_figure_adds_the_svg_beside_plotlys_mimetype(renderer) -> None:  # type: ignore[no-untyped-def]
    renderer("plotly_mimetype")  # what Plotly picks inside a Jupyter kernel
    fig = Analysis(make_session()).fig.hang()
    assert isinstance(fig, NotebookFigure)
    bundle = fig._repr_mimebundle_()
    assert "application/vnd.plotly.v1+json" in bundle and bundle[SVG].startswith("<svg")
    assert bundle[SVG] == to_svg(fig.to_dict())


def test_notebook_figure_leaves_other_renderers_alone(renderer) -> None:  # type: ignore[no-untyped-def]
    fig = notebook_figure(figures.hang(make_session()))
    renderer("browser")  # no mimetype bundle at all (a terminal IPython opens a browser)
    assert SVG not in fig._repr_mimebundle_()
    assert fig.to_dict() == figures.hang(make_session()).to_dict()
