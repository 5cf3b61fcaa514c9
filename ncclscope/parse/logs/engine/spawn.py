"""Parse stage, log worker processes: start them, start them early, and give each process a CPU of its own.

A worker is a fresh interpreter (`python -c`, see `pool.py` for why not `multiprocessing`) that spends
its first ~0.4 s importing Polars and the reader before it can take a piece. `prestart` lets the CLI
start the workers an analysis will use before its own imports, so both happen at once; `pool.run`
takes them (`take`) before starting any more. This module imports neither Polars nor the reader.

Pinning (Linux, `Tuning.pin_log_processes`): while the pieces are read, each process runs one Polars
thread beside its Python thread, and every Polars call hands work from one to the other. When the two
threads sit on different CPUs, each hand-over wakes a thread on another CPU (an inter-processor
interrupt, slow on a VM): on the 2-core bench box a 50-row filter took 107 µs unpinned and 48 µs with
both threads on one CPU, a join 233 and 109 µs. So the CLI's workers and the caller each keep to one CPU
of the allowed set, from before Polars starts its thread (which inherits it) until the pieces are read
(`release`); the stages after the reading, traces and their workers get every CPU back.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from ncclscope.tuning import Tuning

_PKG = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
)
_PIN_ENV = "NCCLSCOPE_PIN_CPU"  # the CPU a worker keeps to, read by `pin_from_env` before Polars starts
_BOOT = (
    f"import sys; sys.path.insert(0, {_PKG!r}); import ncclscope; ncclscope.configure_process(); "
    "from ncclscope.parse.logs.engine.spawn import pin_from_env; pin_from_env(); "
    "from ncclscope.parse.logs.engine.worker import serve; serve(); sys.stdout.flush(); import os; os._exit(0)"
)
_SPARE: list[subprocess.Popen[bytes]] = []  # started by `prestart`, not yet taken by a pool
_PINNED: list[bool] = []  # whether `prestart` pinned this process (`release` undoes it)


@functools.cache
def _allowed() -> tuple[int, ...]:
    """The CPUs this process may run on, as it started (read once, before `prestart` pins it); () off Linux."""
    return tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()


def _cores() -> int:
    return len(_allowed()) or os.cpu_count() or 1


def _pin(tid: int, cpus: set[int]) -> bool:
    try:
        os.sched_setaffinity(tid, cpus)
    except (OSError, AttributeError):  # a CPU taken away meanwhile, or no such call here
        return False
    return True


def pin_from_env() -> None:
    """In a worker, before Polars starts its thread: keep to the CPUs the caller chose (comma-separated;
    none given: those it inherited)."""
    text = os.environ.pop(_PIN_ENV, "")
    cpus = {int(c) for c in text.split(",") if c.isascii() and c.isdigit() and len(c) <= 6}
    if cpus:
        _pin(0, cpus)


def release() -> None:
    """Give every thread of this process (Polars' included) the CPUs it had before `prestart` pinned it."""
    if not _PINNED:
        return
    _PINNED.clear()
    cpus = set(_allowed())
    done: set[int] = set()
    for _ in range(2):  # twice: a thread started by one not yet given back inherits its single CPU
        try:
            tids = {int(t) for t in os.listdir("/proc/self/task")} - done
        except OSError:
            tids = {0}
        for tid in tids:
            _pin(tid, cpus)
        done |= tids


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


def start(threads: int | None = None, cpu: int | None = None) -> subprocess.Popen[bytes] | None:
    """A new worker process (its stdin and stdout are the channel), or None if it cannot start. `threads`:
    its Polars threads, unless the environment already says (POLARS_MAX_THREADS); `cpu`: the one CPU it
    keeps to (None: any)."""
    env = dict(os.environ)
    env.pop(_PIN_ENV, None)
    if threads is not None:
        env.setdefault("POLARS_MAX_THREADS", str(threads))
    if cpu is not None:
        env[_PIN_ENV] = str(cpu)
    elif _PINNED:  # started while this process keeps to one CPU: the child gets them all back
        env[_PIN_ENV] = ",".join(map(str, _allowed()))
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
    no pool takes ends when this process does (its stdin closes). With `tuning.pin_log_processes`, each
    worker keeps to a CPU of its own and so does this process, if Polars has not started yet (its thread
    would not follow), until `release`."""
    workers = workers_for(tuning, log_bytes)
    want = workers - len(_SPARE)
    cpus = _allowed() if tuning.pin_log_processes and workers > 0 and not _SPARE else ()
    pin = len(cpus) > workers  # a CPU for this process and one for each worker
    for i in range(max(0, want)):
        proc = start(polars_threads(workers), cpus[1 + i] if pin else None)
        if proc is None:
            break
        _SPARE.append(proc)
    if pin and "polars" not in sys.modules and _pin(0, {cpus[0]}):
        _PINNED.append(True)
    return max(0, want)


def take(workers: int) -> subprocess.Popen[bytes] | None:
    """A prestarted worker that is still alive, or a new one (for a pool of `workers`)."""
    while _SPARE:
        proc = _SPARE.pop(0)
        if proc.poll() is None:
            return proc
    return start(polars_threads(workers))
