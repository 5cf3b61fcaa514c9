"""Report sections with typed data (issue 31): verdict, counts, summary, health, findings, rank_records and
notes are msgspec Structs, built typed, stored as the document's tree and read back typed by their layouts;
the JSON output is an `AnalyzeJson` and redaction keeps every typed section readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from ncclscope.report import (
    Options,
    document_for,
    json_report,
    redact,
    render,
    section_findings,
    sections,
    views_health,
    views_verdict,
)
from ncclscope.report import document as D
from ncclscope.session import analyze

from .conftest import HOSTS, make_session

TYPED = ("verdict", "counts", "summary", "health", "findings", "rank_records", "notes")


@pytest.fixture(scope="module")
def hang_doc(samples_dir: Path) -> dict[str, Any]:
    return document_for(analyze([str(samples_dir / "hang" / "torch26_class_a_8ranks")]))


def test_each_typed_section_names_its_type_and_reads_back_as_stored(hang_doc: dict[str, Any]) -> None:
    for key in TYPED:
        sec = sections.by_key(key)
        assert sec.schema is not None, key
        data = msgspec.convert(
            hang_doc[key], sec.schema
        )  # forbid_unknown_fields: every stored key is a field
        assert D._tree(data) == hang_doc[key], key  # nothing lost or added on the way back


def test_the_verdict_and_findings_are_read_typed(hang_doc: dict[str, Any]) -> None:
    v = views_verdict.of(hang_doc)
    findings = section_findings.of(hang_doc)
    assert v.index is not None and v.klass is not None and v.chain
    assert findings[v.index].id == v.finding
    folded = views_verdict.fold(v, findings)
    assert folded[0][0] is findings[v.index] and [e.id for e in folded[0][1]] == [
        findings[e.index].id for e in v.echoes
    ]
    h = views_health.of(hang_doc)
    assert h is not None and h.facts.world_size.value == 8


def test_a_stored_field_the_type_does_not_know_is_refused(hang_doc: dict[str, Any]) -> None:
    bad = {**hang_doc, "verdict": {**hang_doc["verdict"], "surprise": 1}}
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        views_verdict.of(bad)


def test_the_json_output_is_the_typed_projection(hang_doc: dict[str, Any]) -> None:
    data = D.json_data(hang_doc)
    assert isinstance(data, D.AnalyzeJson)
    view = D.json_view(hang_doc)
    assert list(view) == list(D.AnalyzeJson.__struct_fields__)
    assert "folded" not in view["verdict"] and "folded" in hang_doc["verdict"]
    assert "facts" not in view["health"] and view["facts"] == hang_doc["health"]["facts"]
    assert msgspec.convert(view, D.AnalyzeJson) == data


def test_a_verdict_without_a_cause_leaves_class_kind_and_title_out(hang_doc: dict[str, Any]) -> None:
    none = views_verdict.VerdictSection(
        severity="ok",
        text="No problems found in the evidence given.",
        finding=None,
        index=None,
        ranks=(),
        hosts=(),
        confidence=None,
        confidence_reason=None,
        echoes=(),
        chain=(),
        causes=(),
        folded={},
    )
    keys = ["severity", "text", "finding", "index", "ranks", "hosts", "confidence", "confidence_reason"]
    assert list(D._tree(none)) == [*keys, "echoes", "chain", "causes", "folded"]
    cause = list(hang_doc["verdict"])  # a cause: its class, kind and title after its index, in that order
    assert cause[:7] == ["severity", "text", "finding", "index", "class", "kind", "title"]


def _host_named_like_fields() -> redact.Redactor:
    """A redactor that learned host names spelled like the typed sections' field names (a log's prefix
    can make any word a host): only values may be redacted, never a field name."""
    r = redact.Redactor()
    for name in ("multi_node", "world_size", "severity", "evidence", "statement", "error", "high", *HOSTS):
        r.add_host(name)
    return r


def test_redaction_keeps_every_typed_section_readable(hang_doc: dict[str, Any]) -> None:
    r = _host_named_like_fields()
    red = D.redacted(hang_doc, r)
    for key in TYPED:
        msgspec.convert(red[key], sections.by_key(key).schema)  # type: ignore[arg-type]
    assert views_health.of(red) is not None
    # nor a value of a fixed set (a severity, a confidence): ours, not the site's
    assert r("error") != "error" and red["verdict"]["severity"] == hang_doc["verdict"]["severity"] == "error"
    assert red["verdict"]["confidence"] == hang_doc["verdict"]["confidence"] == "high"
    assert [f["severity"] for f in red["findings"]] == [f["severity"] for f in hang_doc["findings"]]
    text = json_report.render_doc(red)
    assert "multi_node" in text  # the field name survives (`facts.multi_node`)
    # the same document mapped as a plain tree loses the field names it must keep
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(r.tree(hang_doc)["health"], views_health.HealthSection)


def test_redacted_outputs_read_back_typed_and_hide_hosts() -> None:
    s = make_session()
    doc = document_for(s, Options(redact=True))
    for key in TYPED:
        msgspec.convert(doc[key], sections.by_key(key).schema)  # type: ignore[arg-type]
    out = render(s, "json", redact=True)
    assert not any(h in out for h in HOSTS)
    msgspec.json.decode(out.encode(), type=D.AnalyzeJson)
