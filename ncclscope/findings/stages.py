"""The stage outputs, listed once: what parse → frames → align → hang made of the inputs.

`StageOutputs` is the one record of them. The rules' `Context` (registry) is it plus the other rules'
findings (`prior`); the analysis' `Session` (session) is it plus findings, diagnosis and notes. Both inherit
it (keyword-only fields), so a rule reads `ctx.logs` and a report `s.logs` with their types, and a new stage
output is declared here alone (tests/findings/test_stages.py fails on a second list).

It lives in the findings stage, the first that reads every earlier stage's output: it holds the align and
hang stages' outputs, so it cannot sit before them, and the rules need it, so it cannot sit after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, Final

import polars as pl

from ncclscope.align.facts import JobFacts, derive
from ncclscope.align.phase import JobPhase
from ncclscope.align.rankmap import init_rows
from ncclscope.align.traces import AlignedCollectives
from ncclscope.frames import LogFrames
from ncclscope.hang.verdict import HangView
from ncclscope.parse.flight.read import FlightFrames
from ncclscope.parse.ncclreports.read import NcclReports
from ncclscope.parse.nccltests.read import NcclTestsFrames
from ncclscope.parse.traces.read import TraceFrames

# The default of `facts`, told apart by identity: not given, so derived from the record's own tables.
_DERIVE: Final = JobFacts()


@dataclass(frozen=True, kw_only=True)
class StageOutputs:
    """Each stage's output for one set of inputs. Optional evidence kinds are None when not supplied.

    `facts` (align.facts) is derived from the record's own tables when not given, so every record holds the
    facts of its tables: one way of getting them, whoever builds the record (the session or a test)."""

    logs: LogFrames
    ranks: pl.DataFrame  # schema.RANKS
    comms: pl.DataFrame  # schema.COMMS
    traces: TraceFrames | None = None
    aligned_traces: AlignedCollectives | None = None  # traces joined on the global rank (align.traces)
    flight: FlightFrames | None = None
    phase: JobPhase = field(default_factory=JobPhase)  # teardown/failure lines per input (align.phase)
    hang: HangView = field(default_factory=HangView)  # the hang stage's view (ncclscope.hang)
    nccltests: NcclTestsFrames = field(default_factory=NcclTestsFrames)  # nccl-tests tables (parse.nccltests)
    reports: NcclReports = field(default_factory=NcclReports)  # RAS, Inspector, ncclparam (parse.ncclreports)
    facts: JobFacts = _DERIVE  # what the job is (align.facts), derived once

    def __post_init__(self) -> None:
        if self.facts is _DERIVE:
            # frozen: the one write of a derived field, before anyone reads the record
            object.__setattr__(
                self,
                "facts",
                derive(self.logs, self.ranks, self.comms, self.init_rows, self.nccltests.devices),
            )

    @cached_property
    def init_rows(self) -> pl.DataFrame:
        """`align.rankmap.init_rows` of the logs' Init lines (rank, GPU, communicator key), derived once for
        the facts and every rule that reads them."""
        return init_rows(self.logs.inits)

    def stage_outputs(self) -> dict[str, Any]:
        """This record's stage outputs by field name (not a subclass' own fields), to build another record
        on the same outputs: `Session(**ctx.stage_outputs(), findings=…)` (the facts go along, not derived
        again)."""
        return {f.name: getattr(self, f.name) for f in fields(StageOutputs)}
