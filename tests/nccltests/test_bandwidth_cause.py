"""nccl-tests bandwidth: the footer compared by diff, and the cause named by nccltests-low-busbw.

The samples/ pair is two real DGX Spark runs of one nccl-tests command (switch vs direct cable); see
samples/nccltests/README.md.
"""

from __future__ import annotations

from pathlib import Path

from ncclscope.diff import diff_sessions
from ncclscope.records import Finding
from ncclscope.session import analyze

NT = Path(__file__).resolve().parents[2] / "samples" / "nccltests"
SWITCH = NT / "dgxspark_roce_switch_ok_nccl2_28_9.log"
DIRECT = NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log"


def test_diff_shows_the_avg_bus_bandwidth_drop() -> None:
    d = diff_sessions(analyze([str(SWITCH)]), analyze([str(DIRECT)]), a_label="a", b_label="b")
    (x,) = [x for x in d.differences if x.key == "nccl-tests # Avg bus bandwidth"]
    assert x.a == "21.96 GB/s" and x.b is not None and x.b.startswith("2.83 GB/s (-87%)")
    assert x.evidence_a[0].text.startswith("# Avg bus bandwidth")
    assert not x.relevant  # the per-size table already carries the drop
    # without a per-size comparison (table rows cut by interleaved INFO lines), the footer is what shows it
    from ncclscope.diff.results import _compare_footer

    (y,) = _compare_footer(analyze([str(SWITCH)]), analyze([str(DIRECT)]), sizes=False)
    assert y.relevant and y.b is not None and y.b.startswith("2.83 GB/s")


def test_low_busbw_names_channels_and_a_setting_that_forced_them(tmp_path: Path) -> None:
    [f] = [f for f in analyze([str(DIRECT)]).findings if f.id == "nccltests-low-busbw"]
    assert "NCCL built 16 coll channel(s)" in f.why
    # Composed: the same real run with one `NCCL_TOPO_FILE set to …` line in NCCL 2.28's ENV format (as its own
    # `NCCL_SOCKET_IFNAME set to enp1s0f0np0`) added after it (no public forced-topology pair was found).
    lines = DIRECT.read_text().splitlines(keepends=True)
    at = max(i for i, ln in enumerate(lines) if "NCCL_SOCKET_IFNAME set to" in ln)
    head = lines[at].split(" NCCL INFO ")[0]
    lines.insert(at + 1, f"{head} NCCL INFO NCCL_TOPO_FILE set to /etc/nccl/topo.xml\n")
    forced = tmp_path / "forced.log"
    forced.write_text("".join(lines))
    [g] = [f for f in analyze([str(forced)]).findings if f.id == "nccltests-low-busbw"]
    assert "set in this run: NCCL_TOPO_FILE=/etc/nccl/topo.xml (replaces the detected topology)" in g.why
    assert any("NCCL_TOPO_FILE" in e.text for e in g.evidence)


# NCCL 2.28.9's GRAPH line (graph/search.cc), in the form of the real line in samples/gpu/clean (same release).
# The DGX Spark runs were logged with NCCL_DEBUG_SUBSYS=INIT,NET, so they print no GRAPH line: the lines below are
# composed into them (no public nccl-tests run with GRAPH lines and a forced topology was found). 24 GB/s per
# channel is the inter-node figure NCCL's search picks for a 25 GB/s (200 Gb/s) NIC.
def _with_graph(src: Path, tmp_path: Path, pattern: str, setting: str | None = None) -> Path:
    lines = src.read_text().splitlines(keepends=True)
    at = max(i for i, ln in enumerate(lines) if " nNodes 2 " in ln)
    head = lines[at].split(" NCCL INFO ")[0]
    extra = [f"{head} NCCL INFO {pattern}\n"]
    if setting:
        extra.insert(0, f"{head} NCCL INFO {setting}\n")
    out = tmp_path / f"{src.stem}_graph.log"
    out.write_text("".join([*lines[:at], *extra, *lines[at:]]))
    return out


def _low(path: Path) -> list[Finding]:
    return [f for f in analyze([str(path)]).findings if f.id == "nccltests-low-busbw"]


def test_a_run_far_below_nccls_own_ring_plan_names_the_plan(tmp_path: Path) -> None:
    p = _with_graph(
        DIRECT,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 2, bw 24.000000/24.000000, type SYS/PHB, sameChannels 1",
    )
    [f] = _low(p)
    assert f.metrics["plan_gbps"] == 48.0 and f.metrics["plan_channels"] == 2
    assert "2 ring channel(s) × 24 GB/s over the network" in f.why and "6% of it reached" in f.why
    assert any(e.text.endswith("sameChannels 1") for e in f.evidence)


def test_a_plan_forced_below_the_nic_names_the_setting(tmp_path: Path) -> None:
    """The degraded run with a topology file that declares a slow NIC: NCCL plans 1 channel × 3 GB/s."""
    p = _with_graph(
        DIRECT,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 1, bw 3.000000/3.000000, type SYS/PHB, sameChannels 1",
        "NCCL_TOPO_FILE set by environment to /etc/nccl/topo.xml",
    )
    [f] = _low(p)
    assert f.title.startswith("nccl-tests bandwidth is capped by NCCL_TOPO_FILE")
    assert f.metrics["forced_by"] == ["NCCL_TOPO_FILE"]
    assert "12% of what one NET/IB link carries" in f.why
    # the same plan without the setting: slow links, no setting to blame
    q = _with_graph(
        DIRECT,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 1, bw 3.000000/3.000000, type SYS/PHB, sameChannels 1",
    )
    [g] = _low(q)
    assert g.metrics["forced_by"] == [] and "capped by" not in g.title


def test_a_run_that_reaches_its_plan_gets_no_finding(tmp_path: Path) -> None:
    p = _with_graph(
        SWITCH,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 1, bw 24.000000/24.000000, type SYS/PHB, sameChannels 1",
    )
    assert _low(p) == []
    # and the Pattern line is what the plan reads: 2 × 24 would put 21.99 GB/s under half of it
    q = _with_graph(
        SWITCH,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 2, bw 24.000000/24.000000, type SYS/PHB, sameChannels 1",
    )
    [f] = _low(q)
    assert f.title == "nccl-tests busbw is far below NCCL's own plan for its links"


def test_the_footer_stands_in_for_rows_when_every_size_is_large(tmp_path: Path) -> None:
    """The degraded run (`-b 1G -e 1G`) with its table rows lost (as interleaved lines can cut them): the
    `# Avg bus bandwidth` footer is the measurement."""
    lines = DIRECT.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not (ln[:1] == " " and "float" in ln)]
    p = tmp_path / "footer_only.log"
    p.write_text("".join(kept))
    [f] = _low(p)
    assert f.metrics["measured_from"] == "footer" and f.metrics["busbw_gbps"] == 2.83174
    assert "footer's average bus bandwidth" in f.why


def test_gdr_off_on_gb10_is_info_not_a_warning(tmp_path: Path) -> None:
    """DGX Spark (NVIDIA GB10, unified memory) cannot have GPUDirect RDMA: the real run's `GPU Direct RDMA Disabled`
    lines are info there. The same lines under another GPU model's name stay a warning."""
    [f] = [f for f in analyze([str(SWITCH)]).findings if f.id == "gdr-disabled"]
    assert f.severity == "info" and "GB10" in f.why
    other = tmp_path / "h100.log"
    other.write_text(SWITCH.read_text().replace("NVIDIA GB10", "NVIDIA H100 80GB HBM3"))
    [g] = [f for f in analyze([str(other)]).findings if f.id == "gdr-disabled"]
    assert g.severity == "warning"


def test_diff_shows_the_ring_plan_change(tmp_path: Path) -> None:
    good = _with_graph(
        SWITCH,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 2, bw 24.000000/24.000000, type SYS/PHB, sameChannels 1",
    )
    bad = _with_graph(
        DIRECT,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 1, bw 3.000000/3.000000, type SYS/PHB, sameChannels 1",
        "NCCL_TOPO_FILE set by environment to /etc/nccl/topo.xml",
    )
    d = diff_sessions(analyze([str(good)]), analyze([str(bad)]), a_label="a", b_label="b")
    (x,) = [x for x in d.differences if x.key == "NCCL ring plan (busbw)"]
    assert x.a is not None and x.a.startswith("48 GB/s (2 ch × 24 GB/s")
    assert x.b is not None and x.b.startswith("3 GB/s (1 ch × 3 GB/s")


def test_on_two_nodes_the_plan_takes_the_lower_of_the_intra_and_inter_figures(tmp_path: Path) -> None:
    """An intra figure above the NIC's (48 vs 24 GB/s) would make the plan 48 GB/s and put the healthy 21.99 GB/s
    run under half of it; the network's 24 GB/s sets a 2-node ring."""
    p = _with_graph(
        SWITCH,
        tmp_path,
        "Pattern 4, crossNic 0, nChannels 1, bw 48.000000/24.000000, type SYS/PHB, sameChannels 1",
    )
    assert _low(p) == []
