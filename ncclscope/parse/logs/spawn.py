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
    "from ncclscope.parse.logs.worker import serve; serve(); sys.stdout.flush(); import os; os._exit(0)"
)
_SPARE: list[subprocess.Popen[bytes]] = []  # started by `prestart`, not yet taken by a pool


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def workers_for(tuning: Tuning, size: int) -> int:
    """Worker processes for an input set of `size` bytes: none for a small set."""
    if size < tuning.log_pool_min_bytes:
        return 0
    if tuning.log_workers is not None:
        return tuning.log_workers
    return max(0, min(_cores() - 1, 7))


def polars_threads(workers: int) -> int | None:
    """Polars threads for each process while the caller and `workers` workers read logs: the cores shared
    out (each process has its own Polars thread pool; on 2 cores two pools of 2 threads cost ~3% more
    wall time than one thread each, bench/README.md). None without workers: Polars' own default."""
    return max(1, _cores() // (workers + 1)) if workers > 0 else None


def start(threads: int | None = None) -> subprocess.Popen[bytes] | None:
    """A new worker process (its stdin and stdout are the channel), or None if it cannot start. `threads`:
    its Polars threads, unless the environment already says (POLARS_MAX_THREADS)."""
    env = dict(os.environ)
    if threads is not None:
        env.setdefault("POLARS_MAX_THREADS", str(threads))
    try:
        return subprocess.Popen(
            [sys.executable, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None


def prestart(tuning: Tuning, log_bytes: int) -> int:
    """Start now the workers `workers_for` gives for `log_bytes` of logs; how many were started. A worker
    no pool takes ends when this process does (its stdin closes)."""
    workers = workers_for(tuning, log_bytes)
    want = workers - len(_SPARE)
    for _ in range(max(0, want)):
        proc = start(polars_threads(workers))
        if proc is None:
            break
        _SPARE.append(proc)
    return max(0, want)


def take(workers: int) -> subprocess.Popen[bytes] | None:
    """A prestarted worker that is still alive, or a new one (for a pool of `workers`)."""
    while _SPARE:
        proc = _SPARE.pop(0)
        if proc.poll() is None:
            return proc
    return start(polars_threads(workers))
