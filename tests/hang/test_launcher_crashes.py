"""Crash lines of launchers other than torchrun (OpenMPI/PRRTE, srun, UCX) name the rank that died.

Real lines, quoted from public threads (provenance in samples/logs/*.meta.json and below):
- horovod/horovod#469: `mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 (Killed).`
- PaddlePaddle/Paddle#13288 (title): `… rank 140 with PID 363 on node 10.87.102.19 exited on signal 9 (Killed).`
- horovod/horovod#489: `[nmyjs-202-75:40360:0] Caught signal 11 (Segmentation fault: address not mapped …)`
- NVIDIA/nccl-tests#218: `mpirun noticed that process rank 3 with PID 1167 on node 10.10.21.2 exited on signal 11 …`
- NVIDIA/nccl-tests#294: OpenMPI's `Process name: [[12167,1],10]` / `Exit code:    3` report.
- an HPC support-ticket corpus (public, via find_string): `srun: error: f0778: task 366: Segmentation fault
  (core dumped)` and `srun: error: cn-0013: task 0: Exited with exit code 127`.
The multi-task `tasks 0-3,5` form and `prterun` are built from srun's and PRRTE's output formats.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ncclscope.hang import build_hang_view
from ncclscope.hang import crashes as C
from ncclscope.hang import exits as X
from ncclscope.hang.progress import torch_rows
from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines.runtime_lines import match
from ncclscope.session import analyze

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"
MPI_469 = "mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 (Killed)."
MPI_13288 = (
    "mpirun noticed that process rank 140 with PID 363 on node 10.87.102.19 exited on signal 9 (Killed)."
)
UCX_489 = (
    "[nmyjs-202-75:40360:0] Caught signal 11 (Segmentation fault: address not mapped to object at address "
    "0x565391a57a40)"
)
SRUN_SEGV = "srun: error: f0778: task 366: Segmentation fault (core dumped)"
SRUN_EXIT = "srun: error: cn-0013: task 0: Exited with exit code 127"


@pytest.mark.parametrize(
    ("line", "rank", "detail"),
    [
        (MPI_469, 7, "died signal 9 pid 0 via mpirun node HOSTNAME"),
        (MPI_13288, 140, "died signal 9 pid 363 via mpirun node 10.87.102.19"),
        ("prterun noticed that process rank 1 with PID 42 on node n1 exited on signal 6 (Aborted).", 1, None),
        (UCX_489, None, "died signal 11 pid 40360 via ucx node nmyjs-202-75"),
        (SRUN_SEGV, None, "died tasks 366 via srun node f0778 how Segmentation fault (core dumped)"),
        (SRUN_EXIT, None, "died tasks 0 via srun node cn-0013 how Exited with exit code 127"),
        (
            "srun: error: node-1: tasks 0-3,5: Killed",
            None,
            "died tasks 0-3,5 via srun node node-1 how Killed",
        ),
        (
            # NVIDIA/nccl-tests#218
            "mpirun noticed that process rank 3 with PID 1167 on node 10.10.21.2 exited on signal 11 (Segmentation fault).",
            3,
            "died signal 11 pid 1167 via mpirun node 10.10.21.2",
        ),
        ("  Process name: [[12167,1],10]", 10, "died first via mpirun-table"),  # NVIDIA/nccl-tests#294
        ("  Exit code:    3", None, "died exitcode 3 via mpirun-table"),
    ],
)
def test_grammar_reads_crash_lines(line: str, rank: int | None, detail: str | None) -> None:
    row = match(line)
    assert row is not None and row["kind"] == "launcher"
    assert row["rank"] == rank
    assert detail is None or row["detail"] == detail


def test_srun_how_and_task_lists() -> None:
    assert C._how("Exited with exit code 127") == (127, None)
    assert C._how("Segmentation fault (core dumped)") == (-11, "SIGSEGV")
    assert C._how("Killed") == (-9, "SIGKILL")
    assert C._how("Something else") == (None, None)
    assert C.task_ids("0-3,5") == [0, 1, 2, 3, 5]
    assert C.task_ids("3-1") == [] and C.task_ids("0-99999999") == [] and C.task_ids("x") == []


def _write(tmp: Path, name: str, lines: list[str]) -> str:
    p = tmp / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _timeout(r: int) -> str:
    return (
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for "
        f"600031 milliseconds before timing out."
    )


def test_mpirun_kill_names_the_rank_the_others_wait_for(tmp_path: Path) -> None:
    """Ranks 0-6 time out in the watchdog; mpirun says rank 7 was SIGKILLed: rank 7 died first."""
    log = _write(tmp_path, "job.log", [_timeout(r) for r in range(7)] + [MPI_469])
    logs = read_logs([log])
    exits = X.launcher_exits(X.with_file_rank(torch_rows(logs), X.file_ranks(logs)))
    row = exits.filter(pl.col("rank") == 7).row(0, named=True)
    assert (row["exit_code"], row["signal"], row["pid"], row["stopped_by_launcher"]) == (
        -9,
        "SIGKILL",
        None,
        False,
    )
    rep = build_hang_view(logs)
    assert [r for r, _ in rep.exited] == [7]
    found = [f for f in analyze([log]).findings if f.id == "rank-exited"]
    assert [f.ranks for f in found] == [(7,)]
    assert found[0].title == "Rank 7 exited: mpirun reports exit code -9 (SIGKILL)"


def test_srun_task_is_a_rank_only_without_torchrun_agents(tmp_path: Path) -> None:
    alone = _write(
        tmp_path, "srun.log", [_timeout(r) for r in (0, 1, 2)] + ["srun: error: n4: task 3: Killed"]
    )
    assert [r for r, _ in build_hang_view(read_logs([alone])).exited] == [3]
    agents = _write(
        tmp_path,
        "agents.log",
        [_timeout(r) for r in (0, 1, 2)]
        + ["Sending process 26024 closing signal SIGTERM", "srun: error: n4: task 3: Killed"],
    )
    rows = X.with_file_rank(
        torch_rows(read_logs([agents])), pl.DataFrame(schema={"path": pl.Utf8, "frank": pl.Int64})
    )
    assert X.crash_exits(rows).is_empty()  # srun started torchrun agents: task 3 is a node


def test_srun_scancel_sigterm_is_the_launcher_stopping_ranks(tmp_path: Path) -> None:
    log = _write(tmp_path, "stop.log", ["srun: error: n4: tasks 0-1: Terminated"])
    ex = X.crash_exits(torch_rows(read_logs([log])))
    assert ex["stopped_by_launcher"].to_list() == [True, True]
    assert X.died_ranks(ex, set(), {0, 1}) == {}


def test_ucx_signal_names_the_rank_of_its_file(tmp_path: Path) -> None:
    log = _write(tmp_path, "rank5.log", ["nmyjs-202-75:40360:40360 [0] NCCL INFO Using network IB", UCX_489])
    logs = read_logs([log])
    ex = X.crash_exits(X.with_file_rank(torch_rows(logs), X.file_ranks(logs)))
    assert ex.select("rank", "exit_code", "signal", "pid").rows() == [(5, -11, "SIGSEGV", 40360)]
    assert X.rank_ends(logs, X.file_ranks(logs))["crashed"].to_list() == [True]


@pytest.mark.parametrize(
    ("name", "want"),
    [("horovod469_mpirun_rank7_signal9", [(7,)]), ("horovod489_ucx_caught_signal_11", [])],
)
def test_bundled_samples(name: str, want: list[tuple[int, ...]]) -> None:
    assert (SAMPLES / f"{name}.meta.json").exists()
    found = [f.ranks for f in analyze([str(SAMPLES / f"{name}.log")]).findings if f.id == "rank-exited"]
    assert found == want


def test_openmpi_exit_report_pairs_process_name_and_exit_code(tmp_path: Path) -> None:
    sample = SAMPLES / "nccltests294_mpirun_first_process_exit_code.log"
    ex = X.crash_exits(torch_rows(read_logs([str(sample)])))
    assert ex.select("rank", "exit_code", "signal", "stopped_by_launcher").rows() == [(10, 3, None, False)]
    assert X.died_ranks(ex, set(), set()) == {}  # exit code 3, rank 10's own log absent: not proof
    assert set(X.died_ranks(ex, set(), {10})) == {10}
    far = _write(tmp_path, "far.log", ["  Process name: [[1,1],2]", "a", "b", "c", "  Exit code:    3"])
    assert X.crash_exits(torch_rows(read_logs([far]))).is_empty()  # too far apart: not one report
