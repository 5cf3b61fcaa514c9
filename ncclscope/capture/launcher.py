"""Capture stage, launcher: runs torchrun as a subprocess (an argument list, never a shell string)
under an outer deadline, keeps torchrun's own output as evidence and writes the run manifest.

torch is needed only to run the job; building the command and checking options needs none.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ncclscope.capture.config import Backend, CaptureConfig, Layout, job_env
from ncclscope.capture.evidence import utc_now
from ncclscope.capture.faults import NCCL_ONLY, Fault, check_ranks
from ncclscope.errors import InputError, MissingExtraError

WORKER_MODULE = "ncclscope.capture.worker"
KILL_GRACE_S = 10.0


@dataclass(frozen=True)
class CaptureOptions:
    out_dir: Path
    nproc_per_node: int = 2
    nnodes: str = "1"
    backend: Backend = "gloo"
    faults: tuple[Fault, ...] = ()
    timeout_s: float = 30.0
    run_timeout_s: float | None = None
    coll: bool = False
    extra_env: tuple[tuple[str, str], ...] = ()
    torchrun_args: tuple[str, ...] = ()

    @property
    def deadline_s(self) -> float:
        """The outer bound: start-up, the collectives, one process-group timeout, then teardown."""
        return self.run_timeout_s if self.run_timeout_s is not None else 2 * self.timeout_s + 120.0


@dataclass(frozen=True)
class CaptureResult:
    out_dir: Path
    argv: tuple[str, ...]
    returncode: int
    timed_out: bool
    elapsed_s: float
    files: dict[str, list[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def require_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        raise MissingExtraError("`ncclscope capture` needs PyTorch: pip install 'ncclscope[capture]'")


def resolve_backend(choice: str) -> Backend:
    """`auto` → nccl when PyTorch sees a CUDA GPU, else gloo."""
    if choice in ("nccl", "gloo"):
        return choice  # type: ignore[return-value]
    if choice != "auto":
        raise InputError(f"--backend: expected nccl, gloo or auto, got {choice!r}")
    require_torch()
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def world_size(opts: CaptureOptions) -> int:
    """Ranks in the job; for an elastic range `MIN:MAX` nodes, the largest."""
    top = opts.nnodes.split(":")[-1].strip()
    if not top.isdigit() or int(top) < 1:
        raise InputError(f"--nnodes: expected N or MIN:MAX, got {opts.nnodes!r}")
    return opts.nproc_per_node * int(top)


def check_options(opts: CaptureOptions) -> tuple[str, ...]:
    """Reject options that cannot work; return notes about ones that will have no effect."""
    if opts.nproc_per_node < 1:
        raise InputError("--nproc-per-node must be at least 1")
    if opts.timeout_s <= 0:
        raise InputError("--timeout must be > 0 seconds")
    check_ranks(opts.faults, world_size(opts))
    if opts.nnodes != "1" and not _has_rendezvous(opts.torchrun_args):
        raise InputError(f"--nnodes {opts.nnodes}: every node must meet at one rendezvous; add it after `--`, "
                         "e.g. -- --rdzv-backend c10d --rdzv-endpoint HOST:29500 --rdzv-id JOB")
    if opts.out_dir.exists() and (not opts.out_dir.is_dir() or any(opts.out_dir.iterdir())):
        raise InputError(f"--out {opts.out_dir}: exists and is not an empty directory; pick a new one")
    if opts.backend == "gloo":
        return tuple(f"{f.spec or f.kind}: only changes NCCL's behaviour; with gloo it is recorded, "
                     f"nothing more" for f in opts.faults if f.kind in NCCL_ONLY)
    return ()


def torchrun_argv(opts: CaptureOptions) -> list[str]:
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(opts.nproc_per_node),
            "--nnodes", opts.nnodes]
    if opts.nnodes == "1" and not _has_rendezvous(opts.torchrun_args):
        argv.append("--standalone")  # a free local port per run, so runs never collide
    return [*argv, *opts.torchrun_args, "-m", WORKER_MODULE]


def _has_rendezvous(args: Sequence[str]) -> bool:
    return any(a.startswith(("--rdzv", "--master")) for a in args)


def config_for(opts: CaptureOptions) -> CaptureConfig:
    return CaptureConfig(out_dir=str(opts.out_dir.resolve()), backend=opts.backend, timeout_s=opts.timeout_s,
                         faults=opts.faults, coll=opts.coll, extra_env=opts.extra_env)


def run_capture(opts: CaptureOptions, *, echo: Callable[[str], None] | None = None) -> CaptureResult:
    """Run the job to completion or to the deadline; always leaves the run manifest behind."""
    require_torch()
    notes = check_options(opts)
    cfg = config_for(opts)
    lay = cfg.layout
    lay.make_dirs()
    argv = torchrun_argv(opts)
    env = {**os.environ, **job_env(cfg)}
    started, t0 = utc_now(), time.monotonic()
    with open(lay.launcher_log, "w", encoding="utf-8", errors="replace") as log:
        rc, timed_out = _supervise(argv, env, opts.deadline_s, log, echo)
    elapsed = time.monotonic() - t0
    if timed_out:
        notes += (f"the run passed its {opts.deadline_s:g} s deadline and was killed",)
    result = CaptureResult(out_dir=lay.root, argv=tuple(argv), returncode=rc, timed_out=timed_out,
                           elapsed_s=elapsed, files=collect_files(lay), notes=notes)
    _write_run_manifest(opts, cfg, result, started)
    return result


def _supervise(argv: list[str], env: dict[str, str], deadline_s: float, log: TextIO,
               echo: Callable[[str], None] | None) -> tuple[int, bool]:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, text=True, errors="replace")
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
        fields = stat[stat.rfind(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def collect_files(lay: Layout) -> dict[str, list[str]]:
    kinds = {"logs": "logs", "traces": "traces", "flight": "flight", "manifest": "manifest"}
    return {k: sorted(str(p.relative_to(lay.root)) for p in (lay.root / sub).glob("*")
                      if p.is_file() and not p.name.endswith(".tmp"))
            for k, sub in kinds.items()}


def _write_run_manifest(opts: CaptureOptions, cfg: CaptureConfig, res: CaptureResult, started: str) -> None:
    host = socket.gethostname() if world_size(opts) > opts.nproc_per_node else None
    data = {
        "schema": "ncclscope.capture.run/1", "argv": list(res.argv), "host": host or socket.gethostname(),
        "backend": opts.backend, "nproc_per_node": opts.nproc_per_node, "nnodes": opts.nnodes,
        "world_size": world_size(opts), "timeout_s": opts.timeout_s, "deadline_s": opts.deadline_s,
        "faults": [f.to_json() for f in opts.faults], "config": cfg.to_json(),
        "job_env": {k: v for k, v in job_env(cfg).items() if k != "NCCLSCOPE_CAPTURE_CONFIG"},
        "started_utc": started, "ended_utc": utc_now(), "elapsed_s": round(res.elapsed_s, 3),
        "returncode": res.returncode, "timed_out": res.timed_out, "files": res.files, "notes": list(res.notes),
    }
    path = cfg.layout.run_manifest(host)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
