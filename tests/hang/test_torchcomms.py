"""torchcomms lines (torch nightly's `nccl2` backend): `[TC][rank=R][name=N]` tags, `Operation timed out after
N ms` as a watchdog timeout of the rank that waits, the timeout watchdog's aborts and NCCL async errors.

No real nccl2 log exists in public threads yet: the lines are built from meta-pytorch/torchcomms's source
(utils/Logging.hpp, nccl/TorchWorkNCCL.cpp, nccl/TorchCommNCCLUtils.cpp, nccl/TorchCommNCCL.cpp at 59426ba)
behind glog's header and c10's, as samples/hang/README.md says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ncclscope
from ncclscope.parse.logs.lines import runtime_lines

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "hang" / "torchcomms_nccl2_timeout_4ranks"
G = "E1127 23:30:00.500000 41000"

CASES: list[tuple[str, dict[str, object]]] = [
    (
        f"{G} TorchWorkNCCL.cpp:147] [TC][rank=1][name=default_pg] Operation timed out after 30012 ms",
        {
            "kind": "watchdog_timeout",
            "rank": 1,
            "pg_desc": "default_pg",
            "ran_for_ms": 30012,
            "severity": "E",
        },
    ),
    (  # c10's own header (a torch build logging without glog)
        "[E1127 23:33:00.123456421 TorchWorkNCCL.cpp:147] [TC][rank=3][name=0] Operation timed out after 600013 ms",
        {"kind": "watchdog_timeout", "rank": 3, "pg_desc": "0", "ran_for_ms": 600013},
    ),
    (  # no communicator known: the bare `[TC]` prefix
        f"{G} TorchWorkNCCL.cpp:147] [TC] Operation timed out after 5000 ms",
        {"kind": "watchdog_timeout", "rank": None, "ran_for_ms": 5000},
    ),
    (  # the prefix builder's placeholder rank
        f"{G} TorchWorkNCCL.cpp:147] [TC][rank=-1] Operation timed out after 5000 ms",
        {"kind": "watchdog_timeout", "rank": None},
    ),
    (
        (
            f"{G} TorchCommNCCLUtils.cpp:244] [TC][rank=1][name=default_pg] Aborting process due to timeout on rank 1"
            " - timeout watchdog detected operation timeout"
        ),
        {"kind": "taking_down", "rank": 1, "detail": "torchcomms abort: timeout"},
    ),
    (
        (
            f"{G} TorchCommNCCLUtils.cpp:248] [TC][rank=1][name=tp] Aborting process due to error on rank 1 - timeout"
            " watchdog detected operation error. "
        ),
        {"kind": "taking_down", "rank": 1, "pg_desc": "tp", "detail": "torchcomms abort: error"},
    ),
    (
        (
            f"{G} TorchCommNCCLUtils.cpp:268] [TC][rank=0][name=default_pg] Aborting process due to error on rank 0"
            " - nccl hit async error: remote process exited or there was a network error"
        ),
        {
            "kind": "backend_error",
            "rank": 0,
            "detail": "NCCL async error: remote process exited or there was a network error",
        },
    ),
    (
        (
            f"{G} TorchCommNCCLUtils.cpp:277] [TC][rank=0][name=default_pg] Async error on rank 0: unhandled system"
            " error (run with NCCL_DEBUG=INFO for details) (reconfigurable mode)"
        ),
        {"kind": "backend_error", "rank": 0},
    ),
    (
        (
            f"{G} TorchCommNCCLUtils.cpp:294] [TC][rank=2][name=tp] Revoking communicator on rank 2 - watchdog"
            " detected timeout"
        ),
        {"kind": "taking_down", "rank": 2, "detail": "torchcomms revoke: timeout"},
    ),
    (
        (
            f"{G} TorchWorkNCCL.cpp:153] [TC][rank=2][name=tp] CUDA error during end event query: an illegal memory"
            " access was encountered (700)"
        ),
        {
            "kind": "backend_error",
            "rank": 2,
            "detail": "CUDA error during end event query: an illegal memory access was encountered (700)",
        },
    ),
    (
        f"{G} TorchCommNCCL.cpp:349] [TC][rank=2][name=tp] Aborting process due to timeout",
        {"kind": "taking_down", "rank": 2},
    ),
]


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_line(line: str, expected: dict[str, object]) -> None:
    row = runtime_lines.match(line)
    assert row is not None, line
    assert {k: row.get(k) for k in expected} == expected
    assert runtime_lines._ANCHOR.search(line)


def test_an_info_line_is_not_evidence() -> None:
    line = f"{G} TorchCommNCCL.cpp:133] [TC][rank=0][name=default_pg] TorchCommNCCL initialized for rank: 0"
    assert runtime_lines.match(line) is None


def test_the_waiting_ranks_time_out_and_the_silent_rank_is_not_blamed() -> None:
    s = ncclscope.analyze([str(SAMPLE)])
    wd = [f for f in s.findings if f.id == "watchdog-timeout"]
    assert len(wd) == 1 and wd[0].ranks == (0, 1, 3)
    assert wd[0].metrics["ran_for_ms"] == 600013
    hang = [v for v in s.hang.verdicts]
    assert hang and all(v.klass == "undetermined" and v.culprits == () for v in hang)
