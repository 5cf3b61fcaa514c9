"""Capture stage, injection plan: what one rank does differently at each step (pure, no torch).

Step faults hang, mismatch and crash fire once, at the first all_reduce of their step; oom, cuda-error
and gil fire once, at the start of their step (before the forward pass, so the peers go on into the
step's collectives); a straggler sleeps before every collective and before every training step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ncclscope.capture.faults import START_FAULTS, STEP_FAULTS, Fault

Action = Literal["", "hang", "mismatch", "crash"]
TRIGGER_OP = "all_reduce"


@dataclass(frozen=True)
class Plan:
    """The faults that concern one rank, with default steps filled in."""

    rank: int
    delay_s: float
    step_faults: tuple[Fault, ...]
    default_step: int

    @classmethod
    def for_rank(cls, faults: Sequence[Fault], rank: int, default_step: int) -> Plan:
        mine = [f for f in faults if f.applies_to(rank)]
        delay = sum(f.delay_ms for f in mine if f.kind == "straggler") / 1000.0
        return cls(
            rank=rank,
            delay_s=delay,
            step_faults=tuple(f for f in mine if f.kind in STEP_FAULTS),
            default_step=default_step,
        )

    def action(self, step: int, op: str, first_of_kind: bool) -> tuple[Action, Fault | None]:
        """The step fault to fire now, if any: only at the step's first `all_reduce`."""
        if op != TRIGGER_OP or not first_of_kind:
            return "", None
        for f in self.step_faults:
            if f.kind not in START_FAULTS and self._step_of(f) == step:
                return f.kind, f  # type: ignore[return-value]
        return "", None

    def at_start(self, step: int) -> Fault | None:
        """The oom / cuda-error / gil fault to fire at the start of `step`, if any."""
        for f in self.step_faults:
            if f.kind in START_FAULTS and self._step_of(f) == step:
                return f
        return None

    def _step_of(self, f: Fault) -> int:
        return self.default_step if f.at is None else f.at


def mismatched_numel(numel: int, world: int) -> int:
    """A size that differs from `numel` but stays a positive multiple of the world size."""
    smaller = (numel * 3 // 4) // world * world
    return smaller if 0 < smaller < numel else numel + world
