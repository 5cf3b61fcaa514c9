"""Capture stage, workload (needs torch): a tiny DDP model plus every collective kind at several
sizes, run once per step, with this rank's injection plan applied before each collective.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from ncclscope.capture.inject import Plan, mismatched_numel
from ncclscope.capture.waiting import wait_for_event

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
# Phrases PyTorch uses when a backend lacks a collective (older gloo builds lack reduce_scatter).
_UNSUPPORTED = ("not supported", "does not support", "unsupported", "not implemented")


def pick_device(torch: Any, backend: str, local_rank: int, *, shared_ok: bool = False) -> Any:
    """cuda:<local rank> for NCCL; the CPU for gloo. With `shared_ok` (--allow-shared-gpu) ranks wrap
    onto the visible GPUs, so two ranks share one GPU on purpose. The launcher checked both already;
    this guards a worker started some other way."""
    if backend != "nccl":
        return torch.device("cpu")
    n = torch.cuda.device_count()
    if n == 0:
        raise RuntimeError("--backend nccl needs a CUDA GPU; use --backend gloo on a CPU-only machine")
    if local_rank >= n and not shared_ok:
        raise RuntimeError(
            f"local rank {local_rank} has no GPU of its own ({n} visible); "
            "--allow-shared-gpu runs ranks on shared GPUs on purpose"
        )
    dev = torch.device("cuda", local_rank % n)
    torch.cuda.set_device(dev)
    return dev


class Workload:
    """One training step and one round of collectives per `step()`, faults applied on the way."""

    def __init__(
        self,
        torch: Any,
        device: Any,
        plan: Plan,
        sizes: tuple[int, ...],
        stall_s: float,
        say: Callable[[str], None],
        *,
        sync_timeout_s: float = 60.0,
    ) -> None:
        import torch.distributed as dist

        self.torch, self.dist, self.device, self.plan, self.say = torch, dist, device, plan, say
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.sizes = tuple(max(self.world, n // self.world * self.world) for n in sizes)
        self.stall_s, self.sync_timeout_s = stall_s, sync_timeout_s
        self.skipped: dict[str, str] = {}
        self._model, self._opt = self._make_model()

    def _make_model(self) -> tuple[Any, Any]:
        nn = self.torch.nn
        self.torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).to(self.device)
        ids = [self.device.index] if self.device.type == "cuda" else None
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        return ddp, self.torch.optim.SGD(ddp.parameters(), lr=0.01)

    def step(self, step: int) -> None:
        self._delay()
        x = self.torch.randn(16, 64, device=self.device)
        loss = self._model(x).square().mean()
        self._opt.zero_grad()
        loss.backward()  # DDP's gradient all_reduce runs here
        self._opt.step()
        seen: set[str] = set()
        for numel in self.sizes:
            for op in OPS:
                if op not in self.skipped:
                    self._collective(step, op, numel, first=op not in seen)
                    seen.add(op)
        self._sync(step)

    def _sync(self, step: int) -> None:
        """Wait for the step's GPU work by polling an event, never in `torch.cuda.synchronize()`:
        a collective whose peer is gone never finishes, and a blocked main thread would let neither
        torchrun's SIGTERM nor any deadline reach Python."""
        if self.device.type == "cuda":
            wait_for_event(
                self.torch.cuda.Event(),
                timeout_s=self.sync_timeout_s,
                what=f"step {step}'s CUDA work (collectives included)",
            )

    def _delay(self) -> None:
        if self.plan.delay_s > 0:
            time.sleep(self.plan.delay_s)

    def _collective(self, step: int, op: str, numel: int, *, first: bool) -> None:
        action, fault = self.plan.action(step, op, first)
        if action == "crash" and fault is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            # No cleanup, no traceback: the process disappears, by default as the OOM killer does it.
            if fault.code is None:
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(fault.code or 1)
        if action == "hang":
            time.sleep(self.stall_s)  # stuck outside the collective while the others wait in it
        if action == "mismatch":
            numel = mismatched_numel(numel, self.world)
        self._delay()
        try:
            getattr(self, "_" + op)(numel)
        except (RuntimeError, NotImplementedError, ValueError) as e:
            if op in self.skipped or not any(p in str(e).lower() for p in _UNSUPPORTED):
                raise
            self.skipped[op] = str(e).splitlines()[0][:200]
            self.say(f"skipping {op}: the {self.dist.get_backend()} backend does not support it ({e})")

    def _t(self, numel: int, fill: float = 1.0) -> Any:
        return self.torch.full((numel,), fill, dtype=self.torch.float32, device=self.device)

    def _all_reduce(self, numel: int) -> None:
        self.dist.all_reduce(self._t(numel))

    def _all_gather(self, numel: int) -> None:
        part = numel // self.world
        # torch 2.13 renamed the *_into_tensor / *_tensor forms (the old names warn on every call).
        fn = getattr(self.dist, "all_gather_single", None) or self.dist.all_gather_into_tensor
        fn(self._t(numel, 0.0), self._t(part))

    def _reduce_scatter(self, numel: int) -> None:
        fn = getattr(self.dist, "reduce_scatter_single", None) or self.dist.reduce_scatter_tensor
        fn(self._t(numel // self.world, 0.0), self._t(numel))

    def _broadcast(self, numel: int) -> None:
        self.dist.broadcast(self._t(numel), src=0)

    def _all_to_all(self, numel: int) -> None:
        self.dist.all_to_all_single(self._t(numel, 0.0), self._t(numel))

    def _send_recv(self, numel: int) -> None:
        if self.world < 2:
            return
        dist = self.dist
        nxt, prv = (self.rank + 1) % self.world, (self.rank - 1) % self.world
        ops = [dist.P2POp(dist.isend, self._t(numel), nxt), dist.P2POp(dist.irecv, self._t(numel, 0.0), prv)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()


def profiler(
    torch: Any, backend: str, wait: int, warmup: int, active: int, on_ready: Callable[[Any], None]
) -> Any:
    """A short torch.profiler schedule: one window of `active` steps, then the trace is written."""
    prof = torch.profiler
    acts = [prof.ProfilerActivity.CPU]
    if backend == "nccl":
        acts.append(prof.ProfilerActivity.CUDA)
    return prof.profile(
        activities=acts,
        record_shapes=True,
        on_trace_ready=on_ready,
        schedule=prof.schedule(wait=wait, warmup=warmup, active=active, repeat=1),
    )
