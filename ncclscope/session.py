"""Analysis session: runs parse → frames → align → findings over a set of inputs.

`analyze()` is the one entry point the CLI, the reports and the notebook API share; it never
prints, it returns a `Session` holding every frame and every finding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ncclscope import align, parse
from ncclscope import schema as S
from ncclscope.findings import Context, run_rules
from ncclscope.frames import LogFrames
from ncclscope.records import Finding

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Session:
    """The result of one analysis: frames per stage and the findings, errors first."""

    logs: LogFrames
    ranks: pl.DataFrame
    comms: pl.DataFrame
    findings: tuple[Finding, ...]
    traces: Any = None
    aligned_traces: Any = None
    flight: Any = None
    notes: tuple[str, ...] = field(default=())

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)


def analyze(
    paths: Sequence[str],
    *,
    trace_paths: Sequence[str] = (),
    rank_map: dict[str, int] | None = None,
    progress: Progress | None = None,
) -> Session:
    """Read every input (logs, traces, Flight Recorder dumps), line ranks up and run all rules."""
    inputs = parse.classify_inputs(list(paths) + list(trace_paths))
    # No logs: skip the log reader and rank identification (and their imports); they would return
    # exactly these empty frames.
    logs = parse.read_logs(inputs.logs, progress=progress) if inputs.logs else LogFrames()
    ranks, comms = align.identify(logs) if inputs.logs else (S.empty(S.RANKS), S.empty(S.COMMS))
    # Explicit --trace paths are traces whatever their first bytes say; read_traces dedups and expands dirs.
    trace_inputs = [*inputs.traces, *trace_paths]
    traces = parse.read_traces(trace_inputs, rank_map=rank_map, progress=progress) if trace_inputs else None
    # Logs and traces join on the global rank: hosts from the logs fill in traces that carry none.
    aligned = align.align_traces(traces, ranks=ranks, comms=comms) if traces is not None else None
    flight = parse.read_flight(inputs.dumps) if inputs.dumps else None
    ctx = Context(logs=logs, ranks=ranks, comms=comms, traces=traces, aligned_traces=aligned, flight=flight,
                  phase=align.job_phase(logs))
    findings = tuple(run_rules(ctx))
    return Session(logs=logs, ranks=ranks, comms=comms, findings=findings, traces=traces,
                   aligned_traces=aligned, flight=flight,
                   notes=logs.notes + inputs.notes + _notes(traces) + _notes(aligned))


def _notes(stage: Any) -> tuple[str, ...]:
    return tuple(getattr(stage, "notes", ()) or ())
