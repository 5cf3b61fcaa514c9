"""Capture stage, launcher: `run` applied to the bundled job. It checks the options and the machine
(pre-flight), then hands `run` the torchrun command for the bundled worker (an argument list, never a
shell string), capture's own job environment and an outer deadline; `run` sets the evidence variables,
tees the console, snapshots the node and supervises the job. Afterwards capture settles the manifests
of ranks that died without a word and writes its own manifest, capture.json, beside run's run.json.

torch is needed only to run the job and for the NCCL pre-flight; building the command needs none.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ncclscope.capture.config import (
    DEFAULT_TIMEOUT_S,
    DUMP_WAIT_MS,
    TORCHRUN_GRACE_S,
    VALUES,
    Backend,
    CaptureConfig,
    Layout,
    workload_env,
)
from ncclscope.capture.faults import NCCL_ONLY, Fault, check_ranks
from ncclscope.capture.mesh import LayoutSpecError, Mesh
from ncclscope.capture.postmortem import settle_manifests
from ncclscope.capture.preflight import GpuProbe, import_torch, preflight, probe_gpus
from ncclscope.errors import InputError, MissingExtraError
from ncclscope.run.launchers import torchrun_options
from ncclscope.run.layout import safe_host
from ncclscope.run.record import Prepared, RunOptions, RunRecord, prepare, record, write_json
from ncclscope.run.settings import NCCL_FILE
from ncclscope.run.tee import utc_now

WORKER_MODULE = "ncclscope.capture.worker"
__all__ = ["CaptureOptions", "CaptureResult", "plan", "run_capture", "torchrun_argv"]


@dataclass(frozen=True)
class CaptureOptions:
    out_dir: Path
    nproc_per_node: int = 2
    nnodes: str = "1"
    backend: Backend = "gloo"
    faults: tuple[Fault, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    run_timeout_s: float | None = None
    coll: bool = False
    extra_env: tuple[tuple[str, str], ...] = ()
    torchrun_args: tuple[str, ...] = ()
    allow_shared_gpu: bool = False
    node_per_rank: bool = False
    mesh: Mesh | None = None  # --layout: the job's process groups
    host: str = field(default_factory=socket.gethostname)
    snapshot: bool = True  # run's node snapshot (versions, topology, interfaces) beside the job

    @property
    def multi_node(self) -> bool:
        return self.nnodes != "1"

    @property
    def node_name(self) -> str:
        """This node's directory under --out: none on one node; on several, one per host (`.node<N>`
        added when --node-rank N is given), so nodes sharing --out never collide."""
        if not self.multi_node:
            return ""
        node = _arg_value(self.torchrun_args, "--node-rank", "--node_rank")
        host = safe_host(self.host)
        return host if node is None else f"{host}.node{node}"

    @property
    def host_dir(self) -> Path:
        return self.out_dir / self.node_name

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
    settled: tuple[int, ...] = ()  # ranks whose manifest the launcher rewrote (they died silently)
    record: RunRecord | None = None  # what run recorded: its layout, choices, exit, snapshot


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
    torch = import_torch()
    return "nccl" if torch.cuda.is_available() and torch.distributed.is_nccl_available() else "gloo"


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
    if opts.mesh is not None and opts.mesh.world_size != world_size(opts):
        raise LayoutSpecError(
            f"--layout {opts.mesh.spec}: {opts.mesh.world_size} ranks, but the job has {world_size(opts)} "
            f"(--nproc-per-node {opts.nproc_per_node} × --nnodes {opts.nnodes}); leave --nproc-per-node "
            "out on one node and it follows the layout"
        )
    if opts.nnodes != "1" and not _has_rendezvous(opts.torchrun_args):
        raise InputError(
            f"--nnodes {opts.nnodes}: every node must meet at one rendezvous; add it after `--`, "
            "e.g. -- --rdzv-backend c10d --rdzv-endpoint HOST:29500 --rdzv-id JOB"
        )
    if opts.backend == "gloo":
        return tuple(
            f"{f.spec or f.kind}: only changes NCCL's behaviour; with gloo it is recorded, nothing more"
            for f in opts.faults
            if f.kind in NCCL_ONLY
        )
    if opts.timeout_s + DUMP_WAIT_MS / 1000 >= TORCHRUN_GRACE_S:
        return (
            (
                f"--timeout {opts.timeout_s:g}: with PyTorch's {DUMP_WAIT_MS / 1000:g} s dump wait it reaches "
                f"torchrun's {TORCHRUN_GRACE_S:g} s SIGTERM-to-SIGKILL grace; a survivor's own timeout dump "
                "may be cut short"
            ),
        )
    return ()


def torchrun_argv(opts: CaptureOptions) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(opts.nproc_per_node),
        "--nnodes",
        opts.nnodes,
    ]
    if opts.nnodes == "1" and not _has_rendezvous(opts.torchrun_args):
        argv.append("--standalone")  # a free local port per run, so runs never collide
    return [*argv, *opts.torchrun_args, "-m", WORKER_MODULE]


def _has_rendezvous(args: Sequence[str]) -> bool:
    return any(a.startswith(("--rdzv", "--master")) for a in args)


def _arg_value(args: Sequence[str], *names: str) -> str | None:
    """The value of `--name V` or `--name=V` among torchrun's extra arguments."""
    given = dict(torchrun_options(args))
    return next((given[n] for n in names if n in given), None)


def config_for(opts: CaptureOptions) -> CaptureConfig:
    return CaptureConfig(
        out_dir=str(opts.host_dir.resolve()),
        backend=opts.backend,
        timeout_s=opts.timeout_s,
        faults=opts.faults,
        coll=opts.coll,
        extra_env=opts.extra_env,
        allow_shared_gpu=opts.allow_shared_gpu,
        node_per_rank=opts.node_per_rank,
        mesh=opts.mesh,
    )


def plan(opts: CaptureOptions, environ: Mapping[str, str] | None = None) -> tuple[Prepared, tuple[str, ...]]:
    """Check the options, then let `run` plan the job (its environment, its torchrun options, where it
    writes; it refuses a used directory). Writes nothing. Returns the plan and the notes to show."""
    notes = check_options(opts)
    base = {**(os.environ if environ is None else environ), **workload_env(config_for(opts))}
    run_opts = RunOptions(
        command=tuple(torchrun_argv(opts)),
        out_dir=opts.out_dir,
        coll=opts.coll,
        host=opts.host,
        probes=None if opts.snapshot else (),
        node=opts.node_name,
        values=VALUES,
        deadline_s=opts.deadline_s,
    )
    return prepare(run_opts, base), notes


def run_capture(
    opts: CaptureOptions,
    *,
    echo_out: IO[bytes] | None = None,
    echo_err: IO[bytes] | None = None,
    probe: Callable[[], GpuProbe] | None = None,
    announce: Callable[[Prepared], None] | None = None,
) -> CaptureResult:
    """Check, then run the job through `run` to completion or to the deadline; always leaves the
    manifests behind. Nothing is written when the options or the pre-flight refuse the job."""
    require_torch()
    p, notes = plan(opts)
    if opts.backend == "nccl":
        notes += preflight(
            (probe or probe_gpus)(),
            backend=opts.backend,
            nproc_per_node=opts.nproc_per_node,
            allow_shared_gpu=opts.allow_shared_gpu,
            extra_env=dict(opts.extra_env),
            node_per_rank=opts.node_per_rank,
        )
    cfg = config_for(opts)
    lay = cfg.layout
    started = utc_now()
    lay.make_dirs()
    if announce is not None:
        announce(p)
    rec = record(p, echo_out=echo_out, echo_err=echo_err)
    e = rec.ended
    settled = settle_manifests(
        sorted((lay.root / "manifest").glob("rank*.json")),
        p.layout.console_log,
        returncode=e.returncode,
        timed_out=e.timed_out,
    )
    result = CaptureResult(
        out_dir=lay.root,
        argv=p.launch.argv,
        returncode=e.returncode,
        timed_out=e.timed_out,
        elapsed_s=e.elapsed_s,
        files=collect_files(lay),
        notes=notes + rec.notes,
        settled=tuple(settled),
        record=rec,
    )
    _write_run_manifest(opts, cfg, result, started)
    return result


def collect_files(lay: Layout) -> dict[str, list[str]]:
    kinds = {
        "logs": "logs",
        "nccl": str(Path(NCCL_FILE).parent),
        "traces": "traces",
        "flight": str(lay.flight_prefix.parent.relative_to(lay.root)),
        "manifest": "manifest",
    }
    return {
        k: sorted(
            str(p.relative_to(lay.root))
            for p in (lay.root / sub).glob("*")
            if p.is_file() and not p.name.endswith(".tmp")
        )
        for k, sub in kinds.items()
    }


def _write_run_manifest(opts: CaptureOptions, cfg: CaptureConfig, res: CaptureResult, started: str) -> None:
    data = {
        "schema": "ncclscope.capture.run/1",
        "argv": list(res.argv),
        "host": opts.host,
        "out_dir": str(opts.out_dir),
        "node_dir": os.path.relpath(cfg.layout.root, opts.out_dir.resolve()),
        "backend": opts.backend,
        "nproc_per_node": opts.nproc_per_node,
        "nnodes": opts.nnodes,
        "world_size": world_size(opts),
        "timeout_s": opts.timeout_s,
        "deadline_s": opts.deadline_s,
        "faults": [f.to_json() for f in opts.faults],
        "config": cfg.to_json(),
        "run_manifest": "run.json",  # run's: the evidence variables set or kept, the exit, the snapshot
        "allow_shared_gpu": opts.allow_shared_gpu,
        "node_per_rank": opts.node_per_rank,
        "layout": None if opts.mesh is None else opts.mesh.spec,
        "groups": None
        if opts.mesh is None
        else [{"name": g.name, "desc": g.desc, "ranks": list(g.ranks)} for g in opts.mesh.groups()],
        "started_utc": started,
        "ended_utc": utc_now(),
        "elapsed_s": round(res.elapsed_s, 3),
        "returncode": res.returncode,
        "timed_out": res.timed_out,
        "settled_ranks": list(res.settled),
        "files": res.files,
        "notes": list(res.notes),
    }
    write_json(cfg.layout.run_manifest, data)
