"""Capture stage, the workload of a `--layout` job (needs torch): one process group per slice of the
layout, made with `new_group` on every rank in the same order, and a step that runs collectives in
every group, as a Megatron-style model does, so a rank that stops holds up each group it belongs to.

One step: in each size, the tensor-parallel all_reduce (a row-parallel layer's output; the step's
first all_reduce, where hang/mismatch/crash fire) and all_gather (sequence parallelism), the context-
parallel all_gather and ring send/recv (attention), the expert-parallel all_to_all there and back
(token dispatch and combine) and the expert-TP all_reduce; then forward/backward of a small model
under DDP over the data-parallel group (its gradient all_reduce), a data-parallel all_reduce of the
loss, and a 2-element all_reduce on the default group (loss and token count for the log).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ncclscope.capture.inject import Plan
from ncclscope.capture.mesh import Mesh, MeshGroup
from ncclscope.capture.workload import Workload

# Per size, in order: (group kind, op); a kind absent from the layout is skipped.
FORWARD: tuple[tuple[str, str], ...] = (
    ("tp", "all_reduce"),
    ("tp", "all_gather"),
    ("cp", "all_gather"),
    ("cp", "send_recv"),
    ("ep", "all_to_all"),
    ("ep", "all_to_all"),
    ("etp", "all_reduce"),
)
REPORT_NUMEL = 2  # the default group's per-step all_reduce: loss and token count


@dataclass(frozen=True)
class RankGroups:
    """This rank's groups: kind → (the layout's group, the torch process group)."""

    by_kind: dict[str, tuple[MeshGroup, Any]]

    def pg(self, kind: str) -> Any:
        found = self.by_kind.get(kind)
        return None if found is None else found[1]


def make_groups(
    dist: Any, mesh: Mesh, rank: int, timeout: timedelta, say: Callable[[str], None]
) -> RankGroups:
    """Create every group of the layout (each rank must call `new_group` for all of them, members or
    not, in one order) and keep this rank's; one log line per group this rank belongs to. The timeout
    is the job's: `new_group` would otherwise give each group PyTorch's default of 30 minutes."""
    mine: dict[str, tuple[MeshGroup, Any]] = {}
    for g in mesh.groups():
        pg = dist.new_group(list(g.ranks), timeout=timeout, group_desc=g.desc)
        if rank in g.ranks:
            mine[g.kind] = (g, pg)
            name = getattr(pg, "group_name", "?")
            say(f"group {g.name} desc={g.desc} pg={name} ranks={','.join(map(str, g.ranks))}")
    return RankGroups(mine)


class MeshWorkload(Workload):
    """The layout's step; faults as in `Workload` (start faults before the forward pass, the others at
    the step's first all_reduce, the tensor-parallel one)."""

    def __init__(
        self,
        torch: Any,
        device: Any,
        plan: Plan,
        sizes: tuple[int, ...],
        stall_s: float,
        say: Callable[[str], None],
        groups: RankGroups,
        *,
        sync_timeout_s: float = 60.0,
    ) -> None:
        self.groups = groups
        super().__init__(torch, device, plan, sizes, stall_s, say, sync_timeout_s=sync_timeout_s)

    def _make_model(self, group: Any = None) -> tuple[Any, Any]:
        dp = self.groups.pg("dp")
        if dp is not None:
            return super()._make_model(dp)
        nn = self.torch.nn
        self.torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).to(self.device)
        return model, self.torch.optim.SGD(model.parameters(), lr=0.01)

    def step(self, step: int) -> None:
        self._delay()
        self._start_fault(step)
        seen: set[str] = set()
        for numel in self.sizes:
            for kind, op in FORWARD:
                pg = self.groups.pg(kind)
                if pg is not None and op not in self.skipped:
                    self._collective(step, op, numel, first=op not in seen, group=pg)
                    seen.add(op)
        self._train()
        dp = self.groups.pg("dp")
        if dp is not None:
            self._collective(step, "all_reduce", self.sizes[0], first="all_reduce" not in seen, group=dp)
            seen.add("all_reduce")
        self._collective(step, "all_reduce", REPORT_NUMEL, first="all_reduce" not in seen)
        self._sync(step)
