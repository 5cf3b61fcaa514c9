"""Capture stage, supervision: run torchrun under an outer deadline, copy its output to the launcher
log (and the console), and at the deadline SIGTERM then SIGKILL torchrun and every worker below it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

KILL_GRACE_S = 10.0


def supervise(
    argv: list[str], env: dict[str, str], deadline_s: float, log: TextIO, echo: Callable[[str], None] | None
) -> tuple[int, bool]:
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
        errors="replace",
    )
    pump = threading.Thread(target=_pump, args=(proc, log, echo), daemon=True)
    pump.start()
    try:
        rc = proc.wait(timeout=deadline_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        rc, timed_out = _kill_tree(proc), True
    except BaseException:
        _kill_tree(proc)
        raise
    pump.join(timeout=5)
    return rc, timed_out


def _pump(proc: subprocess.Popen[str], log: TextIO, echo: Callable[[str], None] | None) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        log.flush()
        if echo is not None:
            echo(line.rstrip("\n"))


def _kill_tree(proc: subprocess.Popen[str]) -> int:
    """SIGTERM torchrun and its workers (each in its own session) so they flush their evidence;
    SIGKILL whatever is left after a grace period."""
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
    """Every process below `pid`, from /proc (torchrun starts each worker in a new session, so
    killing torchrun's process group alone would leave them running)."""
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
