"""CLI, `ncclscope analyze`: exit codes, and each configuration/error rule end to end from log text
(a case where it fires and a near miss where it must stay quiet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.cli import main

A = "node-a:100:101 [0] NCCL INFO "
B = "node-b:200:201 [0] NCCL INFO "
A1 = "node-a:101:102 [1] NCCL INFO "


def _warn(prefix: str, where: str, msg: str) -> str:
    host = prefix.split(" NCCL")[0]
    return f"\n{host} {where} NCCL WARN {msg}"


CASES: dict[str, tuple[list[str], list[str]]] = {
    "iface-loopback": (
        [A + "Bootstrap : Using lo:127.0.0.1<0>", B + "Bootstrap : Using eth0:10.0.0.2<0>"],
        [
            A + "Bootstrap : Using lo:127.0.0.1<0>",
            A + "comm 0x5b3e95c rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0",
        ],
    ),
    "iface-virtual": (
        [
            A + "Bootstrap : Using [0]ens5:172.16.8.137<0> [1]veth75fa783:fe80::fb33:e7b6%veth75fa783<0>",
            B + "Bootstrap : Using [0]ens5:172.16.8.138<0>",
        ],
        [A + "Bootstrap : Using eth0:10.0.0.1<0>", B + "Bootstrap : Using eth0:10.0.0.2<0>"],
    ),
    "iface-mismatch": (
        [A + "Bootstrap : Using eth0:10.0.0.1<0>", B + "Bootstrap : Using ib0:10.0.0.2<0>"],
        [A + "Bootstrap : Using eth0:10.0.0.1<0>", B + "Bootstrap : Using eth0:10.0.0.2<0>"],
    ),
    "iface-none": (
        [_warn(A, "bootstrap.cc:40", "Bootstrap : no socket interface found")],
        [A + "Bootstrap : Using eth0:10.0.0.1<0>"],
    ),
    "net-socket-fallback": (
        [
            A + "Using network Socket",
            A + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0",
            B + "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.2<0>",
            B + "Using network IB",
        ],
        [A + "Using network IB", A + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA"],
    ),
    "gdr-disabled": (
        [A + "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"],
        [A + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA"],
    ),
    "version-mismatch": (
        [A + "NCCL version 2.27.5+cuda12.9", B + "NCCL version 2.28.3+cuda12.9"],
        [A + "NCCL version 2.27.5+cuda12.9", B + "NCCL version 2.27.5+cuda12.9"],
    ),
    "env-mismatch": (
        [A + "NCCL_PROTO set by environment to LL", B + "NCCL_PROTO set by environment to Simple"],
        [A + "NCCL_PROTO set by environment to LL", B + "NCCL_PROTO set by environment to LL"],
    ),
    "topology-mismatch": (
        [A + "Channel 00/02 :    0   1   2   3", B + "Channel 00/02 :    0   2   1   3"],
        [A + "Channel 00/02 :    0   1   2   3", A + "Channel 01/02 :    0   1   2   3"],
    ),
    "p2p-degraded": (
        [A + "NCCL_P2P_DISABLE set by environment to 1."],
        [A + "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"],
    ),
    "split-world": (
        [
            A + "comm 0x11 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",
            B + "comm 0x22 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",
        ],
        [
            A + "comm 0x11 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
            B + "comm 0x22 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
        ],
    ),
    "missing-ranks": (
        [A + "comm 0x11 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 7000 commId 0xabc - Init COMPLETE"],
        [
            A + "comm 0x11 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 commId 0xabc - Init COMPLETE",
            A1 + "comm 0x12 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 8000 commId 0xabc - Init COMPLETE",
        ],
    ),
    "init-incomplete": (
        [
            A + "comm 0x11 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 commId 0xabc - Init START",
            A1 + "comm 0x12 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 8000 commId 0xabc - Init START",
            A + "comm 0x11 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 commId 0xabc - Init COMPLETE",
        ],
        [
            A + "comm 0x11 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 7000 commId 0xabc - Init START",
            A + "comm 0x11 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 7000 commId 0xabc - Init COMPLETE",
        ],
    ),
    "connection-failure": (
        [
            _warn(
                A,
                "misc/socket.cc:483",
                "socketStartConnect: Connect to 10.69.24.2<45763> failed : Connection refused",
            )
        ],
        [_warn(A, "misc/ibvwrap.cc:63", "Failed to open libibverbs.so[.1]")],
    ),
    "ib-error": (
        [
            _warn(
                A,
                "transport/net_ib.cc:1295",
                "NET/IB : Got completion from peer 10.0.0.2<53249> with error 12, "
                "opcode 0, len 0, vendor err 129 (Recv)",
            )
        ],
        [A + "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.2<0>"],
    ),
    "cuda-error": (
        [_warn(A, "enqueue.cc:43", "Cuda failure 'out of memory'")],
        [_warn(A, "transport/nvls.cc:245", "Cuda failure 'initialization error'")],
    ),
    "shm-exhausted": (
        [_warn(A, "misc/shmutils.cc:71", "Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes")],
        [A + "Channel 00 : 2[1] -> 0[0] via SHM/direct/direct"],
    ),
    "duplicate-gpu": (
        [_warn(A, "init.cc:497", "Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000")],
        [
            A + "comm 0x11 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
            B + "comm 0x22 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        ],
    ),
    "lightning-world": (
        ["initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2", "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2"],
        ["initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2", "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/2"],
    ),
    "nvls-failure": (
        [_warn(A, "transport/nvls.cc:245", "Cuda failure 'initialization error'")],
        [A + "NVLS multicast support is not available on dev 0"],
    ),
    "gpu-xid": (
        ["kernel: NVRM: Xid (PCI:0000:dc:00): 79, pid=1818990, name=python3, GPU has fallen off the bus."],
        [
            A + "comm 0x11 rank 0 nranks 2 cudaDev 0 busId dc000 - Init COMPLETE",
            "kernel: NVRM: loading module",
        ],
    ),
    "nccl-result": (
        [
            (
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1190, "
                "invalid usage, NCCL version 2.10.3"
            ),
        ],
        [  # the same result with the WARN that names its reason: that finding speaks, not this one
            _warn(A, "init.cc:760", "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000"),
            (
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1190, "
                "invalid usage, NCCL version 2.10.3"
            ),
        ],
    ),
    "nccl-1x": (  # nccl-tests' header (src/common.cu; nccl1_compat.h prints 1.0 for any NCCL 1.x build)
        ["# NCCL Tests compiled with NCCL 1.0", "NCCL failure all_reduce.cu:95 'unhandled cuda error'"],
        ["# NCCL Tests compiled with NCCL 2.4", "NCCL failure all_reduce.cu:95 'unhandled cuda error'"],
    ),
    "libfabric-error": (
        [
            "libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid address"
        ],
        [
            "libfabric:451707:1708520807::efa:core:efa_device_init():120<warn> Using FI_HMEM_CUDA",
            A + "NET/OFI x",
        ],
    ),
}


def _analyze(
    tmp_path: Path, lines: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object]]:
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    code = main(["analyze", "-q", "--format", "json", str(log)])
    return code, json.loads(capsys.readouterr().out)


def _ids(doc: dict[str, object]) -> set[str]:
    return {f["id"] for f in doc["findings"]}  # type: ignore[index, union-attr]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires(rule_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = _analyze(tmp_path, CASES[rule_id][0], capsys)
    assert rule_id in _ids(doc)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_stays_quiet(rule_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = _analyze(tmp_path, CASES[rule_id][1], capsys)
    assert rule_id not in _ids(doc)


def test_every_config_and_error_rule_has_a_case() -> None:
    from ncclscope.findings import all_rules

    # (nccl-tests rules read nccl-tests tables, not NCCL lines: tests/nccltests/test_rules.py has their cases;
    # several-jobs needs several input files: tests/align/test_facts.py has its case)
    ours = {
        r.id
        for r in all_rules()
        if r.group in ("config", "errors") and not r.id.startswith("nccltests-") and r.id != "several-jobs"
    }
    assert ours <= set(CASES)


def test_exit_0_without_error_finding(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "-q", str(samples_dir / "logs" / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log")])
    assert code == 0


def test_exit_1_with_error_finding(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = sorted(str(p) for p in (samples_dir / "logs").glob("nccl1267_*.log"))
    code = main(["analyze", "-q", "--format", "json", *logs])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and "version-mismatch" in _ids(doc)


def test_exit_1_text_report_names_the_error(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = sorted(str(p) for p in (samples_dir / "logs").glob("nccl1267_*.log"))
    assert main(["analyze", "-q", *logs]) == 1
    out = capsys.readouterr().out
    assert "version-mismatch" in out and "2.14.3" in out and "2.19.3" in out


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_exit_2_unusable_input(make: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.log"
    if make == "empty":
        path.write_text("")
    code = main(["analyze", "-q", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.startswith("ncclscope: error:")
