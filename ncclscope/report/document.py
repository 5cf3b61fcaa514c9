"""Report stage, document: the one report every renderer draws, built once from a `Session`.

`build(s)` runs the data builder of each section of `report.sections.SECTIONS` and returns a JSON-like
tree: verdict, counts, evidence summary, health, findings, hang view, the ranks × configuration table
with its odd cells (decided once), environment, nccl-tests, provenance, notes. Redaction maps that
tree (`redacted`: a typed section value by value, its field names kept); the terminal, Markdown and HTML renderers lay it out with each section's own layouts, and
`json_data` projects the stable JSON output from it, typed (`AnalyzeJson`: the published JSON Schema is
generated from that type, `report.json_report.generated_schema`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import msgspec.inspect

from ncclscope.report import section_findings, section_provenance, sections, views_verdict
from ncclscope.report.health_data import Health, HealthSection, JobFacts
from ncclscope.report.section import Document, Provenance, Section
from ncclscope.report.section_provenance import Coverage, LogInput
from ncclscope.report.sections import SECTIONS, RankRecord, evidence_summary  # re-exported

if TYPE_CHECKING:
    from ncclscope.report.redact import Redactor
    from ncclscope.session import Session

__all__ = [
    "SECTIONS",
    "AnalyzeJson",
    "Document",
    "Provenance",
    "Section",
    "build",
    "evidence_summary",
    "json_data",
    "json_view",
    "redacted",
    "verdict",
]


def verdict(s: Session) -> str:
    """One sentence: the diagnosis' cause with what it explains (`report.views_verdict`), else a clean bill."""
    return views_verdict.text(s, s.diagnosis)


def build(s: Session, prov: Provenance | None = None) -> Document:
    """The report document: the data of every section of `report.sections.SECTIONS`, in order."""
    made = prov or Provenance()
    return {sec.key: _stored(sec, sec.build(s, made)) for sec in sections.SECTIONS if sec.build is not None}


def _stored(sec: Section, data: object) -> object:
    """Typed data (a section with a `schema`, or a Struct) as its tree; untyped data as it was built."""
    return _tree(data) if sec.schema is not None or isinstance(data, msgspec.Struct) else data


def redacted(doc: Document, r: Redactor) -> Document:
    """The document with every string redacted by `r`, the field names of typed sections kept: each section
    with a `schema` is read back typed, the values in it redacted (the keys of its free-form maps too, such
    as a finding's `metrics`), and stored again; any other entry is mapped whole (`Redactor.tree`)."""
    typed = {sec.key: sec.schema for sec in sections.SECTIONS if sec.schema is not None}
    out: Document = {}
    for key, data in doc.items():
        schema = typed.get(key)
        out[key] = r.tree(data) if schema is None else _tree(_values(msgspec.convert(data, schema), r))
    return out


def _values(v: Any, r: Redactor) -> Any:
    if isinstance(v, str):
        return r(v)
    if isinstance(v, msgspec.Struct):
        keep = _enum_fields(type(v))  # a severity or a confidence is ours, never a site's identity
        return msgspec.structs.replace(
            v, **{f: _values(getattr(v, f), r) for f in v.__struct_fields__ if f not in keep}
        )
    if isinstance(v, (list, tuple)):
        return type(v)(_values(x, r) for x in v)
    if isinstance(v, dict):
        return {_values(k, r): _values(x, r) for k, x in v.items()}
    return v


@cache
def _enum_fields(cls: type[msgspec.Struct]) -> frozenset[str]:
    """The fields of a Struct whose values are one of a fixed set (Literal, optional or not)."""
    out = set()
    for f in msgspec.inspect.type_info(cls).fields:  # type: ignore[attr-defined]
        t = f.type.type if isinstance(f.type, msgspec.inspect.Metadata) else f.type
        alts = t.types if isinstance(t, msgspec.inspect.UnionType) else (t,)
        if any(isinstance(a, msgspec.inspect.LiteralType) for a in alts):
            out.add(f.name)
    return frozenset(out)


def _tree(data: object) -> Any:
    """A section's data as the document's JSON-like tree (typed data is stored by its fields, in order,
    its tuples as lists; what JSON cannot hold, as `analyze --format json` writes it: its text)."""
    return _lists(msgspec.to_builtins(data, enc_hook=str))


def _lists(v: object) -> object:
    if isinstance(v, (list, tuple)):
        return [_lists(x) for x in v]
    if isinstance(v, dict):
        return {k: _lists(x) for k, x in v.items()}
    return v


class AnalyzeJson(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The JSON of `ncclscope analyze --format json` and `ncclscope report -o x.json`. schema_version's major
    number changes when a field is removed, renamed or retyped, its minor number when a field is added: this
    schema is strict (no unknown fields), so validate a document against the schema of its own version."""

    schema_version: Annotated[str, msgspec.Meta(description="the version of this schema")]
    ncclscope: Annotated[str, msgspec.Meta(description="version of ncclscope that wrote it")]
    verdict: views_verdict.Verdict
    inputs: Annotated[tuple[LogInput, ...], msgspec.Meta(description="the logs read, with their lines")]
    ranks: Annotated[tuple[RankRecord, ...], msgspec.Meta(description="one record per process")]
    findings: Annotated[tuple[section_findings.Finding, ...], msgspec.Meta(description="errors first")]
    coverage: Coverage
    notes: Annotated[tuple[str, ...], msgspec.Meta(description="what was skipped, cut or could not be read")]
    facts: JobFacts
    health: Health


def json_data(doc: Document) -> AnalyzeJson:
    """The stable JSON output (`analyze --format json`), typed: a projection of the document."""
    from ncclscope.report.schema_version import SCHEMA_VERSION

    made = section_provenance.of(doc)
    h = msgspec.convert(doc["health"], HealthSection)
    return AnalyzeJson(
        schema_version=SCHEMA_VERSION,
        ncclscope=made.ncclscope,
        verdict=views_verdict.for_json(views_verdict.of(doc)),
        inputs=made.inputs,
        ranks=sections.rank_records_of(doc),
        findings=section_findings.of(doc),
        coverage=made.coverage,
        notes=sections.notes_of(doc),
        facts=h.facts,
        health=Health(**{f: getattr(h, f) for f in Health.__struct_fields__}),
    )


def json_view(doc: Document) -> Document:
    """The stable JSON output as a JSON-like tree (`json_data`'s fields, in order)."""
    tree: Document = _tree(json_data(doc))
    return tree
