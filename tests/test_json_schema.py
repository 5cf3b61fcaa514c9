"""Report, JSON: `ncclscope analyze --format json` follows the stable schema of issue 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.cli import main

jsonschema = pytest.importorskip("jsonschema")

_INT = {"type": "integer"}
_STR = {"type": "string"}
SCHEMA = {
    "type": "object",
    "required": ["ncclscope", "inputs", "ranks", "findings", "coverage"],
    "properties": {
        "ncclscope": _STR,
        "inputs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {"path": _STR, "lines": _INT},
            },
        },
        "ranks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["rank", "host", "pid", "cuda_dev", "nccl_version", "comm_ids"],
                "properties": {
                    "rank": {"type": ["integer", "null"]},
                    "host": _STR,
                    "pid": _INT,
                    "cuda_dev": {"type": ["integer", "null"]},
                    "nccl_version": {"type": ["string", "null"]},
                    "comm_ids": {"type": "array", "items": _STR},
                },
            },
        },
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "severity", "title", "ranks", "hosts", "evidence", "why", "fix"],
                "properties": {
                    "id": _STR,
                    "severity": {"enum": ["error", "warning", "info"]},
                    "title": _STR,
                    "ranks": {"type": "array", "items": _INT},
                    "hosts": {"type": "array", "items": _STR},
                    "evidence": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["path", "line", "text"],
                            "properties": {"path": _STR, "line": _INT, "text": _STR},
                        },
                    },
                    "why": _STR,
                    "fix": _STR,
                },
            },
        },
        "coverage": {
            "type": "object",
            "required": ["lines", "nccl_lines", "recognized", "unknown"],
            "properties": {k: _INT for k in ("lines", "nccl_lines", "recognized", "unknown")},
        },
    },
}


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
