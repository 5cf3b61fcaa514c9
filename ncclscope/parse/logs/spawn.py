"""Parse stage, log worker processes: start them, and start them early.

A worker is a fresh interpreter (`python -c`, see `pool.py` for why not `multiprocessing`) that spends
its first ~0.4 s importing Polars and the reader before it can take a piece. `prestart` lets the CLI
start the workers an analysis will use before its own imports, so both happen at once; `pool.run`
takes them (`take`) before starting any more. This module imports neither Polars nor the reader.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ncclscope.tuning import Tuning

_PKG = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_BOOT = (
    f"import sys; sys.path.insert(0, {_PKG!r}); import ncclscope; ncclscope.configure_process(); "
    "from ncclscope.parse.logs.worker import serve; serve()"
)
_SPARE: list[subprocess.Popen[bytes]] = []  # started by `prestart`, not yet taken by a pool


def workers_for(tuning: Tuning, size: int) -> int:
    """Worker processes for an input set of `size` bytes: none for a small set."""
    if size < tuning.log_pool_min_bytes:
        return 0
    if tuning.log_workers is not None:
        return tuning.log_workers
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, min(cores - 1, 7))


def start() -> subprocess.Popen[bytes] | None:
    """A new worker process (its stdin and stdout are the channel), or None if it cannot start."""
    try:
        return subprocess.Popen(
            [sys.executable, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None


def prestart(tuning: Tuning, log_bytes: int) -> int:
    """Start now the workers `workers_for` gives for `log_bytes` of logs; how many were started. A worker
    no pool takes ends when this process does (its stdin closes)."""
    want = workers_for(tuning, log_bytes) - len(_SPARE)
    for _ in range(max(0, want)):
        proc = start()
        if proc is None:
            break
        _SPARE.append(proc)
    return max(0, want)


def take() -> subprocess.Popen[bytes] | None:
    """A prestarted worker that is still alive, or a new one."""
    while _SPARE:
        proc = _SPARE.pop(0)
        if proc.poll() is None:
            return proc
    return start()
