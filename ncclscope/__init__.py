"""ncclscope: why is my multi-GPU PyTorch/NCCL job slow, hung or broken?

Public facade: `analyze` runs the whole pipeline on paths; `load` wraps it for notebooks (frames,
findings, figures); `render` / `write_report` make Markdown, HTML or JSON reports. The record types
and stages stay importable on their own.
"""

from __future__ import annotations

__version__ = "0.1.0"

import os as _os

# Polars' jemalloc keeps freed pages for 10 s by default, so every join or sort of a large trace
# leaves its scratch memory resident; return it at once (before Polars loads; a user's setting wins).
_os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")

from ncclscope.errors import InputError, NcclscopeError, TraceError, UnsafePickleError
from ncclscope.notebook import Analysis, load
from ncclscope.records import Evidence, Finding
from ncclscope.report import render, write_report
from ncclscope.session import Session, analyze

__all__ = [
    "Analysis",
    "Evidence",
    "Finding",
    "InputError",
    "NcclscopeError",
    "Session",
    "TraceError",
    "UnsafePickleError",
    "__version__",
    "analyze",
    "load",
    "render",
    "write_report",
]
