"""Report, JSON: `ncclscope analyze --format json` follows the published JSON Schema
(ncclscope/schemas/analyze.schema.json), which is generated from the output's types (`AnalyzeJson`), and
`rules` / `coverage` JSON carry the same schema_version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.report import json_report
from ncclscope.report.schema_version import SCHEMA_VERSION

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json_report.schema()  # the published file, shipped in the wheel


def _doc(paths: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    main(["analyze", "-q", "--format", "json", *paths])
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_samples_follow_schema(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for log in sorted((samples_dir / "logs").glob("*.log")):
        jsonschema.validate(_doc([str(log)], capsys), SCHEMA)


def test_findings_cite_real_lines(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = sorted(str(p) for p in (samples_dir / "logs").glob("nccl1267_*.log"))
    doc = _doc(logs, capsys)
    jsonschema.validate(doc, SCHEMA)
    lines = {p: Path(p).read_text().splitlines() for p in logs}
    findings = doc["findings"]
    assert findings
    for f in findings:  # type: ignore[attr-defined]
        assert f["why"] and f["fix"]
        for e in f["evidence"]:
            assert e["text"].strip() in lines[e["path"]][e["line"] - 1]


def test_errors_come_first(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = sorted(str(p) for p in (samples_dir / "logs").glob("*.log"))
    sev = [f["severity"] for f in _doc(logs, capsys)["findings"]]  # type: ignore[attr-defined]
    order = {"error": 0, "warning": 1, "info": 2}
    assert sev == sorted(sev, key=order.__getitem__)


def test_corpus_follows_schema(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for log in sorted(corpus_dir.glob("*.log"))[::7]:
        jsonschema.validate(_doc([str(log)], capsys), SCHEMA)


def test_the_schema_is_a_valid_schema_of_this_version() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema_version"]["const"] == SCHEMA_VERSION


def test_the_shipped_schema_is_the_one_generated_from_the_types() -> None:
    """Edit the types in ncclscope/report/, then run `python tools/json_schema.py`: never the file."""
    shipped = (Path(json_report.__file__).parent.parent / "schemas" / "analyze.schema.json").read_text()
    assert shipped == json_report.schema_text()


# What the hand-written schema of schema_version 1.0 required, object by object: the generated one must
# require at least as much (a reader relying on a field keeps finding it).
REQUIRED_IN_1_0 = {
    "": ["schema_version", "ncclscope", "verdict", "inputs", "ranks", "findings", "coverage", "notes"],
    "Verdict": [
        "severity",
        "text",
        "finding",
        "index",
        "ranks",
        "hosts",
        "confidence",
        "echoes",
        "chain",
        "causes",
    ],
    "CauseView": ["finding", "index", "ranks", "hosts", "confidence", "echoes", "chain"],
    "Echo": ["finding", "index", "title"],
    "ChainStep": ["text", "evidence"],
    "Evidence": ["path", "line", "text"],
    "LogInput": ["path", "lines"],
    "RankRecord": ["rank", "host", "pid", "cuda_dev", "nccl_version", "comm_ids"],
    "Finding": ["id", "severity", "title", "ranks", "hosts", "evidence", "why", "fix"],
    "Coverage": ["lines", "nccl_lines", "recognized", "unknown"],
}
# ... and its enums, which the generated schema must keep to the same values (order aside).
ENUMS_IN_1_0 = {
    ("Verdict", "severity"): {"error", "warning", "info", "ok"},
    ("Verdict", "confidence"): {"high", "medium", "low", None},
    ("CauseView", "confidence"): {"high", "medium", "low"},
    ("Finding", "severity"): {"error", "warning", "info"},
}


def _allowed(prop: dict[str, object]) -> set[object]:
    """The values an enum property allows (an optional one: `anyOf` an enum and null)."""
    out: set[object] = set()
    for alt in prop.get("anyOf", [prop]):  # type: ignore[attr-defined]
        out |= set(alt.get("enum", [])) | ({None} if alt.get("type") == "null" else set())
        assert "enum" in alt or alt.get("type") == "null", prop
    return out


def test_the_generated_schema_is_as_strict_as_the_hand_written_one() -> None:
    for name, required in REQUIRED_IN_1_0.items():
        obj = SCHEMA if not name else SCHEMA["$defs"][name]
        assert set(required) <= set(obj["required"]), name
    for (name, field), values in ENUMS_IN_1_0.items():
        assert _allowed(SCHEMA["$defs"][name]["properties"][field]) == values, (name, field)
    evidence = SCHEMA["$defs"]["Evidence"]
    assert evidence["additionalProperties"] is False and evidence["properties"]["line"]["minimum"] == 0


def test_a_json_output_with_a_field_removed_or_mistyped_fails_the_schema(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _doc([str(samples_dir / "hang" / "torch26_class_a_8ranks")], capsys)
    jsonschema.validate(doc, SCHEMA)
    bad = [
        {k: v for k, v in doc.items() if k != "findings"},
        {**doc, "verdict": {**doc["verdict"], "confidence": "certain"}},  # type: ignore[dict-item]
        {**doc, "findings": [{**doc["findings"][0], "severity": "fatal"}]},  # type: ignore[index, dict-item]
        {**doc, "health": {**doc["health"], "healthy": "yes"}},  # type: ignore[dict-item]
    ]
    for b in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(b, SCHEMA)


def test_every_sample_set_follows_schema(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each bundled directory (hangs, traces, dumps, nccl-tests, complete runs) as one analysis."""
    dirs = sorted(d for d in samples_dir.iterdir() if d.is_dir())
    assert dirs
    for d in dirs:
        main(["analyze", "-q", "--format", "json", str(d)])
        out = capsys.readouterr().out
        if out:  # a directory with nothing readable exits 2 with no JSON
            doc = json.loads(out)
            jsonschema.validate(doc, SCHEMA)
            assert doc["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("command", [["rules"], ["coverage"]])
def test_rules_and_coverage_json_carry_the_version(
    command: list[str], samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = [str(samples_dir / "logs" / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log")]
    assert main([*command, "--format", "json", *(extra if command == ["coverage"] else [])]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == SCHEMA_VERSION
