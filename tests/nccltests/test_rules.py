"""nccl-tests rules on the real samples and on hand-made variants of them (each built from a named real file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ncclscope.records import Finding
from ncclscope.session import analyze

NT = Path(__file__).resolve().parents[2] / "samples" / "nccltests"
DEGRADED = NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log"
HEALTHY = NT / "dgxspark_roce_switch_ok_nccl2_28_9.log"


def _found(paths: list[Path], rule_id: str) -> list[Finding]:
    return [f for f in analyze([str(p) for p in paths]).findings if f.id == rule_id]


def test_wrong_results_are_an_error() -> None:
    (f,) = _found([NT / "inc_rtx3090_2node_wrong_results.log"], "nccltests-wrong")
    assert f.severity == "error" and f.metrics["oob_values"] == 108 and f.metrics["sizes_with_wrong"] == 27
    assert [e.line for e in f.evidence[:2]] == [38, 11]  # the out-of-bounds line, then the first wrong row
    assert f.evidence[0].text == "# Out of bounds values : 108 FAILED"
    assert f.hosts == ("worker1", "worker2")


@pytest.mark.parametrize("name", sorted(p.name for p in NT.glob("*.log") if "wrong" not in p.name))
def test_clean_runs_have_no_wrong_results(name: str) -> None:
    assert _found([NT / name], "nccltests-wrong") == []


def test_oob_alone_is_enough(tmp_path: Path) -> None:
    """Pre-2.13 tables have no per-row count: the footer's out-of-bounds count decides."""
    text = (NT / "awstutorial_a10g_2node_socket_nccl2_11_4.log").read_text()
    p = tmp_path / "oob.log"
    p.write_text(text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED"))
    (f,) = _found([p], "nccltests-wrong")
    assert f.metrics["oob_values"] == 3 and f.metrics["sizes_with_wrong"] == 0 and f.evidence[0].line == 73


def test_degraded_roce_run_is_low() -> None:
    """DGX Spark after the QSFP cable was moved: 2.84 GB/s over RoCE ports NCCL reports at 200 Gb/s."""
    (f,) = _found([DEGRADED], "nccltests-low-busbw")
    assert (
        f.metrics["link"] == "NET/IB" and f.metrics["bound_gbps"] == 25.0 and f.metrics["busbw_gbps"] == 2.84
    )
    assert f.metrics["floor_gbps"] == 8.75 and f.metrics["size_bytes"] == 2147483648
    assert [e.line for e in f.evidence] == [
        102,
        19,
        91,
        78,
    ]  # best row, NIC speed line, first NET/IB channel line, NCCL's coll channel count
    assert "rocep1s0f0" in f.why and "11%" in f.why


def test_healthy_roce_run_is_not_low() -> None:
    assert _found([HEALTHY], "nccltests-low-busbw") == []


@pytest.mark.parametrize(
    "name",
    [
        "awstutorial_a10g_2node_socket_nccl2_11_4.log",
        "eks_efa_t4_2node_ofi_nccl2_12_7.log",
        "ebpf_rtx5090_2rank_socket_tests2_18_0.log",
        "inc_rtx3090_2node_wrong_results.log",
    ],
)
def test_other_samples_are_not_low(name: str) -> None:
    """Socket at 0.86 GB/s and EFA at 3.15 GB/s are above their floors; the others print no channel lines."""
    assert _found([NT / name], "nccltests-low-busbw") == []


def test_without_printed_speed_the_floor_is_conservative(tmp_path: Path) -> None:
    """The degraded run with its `speed=` lines removed: only the NET floor (1.1 GB/s) is left, and
    2.84 GB/s passes it: without a speed the rule does not guess the NIC."""
    p = tmp_path / "nospeed.log"
    p.write_text("".join(l for l in DEGRADED.read_text().splitlines(True) if "speed=" not in l))
    assert _found([p], "nccltests-low-busbw") == []


def _scale_busbw(text: str, factor: float) -> str:
    """Divide the algbw and busbw columns of every result row (the tutorial's pre-2.13 table)."""
    row = re.compile(
        r"^(\s+\d+\s+\d+\s+\w+\s+\w+\s+)(\S+)\s+(\S+)\s+(\S+)(\s+\S+\s+)(\S+)\s+(\S+)\s+(\S+)(.*)$"
    )

    def one(m: re.Match[str]) -> str:
        g = list(m.groups())
        for i in (2, 3, 6, 7):
            g[i] = f"{float(g[i]) / factor:.2f}"
        return "".join([g[0], g[1], "  ", g[2], "  ", g[3], g[4], g[5], "  ", g[6], "  ", g[7], g[8]])

    return "\n".join(row.sub(one, line) for line in text.split("\n"))


def test_socket_run_far_below_1gbe_is_low(tmp_path: Path) -> None:
    """The tutorial's Socket run with its bandwidth divided by 40 (0.02 GB/s: below what 1 GbE carries)."""
    p = tmp_path / "slow_socket.log"
    p.write_text(_scale_busbw((NT / "awstutorial_a10g_2node_socket_nccl2_11_4.log").read_text(), 40))
    (f,) = _found([p], "nccltests-low-busbw")
    assert (
        f.metrics["link"] == "NET/Socket"
        and f.metrics["floor_gbps"] == 0.05
        and f.metrics["bound_gbps"] is None
    )
    assert f.metrics["busbw_gbps"] == 0.02 and "NCCL_SOCKET_IFNAME" in f.fix


NVLINK_RUN = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   4242 on     node-a device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
node-a:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
node-a:4242:4251 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    67108864      16777216     float     sum      -1   1677.7   40.00   {bw}      0   1677.7   40.00   {bw}      0
   268435456      67108864     float     sum      -1   6710.9   40.00   {bw}      0   6710.9   40.00   {bw}      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : {bw}
"""


@pytest.mark.parametrize(("bw", "fires"), [("40.00", True), ("390.00", False)])
def test_p2p_on_one_nvlink_host(tmp_path: Path, bw: str, fires: bool) -> None:
    """Hand-made (the line shapes of the real samples): 2 × H100 SXM on one host over P2P; NVLink carries
    450 GB/s per direction, so 40 GB/s is under the 25% floor and 390 GB/s is not."""
    p = tmp_path / "all_reduce_perf_h100.log"
    p.write_text(NVLINK_RUN.format(bw=bw))
    found = _found([p], "nccltests-low-busbw")
    assert bool(found) is fires
    if fires:
        assert found[0].metrics["link"] == "P2P" and found[0].metrics["floor_gbps"] == 112.5


def test_small_messages_only_are_not_judged(tmp_path: Path) -> None:
    """Below 64 MiB a run is latency-bound: the same slow Socket table cut at 32 MiB gives no finding."""
    text = _scale_busbw((NT / "awstutorial_a10g_2node_socket_nccl2_11_4.log").read_text(), 40)
    keep = [l for l in text.split("\n") if not re.match(r"\s+(67108864|134217728)\s", l)]
    p = tmp_path / "small.log"
    p.write_text("\n".join(keep))
    assert _found([p], "nccltests-low-busbw") == []


def test_complete_runs_raise_nothing(shared_dir: Path) -> None:
    """The rules run on real complete jobs without nccl-tests output: no error, no nccl-tests finding."""
    logs = sorted((shared_dir / "corpus" / "complete").glob("*.log"))[:6]
    for log in logs:
        s = analyze([str(log)])
        assert not [f for f in s.findings if f.id.startswith("nccltests")], log.name
