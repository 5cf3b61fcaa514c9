"""Whole real runs: what an expert reads in them, and no false alarm on a run that succeeded.

Bundled (`samples/complete`, `samples/logs`): teardown noise, node-local communicators inside a larger
world, RCCL's benign WARNs, an unexplained WARN, Lightning's world. `samples/complete2` (SOURCE.md): every
healthy run gives no error and only the warnings listed here with the lines that justify them; its one run
that crashed after its success line keeps its error. With `../shared/corpus/complete` present, every run
whose log ends in MLPerf's `run_stop … success` must give no error finding.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

import ncclscope
from ncclscope.records import Finding

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
COMPLETE = ROOT.parent / "shared" / "corpus" / "complete"
COMPLETE2 = SAMPLES / "complete2"

# Warnings a healthy run of samples/complete2 may give: each names a real risk its own lines show.
JUSTIFIED_WARNINGS: dict[str, dict[str, str]] = {
    "mlperf20azure_nd96_16node_rnnt": {
        "gdr-disabled": "none of its 1,400 `via NET/IBext/0` channel lines carries /GDRDMA (NCCL 2.12 prints it "
        "when useGdr): inter-node traffic is staged through host memory",
    },
    "mlperf30dell_2x4_a100_80gb_maskrcnn": {
        "gdr-disabled": "none of its 32 `via NET/IBext/0` channel lines between the two nodes carries /GDRDMA",
    },
    "nccltests_2_29_2_2node_efa_rtxpro6000": {
        "gdr-disabled": "aws-ofi-nccl prints `Could not disable CUDA API usage for HMEM, disabling GDR` and `Need to "
        "force simple protocol: GDR not supported`, and NCCL `use ring PXN 0 GDR 0`: GDR is really off on EFA",
    },
    "nccltests_2_29_2_8node_efa_rtxpro6000": {
        "gdr-disabled": "the same plugin lines on all 8 nodes: `disabling GDR`, `GDR not supported`, `GDR 0`",
    },
    "mlperf51mangoboost_mi300x_2node_lora": {
        "net-socket-fallback": "`NET/IB : No device found.` then `Using network Socket` on every process, and 632 "
        "`via NET/Socket` channels in 16-rank, 2-node communicators: inter-node traffic over TCP",
    },
}
# Runs of samples/complete2 that print success and then fail: the failure must stay an error.
FAILED_AFTER_SUCCESS = {
    "mlperf51dell_1x8_b200_retinanet": "ib-nic-selection",  # `Requested properties for vNic 8` then srun 134
}


@cache
def findings(*paths: str) -> tuple[Finding, ...]:
    return ncclscope.load(*paths).session.findings


def ids(fs: tuple[Finding, ...], severity: str | None = None) -> set[str]:
    return {f.id for f in fs if severity is None or f.severity == severity}


def test_teardown_noise_is_not_a_failure() -> None:
    # NCCL_DEBUG=WARN run: 48 proxy WARNs at exit, after run_stop success: 16 each of `[Service thread]
    # Accept failed`, `[Service thread] Could not receive type` and `[Proxy Service N] Failed to execute
    # operation Close`, counted per kind (issue 31)
    fs = findings(str(SAMPLES / "complete" / "mlperf50dell_2x8_h200_retinanet.log.gz"))
    assert ids(fs) == {"benign-warn"}
    [b] = fs
    kinds = b.metrics["kinds"]
    assert [k["count"] for k in kinds] == [16, 16, 16]  # type: ignore[union-attr]
    assert all("shut down" in str(k["reason"]) and k["hosts"] == 2 for k in kinds)  # type: ignore[union-attr]


def test_node_local_communicators_inside_a_larger_world() -> None:
    s = ncclscope.load(str(SAMPLES / "complete" / "mlperf50dell_2x8_h200_bert.log.gz"))
    sizes = sorted(s.comms["nranks"].to_list())
    assert sizes == [8, 8, 16, 16]  # two node-local groups beside two 16-rank world communicators
    assert s.session.findings == ()  # no split-world, and the INFO closures at exit are no failure


def test_rccl_msccl_warns_are_benign_and_every_line_is_recognised() -> None:
    s = ncclscope.load(str(SAMPLES / "complete" / "mlperf50mangoboost_mi300x_2node_lora.log.gz"))
    assert ids(s.session.findings) == {"benign-warn"}
    cov = s.session.logs.coverage
    assert cov.nccl_lines == 56 and cov.recognized == 56


def test_a_warn_no_rule_reads_is_named_with_its_meaning() -> None:
    fs = findings(str(SAMPLES / "logs" / "awsofi24_horovod_efa_ring_net_libfabric_2_4.log"))
    assert not [f for f in fs if f.id == "unexplained-warn"]
    [u] = [f for f in fs if f.id == "nccl-warn"]
    assert "NET/OFI Couldn't open AV" in u.title and u.metrics["family"] == "ofi-address-vector"
    assert "fi_av_open" in u.why and u.evidence[0].line > 0


def test_gdr_line_of_a_socket_nic_is_not_gdr_advice(tmp_path: Path) -> None:
    # topo.cc prints "NET/%s : GPU Direct RDMA %s for HCA %d '%s'" (catalog mea80295c) for every net,
    # the internal socket one included; the corpus has no such run, so the line is made from the format.
    log = tmp_path / "socket.log"
    log.write_text(
        "".join(
            f"node-00:{100 + r}:{200 + r} [{r}] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'\n"
            f"node-00:{100 + r}:{200 + r} [{r}] NCCL INFO comm 0x{r}a rank {r} nranks 2 cudaDev {r} busId {r}000 "
            "- Init COMPLETE\n"
            for r in range(2)
        )
    )
    assert "gdr-disabled" not in ids(findings(str(log)))


@pytest.mark.parametrize(
    ("name", "severity"),
    [
        ("lightning4389_duplicate_global_ranks_srun", "error"),
        ("lightning8707_only_half_members_init", "warning"),
    ],
)
def test_lightning_world(name: str, severity: str) -> None:
    fs = findings(str(SAMPLES / "logs" / f"{name}.log"))
    assert [f.severity for f in fs if f.id == "lightning-world"] == [severity]


def _healthy() -> list[str]:
    if not COMPLETE.is_dir():
        return []
    out = []
    for meta in sorted(COMPLETE.glob("*.meta.json")):
        m = json.loads(meta.read_text())
        if "success" in json.dumps(m.get("run_outcome", "")):
            out.append(meta.name.removesuffix(".meta.json"))
    return out


@pytest.mark.corpus
@pytest.mark.skipif(not COMPLETE.is_dir(), reason="needs ../shared/corpus/complete")
@pytest.mark.parametrize("name", _healthy())
def test_no_error_on_a_run_that_succeeded(name: str) -> None:
    fs = findings(str(COMPLETE / f"{name}.log"))
    assert [f"{f.id}: {f.title}" for f in fs if f.severity == "error"] == []


def _complete2(healthy: bool) -> list[str]:
    names = sorted(p.name.removesuffix(".log.gz") for p in COMPLETE2.glob("*.log.gz"))
    return [n for n in names if (n not in FAILED_AFTER_SUCCESS) == healthy]


def test_complete2_lists_only_its_own_files() -> None:
    names = set(_complete2(True)) | set(_complete2(False))
    assert len(names) >= 10 and set(JUSTIFIED_WARNINGS) | set(FAILED_AFTER_SUCCESS) <= names


@pytest.mark.parametrize("name", _complete2(healthy=True))
def test_healthy_whole_run_gives_no_error_and_only_justified_warnings(name: str) -> None:
    fs = findings(str(COMPLETE2 / f"{name}.log.gz"))
    assert [f"{f.id}: {f.title}" for f in fs if f.severity == "error"] == []
    assert ids(fs, "warning") == set(JUSTIFIED_WARNINGS.get(name, {}))


@pytest.mark.parametrize("name", sorted(FAILED_AFTER_SUCCESS))
def test_a_crash_after_the_success_line_stays_an_error(name: str) -> None:
    s = ncclscope.load(str(COMPLETE2 / f"{name}.log.gz"))
    errors = [f for f in s.session.findings if f.severity == "error"]
    assert {f.metrics.get("family") for f in errors if f.id == "nccl-warn"} == {FAILED_AFTER_SUCCESS[name]}
    assert len([f for f in errors if f.id == "rank-exited"]) == 7  # `srun: error: … tasks 1-7: … code 134`
    assert s.verdict.startswith("ERROR: Configuration (ib-nic-selection)")  # the cause heads, not the exits
