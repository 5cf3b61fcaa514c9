"""Run stage, supervision: start the command in a process group of its own, forward the signals the
wrapper receives (Ctrl-C, Slurm's SIGTERM, …) to that group, and report how the command ended.

The command runs in a new session, so a Ctrl-C at the terminal reaches ncclscope alone, which passes
it on once and keeps recording while the job shuts down; the wrapper lives to write the report.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ncclscope.capture.postmortem import signal_name
from ncclscope.errors import InputError
from ncclscope.run.tee import ConsoleLog, start_pumps

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# How long the pumps may take to drain after the command ended (a daemon it left may hold the pipes).
DRAIN_S = 5.0


@dataclass(frozen=True)
class Ended:
    """How the command ended: `returncode` as Popen gives it (negative: killed by that signal)."""

    returncode: int
    elapsed_s: float
    forwarded: tuple[str, ...] = field(default=())  # signals passed on to the command, in order
    pid: int = 0

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
) -> Ended:
    """Run `argv` to its end, teeing its output into `log`; forwards signals while it runs (from the
    main thread only, where Python delivers them)."""
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
    try:
        if on_start is not None:
            on_start(proc.pid)
        rc = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for t in pumps:
        t.join(timeout=DRAIN_S)
    return Ended(returncode=rc, elapsed_s=time.monotonic() - t0, forwarded=tuple(forwarded), pid=proc.pid)


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
