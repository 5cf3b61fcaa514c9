"""Notebook facade: `ncclscope.load(paths…)` → an `Analysis` with Polars frames, findings and figures.

    s = ncclscope.load("logs/", trace="traces/")
    s.ranks, s.connections, s.warnings, s.findings   # frames and findings
    s.fig.topology(); s.fig.arrivals(); s.fig.timeline(); s.fig.hang()
    s.report("ticket.md", redact=True)

It only forwards to the pipeline stages (session, report views and figures); nothing is computed
here that the CLI does not compute the same way.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ncclscope.diagnosis import Diagnosis
from ncclscope.frames import LOG_TABLES
from ncclscope.records import Finding
from ncclscope.session import Session, analyze

if TYPE_CHECKING:
    import plotly.graph_objects as go

PathLike = str | os.PathLike[str]


def _progress() -> Callable[[str], None]:
    t0 = time.monotonic()

    def emit(msg: str) -> None:
        if time.monotonic() - t0 > 1.0:
            print(f"… {msg}", file=sys.stderr, flush=True)

    return emit


def _paths(p: PathLike | Sequence[PathLike] | None) -> list[str]:
    if p is None:
        return []
    if isinstance(p, (str, os.PathLike)):
        return [os.fspath(p)]
    return [os.fspath(x) for x in p]


def load(
    *paths: PathLike,
    trace: PathLike | Sequence[PathLike] | None = None,
    rank_map: dict[str, int] | None = None,
    progress: bool = False,
) -> Analysis:
    """Analyze logs (files, globs, directories, .gz) and optional torch.profiler traces.

    `trace` is a trace file or directory (or a list of them); `rank_map` maps trace file names to
    ranks when the files carry none; `progress` prints progress on stderr for long inputs.
    """
    s = analyze(
        [os.fspath(p) for p in paths],
        trace_paths=_paths(trace),
        rank_map=rank_map,
        progress=_progress() if progress else None,
    )
    return Analysis(s)


def _static(fig: go.Figure) -> go.Figure:
    from ncclscope.report.notebook_figure import notebook_figure

    return notebook_figure(fig)


class Figures:
    """Figure builders of one analysis; each returns a Plotly figure (empty ones say why).

    In a notebook each figure's output also holds a static SVG drawing of it, which GitHub, nbviewer
    and `nbconvert --to html` show where Plotly's JavaScript does not run.
    """

    def __init__(self, session: Session) -> None:
        self._s = session

    def topology(self) -> go.Figure:
        """Rings, trees and connections per channel, edges coloured by transport, ranks grouped by host."""
        from ncclscope.report import figures

        return _static(figures.topology(self._s))

    def arrivals(self) -> go.Figure:
        """Heatmap ranks × collectives: ms after the first rank arrived (needs traces)."""
        from ncclscope.report import figures

        return _static(figures.arrivals(self._s))

    def timeline(self) -> go.Figure:
        """Per-rank timeline of collectives (needs traces)."""
        from ncclscope.report import figures

        return _static(figures.timeline(self._s))

    def hang(self) -> go.Figure:
        """Last NCCL opCount / PyTorch sequence number reached per rank; laggards in red."""
        from ncclscope.report import figures

        return _static(figures.hang(self._s))


class Analysis:
    """One analysis, for exploring in Jupyter: frames as attributes, findings, figures, reports.

    Frames: `ranks`, `comms`, `hang`, `arrivals`, `timeline`, `trace_collectives`, `trace_steps`,
    `topology_edges`, and the log tables by name (LOG_TABLES). Findings: `findings`, `findings_frame`.
    Figures: `fig.topology()`, `fig.arrivals()`, `fig.timeline()`, `fig.hang()`. Reports: `report(path)`,
    `to_markdown()`. Every frame is Polars; `.to_pandas()` on one needs the `pandas` extra
    (`pip install 'ncclscope[pandas]'`).
    """

    def __init__(self, session: Session) -> None:
        self._session = session
        self._fig = Figures(session)

    @property
    def session(self) -> Session:
        """The pipeline's result: every stage's output (logs, traces, hang view), findings and notes."""
        return self._session

    @property
    def fig(self) -> Figures:
        """The figures of this analysis: `fig.topology()`, `fig.arrivals()`, `fig.timeline()`, `fig.hang()`."""
        return self._fig

    @property
    def n_ranks(self) -> int:
        """Ranks seen: those of the logs, else those of the traces (a trace-only analysis has no rank
        table), else those of the Flight Recorder dumps."""
        ranks = self.ranks
        if ranks.height:
            return int(ranks["rank"].n_unique()) if "rank" in ranks.columns else ranks.height
        a = self.session.aligned_traces
        if a is not None and a.n_ranks:
            return int(a.n_ranks)
        tc = self.trace_collectives
        if tc.height and "rank" in tc.columns:
            return int(tc["rank"].n_unique())
        return int(self.hang["rank"].n_unique())

    def __getattr__(self, name: str) -> pl.DataFrame:
        # Log tables by name: s.connections, s.warnings, s.collectives, … (see `tables()`). The per-line
        # frames (collectives; unknown for big inputs) are read again from the inputs on first use:
        # `tables_summary()` gives their rows without building them.
        if name in LOG_TABLES:
            df: pl.DataFrame = getattr(self.session.logs, "unknown_lines" if name == "unknown" else name)
            return df
        raise AttributeError(
            f"{type(self).__name__!s} has no attribute {name!r}; tables: {', '.join(self.tables())}"
        )

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(LOG_TABLES))

    # -- frames ---------------------------------------------------------------------------------
    @property
    def ranks(self) -> pl.DataFrame:
        """One row per rank: host, pid, GPU, NCCL version, CUDA driver, interface, address, network, GDR."""
        return self.session.ranks

    @property
    def comms(self) -> pl.DataFrame:
        """One row per communicator: id, size, nodes, ranks seen and complete, PyTorch process group."""
        return self.session.comms

    @property
    def trace_collectives(self) -> pl.DataFrame:
        """Collectives found in the traces, one row per collective per rank (empty without traces)."""
        return self._trace_frame("collectives")

    @property
    def trace_steps(self) -> pl.DataFrame:
        """ProfilerStep spans found in the traces, one row per step per rank (empty without traces)."""
        return self._trace_frame("steps")

    @property
    def arrivals(self) -> pl.DataFrame:
        """Per (collective, rank): how long after the first rank it arrived (`skew_us`) and waited."""
        from ncclscope.report import views

        return views.arrivals(self.session)

    @property
    def timeline(self) -> pl.DataFrame:
        """Per (rank, collective) from the traces: start, end and op, for the per-rank timeline figure."""
        from ncclscope.report import views

        return views.timeline(self.session)

    @property
    def hang(self) -> pl.DataFrame:
        """Per rank: last NCCL opCount and PyTorch sequence numbers reached; `behind` marks laggards."""
        from ncclscope.report import views_hang

        return views_hang.hang(self.session)

    @property
    def topology_edges(self) -> pl.DataFrame:
        """One row per directed edge and channel (rings, trees, connections), as `fig.topology()` draws."""
        from ncclscope.report import views

        return views.topology_edges(self.session.logs)

    @property
    def inspector(self) -> pl.DataFrame:
        """NCCL Inspector records, one row per operation per rank (`parse.ncclreports.inspector`); a
        missing row means the plugin kept no record of it, not that the rank skipped it."""
        return self.session.reports.inspector

    @property
    def ras(self) -> pl.DataFrame:
        """NCCL RAS reports: missing/dead ranks, ranks at each operation count, listed processes."""
        return self.session.reports.ras_frame

    @property
    def nccl_params(self) -> pl.DataFrame:
        """`ncclparam -l` settings: value, who set it (EnvPlugin | Default), default."""
        return self.session.reports.params

    def _trace_frame(self, name: str) -> pl.DataFrame:
        from ncclscope import schema as S

        t = self.session.traces
        if t is not None and isinstance(getattr(t, name, None), pl.DataFrame):
            df: pl.DataFrame = getattr(t, name)
            return df
        return S.empty(S.TRACE_COLLECTIVES if name == "collectives" else S.TRACE_STEPS)

    def tables(self) -> list[str]:
        """Names of every frame reachable as an attribute."""
        return [
            "ranks",
            "comms",
            *LOG_TABLES,
            "trace_collectives",
            "trace_steps",
            "arrivals",
            "timeline",
            "hang",
            "topology_edges",
            "inspector",
            "ras",
            "nccl_params",
        ]

    # -- findings --------------------------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """Findings, errors first; each has id, severity, title, why, fix, ranks, hosts and evidence."""
        return list(self.session.findings)

    @property
    def diagnosis(self) -> Diagnosis:
        """The verdict's reasoning: `causes` (the first is the verdict, each with its `echoes` and its
        `chain` of steps citing evidence), every `events` entry and the `links` between them."""
        return self.session.diagnosis

    @property
    def verdict(self) -> str:
        """The one sentence users read: the cause, who is behind it and what it explains."""
        from ncclscope.report.views_verdict import text  # the report stage builds the sentence

        return text(self.session, self.session.diagnosis)

    @property
    def echoes_frame(self) -> pl.DataFrame:
        """One row per finding folded under a cause: the echo, the cause it is folded under, and why
        (the knowledge entry that links them)."""
        found = self.session.findings
        rows = [
            {
                "echo": found[lk.echo].id,
                "echo_index": lk.echo,
                "cause": found[lk.cause].id,
                "cause_index": lk.cause,
                "link": lk.rule,
                "reason": lk.reason,
            }
            for lk in self.session.diagnosis.links
        ]
        schema: dict[str, pl.DataType | type[pl.DataType]] = {
            "echo": pl.Utf8,
            "echo_index": pl.Int64,
            "cause": pl.Utf8,
            "cause_index": pl.Int64,
            "link": pl.Utf8,
            "reason": pl.Utf8,
        }
        return pl.DataFrame(rows, schema=schema)

    @property
    def findings_frame(self) -> pl.DataFrame:
        """The findings as a table, one row each, with the first cited line."""
        rows = [
            {
                "id": f.id,
                "severity": f.severity,
                "title": f.title,
                "ranks": [r if -(1 << 63) <= r < 1 << 63 else None for r in f.ranks],  # beyond Int64: unknown
                "hosts": list(f.hosts),
                "evidence": len(f.evidence),
                "first": f"{f.evidence[0].path}:{f.evidence[0].line}" if f.evidence else None,
            }
            for f in self.session.findings
        ]
        schema: dict[str, pl.DataType | type[pl.DataType]] = {
            "id": pl.Utf8,
            "severity": pl.Utf8,
            "title": pl.Utf8,
            "ranks": pl.List(pl.Int64),
            "hosts": pl.List(pl.Utf8),
            "evidence": pl.Int64,
            "first": pl.Utf8,
        }
        return pl.DataFrame(rows, schema=schema)

    @property
    def notes(self) -> tuple[str, ...]:
        """What was skipped, cut or could not be read, one sentence each."""
        return self.session.notes

    @property
    def coverage(self) -> dict[str, int]:
        """Lines read, NCCL lines, recognised and unknown ones, over every log."""
        return self.session.logs.coverage.to_json()

    # -- reports ---------------------------------------------------------------------------------
    def report(self, path: PathLike, *, redact: bool = False, fmt: str | None = None) -> Path:
        """Write a Markdown, HTML or JSON report (format from the suffix, or `fmt`)."""
        from ncclscope.report import write_report

        return write_report(self.session, os.fspath(path), fmt=fmt, redact=redact)

    def to_markdown(self, *, redact: bool = False) -> str:
        """The Markdown report as a string (as `ncclscope report -o x.md` writes it)."""
        from ncclscope.report import render

        return render(self.session, "markdown", redact=redact)

    def _repr_html_(self) -> str:
        from ncclscope.report import document_for, html

        return html.repr_html(document_for(self.session), self.tables_summary())

    def tables_summary(self) -> dict[str, int]:
        """Rows per non-empty log frame (the per-line frames counted, not built)."""
        out = {"ranks": self.ranks.height, "comms": self.comms.height}
        logs = self.session.logs
        sized: dict[str, int | None] = {"collectives": logs.coll.height, "unknown": logs.unknown_count}
        for n in LOG_TABLES:
            rows = sized.get(n)
            out[n] = rows if rows is not None else getattr(logs, n).height
        out["trace_collectives"] = self.trace_collectives.height
        return {k: v for k, v in out.items() if v}

    def __repr__(self) -> str:
        from ncclscope.report.document import verdict

        return (
            f"<ncclscope.Analysis: {verdict(self.session)} {self.n_ranks} ranks, "
            f"{len(self.session.findings)} findings>"
        )


Analysis.__doc__ = (
    (Analysis.__doc__ or "") + "\n    Log tables (`s.<name>`): " + ", ".join(LOG_TABLES) + ".\n"
)
