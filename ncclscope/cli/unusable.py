"""CLI stage, the exit-2 contract for inputs that say nothing: what makes a session's input usable.

An input is usable when the analysis read something it knows in it: an NCCL line, a PyTorch or
launcher line (a row of any log table, a launcher stream tag), an nccl-tests table, a trace, a
Flight Recorder dump, or anything a rule turned into a finding. Lines that only fell through to
`unknown` (an application's chatter, a file that is not a log at all) are not: "No problems found"
with exit 0 would claim a healthy job from a file that never mentioned one.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ncclscope.session import Session

# Log tables whose rows say nothing about the job: lines no grammar family claimed.
_SAYS_NOTHING = frozenset({"unknown"})


def _log_rows(s: Session) -> int:
    """Rows of every log table that holds recognised lines (launcher stream tags included)."""
    import polars as pl  # (the CLI imports Polars only once it reads: not at start-up)

    logs = s.logs
    rows = logs.coll.lines + logs.coverage.recognized + logs.coverage.nccl_lines
    for f in dataclasses.fields(logs):
        value = getattr(logs, f.name)
        if f.name not in _SAYS_NOTHING and isinstance(value, pl.DataFrame):
            rows += value.height
    return rows


def says_something(s: Session) -> bool:
    """Did any input hold a line, table, trace or dump the analysis understood?"""
    flight = s.flight is not None and s.flight.dumps.height > 0
    own = bool(s.reports.ras) or s.reports.inspector.height > 0 or s.reports.params.height > 0
    if s.traces is not None or flight or not s.nccltests.is_empty or s.findings or own:
        return True
    return _log_rows(s) > 0 or s.ranks.height > 0


def what_was_read(s: Session) -> str:
    """One line for exit 2: what was read, and that none of it is a line ncclscope knows."""
    files = len(s.logs.inputs)
    lines = sum(i.lines for i in s.logs.inputs)
    return (
        f"nothing to analyze: read {lines} line(s) in {files} file(s), and none is an NCCL, PyTorch, "
        "launcher or nccl-tests line (is NCCL_DEBUG=INFO set, and is this the job's log?)"
    )
