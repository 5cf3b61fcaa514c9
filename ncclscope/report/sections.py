"""Report stage, sections: the report's sections in order, each with its data builder and its layouts.

`document.build` stores each section's data under its key; the Markdown, HTML and terminal renderers
and the HTML page's menu loop over `SECTIONS` (the terminal in `TERMINAL` order: a summary first).
Adding a section touches two files: its module (data and layouts, `SECTION = Section(...)`) and one
line below.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ncclscope.report import (
    section_environment,
    section_figures,
    section_findings,
    section_hang,
    section_provenance,
    section_ranks,
    views_health,
    views_nccltests,
    views_verdict,
)
from ncclscope.report.section import Provenance, Section

if TYPE_CHECKING:
    from ncclscope.session import Session


def evidence_summary(s: Session) -> str:
    """What was read: logs with their coverage, traces with the collectives aligned, dumps."""
    c = s.logs.coverage
    parts = []
    if s.logs.inputs or not (s.aligned_traces or s.flight):
        parts.append(
            f"{len(s.logs.inputs)} log(s), {c.lines} lines, {c.nccl_lines} NCCL lines, "
            f"{c.recognized} recognized, {c.unknown} unknown"
        )
    a = s.aligned_traces
    if a is not None:
        parts.append(
            f"traces of {a.n_ranks} rank(s), {a.collectives.height} collectives lined up "
            f"({a.n_aligned} complete and consistent)"
        )
    if s.flight is not None:
        parts.append(f"{s.flight.dumps.height} Flight Recorder dump(s)")
    return "; ".join(parts)


def _rank_records(s: Session, _p: Provenance) -> list[dict[str, Any]]:
    """One record per process for machine readers (the JSON schema's `ranks`)."""
    cols = ["rank", "host", "pid", "cuda_dev", "nccl_version", "comm_ids"]
    return [
        {**{c: r.get(c) for c in cols}, "comm_ids": list(r.get("comm_ids") or [])}
        for r in s.ranks.select(cols).to_dicts()
    ]


SECTIONS: tuple[Section, ...] = (
    views_verdict.SECTION,
    Section("counts", lambda s, _p: dict(Counter(f.severity for f in s.findings)), "findings per severity"),
    Section("summary", lambda s, _p: evidence_summary(s), "what was read"),
    views_health.SECTION,
    section_findings.SECTION,
    section_hang.SECTION,
    section_ranks.SECTION,
    Section("rank_records", _rank_records, "one record per process"),
    section_figures.TOPOLOGY,
    section_figures.TRACES,
    section_environment.SECTION,
    views_nccltests.SECTION,
    section_provenance.SECTION,
    Section("notes", lambda s, _p: list(s.notes), "what was skipped or cut (shown with the provenance)"),
)
# The terminal shows the ranks and nccl-tests tables first, then why, the health and the findings.
TERMINAL: tuple[str, ...] = ("ranks", "nccltests", "verdict", "health", "findings")


def by_key(key: str) -> Section:
    return next(s for s in SECTIONS if s.key == key)
