"""rank-exited from application output (issue 10): the rank whose own exception ended the job is named
with its cause and evidence; the others' timeouts, lost peers and SIGTERMs are its echoes.

Samples: two whole CPU captures (torch 2.13 + gloo, samples/logs/*_cpu_alloc_fail_gloo_4r.meta.json)
where rank 2's allocation fails, nccl1928 (a real excerpt whose only exception is a remote-error echo),
samples/capture/crash (torchrun's table: rank 3 SIGKILLed). Synthetic logs use torch's line shapes."""

from __future__ import annotations

from pathlib import Path

import ncclscope
from ncclscope.records import Finding

from .fixtures import scenario

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "samples" / "logs"


def _exited(paths: list[str] | str) -> list[Finding]:
    s = ncclscope.analyze(paths if isinstance(paths, list) else [paths])
    return [f for f in s.findings if f.id == "rank-exited" and f.severity == "error"]


def _write(tmp_path: Path, name: str, lines: list[str]) -> str:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_torchrun_sample_names_rank_2_with_its_cause() -> None:
    path = str(LOGS / "torchrun_tee_cpu_alloc_fail_gloo_4r.log")
    s = ncclscope.analyze([path])
    ex = [f for f in s.findings if f.id == "rank-exited" and f.severity == "error"]
    assert [f.ranks for f in ex] == [(2,)]
    f = ex[0]
    assert "RuntimeError" in f.title and "can't allocate memory" in f.title
    assert f.metrics["cause"] == "oom" and f.metrics["exc_type"] == "RuntimeError"
    assert (f.evidence[0].path, f.evidence[0].line) == (path, 38)  # the rank's own exception line
    lines = {e.line for e in f.evidence}
    assert {27, 186} <= lines  # its traceback start and torchrun's record of it
    assert f.metrics["echo_ranks"] == [0, 1, 3]  # gloo `Connection closed by peer` on the survivors
    assert "SIGTERM" in str(f.metrics["echoes"])
    hang = [f for f in s.findings if f.id == "collective-hang"]
    assert all(h.ranks == (2,) for h in hang)


def test_spawn_sample_links_process_header() -> None:
    path = str(LOGS / "spawn_cpu_alloc_fail_gloo_4r.log")
    s = ncclscope.analyze([path])
    ex = [f for f in s.findings if f.id == "rank-exited" and f.severity == "error"]
    assert [f.ranks for f in ex] == [(2,)]
    f = ex[0]
    assert f.metrics["via"] == "spawn" and f.metrics["local_rank"] == 2 and f.metrics["cause"] == "oom"
    assert [e.line for e in f.evidence[:3]] == [57, 48, 49]  # exception, `-- Process 2 terminated`, traceback
    assert not [f for f in s.findings if f.id == "collective-hang"]  # nobody waited: not a hang


def test_remote_error_is_an_echo_not_a_cause() -> None:
    assert _exited(str(LOGS / "nccl1928_rank_prefixed_traceback_ofi_undeliverable_2_28_8.log")) == []


def test_capture_crash_keeps_sigkill_rank_and_lists_echoes() -> None:
    logs = sorted(str(p) for p in (ROOT / "samples" / "capture" / "crash" / "logs").glob("*.log"))
    ex = _exited(logs)
    assert [f.ranks for f in ex] == [(3,)]
    assert "SIGKILL" in ex[0].title and ex[0].metrics["echo_ranks"] == [0, 2]


def test_oom_in_per_rank_nccl_logs(tmp_path: Path) -> None:
    ex = _exited(scenario("d", 8, culprit=5).write(tmp_path))
    assert [f.ranks for f in ex] == [(5,)]
    assert ex[0].metrics["exc_type"] == "torch.OutOfMemoryError" and ex[0].metrics["cause"] == "oom"
    assert ex[0].metrics["echo_ranks"] == [r for r in range(8) if r != 5]


def test_watchdog_echoes_of_a_tagged_oom(tmp_path: Path) -> None:
    wd = (
        "[rank{r}]:[E1010 10:10:10.123456789 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=40, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
    )
    lines = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "train.py", line 9, in step',
        (
            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity"
            " of 79.10 GiB of which 1.02 GiB is free."
        ),
    ]
    lines += [wd.format(r=r) for r in (0, 2, 3)]
    ex = _exited(_write(tmp_path, "job.log", lines))
    assert [f.ranks for f in ex] == [(1,)]
    assert ex[0].metrics["echo_ranks"] == [0, 2, 3] and ex[0].evidence[0].line == 3


def test_keyboard_interrupt_is_no_cause(tmp_path: Path) -> None:
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "train.py", line 9, in step',
        "[rank0]: KeyboardInterrupt",
    ]
    assert _exited(_write(tmp_path, "job.log", lines)) == []


def test_handled_exception_mid_log_is_no_cause(tmp_path: Path) -> None:
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "ckpt.py", line 3, in save',
        "[rank0]: OSError: [Errno 28] No space left on device",
    ]
    lines += [f"[rank0]: step {i} loss 1.0" for i in range(100)]
    assert _exited(_write(tmp_path, "job.log", lines)) == []


def test_torchrun_table_alone_names_root_cause_and_spares_sigterm(tmp_path: Path) -> None:
    lines = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Failures:",
        "[1]:",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -15 (pid: 101)  (SIGTERM)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 101",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 102)",
        "  error_file: /tmp/e/1/error.json",
        "  traceback : Traceback (most recent call last):",
        '    File "train.py", line 9, in step',
        "  torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 7.80 GiB total)",
    ]
    ex = _exited(_write(tmp_path, "torchrun.log", lines))
    assert [f.ranks for f in ex] == [(1,)]
    assert ex[0].metrics["via"] == "torchrun_table" and ex[0].evidence[0].line == 15
    assert 10 in {e.line for e in ex[0].evidence}  # the record's `rank : 1` line
