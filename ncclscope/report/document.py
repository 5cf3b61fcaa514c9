"""Report stage, document: the one report every renderer draws, built once from a `Session`.

`build(s)` runs the data builder of each section of `report.sections.SECTIONS` and returns a JSON-like
tree: verdict, counts, evidence summary, health, findings, hang view, the ranks × configuration table
with its odd cells (decided once), environment, nccl-tests, provenance, notes. Redaction maps that
tree; the terminal, Markdown and HTML renderers lay it out with each section's own layouts, and
`json_view` projects the stable JSON schema from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ncclscope.report import sections, views_verdict
from ncclscope.report.section import Document, Provenance, Section
from ncclscope.report.sections import SECTIONS, evidence_summary  # re-exported

if TYPE_CHECKING:
    from ncclscope.session import Session

__all__ = [
    "SECTIONS",
    "Document",
    "Provenance",
    "Section",
    "build",
    "evidence_summary",
    "json_view",
    "verdict",
]


def verdict(s: Session) -> str:
    """One sentence: the diagnosis' cause with what it explains (`report.views_verdict`), else a clean bill."""
    return views_verdict.text(s, s.diagnosis)


def build(s: Session, prov: Provenance | None = None) -> Document:
    """The report document: the data of every section of `report.sections.SECTIONS`, in order."""
    made = prov or Provenance()
    return {sec.key: _tree(sec.build(s, made)) for sec in sections.SECTIONS if sec.build is not None}


def _tree(data: object) -> object:
    """A section's data as the document's JSON-like tree (typed data is stored by its fields, in order,
    its tuples as lists)."""
    return _lists(msgspec.to_builtins(data)) if isinstance(data, msgspec.Struct) else data


def _lists(v: object) -> object:
    if isinstance(v, (list, tuple)):
        return [_lists(x) for x in v]
    if isinstance(v, dict):
        return {k: _lists(x) for k, x in v.items()}
    return v


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
