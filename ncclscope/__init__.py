"""ncclscope: why is my multi-GPU PyTorch/NCCL job slow, hung or broken?

Public facade: `analyze` runs the whole pipeline on paths; `load` wraps it for notebooks (frames,
findings, figures); `render` / `write_report` make Markdown, HTML or JSON reports. The record types
and stages stay importable on their own.
"""

from __future__ import annotations

__version__ = "0.1.0"

import os as _os  # noqa: E402

# Polars' jemalloc keeps freed pages for 10 s by default, so every join or sort of a large trace
# leaves its scratch memory resident; return it at once (before Polars loads; a user's setting wins).
_os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")

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
