"""Parse stage: inputs → typed records → `LogFrames` (logs), trace frames and Flight Recorder frames."""

from __future__ import annotations

from ncclscope.parse.inputs import Inputs, classify_inputs
from ncclscope.parse.logs import read_logs
from ncclscope.parse.trace import read_traces
from ncclscope.parse.flight import read_flight

__all__ = ["Inputs", "classify_inputs", "read_logs", "read_traces", "read_flight"]
