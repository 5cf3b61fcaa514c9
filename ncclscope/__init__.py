"""ncclscope: why is my multi-GPU PyTorch/NCCL job slow, hung or broken?

Public facade: `analyze` runs the whole pipeline on paths; `load` wraps it for notebooks (frames,
findings, figures); `render` / `write_report` make Markdown, HTML or JSON reports. The record types
and stages stay importable on their own.

Importing the package loads nothing heavy and changes no process-wide setting: the names below are
imported on first use (PEP 562), and `configure_process()` is an explicit call (the CLI makes it).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from ncclscope.errors import InputError, NcclscopeError, TraceError, UnsafePickleError
from ncclscope.version import __version__

if TYPE_CHECKING:
    from ncclscope.notebook import Analysis, load
    from ncclscope.records import Evidence, Finding
    from ncclscope.report import render, write_report
    from ncclscope.session import Session, analyze
    from ncclscope.tuning import Tuning

_LAZY = {
    "Analysis": "ncclscope.notebook",
    "load": "ncclscope.notebook",
    "Evidence": "ncclscope.records",
    "Finding": "ncclscope.records",
    "render": "ncclscope.report",
    "write_report": "ncclscope.report",
    "Session": "ncclscope.session",
    "analyze": "ncclscope.session",
    "Tuning": "ncclscope.tuning",
}

__all__ = [
    "Analysis",
    "Evidence",
    "Finding",
    "InputError",
    "NcclscopeError",
    "Session",
    "TraceError",
    "Tuning",
    "UnsafePickleError",
    "__version__",
    "analyze",
    "configure_process",
    "load",
    "render",
    "write_report",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names too (`load`, `Analysis`, …), though they are imported only on first use."""
    return sorted(set(globals()) | set(__all__))


def configure_process() -> None:
    """Process-wide settings for a large analysis; call before Polars is first imported.

    Polars' jemalloc keeps freed pages for 10 s by default, so the scratch memory of every join or
    sort of a large trace stays resident; returning it at once (0 ms) instead makes every later
    allocation fault its pages in again (it doubled the system time of a 254 MB log run on a 2-core
    VM). One second keeps a batch's scratch memory for the next batch: 254 MB of logs 4.4 -> 2.4 s
    wall; the 8 x 54 MB trace set 155 -> 190 MiB peak RSS (bench/README.md). A user's own setting
    wins. The CLI calls this first thing; a notebook may call it before `import polars`.

    Polars 2 runs a lazy query on its streaming engine unless told otherwise; ncclscope's queries are
    many and small (a batch of lines, a rule's frame), where the in-memory engine costs half as much
    per query (~0.35 against ~0.7 ms on a 1,000-row group-by): the 254 MB COLL set 6% faster end to
    end, the same output (bench/README.md).
    """
    os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:1000,muzzy_decay_ms:0")
    os.environ.setdefault("POLARS_ENGINE_AFFINITY", "in-memory")
