"""Capture stage, pre-flight: what this machine offers the NCCL backend (NCCL built in, CUDA GPUs),
checked in the launcher before torchrun starts, so a job that cannot work is refused in one line.

The probe is a frozen record; `probe_gpus` fills it from torch, and tests pass their own.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import ModuleType

from ncclscope.errors import InputError
from ncclscope.run.nccl import loaded_nccl_version

# NCCL < 2.30 refuses two ranks on one GPU at init ("Duplicate GPU detected : rank 0 and rank 1 both
# on CUDA device …", src/init.cc); 2.30.3 added NCCL_MULTI_RANK_GPU_ENABLE (default 0: "Multiple ranks
# detected using the same GPU on this node. Set NCCL_MULTI_RANK_GPU_ENABLE=1 …", src/graph/topo.cc).
MULTI_RANK_GPU_ENV = "NCCL_MULTI_RANK_GPU_ENABLE"
MULTI_RANK_GPU_SINCE = (2, 30)


class PreflightError(InputError):
    """The machine cannot run the job as asked (no NCCL, no GPU, fewer GPUs than ranks)."""


@dataclass(frozen=True)
class GpuProbe:
    """What torch reports on this machine: the facts the NCCL pre-flight decides on."""

    torch_version: str
    nccl_available: bool  # torch.distributed.is_nccl_available()
    cuda_available: bool  # torch.cuda.is_available()
    device_count: int  # torch.cuda.device_count(), after CUDA_VISIBLE_DEVICES
    nccl_version: tuple[int, ...] | None = None  # the loaded NCCL, else torch.cuda.nccl.version()


def import_torch() -> ModuleType:
    """`import torch` without its import-time warnings (e.g. 'Failed to initialize NumPy'), which
    would otherwise reach the console ahead of capture's own one-line messages."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
        import torch.distributed
    return torch


def probe_gpus() -> GpuProbe:
    torch = import_torch()
    nccl = bool(torch.distributed.is_available() and torch.distributed.is_nccl_available())
    cuda = bool(torch.cuda.is_available())
    count = int(torch.cuda.device_count()) if cuda else 0
    version: tuple[int, ...] | None = None
    if nccl and cuda:
        try:
            v = torch.cuda.nccl.version()
            version = tuple(int(p) for p in v) if isinstance(v, tuple) else None
        except Exception:  # noqa: BLE001 - a version we cannot read changes only a note
            version = None
        version = loaded_nccl_version() or version
    return GpuProbe(
        torch_version=str(torch.__version__),
        nccl_available=nccl,
        cuda_available=cuda,
        device_count=count,
        nccl_version=version,
    )


def preflight(
    probe: GpuProbe,
    *,
    backend: str,
    nproc_per_node: int,
    allow_shared_gpu: bool,
    extra_env: dict[str, str],
    node_per_rank: bool = False,
) -> tuple[str, ...]:
    """Refuse (PreflightError, one line) a job NCCL cannot run here; return notes about one that
    runs ranks on shared GPUs on purpose. gloo needs nothing from the probe."""
    if backend != "nccl":
        return ()
    if not probe.nccl_available:
        gpu = "" if probe.cuda_available else " and sees no CUDA GPU"
        raise PreflightError(
            f"--backend nccl: this PyTorch ({probe.torch_version}) is built without NCCL{gpu}; "
            "use --backend gloo, or install a CUDA build of PyTorch"
        )
    if not probe.cuda_available or probe.device_count == 0:
        raise PreflightError(
            f"--backend nccl: PyTorch {probe.torch_version} sees no CUDA GPU "
            "(torch.cuda.is_available() is False; check the driver and CUDA_VISIBLE_DEVICES); "
            "use --backend gloo on a CPU-only machine"
        )
    if probe.device_count >= nproc_per_node:
        return ()
    if not allow_shared_gpu:
        raise PreflightError(
            f"--nproc-per-node {nproc_per_node}: only {probe.device_count} GPU(s) visible, and NCCL "
            "refuses two ranks on one GPU at init; use --nproc-per-node "
            f"{probe.device_count}, or --allow-shared-gpu to capture that failure on purpose"
        )
    return (shared_gpu_note(probe, nproc_per_node, extra_env, node_per_rank=node_per_rank),)


def shared_gpu_note(
    probe: GpuProbe, nproc_per_node: int, extra_env: dict[str, str], *, node_per_rank: bool = False
) -> str:
    head = (
        f"--allow-shared-gpu: {nproc_per_node} ranks share {probe.device_count} GPU(s) on purpose "
        "(rank r uses GPU r mod count)"
    )
    v = probe.nccl_version
    shown = ".".join(str(p) for p in v) if v else "unknown"
    if node_per_rank and "NCCL_HOSTID" not in extra_env:
        return (
            f"{head}; --node-per-rank: every rank has a host id of its own (NCCL_HOSTID), so NCCL {shown} "
            "sees one node per rank, accepts the shared GPU and connects ranks over its network transport"
        )
    if extra_env.get(MULTI_RANK_GPU_ENV) != "1":
        return (
            f"{head}; NCCL {shown} should refuse it at init ('Duplicate GPU detected' before 2.30, "
            f"'Multiple ranks … same GPU' from 2.30; --env {MULTI_RANK_GPU_ENV}=1 allows it on NCCL >= 2.30)"
        )
    if v is not None and v[:2] < MULTI_RANK_GPU_SINCE:
        return f"{head}; NCCL {shown} predates {MULTI_RANK_GPU_ENV} (2.30) and should still refuse it at init"
    return f"{head}; {MULTI_RANK_GPU_ENV}=1: NCCL >= 2.30 runs it (NVLS off)"
