"""Parse stage, bounded tables: what a piece keeps of a table that grows with the lines of the input.

A table of per-line rows (WARNs, unrecognised evidence lines, PyTorch lines, …) grows with the lines
read, and a hostile or runaway input (every line an `Xid` or a WARN, a loop printing one line forever)
would hold every one of them. Three bounds, in turn (`bound`):

1. per kind: of the rows of one kind (`kind`: one process, one message with its numbers masked) in one
   input, the first and the last `Caps.per_kind // 2` are kept; the rows between are counted per kind, and
   the first kept row of the kind stands for them (`Trimmed.kinds`, turned into `LogFrames.repeats`), so a
   rule that counts lines (benign-warn's "5,574 × …", gpu-xid's Xid 45 cleanups) still counts them all;
2. per input: at most `Caps.per_input` rows (its first and its latest half), for a flood of many kinds;
3. per table: at most `Caps.total` rows (the first and the latest half again), over every input.

Rows left out are counted per input and table (`Trimmed.counts`); the merge applies the same bounds to the
concatenation of the pieces and turns the counts into one note per input and table, and the per-kind
counts into `repeats`. Real logs stay below all three: a WARN or PyTorch line per rank and event, not per
collective (the biggest real input, 512 ranks in one file, holds 7,378 WARN lines, at most a few dozen per
process and kind).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from ncclscope.schema import REPEATS
from ncclscope.tuning import Tuning

# A kind is one process's (host, pid) lines of one message with its variable parts masked. It must split
# every kind a counting rule groups by, so that the count a kept row carries is of its rule kind:
# - a WARN's `message` (no prefix): numbers and hex words masked, as findings/rules_warn.py `shape` does;
# - any other line's `text`: only what changes from one repeat of a line to the next is masked (clock
#   times, dmesg's uptime, dates, `pid=`, pointers), so an Xid's number and PCI address stay part of its
#   kind (gpu-xid counts per GPU and Xid). A line that also varies elsewhere (a step counter) is a kind
#   of its own each time: the per-input bound then holds it, with its count in a note.
MASK_MESSAGE = r"0x[0-9a-fA-F]+|[0-9a-fA-F]*\d[0-9a-fA-F]*"
MASK_TEXT = (
    r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b|\[\s*\d+\.\d+\]|\b\d{4}-\d{2}-\d{2}\b|\b(?:19|20)\d{2}\b"
    r"|(?i:pid)[=: ]*\d+|0x[0-9a-fA-F]+"
)
KIND = "_kind"


def kind(df: pl.DataFrame) -> pl.Expr:
    """Each row's kind (above): host, pid and the masked `message` (WARN rows) or `text`."""
    col, mask = ("message", MASK_MESSAGE) if "message" in df.columns else ("text", MASK_TEXT)
    parts = [pl.col(c).cast(pl.Utf8).fill_null("") for c in ("host", "pid") if c in df.columns]
    masked = pl.col(col).fill_null("").str.replace_all(mask, "#")
    return pl.concat_str([*parts, masked], separator="\x1f").alias(KIND)


@dataclass
class Trimmed:
    """Rows left out of bounded tables: per (table, path), how many; and per (table, path, kind), those left
    out by the per-kind bound (the kind's first kept row stands for them)."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    kinds: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    def add(self, other: Trimmed) -> None:
        self.counts.update(other.counts)
        self.kinds.update(other.kinds)

    def repeats(self, tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
        """(table, path, line, more): the kept row at (path, line) of `table` stands for `more` rows of its
        kind that were counted, not kept (the first kept row of each kind with a count)."""
        out = [pl.DataFrame(schema=REPEATS)]
        for name in sorted({t for t, _, _ in self.kinds}):
            df = tables.get(name)
            if df is None or df.is_empty():
                continue
            counts = pl.DataFrame(
                [(p, k, n) for (t, p, k), n in self.kinds.items() if t == name],
                schema={"path": pl.Utf8, KIND: pl.Utf8, "more": pl.Int64},
                orient="row",
            )
            firsts = df.select("path", "line", kind(df)).unique(
                ["path", KIND], keep="first", maintain_order=True
            )
            hit = firsts.join(counts, on=["path", KIND], how="inner")
            out.append(hit.select(pl.lit(name).alias("table"), "path", "line", "more"))
        return pl.concat(out).sort("table", "path", "line")

    def notes(self) -> list[str]:
        """One note per (path, table), in path order then table name."""
        return [
            f"{path}: {n} {table} line(s) were counted, not kept (too many of one kind: the first and "
            "the last of each kind were kept, and the counts of findings include the rest)"
            for (table, path), n in sorted(self.counts.items(), key=lambda kv: (kv[0][1], kv[0][0]))
        ]


@dataclass(frozen=True)
class Caps:
    """Rows one input may keep of a table, rows the table may keep, rows of one kind in one input
    (0: no bound)."""

    per_input: int
    total: int
    per_kind: int = 0


# The tables of evidence lines, bounded per kind: what a flood repeats (one WARN, `Xid` or PyTorch line, over
# and over). The families' structured tables (channels, connections, rings, …) are not: one process prints
# a few hundred rows of one masked shape there (a channel per peer), and rules read every row.
PER_KIND = frozenset({"warnings", "unknown", "torch", "known"})


def caps_for(name: str, tuning: Tuning) -> Caps:
    """The bounds of table `name` under `tuning`."""
    per_kind = tuning.max_kept_rows_per_kind if name in PER_KIND else 0
    return Caps(tuning.max_kept_rows_per_input, tuning.max_kept_rows, per_kind)


def _count(left: pl.DataFrame, name: str, trimmed: Trimmed) -> None:
    for path, n in left.group_by("path", maintain_order=True).len().iter_rows():
        trimmed.counts[(name, str(path))] += int(n)


def _per_kind(df: pl.DataFrame, name: str, per_kind: int, trimmed: Trimmed) -> pl.DataFrame:
    half = max(1, per_kind // 2)
    marked = df.with_columns(kind(df))
    i = pl.int_range(pl.len()).over("path", KIND)
    marked = marked.with_columns(((i < half) | (i >= pl.len().over("path", KIND) - half)).alias("_keep"))
    if marked["_keep"].all():
        return df
    left = marked.filter(~pl.col("_keep"))
    _count(left, name, trimmed)
    for path, k, n in left.group_by("path", KIND, maintain_order=True).len().iter_rows():
        trimmed.kinds[(name, str(path), str(k))] += int(n)
    return marked.filter(pl.col("_keep")).drop("_keep", KIND)


def bound(df: pl.DataFrame, name: str, caps: Caps, trimmed: Trimmed) -> pl.DataFrame:
    """`df` (rows in input order) with at most `caps.per_kind` rows per path and kind, `caps.per_input`
    rows per path (its first and last half) and `caps.total` rows in all (the first and last half); rows
    left out are counted in `trimmed`."""
    if caps.per_kind > 0 and df.height > caps.per_kind:
        df = _per_kind(df, name, caps.per_kind, trimmed)
    if caps.per_input > 0 and df.height > caps.per_input:
        half = max(1, caps.per_input // 2)
        i = pl.int_range(pl.len()).over("path")
        keep = (i < half) | (i >= pl.len().over("path") - half)
        marked = df.with_columns(keep.alias("_keep"))
        if not marked["_keep"].all():
            _count(marked.filter(~pl.col("_keep")), name, trimmed)
            df = marked.filter(pl.col("_keep")).drop("_keep")
    if caps.total > 0 and df.height > caps.total:
        half = max(1, caps.total // 2)
        _count(df.slice(half, df.height - 2 * half), name, trimmed)
        df = pl.concat([df.head(half), df.tail(half)])
    # One chunk: Polars 2.1 panics (`i < self.len()`) formatting a filtered left join of a frame made of
    # a head and a tail slice (hang/verdict.py `_last_errors` on the bounded torch table).
    return df.rechunk()


@dataclass
class Held:
    """The parts of one table a piece holds, bounded by `bound` whenever they hold twice the rows they held
    after the last cut (at least twice `caps.per_input`, at most 1.5x `caps.total`): the rows held stay
    within about twice what the bounds keep, and each cut is paid for by as many rows added as it kept."""

    name: str
    caps: Caps
    parts: list[pl.DataFrame] = field(default_factory=list)
    rows: int = 0
    next_cut: int = 0

    def __post_init__(self) -> None:
        self.next_cut = self._after(0)

    def _after(self, kept: int) -> int:
        """Rows at which the next cut is made, `kept` rows held after this one (0: no bound)."""
        if self.caps.total <= 0 and self.caps.per_input <= 0 and self.caps.per_kind <= 0:
            return 0
        at = max(2 * kept, 2 * (self.caps.per_input or self.caps.per_kind))
        return min(at, self.caps.total + self.caps.total // 2) if self.caps.total > 0 else at

    def append(self, df: pl.DataFrame, trimmed: Trimmed) -> None:
        self.parts.append(df)
        self.rows += df.height
        if self.next_cut and self.rows > self.next_cut:
            self.parts = [self.frame(trimmed)]
            self.rows = self.parts[0].height
            self.next_cut = self._after(self.rows)

    def frame(self, trimmed: Trimmed) -> pl.DataFrame:
        return bound(pl.concat(self.parts, how="vertical_relaxed"), self.name, self.caps, trimmed)
