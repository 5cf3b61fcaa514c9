"""Capture stage: `ncclscope capture` runs a bundled torchrun job, optionally with injected faults,
and writes fresh evidence (per-rank logs, NCCL logs, profiler traces, Flight Recorder dumps and
manifests). Importing this package never imports torch; only the worker and the job need it.
"""

from __future__ import annotations

from ncclscope.capture.config import CaptureConfig, Layout
from ncclscope.capture.faults import KINDS, Fault, FaultSpecError, parse_fault, parse_faults
from ncclscope.capture.launcher import (
    CaptureOptions,
    CaptureResult,
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
    "require_torch",
    "resolve_backend",
    "run_capture",
    "torchrun_argv",
]
