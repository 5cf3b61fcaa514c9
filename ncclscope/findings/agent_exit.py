"""Findings stage, the launcher's own failure line when no failure table names the rank.

torchrun's agent logs `failed (exitcode: C) local_rank: L (pid: P) of binary: …`
(torch/distributed/elastic/multiprocessing/api.py, `_poll`/`PContext` since torch 1.9) for the first
worker it sees fail, before the ChildFailedError table that names the global rank. Pasted excerpts
often keep the line and cut the table; the line alone still says which worker died and how. A signal
death is said with its meaning (`SIGNALS`); the global rank is not named (the agent prints the local
rank, and the node's place in the job is not in the line), so the finding carries no rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from ncclscope.hang.classify import ev
from ncclscope.records import Finding


@dataclass(frozen=True)
class Signal:
    name: str
    meaning: str


# Signals that kill a worker from outside its own error path, with what they usually mean (signal(7)).
# Not SIGTERM/SIGINT/SIGHUP (the agent or the scheduler stopping it: `hang.exits.STOP_SIGNALS`), and not
# SIGABRT (6): the NCCL watchdog aborts its own process after a timeout or NCCL error, an echo whose
# cause is in the lines before it.
SIGNALS = {
    9: Signal(
        "SIGKILL",
        "killed from outside: most often the kernel's OOM killer (host memory), else the scheduler or a user",
    ),
    11: Signal("SIGSEGV", "a segmentation fault in native code (an extension, a driver, a library)"),
    7: Signal("SIGBUS", "a bus error: often /dev/shm too small for the data loaders or NCCL's shared memory"),
    4: Signal("SIGILL", "an illegal instruction: a binary built for another CPU or GPU architecture"),
    8: Signal("SIGFPE", "an arithmetic fault (an integer division by zero) in native code"),
}
_FAILED = re.compile(r"^failed exitcode (-?\d+) local_rank (\d+) pid (\d+)")


def agent_failures(torch: pl.DataFrame, reported_pids: set[int], why: str, fix: str) -> Iterable[Finding]:
    """A `rank-exited` finding per worker the agent saw killed by a signal (`SIGNALS`) whose pid no
    failure table row already reports (`reported_pids`)."""
    rows = torch.filter(
        (pl.col("kind") == "launcher") & pl.col("detail").str.starts_with("failed exitcode ")
    ).sort("path", "line")
    for path, line, text, detail in rows.select("path", "line", "text", "detail").iter_rows():
        m = _FAILED.match(str(detail))
        if m is None:
            continue
        code, local, pid = int(m.group(1)), int(m.group(2)), int(m.group(3))
        sig = SIGNALS.get(-code) if code < 0 else None
        if sig is None or pid in reported_pids:
            continue
        yield Finding(
            id="rank-exited",
            severity="error",
            title=f"local_rank {local} (pid {pid}) exited: torchrun reports exit code {code} ({sig.name}: {sig.meaning})",
            why=why,
            fix=fix,
            ranks=(),
            evidence=(ev(path, line, text),),
            metrics={"local_rank": local, "pid": pid, "exit_code": code, "signal": sig.name},
        )
