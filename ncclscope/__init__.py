"""ncclscope: why is my multi-GPU PyTorch/NCCL job slow, hung or broken?

Public facade: `analyze` runs the whole pipeline on paths; the record types and stages stay
importable on their own for notebooks.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ncclscope.errors import InputError, NcclscopeError, TraceError, UnsafePickleError  # noqa: E402
from ncclscope.records import Evidence, Finding  # noqa: E402
from ncclscope.session import Session, analyze  # noqa: E402

__all__ = [
    "__version__",
    "analyze",
    "Session",
    "Finding",
    "Evidence",
    "NcclscopeError",
    "InputError",
    "TraceError",
    "UnsafePickleError",
]
