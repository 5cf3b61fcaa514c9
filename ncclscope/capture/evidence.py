"""Capture stage, per-rank evidence written by the worker: the manifest (who, where, what versions,
which environment, which fault) and the Flight Recorder dump when PyTorch did not write one.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncclscope.capture.config import CaptureConfig, Layout
from ncclscope.run.nccl import loaded_nccl_version
from ncclscope.run.record import write_json
from ncclscope.run.settings import SETTINGS
from ncclscope.run.snapshot import captured_env
from ncclscope.run.tee import utc_now
from ncclscope.version import __version__


@dataclass
class Manifest:
    """One rank's manifest, rewritten as the run goes on (so a rank that dies still left one)."""

    path: Path
    cfg: CaptureConfig
    rank: int
    local_rank: int
    world_size: int
    data: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        self.data = {
            "schema": "ncclscope.capture.rank/1",
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world_size": self.world_size,
            "node_rank": int(os.environ.get("GROUP_RANK", "0")),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "backend": self.cfg.backend,
            "versions": {"python": platform.python_version(), "ncclscope": __version__},
            "faults": [f.to_json() for f in self.cfg.faults if f.applies_to(self.rank)],
            "job_faults": [f.to_json() for f in self.cfg.faults],
            "config": self.cfg.to_json(),
            "env": captured_env(os.environ),
            "files": self._files(),
            "started_utc": utc_now(),
            "status": "starting",
        }
        self.write()

    def _files(self) -> dict[str, str]:
        lay = self.cfg.layout
        files = {
            "log": lay.log(self.rank),
            "trace": lay.trace(self.rank),
            "flight": flight_path(lay, self.rank),
        }
        nccl = nccl_file(os.environ.get("NCCL_DEBUG_FILE"))
        if self.cfg.backend == "nccl" and nccl is not None:
            files["nccl_log"] = nccl
        return {k: os.path.relpath(v, lay.root) for k, v in files.items()}

    def update(self, **kw: Any) -> None:
        self.data.update(kw)
        self.write()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.path, self.data)


# The Flight Recorder dump path's names, in the order PyTorch reads them (run's setting).
_FLIGHT_NAMES = next(s.names for s in SETTINGS if "TORCH_FR_DUMP_TEMP_FILE" in s.names)


def flight_path(lay: Layout, rank: int) -> Path:
    """Where PyTorch writes this rank's dump: the prefix run set (or the user's, which won), then the rank."""
    prefix = next((os.environ[n] for n in _FLIGHT_NAMES if os.environ.get(n)), None)
    return Path(f"{prefix}{rank}") if prefix else lay.flight(rank)


def nccl_file(pattern: str | None) -> Path | None:
    """This process's NCCL log: NCCL_DEBUG_FILE with `%h` (the host name up to its first dot) and `%p`
    (the pid) expanded, as NCCL's ncclDebugInit does (src/debug.cc); None when NCCL logs to stdout."""
    if not pattern:
        return None
    host = socket.gethostname().split(".")[0]
    return Path(pattern.replace("%h", host).replace("%p", str(os.getpid())))


def torch_versions(torch: Any, backend: str) -> dict[str, Any]:
    out: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if backend == "nccl" and torch.cuda.is_available():
        try:
            v = torch.cuda.nccl.version()
            out["nccl"] = ".".join(str(p) for p in v) if isinstance(v, tuple) else str(v)
        except Exception as e:  # noqa: BLE001 - a torch built without NCCL raises anything
            out["nccl"] = f"unknown ({e})"
        v = loaded_nccl_version()  # LD_PRELOAD / LD_LIBRARY_PATH may run another release
        loaded = ".".join(map(str, v)) if v is not None else None
        if loaded is not None and loaded != out["nccl"]:
            out["nccl_built"], out["nccl"] = out["nccl"], loaded
    return out


def device_info(torch: Any, device: Any) -> dict[str, Any]:
    if device.type == "cuda":
        return {
            "device": str(device),
            "device_name": torch.cuda.get_device_name(device),
            "visible_gpus": torch.cuda.device_count(),
        }
    return {
        "device": "cpu",
        "device_name": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def dump_flight(torch: Any, path: Path, backend: str) -> str:
    """Write this rank's Flight Recorder buffer (a pickle, as PyTorch's own dumps) unless PyTorch's
    watchdog already wrote one there. Returns what happened, for the manifest."""
    if path.exists():
        return "written by PyTorch"
    c10d = torch._C._distributed_c10d
    fn = getattr(c10d, "_dump_nccl_trace", None) if backend == "nccl" else None
    fn = fn or getattr(c10d, "_dump_fr_trace", None)
    if fn is None:
        return "not available in this torch"
    try:
        data = fn()
    except Exception as e:  # noqa: BLE001 - the dump is best effort; the manifest says why it failed
        return f"dump failed: {e}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return "written by ncclscope"


def flush_stdio() -> None:
    for s in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            s.flush()
