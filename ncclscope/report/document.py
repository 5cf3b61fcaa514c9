"""Report stage, document: the one report every renderer draws, built once from a `Session`.

`build(s)` runs each entry of `SECTIONS` (a key and a pure builder) and returns a JSON-like tree:
verdict, counts, evidence summary, findings, the ranks × configuration table with its odd cells
(decided here, once), environment, hang view, provenance, notes. Redaction maps that tree; the
terminal, Markdown, HTML and JSON renderers only lay it out. A new section is one entry below.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ncclscope.records import SEVERITY_ORDER
from ncclscope.report import facts, views_hang, views_health, views_nccltests, views_verdict

if TYPE_CHECKING:
    from ncclscope.session import Session

Document = dict[str, Any]  # a JSON-like tree: str keys; str, int, float, bool, None, lists, dicts


@dataclass(frozen=True)
class Provenance:
    """How a report was made: the command line (when run from the CLI) and whether it is redacted."""

    command: str | None = None
    redacted: bool = False


@dataclass(frozen=True)
class Section:
    key: str
    build: Callable[[Session, Provenance], Any]
    doc: str


def verdict(s: Session) -> str:
    """One sentence: the diagnosis' cause with what it explains (`report.views_verdict`), else a clean bill."""
    return views_verdict.text(s, s.diagnosis)


def _top_severity(s: Session) -> str:
    sevs = {f.severity for f in s.findings}
    return next((sev for sev in ("error", "warning", "info") if sev in sevs), "ok")


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
    Section(
        "verdict",
        lambda s, _p: views_verdict.section(s),
        "the diagnosis: its sentence, cause, ranks, confidence, echoes and chain",
    ),
    Section("counts", lambda s, _p: dict(Counter(f.severity for f in s.findings)), "findings per severity"),
    Section("summary", lambda s, _p: evidence_summary(s), "what was read"),
    Section(
        "findings",
        lambda s, _p: [f.to_json() for f in sorted(s.findings, key=lambda f: SEVERITY_ORDER[f.severity])],
        "every finding, errors first",
    ),
    Section("health", lambda s, _p: views_health.section(s), "what was checked and found healthy, job facts"),
    Section("ranks", lambda s, _p: facts.ranks_table(s), "ranks × configuration, odd cells marked"),
    Section("rank_records", _rank_records, "one record per process"),
    Section("environment", lambda s, _p: facts.environment(s), "job shape, versions, transports, NCCL_*"),
    Section("hang", lambda s, _p: views_hang.hang(s).to_dicts(), "how far each rank got"),
    Section("nccltests", lambda s, _p: views_nccltests.section(s), "nccl-tests runs: bus bandwidth per size"),
    Section("provenance", lambda s, p: facts.provenance(s, p.command, p.redacted), "how the report was made"),
    Section("notes", lambda s, _p: list(s.notes), "what was skipped or cut"),
)


def build(s: Session, prov: Provenance = Provenance()) -> Document:
    """The report document: every section of `SECTIONS`, in order."""
    return {sec.key: sec.build(s, prov) for sec in SECTIONS}


def _json_verdict(v: Document) -> Document:
    """The verdict object of the JSON schema: the section less the renderers' folding map."""
    return {k: val for k, val in v.items() if k != "folded"}


def json_view(doc: Document) -> Document:
    """The stable JSON schema (`analyze --format json`): a projection of the document."""
    from ncclscope.report.schema_version import SCHEMA_VERSION

    p = doc["provenance"]
    return {
        "schema_version": SCHEMA_VERSION,
        "ncclscope": p["ncclscope"],
        "verdict": _json_verdict(doc["verdict"]),
        "inputs": p["inputs"],
        "ranks": doc["rank_records"],
        "findings": doc["findings"],
        "coverage": p["coverage"],
        "notes": doc["notes"],
        "facts": doc["health"]["facts"],
        "health": {k: v for k, v in doc["health"].items() if k != "facts"},
    }
