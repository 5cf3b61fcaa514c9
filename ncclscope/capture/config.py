"""Capture stage, configuration: what the launcher hands every worker, where each file goes, and
the bundled job's own environment (no torch here). The evidence variables (NCCL_DEBUG, its file and
timestamps, the Flight Recorder, …) are `run`'s: capture is `run` applied to the bundled job.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from ncclscope.capture.faults import STEP_FAULTS, Fault
from ncclscope.capture.mesh import Mesh
from ncclscope.run.settings import FLIGHT_PREFIX, Value

Backend = Literal["nccl", "gloo"]
CONFIG_ENV = "NCCLSCOPE_CAPTURE_CONFIG"
# NCCL hashes the host name, or NCCL_HOSTID when set, to tell nodes apart (src/misc/utils.cc,
# getHostHash). A host id per rank makes every rank a node of its own: NCCL then connects ranks through
# its network transport, as between nodes, and its duplicate-GPU check (same host hash and bus id)
# no longer fires, so several ranks can share one GPU on any release.
HOSTID_ENV = "NCCL_HOSTID"


def node_id(rank: int) -> str:
    return f"ncclscope-node{rank}"


# torchrun SIGTERMs the surviving workers as soon as one fails and SIGKILLs them 30 s later
# (torch 2.13: LocalElasticAgent._stop_workers -> _shutdown(timeout=30); a signal to torchrun
# itself uses --shutdown-timeout / TORCH_ELASTIC_SHUTDOWN_TIMEOUT, also 30 by default).
TORCHRUN_GRACE_S = 30.0
DEFAULT_TIMEOUT_S = 10.0  # well under the grace, so PyTorch's own timeout dump is not cut short
# How long PyTorch's watchdog waits for the Flight Recorder dumps after a timeout before it acts.
DUMP_WAIT_MS = 5000
# run's value for that wait (15 s) suits a job's real timeouts; capture's are seconds long.
VALUES = (
    Value(
        "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC",
        str(DUMP_WAIT_MS),
        f"capture's process-group timeout (default {DEFAULT_TIMEOUT_S:g} s) plus this wait stays well under "
        f"torchrun's {TORCHRUN_GRACE_S:g} s SIGTERM-to-SIGKILL grace, so a survivor's own dump is not cut short",
    ),
)
# A step's CUDA work may take this long past the timeout and the dump wait before the worker gives up.
SYNC_MARGIN_S = 15.0


@dataclass(frozen=True)
class Layout:
    """Every file a capture writes, relative to its output directory."""

    root: Path

    @property
    def run_manifest(self) -> Path:
        return self.root / "capture.json"

    def log(self, rank: int) -> Path:
        return self.root / "logs" / f"rank{rank}.log"

    def trace(self, rank: int) -> Path:
        return self.root / "traces" / f"rank{rank}.pt.trace.json.gz"

    def manifest(self, rank: int) -> Path:
        return self.root / "manifest" / f"rank{rank}.json"

    @property
    def flight_prefix(self) -> Path:
        """run's dump path (PyTorch appends the global rank, as with its default /tmp/nccl_trace_rank_<r>)."""
        return self.root / FLIGHT_PREFIX

    def flight(self, rank: int) -> Path:
        return Path(f"{self.flight_prefix}{rank}")

    def make_dirs(self) -> None:
        """capture's own folders; run makes the NCCL and Flight Recorder ones."""
        for sub in ("logs", "traces", "manifest"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class CaptureConfig:
    """What every worker runs: backend, timeouts, workload shape and the faults to inject."""

    out_dir: str
    backend: Backend = "gloo"
    timeout_s: float = DEFAULT_TIMEOUT_S
    faults: tuple[Fault, ...] = ()
    sizes: tuple[int, ...] = (1024, 65536, 262144)  # float32 elements: 4 KiB, 256 KiB, 1 MiB
    profile_wait: int = 1
    profile_warmup: int = 1
    profile_active: int = 2
    extra_steps: int = 2
    coll: bool = False
    extra_env: tuple[tuple[str, str], ...] = field(default=())
    allow_shared_gpu: bool = False
    node_per_rank: bool = False
    mesh: Mesh | None = None  # --layout: the process groups the workload runs collectives in

    @property
    def layout(self) -> Layout:
        return Layout(Path(self.out_dir))

    @property
    def fault_step(self) -> int:
        """Default step for hang/mismatch/crash: the first one after the profiled window, so the
        traces are already written when the fault fires."""
        return self.profile_wait + self.profile_warmup + self.profile_active

    @property
    def steps(self) -> int:
        ats = [f.at for f in self.faults if f.kind in STEP_FAULTS and f.at is not None]
        return max([self.fault_step, *ats]) + self.extra_steps

    @property
    def step_faults(self) -> bool:
        """A hang, mismatch or crash is injected somewhere in the job: every rank then writes its
        Flight Recorder dump at the end, even a rank whose run completed (NCCL may let a size
        mismatch pass silently; the dumps still hold both sizes)."""
        return any(f.kind in STEP_FAULTS for f in self.faults)

    @property
    def sync_timeout_s(self) -> float:
        """How long the worker polls a step's CUDA work: PyTorch's watchdog acts after the timeout
        and its dump wait; past that, the worker fails the rank itself and writes its evidence."""
        return self.timeout_s + DUMP_WAIT_MS / 1000 + SYNC_MARGIN_S

    def to_json(self) -> dict[str, object]:
        return {
            "out_dir": self.out_dir,
            "backend": self.backend,
            "timeout_s": self.timeout_s,
            "faults": [f.to_json() for f in self.faults],
            "sizes": list(self.sizes),
            "profile_wait": self.profile_wait,
            "profile_warmup": self.profile_warmup,
            "profile_active": self.profile_active,
            "extra_steps": self.extra_steps,
            "coll": self.coll,
            "extra_env": dict(self.extra_env),
            "allow_shared_gpu": self.allow_shared_gpu,
            "node_per_rank": self.node_per_rank,
            "mesh": None if self.mesh is None else self.mesh.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> CaptureConfig:
        faults = cast(list[dict[str, object]], d.get("faults") or [])
        env = cast(dict[str, str], d.get("extra_env") or {})
        mesh = d.get("mesh")
        return cls(
            out_dir=str(d["out_dir"]),
            backend=cast(Backend, d.get("backend", "gloo")),
            timeout_s=float(cast(float, d.get("timeout_s", DEFAULT_TIMEOUT_S))),
            faults=tuple(Fault.from_json(f) for f in faults),
            sizes=tuple(int(s) for s in cast(list[int], d.get("sizes") or [1024])),
            profile_wait=int(cast(int, d.get("profile_wait", 1))),
            profile_warmup=int(cast(int, d.get("profile_warmup", 1))),
            profile_active=int(cast(int, d.get("profile_active", 2))),
            extra_steps=int(cast(int, d.get("extra_steps", 2))),
            coll=bool(d.get("coll", False)),
            extra_env=tuple(sorted(env.items())),
            allow_shared_gpu=bool(d.get("allow_shared_gpu", False)),
            node_per_rank=bool(d.get("node_per_rank", False)),
            mesh=Mesh.from_json(cast(dict[str, object], mesh)) if isinstance(mesh, dict) else None,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CaptureConfig:
        raw = (environ if environ is not None else os.environ).get(CONFIG_ENV)
        if not raw:
            raise RuntimeError(f"{CONFIG_ENV} is not set: start the worker through `ncclscope capture`")
        return cls.from_json(json.loads(raw))


def workload_env(cfg: CaptureConfig) -> dict[str, str]:
    """The bundled job's own settings, given to `run` as a user's exports would be (run then sets the
    evidence variables around them). `--env` values win over these."""
    env = {
        # The watchdog, pinned rather than inherited (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp,
        # torch 2.13.0: ErrorHandlingMode NoHandling=0, TearDown=1, CleanUpOnly=2, SkipCleanUp=3; the
        # default 3 tears the process down from the watchdog thread, so no Python `finally` runs).
        # 2 = CleanUpOnly: abort the communicator, keep the process, let the worker write its evidence.
        # run leaves these alone in a user's job: they change how it behaves.
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "2",
        "TORCH_NCCL_BLOCKING_WAIT": "0",  # 1 would mean no watchdog, so no timeout dump
        "TORCH_NCCL_DESYNC_DEBUG": "1",
        CONFIG_ENV: json.dumps(cfg.to_json()),
    }
    env.update(dict(cfg.extra_env))
    return env


def rank_env(cfg: CaptureConfig, rank: int) -> dict[str, str]:
    """Per-rank environment the worker sets before the backend initialises: a host id of its own with
    `node_per_rank`, and the environment faults of this rank. A variable given with `--env` is left
    alone: the user's value wins over capture's and the faults'."""
    env: dict[str, str] = {}
    if cfg.node_per_rank:
        env[HOSTID_ENV] = node_id(rank)
    for f in cfg.faults:
        if f.applies_to(rank):
            env.update(f.env())
    user = dict(cfg.extra_env)
    return {k: v for k, v in env.items() if k not in user}
