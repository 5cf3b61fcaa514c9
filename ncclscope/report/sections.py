"""Report stage, sections: the report's sections in order, each with its data builder and its layouts.

The small data-only sections are typed here: `counts` (a `Counts`), `summary` (a string), `rank_records`
(a `RankRecord` per process) and `notes` (strings); `Section.schema` names each section's type.
`document.build` stores each section's data under its key; the Markdown, HTML and terminal renderers
and the HTML page's menu loop over `SECTIONS` (the terminal in `TERMINAL` order: a summary first).
Adding a section touches two files: its module (data and layouts, `SECTION = Section(...)`) and one
line below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec

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
from ncclscope.report.section import Document, Provenance, Section

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


class Counts(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Findings per severity (a severity with none is left out)."""

    error: int = 0
    warning: int = 0
    info: int = 0


class RankRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One process: its global rank (null when no line names it), host, pid, GPU, NCCL version and the
    communicators it is in."""

    rank: int | None
    host: str
    pid: int
    cuda_dev: Annotated[int | None, msgspec.Meta(description="the CUDA device it printed, if any")]
    nccl_version: str | None
    comm_ids: tuple[str, ...]


def _counts(s: Session, _p: Provenance) -> Counts:
    return Counts(**{sev: sum(f.severity == sev for f in s.findings) for sev in ("error", "warning", "info")})


def _rank_records(s: Session, _p: Provenance) -> tuple[RankRecord, ...]:
    """One record per process for machine readers (the JSON schema's `ranks`)."""
    cols = ["rank", "host", "pid", "cuda_dev", "nccl_version", "comm_ids"]
    return tuple(
        RankRecord(
            r["rank"], r["host"], r["pid"], r["cuda_dev"], r["nccl_version"], tuple(r["comm_ids"] or ())
        )
        for r in s.ranks.select(cols).to_dicts()
    )


def counts_of(doc: Document) -> Counts:
    """The `counts` section, typed, from a (possibly redacted) document; likewise the three below."""
    return msgspec.convert(doc["counts"], Counts)


def summary_of(doc: Document) -> str:
    return msgspec.convert(doc["summary"], str)


def rank_records_of(doc: Document) -> tuple[RankRecord, ...]:
    return msgspec.convert(doc["rank_records"], tuple[RankRecord, ...])


def notes_of(doc: Document) -> tuple[str, ...]:
    return msgspec.convert(doc["notes"], tuple[str, ...])


SECTIONS: tuple[Section, ...] = (
    views_verdict.SECTION,
    Section("counts", _counts, "findings per severity", schema=Counts),
    Section("summary", lambda s, _p: evidence_summary(s), "what was read", schema=str),
    views_health.SECTION,
    section_findings.SECTION,
    section_hang.SECTION,
    section_ranks.SECTION,
    Section("rank_records", _rank_records, "one record per process", schema=tuple[RankRecord, ...]),
    section_figures.TOPOLOGY,
    section_figures.TRACES,
    section_environment.SECTION,
    views_nccltests.SECTION,
    section_provenance.SECTION,
    Section(
        "notes",
        lambda s, _p: tuple(s.notes),
        "what was skipped or cut (shown with the provenance)",
        schema=tuple[str, ...],
    ),
)
# The terminal shows the ranks and nccl-tests tables first, then why, the health and the findings.
TERMINAL: tuple[str, ...] = ("ranks", "nccltests", "verdict", "health", "findings")


def by_key(key: str) -> Section:
    return next(s for s in SECTIONS if s.key == key)
