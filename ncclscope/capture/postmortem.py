"""Capture stage, after torchrun exits: a rank killed by a signal it cannot catch (SIGKILL, SIGABRT)
leaves its manifest `starting` or `running`. The launcher rewrites those with what it observed:
the rank's exit code or signal from torchrun's failure summary (in run's console.log), and torchrun's
own exit status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ncclscope.run.record import write_json
from ncclscope.run.supervise import signal_name
from ncclscope.run.tee import unstamped, utc_now

UNFINISHED = frozenset({"starting", "running"})
# torchrun's ChildFailedError summary, one block per failed local worker:
#   rank      : 3 (local_rank: 3)
#   exitcode  : -9 (pid: 26749)
_BLOCK = re.compile(
    r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)",
    re.MULTILINE,
)


@dataclass(frozen=True)
class RankExit:
    """How one worker ended, as torchrun reported it."""

    rank: int
    exit_code: int  # negative: killed by signal -exit_code
    pid: int

    @property
    def signal(self) -> str | None:
        return signal_name(self.exit_code)


def torchrun_exits(text: str) -> dict[int, RankExit]:
    """Every rank torchrun's failure summary lists (Root Cause and Other Failures alike)."""
    return {
        int(m[1]): RankExit(rank=int(m[1]), exit_code=int(m[2]), pid=int(m[3])) for m in _BLOCK.finditer(text)
    }


def settle_manifests(
    manifests: Iterable[Path], console_log: Path, *, returncode: int, timed_out: bool
) -> list[int]:
    """Rewrite each manifest still `starting`/`running`; return the ranks rewritten.

    status becomes `killed` (torchrun saw a signal), `exited` (an exit code) or `lost` (torchrun said
    nothing about it, e.g. torchrun itself was killed at the outer deadline).
    """
    try:
        exits = torchrun_exits(unstamped(console_log.read_text(errors="replace")))
    except OSError:
        exits = {}
    settled = []
    for path in manifests:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("status") not in UNFINISHED:
            continue
        rank = int(data.get("rank", -1))
        seen = exits.get(rank)
        if seen is not None and seen.pid != data.get("pid"):
            seen = None  # a restarted worker's record, not this process
        data.update(_observed(data["status"], seen, returncode, timed_out, console_log))
        write_json(path, data)
        settled.append(rank)
    return sorted(settled)


def _observed(
    before: str, seen: RankExit | None, returncode: int, timed_out: bool, console_log: Path
) -> dict[str, object]:
    status = "lost" if seen is None else "killed" if seen.signal else "exited"
    observed: dict[str, object] = {
        "by": "launcher",
        "status_before": before,
        "torchrun_returncode": returncode,
        "timed_out": timed_out,
        "exit_code": None if seen is None else seen.exit_code,
        "signal": None if seen is None else seen.signal,
        "source": console_log.name if seen is not None else None,
    }
    out: dict[str, object] = {"status": status, "launcher_observed": observed, "ended_utc": utc_now()}
    if seen is not None:
        out["exit_code"] = seen.exit_code
        out["error"] = f"killed by {seen.signal}" if seen.signal else f"exited with status {seen.exit_code}"
    else:
        out["error"] = (
            "no exit status: torchrun was killed at the outer deadline"
            if timed_out
            else "no exit status in torchrun's summary"
        )
    return out
