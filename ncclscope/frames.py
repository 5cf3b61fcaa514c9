"""Frames stage: the per-family Polars tables built from parsed log records.

`LogFrames` is what the parse stage hands to align and findings; every table follows a schema
declared in `ncclscope.schema`, and every row keeps its path and line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import polars as pl

from ncclscope import schema as S
from ncclscope.frames_coll import KEY, CollFacts

CollLines = CollFacts  # the name the test builders use: `CollLines.of(collectives_frame)`


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
        return {
            "lines": self.lines,
            "nccl_lines": self.nccl_lines,
            "recognized": self.recognized,
            "unknown": self.unknown,
        }


def _empty(schema: S.Schema) -> pl.DataFrame:
    return S.empty(schema)


@dataclass(frozen=True)
class FullFrames:
    """The per-line frames a notebook may ask for: every COLL line, every unrecognised line."""

    collectives: pl.DataFrame
    unknown: pl.DataFrame


def in_order(df: pl.DataFrame) -> bool:
    """Already sorted by (path, line)? (Sorting millions of COLL rows is not free, and they usually are.)"""
    p, ln = pl.col("path"), pl.col("line")
    ok = df.select(
        ((p > p.shift(1)) | ((p == p.shift(1)) & (ln >= ln.shift(1)))).fill_null(True).all()
    ).item()
    return bool(ok)


# Every per-line log table, in report order: the one list the notebook, tests and tools read.
LOG_TABLES = (
    "inits",
    "versions",
    "env",
    "network",
    "rings",
    "connections",
    "channels",
    "warnings",
    "trail",
    "collectives",
    "torch",
    "known",
    "unknown",
    "streams",
)


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
    coll: CollFacts = field(default_factory=CollFacts)  # what the analysis needs of COLL lines
    torch: pl.DataFrame = field(default_factory=lambda: _empty(S.TORCH))
    known: pl.DataFrame = field(default_factory=lambda: _empty(S.KNOWN))  # catalog-named NCCL lines
    unknown: pl.DataFrame = field(default_factory=lambda: _empty(S.UNKNOWN))
    streams: pl.DataFrame = field(default_factory=lambda: _empty(S.STREAMS))
    inputs: tuple[InputInfo, ...] = ()
    coverage: Coverage = Coverage()
    notes: tuple[str, ...] = ()  # counted warnings about the input (skipped binary runs, truncated gzip, …)
    nccltests_marked: frozenset[str] = frozenset()  # inputs with a line holding an nccl-tests marker
    # The per-line frames are read again on demand (`collectives`, and `unknown_lines` for big inputs).
    unknown_count: int | None = None  # rows of `unknown_lines` when `unknown` holds only the evidence
    rebuild: Callable[[], FullFrames] | None = None
    # The hang stage's second look: COLL rows of some process keys at some opCounts, read again (bounded).
    fetch_coll: Callable[[pl.DataFrame, Sequence[int]], pl.DataFrame] | None = None
    # schema.REPEATS: kept rows that stand for lines of their kind counted, not kept (a flood of one line).
    repeats: pl.DataFrame = field(default_factory=lambda: _empty(S.REPEATS))

    def lines_of(self, table: str, rows: pl.DataFrame) -> pl.Series:
        """Per row of `rows` (rows of `table`, any columns but `path` and `line` kept): the input lines it
        stands for, itself and those of its kind counted, not kept (`repeats`; 1 for almost every row). A
        rule that counts lines sums this instead of counting rows."""
        more = self.repeats.filter(pl.col("table") == table).select("path", "line", "more")
        if more.is_empty() or rows.is_empty():
            return pl.Series("lines", [1] * rows.height, dtype=pl.Int64)
        got = rows.select("path", "line").join(more, on=["path", "line"], how="left", maintain_order="left")
        return (got["more"].fill_null(0) + 1).alias("lines")

    @functools.cached_property
    def _full(self) -> FullFrames:
        if self.rebuild is None:
            return FullFrames(
                self.coll.frame if self.coll.frame is not None else _empty(S.COLLECTIVES), self.unknown
            )
        return self.rebuild()

    @functools.cached_property
    def collectives(self) -> pl.DataFrame:
        """schema.COLLECTIVES, one row per COLL line: read again from the inputs on first use (`coll.lines`
        rows, about 0.5 KB each in memory); kept from the start only for stdin and hand-built frames."""
        return self.coll.frame if self.coll.frame is not None else self._full.collectives

    def coll_lines_at(self, keys: pl.DataFrame, op_counts: Sequence[int]) -> pl.DataFrame:
        """schema.COLLECTIVES rows of the process keys `keys` (frames_coll.KEY columns) at `op_counts`,
        in line order: only those lines are read again from the inputs (the facts hold no line), so the
        memory is that of the rows asked for, not of every COLL line. From the kept frame when there
        is one (stdin, hand-built frames)."""
        if self.coll.frame is None and self.fetch_coll is not None:
            return self.fetch_coll(keys, op_counts)
        at = pl.col("op_count").is_in(pl.lit(pl.Series(list(op_counts), dtype=pl.Int64)).implode())
        return self.collectives.filter(at).join(
            keys.select(KEY), on=KEY, how="semi", nulls_equal=True, maintain_order="left"
        )

    @functools.cached_property
    def unknown_lines(self) -> pl.DataFrame:
        """Every line no family or matcher claimed (schema.UNKNOWN). `unknown` is the same frame for small
        inputs; for big ones it holds only the lines a rule may cite, and this reads the input again
        (`unknown_count` rows)."""
        return self.unknown if self.unknown_count is None else self._full.unknown

    def table_names(self) -> list[str]:
        return list(LOG_TABLES)
