"""Parse stage: inputs → typed records → `LogFrames` (logs), trace frames and Flight Recorder frames.

The readers are imported on first use (PEP 562): the log reader pulls in the grammar machinery (Lark,
compiled regexes), which a trace-only run never needs, and the trace reader its decoder, which a
log-only run never needs; `classify_inputs` needs neither (nor Polars).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclscope.parse.inputs import Inputs, classify_inputs

if TYPE_CHECKING:
    from ncclscope.parse.flight.read import read_flight
    from ncclscope.parse.logs.read import read_logs
    from ncclscope.parse.traces.read import read_traces

__all__ = ["Inputs", "classify_inputs", "read_flight", "read_logs", "read_traces"]


def __getattr__(name: str) -> Any:
    if name == "read_logs":
        from ncclscope.parse.logs.read import read_logs

        return read_logs
    if name == "read_traces":
        from ncclscope.parse.traces.read import read_traces

        return read_traces
    if name == "read_flight":
        from ncclscope.parse.flight.read import read_flight

        return read_flight
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
