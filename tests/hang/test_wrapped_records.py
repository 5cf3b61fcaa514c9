"""Watchdog records a terminal cut, and records that survive only inside the termination line.

Lines are real (sglang#3424, NeMo#13562, sglang#1693; samples/judge_issues, tune data since these fixes).
"""

from __future__ import annotations

from pathlib import Path

from ncclscope.hang import build_hang_view
from ncclscope.parse import read_logs

PAD = " " * 30
NEMO = [
    (
        "[rank2]:[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=532339, OpType=BROADCAST, NumelIn=5164000, NumelOut=5"
    ),
    "164000, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out." + PAD,
    (
        "[rank0]:[E513 13:25:57.714786872 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=532341, OpType=_ALLGATHER_BASE, NumelIn=513, NumelOut"
    ),
    "=2052, Timeout(ms)=1800000) ran for 1800036 milliseconds before timing out." + PAD,
]
SGLANG_WRAPPED = [
    (
        "[rank1]:[E210 02:06:33.347835395 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 1] Process group watchdog "
        "thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(S"
    ),
    (
        "eqNum=1522789, OpType=_ALLGATHER_BASE, NumelIn=298960, NumelOut=4783360, Timeout(ms)=600000) ran for 600003 "
        "milliseconds before timing out."
    ),
    "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):",
]
WHAT = [
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    (
        "  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, "
        "Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
    ),
]


def _timeouts(tmp_path: Path, lines: list[str]) -> list[tuple[int, int, str | None]]:
    p = tmp_path / "paste.log"
    p.write_text("\n".join(lines) + "\n")
    t = build_hang_view(read_logs([str(p)])).timeouts
    assert t is not None
    return sorted((int(r), int(s), o) for r, s, o in t.select("grank", "seq", "op_type").unique().iter_rows())


def test_record_cut_inside_a_number_is_joined_with_its_continuation(tmp_path: Path) -> None:
    assert _timeouts(tmp_path, NEMO) == [(0, 532341, "_ALLGATHER_BASE"), (2, 532339, "BROADCAST")]


def test_continuation_line_is_not_left_as_an_unknown_line(tmp_path: Path) -> None:
    p = tmp_path / "paste.log"
    p.write_text("\n".join(NEMO) + "\n")
    unknown = read_logs([str(p)]).unknown["text"].to_list()
    assert not any("ran for" in str(u) for u in unknown)


def test_termination_line_alone_counts_as_the_ranks_timeout(tmp_path: Path) -> None:
    assert _timeouts(tmp_path, SGLANG_WRAPPED) == [(1, 1522789, "_ALLGATHER_BASE")]
    assert _timeouts(tmp_path, WHAT) == [(5, 9141, "_ALLGATHER_BASE")]


def test_termination_beside_the_watchdog_line_is_not_counted_twice(tmp_path: Path) -> None:
    watchdog = (
        "[rank5]:[E ProcessGroupNCCL.cpp:607] [Rank 5] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) "
        "ran for 600020 milliseconds before timing out."
    )
    p = tmp_path / "paste.log"
    p.write_text("\n".join([watchdog, *WHAT]) + "\n")
    t = build_hang_view(read_logs([str(p)])).timeouts
    assert t is not None and t.height == 1
