"""Diagnosis knowledge: every entry of KINDS and LINKS has a case that fails without it.

Findings are built by hand, their evidence lines copied from real logs (sources beside each line);
each case checks the entry's effect with the whole table and its absence with the entry removed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ncclscope.diagnosis import DiagnosisInput, diagnose
from ncclscope.diagnosis.events import to_events
from ncclscope.diagnosis.knowledge import DEFAULT, KINDS, LINKS, Knowledge
from ncclscope.records import Evidence, Finding, Severity

GROUPS = {
    "version-mismatch": "config",
    "init-incomplete": "config",
    "p2p-degraded": "config",
    "nccl-warn": "warnings",
}

# Real lines (path names shortened): samples/logs, ../shared/corpus/issues, samples/multipg.
OOM = Evidence("r0.log", 14, "node-00:1:1 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'")
CLOSED = Evidence(
    "r1.log",
    9,
    "node-01:2:2 [1] misc/socket.cc:503 NCCL WARN socketProgress: Connection closed by remote peer",
)
VERSION = Evidence("n1.log", 8, "NCCL version 2.14.3+cuda11.7")
WATCHDOG = Evidence(
    "r1.log",
    30,
    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=71, OpType=ALLREDUCE, "
    "NumelIn=1, NumelOut=1, Timeout(ms)=10000) ran for 10008 milliseconds before timing out.",
)
IB12 = Evidence(
    "r0.log", 20, "node-00:1:3 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12"
)
# aws/aws-ofi-nccl#927 (NCCL 2.21.5): the communicator used again after the plugin's failure.
ENSURE = Evidence(
    "r0.log",
    30,
    "init.cc:290 NCCL WARN Attempt to use communicator before the previous operation returned ncclSuccess",
)
TRACE = Evidence("nccl_trace_rank_1", 0, "flight entry pg 1 all_reduce #25 state scheduled")


def f(
    id: str,
    sev: Severity = "error",
    ranks: tuple[int, ...] = (),
    ev: Evidence = OOM,
    hosts: tuple[str, ...] = (),
    **metrics: object,
) -> Finding:
    return Finding(
        id=id,
        severity=sev,
        title=id,
        why="",
        fix="",
        ranks=ranks,
        hosts=hosts,
        evidence=(ev,),
        metrics=metrics,
    )


def hang(klass: str, culprits: tuple[int, ...], group: str, ev: Evidence = TRACE) -> Finding:
    return f("collective-hang", "error", culprits, ev, **{"class": klass, "communicator": group})


# One finding per KINDS entry, in KINDS order (two entries may share an id).
KIND_CASES: list[Finding] = [
    f("nccl-1x", ev=Evidence("t.log", 3, "# NCCL Tests compiled with NCCL 1.0")),
    f("rank-exited", "warning", (1,), CLOSED, echo_of="duplicate-gpu"),
    f("rank-exited", "warning", (1,), CLOSED),
    f("rank-exited", ranks=(0,), exc_type="torch.OutOfMemoryError"),
    f("rank-exited", ranks=(3,)),
    f(
        "ras-dead-process",
        ranks=(3,),
        ev=Evidence("ras.txt", 13, "Process 3748990 on node node1 managing GPU 3"),
    ),
    f("rank-exception", ranks=(0,)),
    f("cuda-error", "warning", role="abort-echo"),
    f("cuda-error"),
    f("nvls-failure"),
    f("shm-exhausted"),
    f("duplicate-gpu"),
    f("p2p-degraded"),
    f("nccltests-wrong"),
    f("ib-error", ev=IB12, statuses=[5]),
    f("ib-error", ev=IB12, statuses=[12]),
    f("connection-failure", ev=CLOSED, role="echo"),
    f("connection-failure", ev=CLOSED, role="retry"),
    f("connection-failure", ev=CLOSED, role="root", cause_class="configuration"),
    f("connection-failure", ev=CLOSED, role="root"),
    f("collective-mismatch", ranks=(1,)),
    hang("a", (1,), "PG 1"),
    hang("c", (1,), "PG 1"),
    hang("b", (), "PG 1"),
    f("watchdog-timeout", ranks=(0, 1), ev=WATCHDOG),
    f("failed-collective", ranks=(3,), ev=Evidence("r3.log", 1, "Stack trace of the failed collective: ")),
    f("init-incomplete", "error", (2,)),
    f("init-incomplete", "warning", (2,)),
    f("unexplained-warn", "warning"),
    f("version-mismatch", ev=VERSION),
    f("nccl-warn", "warning", ev=ENSURE, cause_class="peer-failure", repeats="NET/OFI Unexpected status (0)"),
    f("nccl-warn", "warning", ev=CLOSED, cause_class="peer-failure"),
    f("nccl-warn", "info", ev=CLOSED, cause_class="teardown"),
    f("nccl-warn", "error", cause_class="resource"),
    f("nccl-warn", "error", ev=CLOSED, cause_class="configuration"),
    f("nccl-warn", "error", ev=IB12, cause_class="network"),
    f("gdr-disabled", "warning"),
    f("straggler", "warning", (2,)),
]


def kind_of(finding: Finding, k: Knowledge = DEFAULT) -> str:
    return to_events([finding], DiagnosisInput(rule_groups=GROUPS), k)[0].kind


def test_every_kind_entry_has_a_case() -> None:
    assert len(KIND_CASES) == len(KINDS)


@pytest.mark.parametrize("i", range(len(KINDS)), ids=lambda i: f"{i}:{KINDS[i].id}")
def test_kind_entry_classes_its_case_and_only_it(i: int) -> None:
    entry = KINDS[i]
    assert kind_of(KIND_CASES[i]) == entry.id, entry.reason
    without = replace(DEFAULT, kinds=KINDS[:i] + KINDS[i + 1 :])
    assert kind_of(KIND_CASES[i], without) != entry.id


# One (cause, echo) pair per LINKS entry: with the entry the echo folds under the cause, without it not.
LINK_CASES: dict[str, tuple[list[Finding], int, int]] = {
    "same-line": ([f("cuda-error", ranks=(0,)), f("nvls-failure", ranks=(0,))], 1, 0),  # both cite OOM's line
    "local-failure-closes-peers": (
        [f("cuda-error", ranks=(0,)), f("connection-failure", ev=CLOSED, role="echo")],
        1,
        0,
    ),
    "old-library-fails": (
        [
            f("nccl-1x", ev=Evidence("t.log", 3, "# NCCL Tests compiled with NCCL 1.0")),
            f("cuda-error", ranks=(0,)),
        ],
        1,
        0,
    ),
    "stored-error-repeats": (
        [
            f("nccl-warn", "error", cause_class="internal"),
            f("nccl-warn", "warning", ev=ENSURE, cause_class="peer-failure", repeats="Cuda failure"),
        ],
        1,
        0,
    ),
    "local-failure-stalls-collectives": (
        [f("cuda-error", ranks=(0,)), f("watchdog-timeout", ranks=(1,), ev=WATCHDOG)],
        1,
        0,
    ),
    "error-path-desync": (
        [f("rank-exception", ranks=(0,)), f("collective-mismatch", ranks=(0, 1), ev=WATCHDOG)],
        1,
        0,
    ),
    "network-failure-stalls": (
        [f("ib-error", ev=IB12, statuses=[12]), hang("b", (), "PG 0", WATCHDOG)],
        1,
        0,
    ),
    "config-breaks-job": ([f("version-mismatch", ev=VERSION), f("init-incomplete", "error", (1,))], 1, 0),
    "desync-hangs": (
        [f("collective-mismatch", ranks=(1,), ev=WATCHDOG), hang("c", (1,), "PG 0")],
        1,
        0,
    ),
    "desync-aborts": (
        [f("collective-mismatch", ranks=(1,), ev=WATCHDOG), f("rank-exited", ranks=(1,))],
        1,
        0,
    ),
    "stuck-ranks-hold-groups": ([hang("a", (1,), "PG 1"), hang("b", (), "PG 0")], 1, 0),
    "waits-elsewhere": ([hang("a", (1,), "PG 1"), hang("a", (0,), "PG 3")], 1, 0),
    "same-stuck-ranks": ([hang("a", (1,), "PG 1"), hang("a", (1,), "PG 4")], 1, 0),
    "hang-detected": ([hang("b", (), "PG 0"), f("watchdog-timeout", ranks=(0, 1), ev=WATCHDOG)], 1, 0),
    "init-stuck-closes": (
        [f("init-incomplete", "error", (2,)), f("connection-failure", ev=CLOSED, role="echo")],
        1,
        0,
    ),
    "slow-path-slows": ([f("net-socket-fallback", "warning"), f("low-busbw", "warning", ev=TRACE)], 1, 0),
}
MEMBERS = {"PG 1": (0, 1), "PG 0": (0, 1, 2, 3), "PG 3": (0, 2), "PG 4": (1, 3)}


def cause_of(findings: list[Finding], echo: int, k: Knowledge = DEFAULT) -> int | None:
    d = diagnose(findings, DiagnosisInput(rule_groups=GROUPS, group_members=MEMBERS), k)
    return d.echo_of(echo)


def test_every_link_entry_has_a_case() -> None:
    assert sorted(LINK_CASES) == sorted(lk.id for lk in LINKS)


@pytest.mark.parametrize("rule", [lk.id for lk in LINKS])
def test_link_entry_folds_its_echo_and_only_it(rule: str) -> None:
    findings, echo, cause = LINK_CASES[rule]
    assert cause_of(findings, echo) == cause, rule
    without = replace(DEFAULT, links=tuple(lk for lk in LINKS if lk.id != rule))
    assert cause_of(findings, echo, without) != cause


def test_every_entry_has_a_reason() -> None:
    assert all(len(k.reason) > 30 for k in KINDS)
    assert all(len(lk.reason) > 30 and lk.relation for lk in LINKS)
