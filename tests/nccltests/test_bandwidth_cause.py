"""nccl-tests bandwidth: the footer compared by diff, and the cause named by nccltests-low-busbw.

The samples/ pair is two real DGX Spark runs of one nccl-tests command (switch vs direct cable); see
samples/nccltests/README.md.
"""

from __future__ import annotations

from pathlib import Path

from ncclscope.diff import diff_sessions
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
