"""The meta every judge-set excerpt carries (samples/judge_issues, samples/judge2): its provenance and
the verdict an expert expects, written before ncclscope was run on it."""

from __future__ import annotations

import json
from pathlib import Path

META_KEYS = {
    "source_url",
    "repo",
    "title",
    "nccl_version",
    "failure",
    "root_cause",
    "expected_verdict",
    "why",
}


def check_meta(log: Path) -> None:
    """The log's meta has every field, a GitHub source of the named repository and a written expectation."""
    meta = json.loads(log.with_suffix(".meta.json").read_text())
    assert META_KEYS <= meta.keys()
    assert meta["source_url"].startswith("https://github.com/")
    assert meta["source_url"].split("/")[3:5] == meta["repo"].split("/")
    assert meta["expected_verdict"] and meta["why"] and meta["failure"]
    assert log.stat().st_size > 0
