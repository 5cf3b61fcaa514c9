"""Capture stage, per-rank evidence written by the worker: the manifest (who, where, what versions,
which environment, which fault) and the Flight Recorder dump when PyTorch did not write one.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ncclscope.capture.config import CONFIG_ENV, CaptureConfig
from ncclscope.capture.preflight import loaded_nccl_version
from ncclscope.version import __version__

_ENV_PREFIXES = ("NCCL_", "TORCH_", "GLOO_", "CUDA_", "MASTER_", "TORCHELASTIC_", "OMP_", "PYTORCH_")
_ENV_NAMES = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "GROUP_WORLD_SIZE",
        "TZ",
        "NVIDIA_VISIBLE_DEVICES",
    }
)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def captured_env(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """The variables that shape NCCL, gloo and PyTorch distributed, sorted by name."""
    env = environ if environ is not None else os.environ
    return {
        k: env[k] for k in sorted(env) if k != CONFIG_ENV and (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES))
    }


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
            "env": captured_env(),
            "files": self._files(),
            "started_utc": utc_now(),
            "status": "starting",
        }
        self.write()

    def _files(self) -> dict[str, str]:
        lay = self.cfg.layout
        files = {"log": lay.log(self.rank), "trace": lay.trace(self.rank), "flight": lay.flight(self.rank)}
        if self.cfg.backend == "nccl":
            files["nccl_log"] = lay.nccl_log(self.rank)
        return {k: os.path.relpath(v, lay.root) for k, v in files.items()}

    def update(self, **kw: Any) -> None:
        self.data.update(kw)
        self.write()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True, default=str) + "\n")
        os.replace(tmp, self.path)


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
