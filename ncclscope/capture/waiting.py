"""Capture stage, waiting on the device without blocking signals (no torch here).

`torch.cuda.synchronize()` blocks inside the CUDA driver, where neither SIGTERM's Python handler nor
any deadline can reach a rank whose collective never finishes. The worker records a CUDA event and
polls it with `wait_until`, which sleeps in short slices between polls: each slice returns to the
interpreter, so a signal handler runs (and may raise) within one slice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

FIRST_SLICE_S = 0.0002
MAX_SLICE_S = 0.01


class Event(Protocol):
    """What the worker needs of `torch.cuda.Event` (a test passes a stand-in that never finishes)."""

    def record(self) -> None: ...

    def query(self) -> bool: ...


class WaitTimeout(RuntimeError):
    """What the worker waited for was still not done at its deadline."""


def wait_until(
    done: Callable[[], bool],
    *,
    timeout_s: float,
    what: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Poll `done()` until it returns True; raise WaitTimeout once `timeout_s` has passed.

    The sleep slice doubles from FIRST_SLICE_S up to MAX_SLICE_S, so a step that finishes at once
    costs microseconds and a long wait costs one poll per 10 ms. Returns the number of polls.
    """
    deadline = clock() + timeout_s
    slice_s, polls = FIRST_SLICE_S, 0
    while True:
        polls += 1
        if done():
            return polls
        if clock() >= deadline:
            raise WaitTimeout(f"{what} still not done after {timeout_s:g} s (polled {polls} times)")
        sleep(slice_s)
        slice_s = min(slice_s * 2, MAX_SLICE_S)


def wait_for_event(event: Event, *, timeout_s: float, what: str) -> int:
    """Record `event` on the current stream (after all the work queued so far), then poll it."""
    event.record()
    return wait_until(event.query, timeout_s=timeout_s, what=what)
