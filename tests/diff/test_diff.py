"""`ncclscope diff` on pairs of real runs: each pair is named, with the lines behind each difference.

The ../shared pairs are genuinely different MLPerf runs (skipped without ../shared); the samples/ pair
(two DGX Spark runs of one nccl-tests command, before and after moving a QSFP cable) runs everywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.diff import Difference, RunDiff, diff_sessions
from ncclscope.session import analyze

NT = Path(__file__).resolve().parents[2] / "samples" / "nccltests"
SWITCH = NT / "dgxspark_roce_switch_ok_nccl2_28_9.log"
DIRECT = NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log"


def _diff(a: Path, b: Path) -> RunDiff:
    return diff_sessions(analyze([str(a)]), analyze([str(b)]), a_label=a.name, b_label=b.name)


def _one(d: RunDiff, category: str, key: str) -> Difference:
    (x,) = [x for x in d.differences if x.category == category and x.key == key]
    return x


def _lines(x: Difference) -> tuple[list[int], list[int]]:
    return [e.line for e in x.evidence_a], [e.line for e in x.evidence_b]


def test_samples_cable_moved() -> None:
    """The same all_gather_perf on the same two machines: through the QSFP switch (A), then over the
    direct cable (B): other port, interface, subnet and HCAs, and busbw from 21.99 to 2.83 GB/s."""
    d = _diff(SWITCH, DIRECT)
    env = _one(d, "environment", "NCCL_SOCKET_IFNAME")
    assert (env.a, env.b, env.scope, env.change) == ("enp1s0f1np1", "enp1s0f0np0", "all ranks", "changed")
    assert _lines(env) == ([9], [9])
    sub = _one(d, "network", "subnet")
    assert (sub.a, sub.b, sub.scope) == ("192.168.100.0/24", "10.0.1.0/24", "all nodes")
    assert sub.evidence_a[0].text.endswith("OOB enp1s0f1np1:192.168.100.15<0>")
    hca = _one(d, "network", "IB devices")
    assert (
        hca.a == "roceP2p1s0f1:1/RoCE | rocep1s0f1:1/RoCE"
        and hca.b == "roceP2p1s0f0:1/RoCE | rocep1s0f0:1/RoCE"
    )
    res = _one(d, "results", "nccl-tests all_gather busbw (>= 64 MiB)")
    assert (res.a, res.b, res.relevant) == ("21.99 GB/s", "2.83 GB/s", True)
    assert res.details[0] == ("1,073,741,824 B", "21.99 GB/s", "2.83 GB/s") and len(res.details) == 3
    assert _lines(res) == ([101], [101])
    # the cause (the setting that picked the other port) before its network consequences, results last
    order = [(x.category, x.key) for x in d.relevant]
    assert order[0] == ("environment", "NCCL_SOCKET_IFNAME") and order[-1][0] == "results"
    assert not [x for x in d.differences if x.category == "versions"]  # same NCCL, driver and nccl-tests


@pytest.mark.parametrize(
    "path", [SWITCH, DIRECT, NT / "eks_efa_t4_2node_ofi_nccl2_12_7.log"], ids=lambda p: p.name
)
def test_same_run_twice_reports_nothing(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.log"
    copy.write_bytes(path.read_bytes())
    d = _diff(path, copy)
    assert d.relevant == () and d.differences == ()


def test_rewritten_copy_reports_exactly_the_edits(tmp_path: Path) -> None:
    """A real run and a copy with three lines edited: the NCCL version, a new NCCL_* setting and fewer
    channels. Exactly those three facts differ (plus nothing else), each citing the edited lines."""
    text = DIRECT.read_text()
    edited = (
        text.replace("NCCL version 2.28.9+cuda13.0", "NCCL version 2.29.3+cuda13.0")
        .replace(
            "NCCL_SOCKET_IFNAME set to enp1s0f0np0",
            "NCCL_SOCKET_IFNAME set to enp1s0f0np0\nspark-fb97:23940:23940 [0] NCCL INFO "
            "NCCL_IB_QPS_PER_CONNECTION set by environment to 4.",
            1,
        )
        .replace("16 coll channels, 16 collnet channels", "8 coll channels, 16 collnet channels")
    )
    b = tmp_path / "edited.log"
    b.write_text(edited)
    d = _diff(DIRECT, b)
    got = {(x.category, x.key, x.scope, x.a, x.b) for x in d.differences}
    assert got == {
        ("versions", "NCCL", "all ranks", "2.28.9", "2.29.3"),
        ("environment", "NCCL_IB_QPS_PER_CONNECTION", "rank 0", None, "4"),
        ("topology", "coll channels", "all ranks", "16", "8"),
    }
    assert d.differences[0].key == "NCCL"  # a library version is the likeliest cause
    qps = _one(d, "environment", "NCCL_IB_QPS_PER_CONNECTION")
    assert qps.change == "set" and qps.evidence_b[0].line == 10
    assert (
        _one(d, "topology", "coll channels")
        .evidence_b[0]
        .text.endswith(
            "8 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer"
        )
    )


# --- pairs of real complete runs (../shared/corpus/complete) --------------------------------------


def _corpus(shared_dir: Path, a: str, b: str) -> RunDiff:
    c = shared_dir / "corpus" / "complete"
    return _diff(c / f"{a}.log", c / f"{b}.log")


def test_changed_nccl_version(shared_dir: Path) -> None:
    """Dell XE9680 8 × H200, single node over Socket: BERT on NCCL 2.18.5, RetinaNet on 2.22.3."""
    d = _corpus(shared_dir, "mlperf50dell_1x8_h200_bert_socket", "mlperf50dell_1x8_h200_retinanet_socket")
    v = _one(d, "versions", "NCCL")
    assert (v.a, v.b, v.scope) == ("2.18.5", "2.22.3", "job")
    assert v.evidence_a[0].line == 512 and v.evidence_a[0].text == "0: NCCL version 2.18.5+cuda12.2"
    assert v.evidence_b[0].line == 75 and v.evidence_b[0].text.endswith(
        "NCCL INFO NCCL version 2.22.3+cuda12.6"
    )
    assert d.relevant[0] is v
    # 2.22 prints CollNet channels and nNodes, 2.18 does not: listed, not relevant
    assert not _one(d, "topology", "CollNet channels").relevant


def test_added_nccl_variable(shared_dir: Path) -> None:
    """Azure ND96amsr A100, NCCL 2.12.10: ResNet on one node; Mask R-CNN on four adds SHARP's group-size
    threshold (and NET/IBext and CollNet channels between the nodes)."""
    d = _corpus(shared_dir, "mlperf20azure_nd96_1node_mxnet_resnet", "mlperf20azure_nd96_4node_maskrcnn")
    e = _one(d, "environment", "NCCL_SHARP_GROUP_SIZE_THRESH")
    assert (e.a, e.b, e.change, e.relevant) == (None, "4", "set", True)
    assert e.evidence_a == () and e.evidence_b[0].line == 3426
    assert e.evidence_b[0].text.endswith("NCCL_SHARP_GROUP_SIZE_THRESH set by environment to 4.")
    t = _one(d, "network", "transport")
    assert (t.a, t.b) == ("P2P", "COLLNET | NET/IBext | P2P")
    assert not [x for x in d.differences if x.category == "versions"]


def test_ib_replaced_by_socket(shared_dir: Path) -> None:
    """Dell XE9680 H200, NCCL 2.18.5: BERT on two nodes over IBext (RoCE), then on one node where NCCL
    reports `Using network Socket` and every channel is P2P."""
    d = _corpus(shared_dir, "mlperf50dell_2x8_h200_bert", "mlperf50dell_1x8_h200_bert_socket")
    n = _one(d, "network", "network")
    assert (n.a, n.b, n.scope) == ("IBext", "Socket", "all ranks")
    assert n.evidence_a[0].line == 888 and n.evidence_b[0].line == 542
    assert n.evidence_b[0].text.endswith("NCCL INFO Using network Socket")
    assert (_one(d, "network", "transport").a, _one(d, "network", "transport").b) == (
        "NET/IBext | P2P",
        "P2P",
    )
    keys = [x.key for x in d.relevant]
    assert keys.index("network") < keys.index("NCCL_ALGO") < keys.index("world")  # cause before consequence


def test_fewer_channels(shared_dir: Path) -> None:
    """Dell XE8545 A100, NCCL 2.12.10: one node with 24 coll channels; two nodes with 4."""
    d = _corpus(shared_dir, "mlperf20dell_1x4_a100_80gb_maskrcnn", "mlperf20dell_2x4_a100_40gb_maskrcnn")
    c = _one(d, "topology", "coll channels")
    assert (c.a, c.b, c.scope) == ("24", "4", "all ranks")
    assert c.evidence_a[0].line == 725 and c.evidence_b[0].line == 1113
    assert c.evidence_b[0].text.endswith("4 coll channels, 4 p2p channels, 2 p2p channels per peer")
    assert (_one(d, "topology", "rings").a, _one(d, "topology", "rings").b) == ("24", "4")


def test_same_complete_run_twice(shared_dir: Path, tmp_path: Path) -> None:
    src = shared_dir / "corpus" / "complete" / "mlperf50dell_2x8_h200_bert.log"
    copy = tmp_path / "again.log"
    copy.write_bytes(src.read_bytes())
    assert _diff(src, copy).differences == ()


def test_traces_clean_vs_straggler() -> None:
    """Real gloo captures (samples/traces/gloo_cpu_straggler): rank 1 sleeps 200 ms before every collective
    in `delayed/`. Every operation's median arrival spread goes from < 1 ms to ~200 ms."""
    base = Path(__file__).resolve().parents[2] / "samples" / "traces" / "gloo_cpu_straggler"
    clean = analyze([], trace_paths=[str(base / "clean")])
    delayed = analyze([], trace_paths=[str(base / "delayed")])
    d = diff_sessions(clean, delayed)
    spreads = [x for x in d.differences if x.key.endswith("arrival spread (median)")]
    assert {x.key.split()[1] for x in spreads} == {
        "allreduce",
        "allgather",
        "reduce_scatter",
        "broadcast",
        "alltoall",
    }
    for x in spreads:
        assert x.relevant and x.category == "results"
        a_us, b_us = (float(v.split()[0].replace(",", "")) for v in (x.a, x.b))
        assert a_us < 1000 and b_us > 190_000
    assert diff_sessions(clean, clean).differences == ()


def test_rccl_against_nccl(shared_dir: Path) -> None:
    """MangoBoost MI300X (RCCL's own banner `RCCL version : 2.22.3-HEAD:271856d`, no NCCL prefix) against
    Dell H200 (NCCL 2.22.3): one library fact that differs, not two facts each run prints alone."""
    d = _corpus(shared_dir, "mlperf50mangoboost_mi300x_2node_lora", "mlperf50dell_2x8_h200_retinanet")
    v = _one(d, "versions", "NCCL")
    assert (v.a, v.b, v.relevant) == ("RCCL 2.22.3-HEAD:271856d", "2.22.3", True)
    assert v.evidence_a[0].line == 43 and v.evidence_a[0].text == "RCCL version : 2.22.3-HEAD:271856d"
