"""Run stage, supervision: start the command in a process group of its own, forward the signals the
wrapper receives (Ctrl-C, Slurm's SIGTERM, …) to that group, and report how the command ended.

The command runs in a new session, so a Ctrl-C at the terminal reaches ncclscope alone, which passes
it on once and keeps recording while the job shuts down; the wrapper lives to write the report.
With a deadline (capture's outer bound) the command and every process below it are SIGTERMed when it
passes, then SIGKILLed after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ncclscope.errors import InputError
from ncclscope.run.tee import ConsoleLog, start_pumps

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# How long the pumps may take to drain after the command ended (a daemon it left may hold the pipes).
DRAIN_S = 5.0
# Between the SIGTERM at a deadline and the SIGKILL: time for the workers to write their evidence.
KILL_GRACE_S = 10.0


def signal_name(code: int) -> str | None:
    """The signal a negative exit status (-N, as subprocess and torchrun report a signal death) names."""
    if code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


@dataclass(frozen=True)
class Ended:
    """How the command ended: `returncode` as Popen gives it (negative: killed by that signal)."""

    returncode: int
    elapsed_s: float
    forwarded: tuple[str, ...] = field(default=())  # signals passed on to the command, in order
    pid: int = 0
    timed_out: bool = False  # killed at the deadline

    @property
    def signal(self) -> str | None:
        return signal_name(self.returncode)

    @property
    def exit_status(self) -> int:
        """The status a shell would report: the exit code, or 128 + the signal number."""
        return self.returncode if self.returncode >= 0 else 128 - self.returncode


def run_command(
    argv: Sequence[str],
    env: Mapping[str, str],
    log: ConsoleLog,
    *,
    echo_out: IO[bytes] | None,
    echo_err: IO[bytes] | None,
    on_start: Callable[[int], None] | None = None,
    deadline_s: float | None = None,
) -> Ended:
    """Run `argv` to its end (or its deadline), teeing its output into `log`; forwards signals while it
    runs (from the main thread only, where Python delivers them)."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
    except OSError as e:
        raise InputError(f"cannot start {argv[0]!r}: {e.strerror or e}") from None
    assert proc.stdout is not None and proc.stderr is not None
    pumps = start_pumps(proc.stdout, proc.stderr, echo_out, echo_err, log)
    forwarded: list[str] = []
    previous = _install(proc, forwarded) if threading.current_thread() is threading.main_thread() else {}
    timed_out = False
    try:
        if on_start is not None:
            on_start(proc.pid)
        rc = proc.wait(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        rc, timed_out = kill_tree(proc), True
    except BaseException:
        kill_tree(proc)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for t in pumps:
        t.join(timeout=DRAIN_S)
    return Ended(rc, time.monotonic() - t0, tuple(forwarded), proc.pid, timed_out)


def _install(proc: subprocess.Popen[bytes], forwarded: list[str]) -> dict[signal.Signals, Any]:
    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signal.Signals(signum).name)
        try:
            os.killpg(proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    previous: dict[signal.Signals, Any] = {}
    for sig in FORWARDED:
        try:
            previous[sig] = signal.signal(sig, forward)
        except (OSError, ValueError):
            continue
    return previous


def kill_tree(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM the command and every process below it (torchrun starts each worker in a session of its
    own, so its process group alone would miss them), so they flush their evidence; SIGKILL whatever is
    left after KILL_GRACE_S."""
    pids = [proc.pid, *descendants(proc.pid)]
    _signal_all(proc.pid, pids, signal.SIGTERM)
    try:
        return proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        _signal_all(proc.pid, [p for p in pids if _alive(p)], signal.SIGKILL)
    return proc.wait()


def _signal_all(leader: int, pids: Sequence[int], sig: signal.Signals) -> None:
    try:
        os.killpg(leader, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            stat = entry.read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
