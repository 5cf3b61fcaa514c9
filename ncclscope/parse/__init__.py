"""Parse stage: inputs → typed records → `LogFrames` (logs), trace frames and Flight Recorder frames.

The log and Flight Recorder readers are imported on first use (PEP 562): the log reader pulls in the
grammar machinery (Lark, compiled regexes), which a trace-only run never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclscope.parse.inputs import Inputs, classify_inputs
from ncclscope.parse.traces.read import read_traces

if TYPE_CHECKING:
    from ncclscope.parse.flight.read import read_flight
    from ncclscope.parse.logs.read import read_logs

__all__ = ["Inputs", "classify_inputs", "read_flight", "read_logs", "read_traces"]


def __getattr__(name: str) -> Any:
    if name == "read_logs":
        from ncclscope.parse.logs.read import read_logs

        return read_logs
    if name == "read_flight":
        from ncclscope.parse.flight.read import read_flight

        return read_flight
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
