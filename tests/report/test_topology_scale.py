"""Topology figure at scale: above RANK_VIEW_MAX_RANKS ranks, one mark per host, links between hosts by
transport and channel count, and a host menu to drill into a host. Built from a real 16-rank run's
connection lines repeated over 128 hosts (1,024 ranks; see topology_scale.py), and over the 64 real
hosts of a 512-rank MLPerf run when ../shared is present. The browser test leaves screenshots in
tests/artifacts/."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest

from ncclscope.report import figures, views, write_report
from ncclscope.report.figures_topology import RANK_VIEW_MAX_RANKS, topology_figure, transport_color
from ncclscope.report.figures_topology_detail import DETAIL_X, HEIGHT
from ncclscope.session import Session, analyze

from .cdp import Browser, Page, find_chromium
from .topology_scale import scaled_session, source_session, synthetic_hosts

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def _meta(t: Any) -> list[str]:
    return list(t.meta or [])


def _hosts_traces(fig: go.Figure) -> list[Any]:
    return [t for t in fig.data if _meta(t)[:1] == ["hosts"]]


def _link_traces(fig: go.Figure) -> list[Any]:
    return [t for t in fig.data if _meta(t) and str(_meta(t)[0]).startswith("links ")]


@pytest.fixture(scope="module")
def big() -> tuple[Session, go.Figure]:
    s = scaled_session(synthetic_hosts(128))
    return s, figures.topology(s)


def test_small_jobs_keep_the_rank_figure() -> None:
    for s in (source_session(), scaled_session(synthetic_hosts(8))):  # 16 and 64 ranks
        fig = figures.topology(s)
        assert not _hosts_traces(fig)
        ranks = next(t for t in fig.data if t.name == "ranks")
        assert len(ranks.x) == s.ranks.height <= RANK_VIEW_MAX_RANKS
    s = scaled_session(synthetic_hosts(10))  # 80 ranks
    edges = views.topology_edges(s.logs)
    nodes = views.topology_nodes(s.ranks, edges)
    assert _hosts_traces(topology_figure(edges, nodes))
    assert not _hosts_traces(topology_figure(edges, nodes, max_ranks=100))


def test_1024_ranks_one_mark_per_host(big: tuple[Session, go.Figure]) -> None:
    s, fig = big
    assert s.ranks.height == 1024
    marks = _hosts_traces(fig)
    assert sum(len(t.x) for t in marks) == 128
    assert sorted(h for t in marks for h in t.customdata) == synthetic_hosts(128)
    # Every host's GPUs talk over P2P inside it (the source run's IPC lines): one legend entry says so.
    assert [t.name for t in marks] == ["host, P2P inside"]
    assert "1024 ranks on 128 hosts" in fig.layout.title.text


def test_links_between_hosts_by_transport_and_channels(big: tuple[Session, go.Figure]) -> None:
    _, fig = big
    links = _link_traces(fig)
    assert {t.name for t in links} == {"NET/IBext GDR"}
    assert all(t.line.color == transport_color("NET/IB GDR") for t in links)
    # NCCL's rings cross from each host to the next: 128 host pairs, each with its channel count.
    hovers = [h for t in links for h in t.hovertext if h]
    assert len(hovers) == 128
    pairs = {h.split("<br>")[0] for h in hovers}
    assert (
        "node-000 ↔ node-001" in pairs
        and "node-000 ↔ node-127" in pairs
        and "node-000 ↔ node-002" not in pairs
    )
    src = views.topology_edges(source_session().logs)
    inter = src.filter(src["label"] == "NET/IBext GDR")
    assert all(f"{inter['channel'].n_unique()} channels" in h for h in hovers)
    # Wider lines for more channels.
    widths = sorted({t.line.width for t in links})
    assert widths == sorted(widths) and all(w > 0 for w in widths)


def test_drill_into_a_host(big: tuple[Session, go.Figure]) -> None:
    _, fig = big
    menu = fig.layout.updatemenus[0]
    buttons = list(menu.buttons)
    assert len(buttons) == 129 and buttons[0].label == "all hosts" and buttons[0].method == "relayout"
    b = next(b for b in buttons if b.label == "node-005 (ranks 40–47)")
    data, layout, slots = b.args
    assert layout["height"] == HEIGHT and layout["xaxis.range"][0] < DETAIL_X < layout["xaxis.range"][1]
    slot = {str(_meta(fig.data[i])[1]): k for k, i in enumerate(slots)}
    assert set(slot) == {"NET/IBext GDR", "P2P", "ranks", "other hosts"}
    assert data["text"][slot["ranks"]] == [str(r) for r in range(40, 48)]
    assert data["text"][slot["other hosts"]] == ["node-004", "node-006"]
    p2p = [h for h in data["hovertext"][slot["P2P"]] if h]
    assert p2p and all(int(h.split(" → ")[0].split()[1]) in range(40, 48) for h in p2p)
    net = [h for h in data["hovertext"][slot["NET/IBext GDR"]] if h]
    assert net and all("node-004" in h or "node-006" in h for h in net)
    # The drill-down traces start empty: the overview alone is drawn until a host is picked.
    assert all(len(fig.data[i].x) == 0 for i in slots)


def test_figure_is_deterministic_and_small_enough_to_embed(big: tuple[Session, go.Figure]) -> None:
    s, fig = big
    text = fig.to_json()
    assert len(text) < 3_000_000
    assert figures.topology(s).to_json() == text


def test_real_512_rank_run(shared_dir: Path) -> None:
    """The 64 hosts and 512 ranks of a real MLPerf run (its log has no topology lines at
    NCCL_DEBUG=WARN), wired with the 16-rank run's connection pattern."""
    log = shared_dir / "corpus" / "complete" / "mlperf41oracle_512node_lora.log"
    real = analyze([str(log)])
    hosts = real.ranks.sort("rank").unique("host", keep="first", maintain_order=True)["host"].to_list()
    assert real.ranks.height == 512 and len(hosts) == 64
    s = scaled_session(hosts, ranks=real.ranks)
    fig = figures.topology(s)
    marks = _hosts_traces(fig)
    assert sorted(h for t in marks for h in t.customdata) == sorted(hosts)
    assert len(fig.layout.updatemenus[0].buttons) == 65
    assert "512 ranks on 64 hosts" in fig.layout.title.text


# --- in a browser -----------------------------------------------------------------------------


def _shot(page: Page, path: Path) -> dict[str, Any]:
    r = page.evaluate(
        "(() => {const el = document.getElementById('fig-topology'); const r = el.getBoundingClientRect();"
        " return {x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height, scale: 1};})()"
    )
    shot = page.b.send("Page.captureScreenshot", {"format": "png", "clip": r}, session=page.session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return dict(r)


def _click(page: Page, selector_js: str) -> None:
    x, y = page.evaluate(
        f"(() => {{const r = ({selector_js}).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2];}})()"
    )
    for kind in ("mousePressed", "mouseReleased"):
        page.b.send(
            "Input.dispatchMouseEvent",
            {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            session=page.session,
        )
    page.b.pump(1.0)


@pytest.mark.browser
def test_1024_rank_report_in_chromium(tmp_path: Path) -> None:
    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    report = write_report(scaled_session(synthetic_hosts(128)), tmp_path / "report-1024.html")
    with Browser(binary) as b:
        page = b.open(report.resolve().as_uri())
        page.wait_for("document.body && document.body.getAttribute('data-rendered')", timeout=120)
        # The page at full height: every figure laid out once, then the window does not change again.
        height = int(page.evaluate("document.documentElement.scrollHeight"))
        page.b.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": False},
            session=page.session,
        )
        b.pump(1.0)
        gd = "document.getElementById('fig-topology')"
        box = _shot(page, ARTIFACTS / "topology_1024_ranks.png")
        assert box["height"] == HEIGHT
        assert page.evaluate(f"{gd}.querySelectorAll('.updatemenu-header').length") == 1
        # Open the host menu and pick node-005 the way a user does.
        _click(page, f"{gd}.querySelector('.updatemenu-header')")
        _click(
            page,
            f"Array.from({gd}.querySelectorAll('.updatemenu-item-text'))"
            ".find(e => e.textContent.startsWith('node-005 '))",
        )
        deadline = time.monotonic() + 20
        while (
            page.evaluate(f"{gd}._fullLayout.xaxis.range[0]") < DETAIL_X - 5 and time.monotonic() < deadline
        ):
            b.pump(0.25)
        x0, x1 = page.evaluate(f"{gd}._fullLayout.xaxis.range")
        assert x0 < DETAIL_X < x1
        assert page.evaluate(f"{gd}._fullLayout.title.text").startswith("Topology: node-005, ranks 40–47")
        # After the resize above, the figure keeps its height (Plotly's responsive mode forgets it).
        box = _shot(page, ARTIFACTS / "topology_1024_ranks_node-005.png")
        assert box["height"] == HEIGHT
        ranks = page.evaluate(f"Array.from({gd}.querySelectorAll('.textpoint')).map(e => e.textContent)")
        assert [str(r) for r in range(40, 48)] == [t for t in ranks if t.isdigit()]
        assert page.log().errors() == []
    assert json.loads(json.dumps(box))
