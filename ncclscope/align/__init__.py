"""Align stage: who is who (rank ↔ host, pid, GPU, communicator) and cross-rank line-up."""

from __future__ import annotations

from ncclscope.align.identity import identify
from ncclscope.align.phase import JobPhase, job_phase
from ncclscope.align.traces import align_traces

__all__ = ["JobPhase", "align_traces", "identify", "job_phase"]
