"""Capture stage: `ncclscope capture` is `ncclscope run` applied to a bundled torchrun job, optionally
with injected faults: run records the evidence (NCCL logs, Flight Recorder dumps, console, node
snapshot) and the worker adds per-rank logs, profiler traces and manifests. Importing this package never
imports torch; only the worker and the job need it.
"""

from __future__ import annotations

from ncclscope.capture.config import CaptureConfig, Layout
from ncclscope.capture.faults import KINDS, Fault, FaultSpecError, parse_fault, parse_faults
from ncclscope.capture.launcher import (
    CaptureOptions,
    CaptureResult,
    plan,
    require_torch,
    resolve_backend,
    run_capture,
    torchrun_argv,
)

__all__ = [
    "KINDS",
    "CaptureConfig",
    "CaptureOptions",
    "CaptureResult",
    "Fault",
    "FaultSpecError",
    "Layout",
    "parse_fault",
    "parse_faults",
    "plan",
    "require_torch",
    "resolve_backend",
    "run_capture",
    "torchrun_argv",
]
