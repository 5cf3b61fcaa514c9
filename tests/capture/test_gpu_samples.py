"""Capture stage, the committed real NCCL captures (samples/gpu: one H100, NCCL 2.28.9, torch 2.11):
`ncclscope analyze` names each injected fault, with the right collective and culprit, and raises no
error on the runs that succeeded. The manifests are the answer key; the diagnosis reads only the
evidence. No torch or GPU needed: these are files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ncclscope.cli import main

GPU = Path(__file__).resolve().parents[2] / "samples" / "gpu"


def _analyze(name: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["analyze", str(GPU / name), "--format", "json", "--quiet"]) in (0, 1)
    findings: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["findings"]
    return findings


def _injected(name: str) -> list[dict[str, Any]]:
    faults: list[dict[str, Any]] = json.loads((GPU / name / "capture.json").read_text())["faults"]
    return faults


def _ids(findings: list[dict[str, Any]], severity: str) -> list[str]:
    return [f["id"] for f in findings if f["severity"] == severity]


@pytest.mark.parametrize("name", ["world1", "clean", "straggler", "nccl232/clean", "nccl232/shared-ok"])
def test_successful_runs_raise_no_error(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    findings = _analyze(name, capsys)
    assert _ids(findings, "error") == [], [(f["id"], f["title"]) for f in findings]
    # Sockets have no GPUDirect RDMA to lose; NCCL_HOSTID differs per node by design.
    assert "gdr-disabled" not in {f["id"] for f in findings}
    assert not [f for f in findings if f["id"] == "env-mismatch" and "NCCL_HOSTID" in f["title"]]


def test_one_rank_run_has_no_finding(capsys: pytest.CaptureFixture[str]) -> None:
    # NCCL leaves opCount at 0 on a one-rank communicator: no collective mismatch.
    assert _analyze("world1", capsys) == []


def test_nccl_2_32_rma_socket_warn_is_benign(capsys: pytest.CaptureFixture[str]) -> None:
    findings = {f["id"]: f for f in _analyze("nccl232/clean", capsys)}
    assert "unexplained-warn" not in findings
    assert "rma_socket requires GDRCopy" in findings["benign-warn"]["title"]


def test_accepted_shared_gpu_is_a_warning_that_names_the_host_ids(capsys: pytest.CaptureFixture[str]) -> None:
    findings = {f["id"]: f for f in _analyze("clean", capsys)}
    assert findings["duplicate-gpu"]["severity"] == "warning"
    assert "accepted" in findings["duplicate-gpu"]["title"]
    assert "NCCL_HOSTID" in findings["p2p-degraded"]["title"]


@pytest.mark.parametrize("name", ["shared", "nccl232/shared"])
def test_refused_shared_gpu_heads_the_report_and_the_exits_are_its_echo(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # NCCL 2.28.9 says `Duplicate GPU detected : … CUDA device 60`; 2.32.3 `Multiple Ranks are using the
    # same GPU/Partition` with no device: the Init lines' busId names it
    findings = _analyze(name, capsys)
    assert findings[0]["id"] == "duplicate-gpu" and findings[0]["severity"] == "error"
    assert "busId 60" in findings[0]["title"]
    exits = [f for f in findings if f["id"] == "rank-exited"]
    assert sorted(r for f in exits for r in f["ranks"]) == [0, 1]
    assert all(f["severity"] == "warning" and "echo of duplicate-gpu" in f["title"] for f in exits)


def test_straggler(capsys: pytest.CaptureFixture[str]) -> None:
    (fault,) = _injected("straggler")
    named = [f for f in _analyze("straggler", capsys) if f["id"] == "straggler"]
    assert [f["ranks"] for f in named] == [fault["ranks"]]


@pytest.mark.parametrize(
    ("name", "seq", "op", "klass"),
    [
        ("hang", 71, "all_reduce", "(a)"),  # rank 1 never calls step 4's all_reduce
        ("mismatch", 71, "all_reduce", "(c)"),  # rank 1 calls it with another size
        ("crash", 70, "all_reduce", "(d)"),  # rank 3 is killed during step 4's DDP all_reduce
        # With COLL lines too: NCCL's own opCount verdict is folded into the process group's (the one
        # communicator of the default group's size), not reported a second time in NCCL's numbering.
        ("hang-coll", 71, "all_reduce", "(a)"),
        ("mismatch-coll", 71, "all_reduce", "(c)"),
        ("nccl232/hang", 71, "all_reduce", "(a)"),  # the same job on NCCL 2.32.3
        ("rerun1126/hang-coll", 71, "all_reduce", "(a)"),  # captured again three days later
        ("rerun1126/mismatch-coll", 71, "all_reduce", "(c)"),
    ],
)
def test_one_hang_verdict_with_the_collective_and_the_culprit(
    name: str, seq: int, op: str, klass: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (fault,) = _injected(name)
    hangs = [f for f in _analyze(name, capsys) if f["id"] == "collective-hang"]
    # torch 2.11's own desync report counts a batched send/recv on the P2P sequence (`COALESCED, #15`
    # for SeqNum 71) and blames the waiting ranks: it must not become a verdict.
    assert len(hangs) == 1, [f["title"] for f in hangs]
    (h,) = hangs
    assert f"{op} #{seq}" in h["title"] and klass in h["title"], h["title"]
    assert h["ranks"] == fault["ranks"]


@pytest.mark.parametrize("name", ["mismatch", "mismatch-coll", "rerun1126/mismatch-coll"])
def test_one_mismatch_finding(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    (fault,) = _injected(name)
    named = [f for f in _analyze(name, capsys) if f["id"] == "collective-mismatch"]
    assert [(f["ranks"], "#71" in f["title"]) for f in named] == [(fault["ranks"], True)]


@pytest.mark.parametrize("name", ["hang", "crash", "mismatch"])
def test_teardown_closures_are_echoes_of_the_hang(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # After the watchdog aborts (or a rank dies), every peer sees `Connection closed by remote peer`
    closed = [f for f in _analyze(name, capsys) if f["id"] == "connection-failure"]
    assert [(f["severity"], "consequence of the hang" in f["title"]) for f in closed] == [("warning", True)]


def test_crash_names_the_killed_rank(capsys: pytest.CaptureFixture[str]) -> None:
    findings = _analyze("crash", capsys)
    assert [f["ranks"] for f in findings if f["id"] == "rank-exited" and f["severity"] == "error"] == [[3]]
