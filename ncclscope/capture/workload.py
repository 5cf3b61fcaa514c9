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

from ncclscope.capture.faults import Fault
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

    def _make_model(self, group: Any = None) -> tuple[Any, Any]:
        nn = self.torch.nn
        self.torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).to(self.device)
        ids = [self.device.index] if self.device.type == "cuda" else None
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=ids, process_group=group)
        return ddp, self.torch.optim.SGD(ddp.parameters(), lr=0.01)

    def step(self, step: int) -> None:
        self._delay()
        self._start_fault(step)
        self._train()
        seen: set[str] = set()
        for numel in self.sizes:
            for op in OPS:
                if op not in self.skipped:
                    self._collective(step, op, numel, first=op not in seen)
                    seen.add(op)
        self._sync(step)

    def _train(self) -> None:
        x = self.torch.randn(16, 64, device=self.device)
        loss = self._model(x).square().mean()
        self._opt.zero_grad()
        loss.backward()  # DDP's gradient all_reduce runs here
        self._opt.step()

    def _start_fault(self, step: int) -> None:
        """oom / cuda-error / gil at the start of the step, before the forward pass."""
        from ncclscope.capture import failures

        fault = self.plan.at_start(step)
        if fault is None:
            return
        if fault.kind == "gil":
            failures.hold_gil(self.stall_s)
            return
        err = (
            failures.oom_error(self.torch, self.device)
            if fault.kind == "oom"
            else failures.cuda_error(self.torch)
        )
        if not fault.extra:
            raise err
        self._error_path(fault, err)

    def _error_path(self, fault: Fault, err: BaseException) -> None:
        """As a training loop that reports its error, then tells its peers with a 1-element
        all_reduce on the default group while they wait in the step's collectives."""
        import traceback

        try:
            raise err
        except BaseException:
            traceback.print_exc()
            sys.stdout.flush()
            self.dist.all_reduce(self.torch.ones(1, device=self.device))
            raise

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

    def _collective(self, step: int, op: str, numel: int, *, first: bool, group: Any = None) -> None:
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
            getattr(self, "_" + op)(numel, group)
        except (RuntimeError, NotImplementedError, ValueError) as e:
            if op in self.skipped or not any(p in str(e).lower() for p in _UNSUPPORTED):
                raise
            self.skipped[op] = str(e).splitlines()[0][:200]
            self.say(f"skipping {op}: the {self.dist.get_backend()} backend does not support it ({e})")

    def _t(self, numel: int, fill: float = 1.0) -> Any:
        return self.torch.full((numel,), fill, dtype=self.torch.float32, device=self.device)

    def _all_reduce(self, numel: int, group: Any = None) -> None:
        self.dist.all_reduce(self._t(numel), group=group)

    def _all_gather(self, numel: int, group: Any = None) -> None:
        part = numel // self.dist.get_world_size(group)
        # torch 2.13 renamed the *_into_tensor / *_tensor forms (the old names warn on every call).
        fn = getattr(self.dist, "all_gather_single", None) or self.dist.all_gather_into_tensor
        fn(self._t(numel, 0.0), self._t(part), group=group)

    def _reduce_scatter(self, numel: int, group: Any = None) -> None:
        fn = getattr(self.dist, "reduce_scatter_single", None) or self.dist.reduce_scatter_tensor
        fn(self._t(numel // self.dist.get_world_size(group), 0.0), self._t(numel), group=group)

    def _broadcast(self, numel: int, group: Any = None) -> None:
        src = 0 if group is None else self.dist.get_global_rank(group, 0)
        self.dist.broadcast(self._t(numel), src=src, group=group)

    def _all_to_all(self, numel: int, group: Any = None) -> None:
        self.dist.all_to_all_single(self._t(numel, 0.0), self._t(numel), group=group)

    def _send_recv(self, numel: int, group: Any = None) -> None:
        dist = self.dist
        size = dist.get_world_size(group)
        if size < 2:
            return
        me = dist.get_rank(group)
        nxt, prv = (
            ((me + 1) % size, (me - 1) % size)
            if group is None
            else (
                dist.get_global_rank(group, (me + 1) % size),
                dist.get_global_rank(group, (me - 1) % size),
            )
        )
        ops = [
            dist.P2POp(dist.isend, self._t(numel), nxt, group=group),
            dist.P2POp(dist.irecv, self._t(numel, 0.0), prv, group=group),
        ]
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
