"""ncclscope: why is my multi-GPU PyTorch/NCCL job slow, hung or broken?

Public facade: `analyze` runs the whole pipeline on paths; `load` wraps it for notebooks (frames,
findings, figures); `render` / `write_report` make Markdown, HTML or JSON reports. The record types
and stages stay importable on their own.
"""

from __future__ import annotations

__version__ = "0.1.0"

import os as _os

# Polars' jemalloc keeps freed pages for 10 s by default, so the scratch memory of every join or sort
# of a large trace stays resident; returning it at once (0 ms) instead makes every later allocation
# fault its pages in again, which doubled the system time of a 254 MB log run (page faults cost ~4 us
# each on the 2-core VM measured). One second keeps a batch's scratch memory for the next batch:
# 254 MB of logs 4.4 -> 2.4 s wall, 560k -> 200k page faults; the 8 x 54 MB trace set 155 -> 190 MiB
# peak RSS (bench/README.md). Set before Polars loads; a user's own setting wins.
_os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:1000,muzzy_decay_ms:0")

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
