"""Whole real runs: what an expert reads in them, and no false alarm on a run that succeeded.

Bundled (`samples/complete`, `samples/logs`): teardown noise, node-local communicators inside a larger
world, RCCL's benign WARNs, an unexplained WARN, Lightning's world. With `../shared/corpus/complete`
present, every run whose log ends in MLPerf's `run_stop … success` must give no error finding.
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
