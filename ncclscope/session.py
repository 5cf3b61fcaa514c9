"""Analysis session: runs parse → frames → align → hang → findings over a set of inputs.

`analyze()` is the one entry point the CLI, the reports and the notebook API share; it never
prints, it returns a `Session` holding every stage's output and every finding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import polars as pl

from ncclscope import align, parse
from ncclscope import schema as S
from ncclscope.align.traces import AlignedCollectives
from ncclscope.diagnosis import Diagnosis, diagnose
from ncclscope.diagnosis.inputs import gather
from ncclscope.findings import Context, StageOutputs, all_rules, run_rules
from ncclscope.frames import LogFrames
from ncclscope.hang import HangView, build_hang_view
from ncclscope.parse.flight.read import FlightFrames
from ncclscope.parse.logs.keep.policy import KeepPolicy
from ncclscope.parse.logs.lines import distrust_subseconds
from ncclscope.parse.ncclreports.read import NcclReports, read_nccl_reports
from ncclscope.parse.nccltests import read_nccltests
from ncclscope.parse.nccltests.json_doc import looks_like_json_report
from ncclscope.parse.traces.read import TraceFrames
from ncclscope.records import Finding
from ncclscope.tuning import DEFAULT, Tuning

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class Session(StageOutputs):
    """The result of one analysis: each stage's output (`findings.stages.StageOutputs`, the record the rules'
    `Context` holds too) and the findings, errors first, with their verdict.

    `notes` gathers every stage's notes (inputs, logs, traces, aligned traces, Flight Recorder
    dumps), in that order: what was skipped, cut or could not be read.
    """

    findings: tuple[Finding, ...]
    diagnosis: Diagnosis = field(default_factory=Diagnosis)  # the verdict: causes with their echoes folded
    notes: tuple[str, ...] = ()

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)


@functools.cache
def keep_policy() -> KeepPolicy:
    """What every consumer searches unknown lines for, as each declares it: the rules (`@rule(searches=)`),
    the quoted errors they share, align (the clean end, launchers, RCCL's banner, which diff reads too)
    and hang (crash-like last lines). The reader keeps the lines these match in a big input."""
    from ncclscope.align import facts_inputs, phase
    from ncclscope.findings import quoted
    from ncclscope.findings.registry import rule_searches
    from ncclscope.hang import exits

    return KeepPolicy.of(
        exits.SEARCHES, phase.SEARCHES, rule_searches(), facts_inputs.SEARCHES, quoted.SEARCHES
    )


def warm_reader_tables() -> None:
    """Build (or load) the reader's candidate test for the session's `KeepPolicy` (`prebuilt.WARM`: the
    wheel ships it, so a first analysis builds nothing)."""
    from ncclscope.parse.logs.keep.inert import candidate_pattern

    candidate_pattern(keep_policy())


def analyze(
    paths: Sequence[str],
    *,
    trace_paths: Sequence[str] = (),
    rank_map: dict[str, int] | None = None,
    progress: Progress | None = None,
    tuning: Tuning = DEFAULT,
) -> Session:
    """Read every input (logs, traces, Flight Recorder dumps), line ranks up and run all rules.

    `tuning` holds the readers' knobs and the caps on what a hostile input may cost."""
    inputs = parse.classify_inputs(list(paths) + list(trace_paths), tuning)
    # No logs: skip the log reader and rank identification (and their imports); they would return
    # exactly these empty frames.
    logs = (
        parse.read_logs(inputs.logs, progress=progress, tuning=tuning, policy=keep_policy())
        if inputs.logs
        else LogFrames()
    )
    logs = distrust_subseconds(logs)  # NCCL 2.26.2 misprints sub-second timestamps
    flight = parse.read_flight(inputs.dumps, tuning=tuning) if inputs.dumps else None
    # NCCL's own reports: ncclparam's settings join the `set by environment` rows; RAS feeds the hang view.
    own = read_nccl_reports(inputs.reports, tuning) if inputs.reports else NcclReports()
    if own.params.height:
        logs = replace(logs, env=pl.concat([logs.env, own.env], how="vertical_relaxed"))
    # The hang view reads only the logs and dumps: it is built on a thread of its own while the ranks are
    # identified and the other inputs read (Polars releases the GIL in its queries; `Tuning.analysis_threads`).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ncclscope-hang") as beside:
        hang_view = (
            beside.submit(build_hang_view, logs, flight, own.ras) if tuning.analysis_threads > 1 else None
        )
        ranks, comms = align.identify(logs) if inputs.logs else (S.empty(S.RANKS), S.empty(S.COMMS))
        # nccl-tests output: its table in any text input (read again only where the log reader saw a
        # marker), and `-J` JSON reports, which the classifier sends to the traces.
        reports = [p for p in inputs.traces if looks_like_json_report(p)]
        nccltests = read_nccltests([*inputs.logs, *reports], marked=logs.nccltests_marked, tuning=tuning)
        # Explicit --trace paths are traces whatever their first bytes say; read_traces dedups and expands dirs.
        trace_inputs = [p for p in [*inputs.traces, *trace_paths] if p not in reports]
        traces = (
            parse.read_traces(trace_inputs, rank_map=rank_map, progress=progress, tuning=tuning)
            if trace_inputs
            else None
        )
        # Logs and traces join on the global rank: hosts from the logs fill in traces that carry none.
        aligned = align.align_traces(traces, ranks=ranks, comms=comms) if traces is not None else None
        phase = align.job_phase(logs)
        hang = hang_view.result() if hang_view is not None else build_hang_view(logs, flight, own.ras)
    # The record derives the job's facts (align.facts) from these tables; the session keeps the same record.
    ctx = Context(
        logs=logs,
        ranks=ranks,
        comms=comms,
        traces=traces,
        aligned_traces=aligned,
        flight=flight,
        phase=phase,
        hang=hang,
        nccltests=nccltests,
        reports=own,
    )
    findings = tuple(run_rules(ctx, threads=tuning.analysis_threads))
    diagnosis = _diagnose(findings, logs, hang, flight)
    notes = (
        logs.notes
        + inputs.notes
        + _notes(traces)
        + _notes(aligned)
        + _notes(flight)
        + nccltests.notes
        + own.notes
    )
    return Session(**ctx.stage_outputs(), findings=findings, diagnosis=diagnosis, notes=notes)


def with_findings(s: Session, findings: tuple[Finding, ...]) -> Session:
    """The session with only `findings` (e.g. `--select`/`--ignore`), diagnosed again on them: a verdict
    never rests on a finding the user asked to leave out."""
    return replace(s, findings=findings, diagnosis=_diagnose(findings, s.logs, s.hang, s.flight))


def _diagnose(
    findings: tuple[Finding, ...], logs: LogFrames, hang: HangView, flight: FlightFrames | None
) -> Diagnosis:
    groups = {r.id: r.group for r in all_rules()}
    return diagnose(findings, gather(findings, rule_groups=groups, logs=logs, hang=hang, flight=flight))


def _notes(stage: TraceFrames | AlignedCollectives | FlightFrames | None) -> tuple[str, ...]:
    return stage.notes if stage is not None else ()
