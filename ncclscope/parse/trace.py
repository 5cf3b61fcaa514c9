"""Parse stage, torch.profiler traces: PLACEHOLDER until the trace loader lands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def read_traces(paths: Sequence[str], *, rank_map: dict[str, int] | None = None,
                progress: Callable[[str], None] | None = None) -> Any:
    return None
