"""The job that made the traces in this folder (see SOURCE.md): 4 gloo ranks on the CPU, a 2-rank
subgroup of ranks 0-1, a sleeping rank, torch.profiler per rank writing a Chrome trace.

    torchrun --standalone --nproc-per-node 4 job.py OUT_DIR SLEEP_MS

Every step: the sleeping rank (3) sleeps SLEEP_MS first (0: nobody sleeps); ranks 0-1 run a
"tensor-parallel" forward on the subgroup (all_reduce, all_gather); every rank runs a DDP
forward/backward on the default group (its gradient all_reduce, 4680 floats, the step's only
default-group collective); ranks 0-1 end the step with one more subgroup all_reduce. Steps 2-5 are
profiled.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

SLEEPER = 3
STEPS, WAIT, WARMUP, ACTIVE = 7, 1, 1, 4


def main() -> None:
    out, sleep_ms = sys.argv[1], float(sys.argv[2])
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
    sub = dist.new_group([0, 1], group_desc="SUBGROUP_0_1")  # every rank calls new_group
    in_sub = rank in (0, 1)
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def export(prof: torch.profiler.profile) -> None:
        os.makedirs(out, exist_ok=True)
        prof.export_chrome_trace(os.path.join(out, f"rank{rank}.pt.trace.json"))

    sched = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1)
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(
        activities=acts, record_shapes=True, schedule=sched, on_trace_ready=export
    ) as prof:
        for _ in range(STEPS):
            if rank == SLEEPER and sleep_ms > 0:
                time.sleep(sleep_ms / 1000)
            if in_sub:
                dist.all_reduce(torch.ones(1024), group=sub)
                dist.all_gather_into_tensor(torch.empty(4096), torch.ones(2048), group=sub)
            loss = model(torch.randn(16, 64)).square().mean()
            opt.zero_grad()
            loss.backward()  # DDP's gradient all_reduce on the default group
            opt.step()
            if in_sub:
                dist.all_reduce(torch.ones(65536), group=sub)
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
