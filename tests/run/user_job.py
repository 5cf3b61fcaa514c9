"""A small user-style training job for `ncclscope run` tests: DDP on a tiny model plus a few explicit
collectives per step, under torchrun, on gloo (CPU) or NCCL (GPU). Faults, each on one rank at step
--at: --hang-rank R (sleeps forever: the others time out), --crash-rank R (raises), --oom-rank R (raises
an out-of-memory error as PyTorch's allocator words it)."""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--at", type=int, default=2, help="step at which a fault fires")
    ap.add_argument("--timeout", type=float, default=10.0, help="process-group timeout, seconds")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--hang-rank", type=int, default=None)
    ap.add_argument("--crash-rank", type=int, default=None)
    ap.add_argument("--oom-rank", type=int, default=None)
    return ap.parse_args()


def fault(a: argparse.Namespace, rank: int, step: int) -> None:
    if step != a.at:
        return
    if rank == a.hang_rank:
        print(f"rank {rank}: step {step}: stuck in data loading", flush=True)
        while True:
            time.sleep(1)
    if rank == a.crash_rank:
        raise RuntimeError(f"rank {rank}: step {step}: bad batch (injected crash)")
    if rank == a.oom_rank:
        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB of "
            "which 3.12 GiB is free. Of the allocated memory 74.02 GiB is allocated by PyTorch (injected)"
        )


def main() -> None:
    a = parse()
    backend = a.backend if a.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend, timeout=timedelta(seconds=a.timeout), device_id=device if backend == "nccl" else None
    )
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Linear(64, 64).to(device), device_ids=[local] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(a.steps):
        fault(a, rank, step)
        x = torch.randn(32, 64, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = torch.full((1024,), float(rank), device=device)
        dist.all_reduce(t)
        dist.broadcast(t, src=0)
        parts = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(parts, t)
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
