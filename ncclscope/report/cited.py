"""Report stage, cited lines: the typed `Evidence` every section quotes (a finding's lines, a chain step's),
and `at`, where one is (`report.facts.cite`).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from ncclscope.report.facts import cite


class Evidence(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One cited line: a log's line, or a trace event or Flight Recorder entry named in `text`."""

    path: str
    line: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            description="1-based line of a log; 0: not a log line (a trace event or a Flight Recorder "
            "entry, named in text)",
        ),
    ]
    text: str


def at(x: Evidence) -> str:
    """`path:line` for a log line, the file alone for a trace event or dump entry (`report.facts.cite`)."""
    return cite({"path": x.path, "line": x.line})
