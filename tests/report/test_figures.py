"""Figure builders and the views they draw: topology edges, arrivals, timeline, hang; empty frames."""

from __future__ import annotations

import polars as pl

from ncclscope.report import figures, views, views_hang
from ncclscope.report.figures_topology import topology_figure

from .conftest import make_session


def test_topology_edges_carry_transport_and_close_rings() -> None:
    edges = views.topology_edges(make_session().logs)
    conn = edges.filter(pl.col("kind") == "connection")
    assert conn.height == 16  # 8 ranks × 2 channels
    assert set(conn["label"]) == {"P2P", "NET/IB GDR"}
    assert conn.filter((pl.col("src_rank") == 3) & (pl.col("channel") == 0))["label"].to_list() == [
        "NET/IB GDR"
    ]
    # Ring orders add nothing once every hop has its connection line; trees are their own kind.
    assert edges.filter(pl.col("kind") == "ring").is_empty()
    assert edges.filter(pl.col("kind") == "tree").height == 7


def test_ring_order_without_connection_lines_is_drawn_grey() -> None:
    s = make_session()
    logs = type(s.logs)(rings=s.logs.rings)
    ring = views.topology_edges(logs).filter(pl.col("kind") == "ring")
    assert ring.height == 16 and set(ring["label"]) == {"ring order (no connection line)"}
    assert (7, 0) in set(zip(ring["src_rank"], ring["dst_rank"], strict=True))  # the ring closes


def test_topology_figure_groups_ranks_by_host_and_offers_channels() -> None:
    fig = figures.topology(make_session())
    names = {t.name for t in fig.data}
    assert {"P2P", "NET/IB GDR", "tree (child → parent)", "ranks"} <= names
    ranks = next(t for t in fig.data if t.name == "ranks")
    assert list(ranks.text) == [str(r) for r in range(8)]  # host a's ranks, then host b's
    assert [a.text for a in fig.layout.annotations] == ["<b>gpu-node-a</b>", "<b>gpu-node-b</b>"]
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["all channels", "channel 0", "channel 1"]


def test_arrivals_and_timeline_from_traces() -> None:
    s = make_session()
    a = views.arrivals(s)
    assert a.height == 48 and a["coll"].n_unique() == 6
    late = a.sort("skew_us", descending=True).row(0, named=True)
    assert (late["rank"], late["coll"], late["skew_us"]) == (5, 3, 900.0)
    t = views.timeline(s)
    assert t.height == 48 and t["start_ms"].min() == 0.0
    heat = figures.arrivals(s).data[0]
    assert heat.type == "heatmap" and len(heat.z) == 8 and len(heat.z[0]) == 6
    assert heat.z[5][3] == 0.9  # ms


def test_hang_view_marks_the_rank_behind() -> None:
    h = views_hang.hang(make_session())
    assert h.height == 8
    assert h.filter(pl.col("behind"))["rank"].to_list() == [5]
    row = h.filter(pl.col("rank") == 5).row(0, named=True)
    assert (row["last_op_count"], row["last_completed"], row["host"]) == (41, 41, "gpu-node-b")
    fig = figures.hang(make_session())
    assert "behind: ranks 5" in fig.layout.title.text


def test_empty_frames_say_why(empty_session) -> None:  # type: ignore[no-untyped-def]
    for build, phrase in [
        (figures.topology, "no ring"),
        (figures.arrivals, "no trace given"),
        (figures.timeline, "no trace given"),
        (figures.hang, "nothing says how far"),
    ]:
        fig = build(empty_session)
        assert phrase in fig.layout.annotations[0].text
    assert "no ring" in topology_figure(pl.DataFrame(), pl.DataFrame()).layout.annotations[0].text


def test_log_text_in_figures_is_not_markup() -> None:
    s = make_session()
    ranks = s.ranks.with_columns(host=pl.lit("<b onmouseover=x>h</b>"))
    fig = figures.topology(type(s)(logs=s.logs, ranks=ranks, comms=s.comms, findings=()))
    assert all("<b onmouseover" not in a.text for a in fig.layout.annotations)
    assert all("<b onmouseover" not in h for t in fig.data for h in (t.hovertext or ()))


def test_outliers_minority_values_and_ties() -> None:
    ranks = pl.DataFrame(
        {
            "nccl_version": ["2.19.3"] * 3 + ["2.14.3"],
            "address": ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.9.4"],
            "iface": ["eth0", "eth0", "ib0", "ib0"],
            "gdr": [True] * 4,
        }
    )
    odd = views.outliers(ranks)
    assert odd == {"nccl_version": {"2.14.3"}, "address": {"10.0.9.4"}, "iface": {"eth0", "ib0"}}
