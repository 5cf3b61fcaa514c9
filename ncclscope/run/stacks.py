"""Run stage, `--stacks`: when the job stops making progress (no byte added to console.log, the NCCL
logs or torchrun's files for `stall_s`), take one `py-spy dump` of every Python process under the
command, each with its rank when its environment says (RANK), into `stacks/stacks-<UTC>.md`. One round
per stall: the watch re-arms only once output grows again. py-spy must be installed and allowed to
attach (ptrace); whatever it says when it cannot is kept as that process's entry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ncclscope.run.supervise import descendants

DUMP_TIMEOUT_S = 30.0
MAX_OUTPUT = 256 * 1024


@dataclass(frozen=True)
class StackDump:
    pid: int
    rank: int | None
    command: str
    status: str  # ok | failed | timeout
    output: str


def python_pids(root: int) -> list[int]:
    """`root` and its descendants whose program is a Python interpreter."""
    out = []
    for pid in [root, *descendants(root)]:
        try:
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if exe.startswith("python"):
            out.append(pid)
    return out


def _proc_rank(pid: int) -> int | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"RANK="):
            v = item[5:]
            return int(v) if v.isdigit() and len(v) < 10 else None
    return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")[:300]
    except OSError:
        return "?"


def dump(pyspy: str, pid: int) -> StackDump:
    rank, cmd = _proc_rank(pid), _cmdline(pid)
    try:
        done = subprocess.run(
            [pyspy, "dump", "--pid", str(pid)],
            capture_output=True,
            timeout=DUMP_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return StackDump(pid, rank, cmd, "timeout", f"py-spy gave no answer within {DUMP_TIMEOUT_S:g} s")
    except OSError as e:
        return StackDump(pid, rank, cmd, "failed", str(e.strerror or e))
    text = (done.stdout[:MAX_OUTPUT] + done.stderr[: MAX_OUTPUT // 4]).decode("utf-8", "replace")
    return StackDump(pid, rank, cmd, "ok" if done.returncode == 0 else "failed", text)


def to_markdown(dumps: list[StackDump], taken: str, stalled_s: float) -> str:
    from ncclscope.run.snapshot import fence

    lines = [
        f"# Python stacks, {taken}",
        "",
        f"No output for {stalled_s:.0f} s; one `py-spy dump` per process.",
        "",
    ]
    for d in sorted(dumps, key=lambda d: (d.rank is None, d.rank or 0, d.pid)):
        who = f"rank {d.rank}, pid {d.pid}" if d.rank is not None else f"pid {d.pid}"
        f = fence(d.output)
        lines += [f"## {who}: {d.status}", "", f"`{d.command}`", "", f, d.output.rstrip("\n"), f, ""]
    return "\n".join(lines)


class StallWatch:
    """A daemon thread that watches the run's output and dumps stacks once per stall."""

    def __init__(
        self, root_pid: int, progress: Callable[[], int], out_dir: Path, stall_s: float, poll_s: float = 1.0
    ) -> None:
        self.pyspy = shutil.which("py-spy")
        self.root_pid, self.progress, self.out_dir = root_pid, progress, out_dir
        self.stall_s, self.poll_s = stall_s, poll_s
        self.rounds: list[Path] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="ncclscope-stacks")

    def start(self) -> None:
        if self.pyspy is not None:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=DUMP_TIMEOUT_S + 5)

    def _watch(self) -> None:
        last, since, armed = -1, time.monotonic(), True
        while not self._stop.wait(self.poll_s):
            now, size = time.monotonic(), self.progress()
            if size != last:
                last, since, armed = size, now, True
            elif armed and now - since >= self.stall_s:
                armed = False
                self._round(now - since)

    def _round(self, stalled_s: float) -> None:
        assert self.pyspy is not None
        dumps = [dump(self.pyspy, pid) for pid in python_pids(self.root_pid)]
        taken = datetime.now(timezone.utc)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"stacks-{taken:%Y%m%dT%H%M%SZ}.md"
        path.write_text(to_markdown(dumps, taken.isoformat(timespec="seconds"), stalled_s), encoding="utf-8")
        self.rounds.append(path)
