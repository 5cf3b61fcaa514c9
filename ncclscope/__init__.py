"""ncclscope: why is my multi-GPU PyTorch/NCCL job slow, hung or broken?

Public facade: `analyze` runs the whole pipeline on paths; `load` wraps it for notebooks (frames,
findings, figures); `render` / `write_report` make Markdown, HTML or JSON reports. The record types
and stages stay importable on their own.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ncclscope.errors import InputError, NcclscopeError, TraceError, UnsafePickleError  # noqa: E402
from ncclscope.records import Evidence, Finding  # noqa: E402
from ncclscope.session import Session, analyze  # noqa: E402
from ncclscope.notebook import Analysis, load  # noqa: E402
from ncclscope.report import render, write_report  # noqa: E402

__all__ = [
    "__version__",
    "analyze",
    "load",
    "Analysis",
    "render",
    "write_report",
    "Session",
    "Finding",
    "Evidence",
    "NcclscopeError",
    "InputError",
    "TraceError",
    "UnsafePickleError",
]
