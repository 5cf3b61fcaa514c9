"""Frames stage: the per-family Polars tables built from parsed log records.

`LogFrames` is what the parse stage hands to align and findings; every table follows a schema
declared in `ncclscope.schema`, and every row keeps its path and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import polars as pl

from ncclscope import schema as S


@dataclass(frozen=True, slots=True)
class InputInfo:
    """One input as read: its display path and how many lines it held."""

    path: str
    lines: int


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of the input the grammar recognised (NCCL-prefixed lines are the figure of merit)."""

    lines: int = 0
    nccl_lines: int = 0
    recognized: int = 0
    unknown: int = 0

    def to_json(self) -> dict[str, int]:
        return {"lines": self.lines, "nccl_lines": self.nccl_lines,
                "recognized": self.recognized, "unknown": self.unknown}


def _empty(schema: S.Schema) -> pl.DataFrame:
    return S.empty(schema)


@dataclass(frozen=True)
class LogFrames:
    """All log-derived tables of one analysis; each defaults to an empty, typed frame."""

    inits: pl.DataFrame = field(default_factory=lambda: _empty(S.INITS))
    versions: pl.DataFrame = field(default_factory=lambda: _empty(S.VERSIONS))
    env: pl.DataFrame = field(default_factory=lambda: _empty(S.ENV))
    network: pl.DataFrame = field(default_factory=lambda: _empty(S.NETWORK))
    rings: pl.DataFrame = field(default_factory=lambda: _empty(S.RINGS))
    connections: pl.DataFrame = field(default_factory=lambda: _empty(S.CONNECTIONS))
    channels: pl.DataFrame = field(default_factory=lambda: _empty(S.CHANNELS))
    warnings: pl.DataFrame = field(default_factory=lambda: _empty(S.WARNINGS))
    trail: pl.DataFrame = field(default_factory=lambda: _empty(S.TRAIL))
    collectives: pl.DataFrame = field(default_factory=lambda: _empty(S.COLLECTIVES))
    torch: pl.DataFrame = field(default_factory=lambda: _empty(S.TORCH))
    unknown: pl.DataFrame = field(default_factory=lambda: _empty(S.UNKNOWN))
    streams: pl.DataFrame = field(default_factory=lambda: _empty(S.STREAMS))
    inputs: tuple[InputInfo, ...] = ()
    coverage: Coverage = Coverage()
    notes: tuple[str, ...] = ()  # counted warnings about the input (skipped binary runs, truncated gzip, …)

    def table_names(self) -> list[str]:
        return [f.name for f in fields(self) if f.name not in ("inputs", "coverage", "notes")]
