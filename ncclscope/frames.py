"""Frames stage: the per-family Polars tables built from parsed log records.

`LogFrames` is what the parse stage hands to align and findings; every table follows a schema
declared in `ncclscope.schema`, and every row keeps its path and line.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

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
class CollLines:
    """NCCL COLL lines as stored: `rows` (schema.COLL_ROWS: path, line, op_count, shape, text) point
    at `shapes` (schema.COLL_SHAPES: every other column of the COLLECTIVES frame, once per shape).

    A shape is a line's text without its opCount, so a big log's millions of COLL lines share a few
    hundred shapes; aggregations run on the integer `shape` and join the few shapes they need, and
    the full frame is built only when asked for (`frame()`, `LogFrames.collectives`).
    """

    rows: pl.DataFrame = field(default_factory=lambda: _empty(S.COLL_ROWS))
    shapes: pl.DataFrame = field(default_factory=lambda: _empty(S.COLL_SHAPES))

    @property
    def height(self) -> int:
        return self.rows.height

    def frame(self) -> pl.DataFrame:
        """The COLLECTIVES frame: one row per COLL line, in `rows` order."""
        if self.rows.is_empty():
            return _empty(S.COLLECTIVES)
        df = self.rows.join(self.shapes, on="shape", how="left", maintain_order="left")
        return df.select(list(S.COLLECTIVES))

    @staticmethod
    def of(df: pl.DataFrame, first_shape: int = 0) -> CollLines:
        """From a COLLECTIVES frame, each row its own shape (numbered from `first_shape`)."""
        df = S.conform(df, S.COLLECTIVES).with_columns(
            pl.int_range(first_shape, first_shape + pl.len(), dtype=pl.Int64).alias("shape"))
        return CollLines(rows=df.select(list(S.COLL_ROWS)), shapes=df.select(list(S.COLL_SHAPES)))

    @staticmethod
    def concat(parts: Sequence[CollLines]) -> CollLines:
        """Parts with disjoint shape numbers, rows kept in (path, line) order."""
        live = [p for p in parts if p.rows.height]
        if not live:
            return CollLines()
        rows = pl.concat([p.rows for p in live])
        return CollLines(rows=rows if in_order(rows) else rows.sort("path", "line", maintain_order=True),
                         shapes=pl.concat([p.shapes for p in live]))


def in_order(df: pl.DataFrame) -> bool:
    """Already sorted by (path, line)? (Sorting millions of COLL rows is not free, and they usually are.)"""
    p, ln = pl.col("path"), pl.col("line")
    ok = df.select(((p > p.shift(1)) | ((p == p.shift(1)) & (ln >= ln.shift(1)))).fill_null(True).all()).item()
    return bool(ok)


_TABLES = ("inits", "versions", "env", "network", "rings", "connections", "channels", "warnings", "trail",
           "collectives", "torch", "known", "unknown", "streams")


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
    coll: CollLines = field(default_factory=CollLines)  # the COLL lines; `collectives` is the full frame
    torch: pl.DataFrame = field(default_factory=lambda: _empty(S.TORCH))
    known: pl.DataFrame = field(default_factory=lambda: _empty(S.KNOWN))  # catalog-named NCCL lines
    unknown: pl.DataFrame = field(default_factory=lambda: _empty(S.UNKNOWN))
    streams: pl.DataFrame = field(default_factory=lambda: _empty(S.STREAMS))
    inputs: tuple[InputInfo, ...] = ()
    coverage: Coverage = Coverage()
    notes: tuple[str, ...] = ()  # counted warnings about the input (skipped binary runs, truncated gzip, …)

    @functools.cached_property
    def collectives(self) -> pl.DataFrame:  # schema.COLLECTIVES, built from `coll` on first use
        return self.coll.frame()

    def table_names(self) -> list[str]:
        return list(_TABLES)
