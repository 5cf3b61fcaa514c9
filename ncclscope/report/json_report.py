"""Report stage, JSON: the stable machine-readable schema other tools and tests read."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from ncclscope import __version__
from ncclscope.session import Session


def _ranks(ranks: pl.DataFrame) -> list[dict[str, Any]]:
    cols = ["rank", "host", "pid", "cuda_dev", "nccl_version", "comm_ids"]
    return [
        {**{c: r.get(c) for c in cols}, "comm_ids": list(r.get("comm_ids") or [])}
        for r in ranks.select(cols).to_dicts()
    ]


def to_dict(s: Session) -> dict[str, Any]:
    """The JSON document: version, inputs, ranks, findings, coverage (plus notes)."""
    return {
        "ncclscope": __version__,
        "inputs": [{"path": i.path, "lines": i.lines} for i in s.logs.inputs],
        "ranks": _ranks(s.ranks),
        "findings": [f.to_json() for f in s.findings],
        "coverage": s.logs.coverage.to_json(),
        "notes": list(s.notes),
    }


def render(s: Session) -> str:
    return json.dumps(to_dict(s), indent=2, sort_keys=False, default=str) + "\n"
