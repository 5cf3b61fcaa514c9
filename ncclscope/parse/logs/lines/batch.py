"""Parse stage, one batch of lines: the seam into `lines/` (`parse_batch(raw, carry, ctx) -> Batch`).

A piece of input is read as batches of numbered lines (`RawBatch`). Each batch is split three ways, all
vectorised: COLL lines are parsed field by field and reduced to per-process facts at once (`collfast`,
`collfacts`); lines no pattern can claim are inert (`Screen`: which lines those are depends on what the
consumers search for, so the caller passes it); the rest, a small share of a big log, waits in the
`Carry` until enough has gathered for one general-path pass (`general`). What crosses a batch boundary is
the `Carry` alone: the rejoin window still open, the candidate lines waiting for the general path, the
opCount sets already seen. The result (`Batch`) is typed rows in the order they were made; the caller
decides what of them to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from ncclscope import frames_coll as FC
from ncclscope import schema as S
from ncclscope.parse.logs.lines import collfacts, collfast, rejoin, rx, streams
from ncclscope.parse.logs.lines.general import CollPart, General, general_pass
from ncclscope.parse.logs.lines.peel import MAX_TEXT
from ncclscope.parse.logs.lines.transform import TABLES as FAMILY_TABLES
from ncclscope.parse.nccltests.markers import MARKERS_RX
from ncclscope.tuning import DEFAULT, Tuning

# The per-line tables a batch gives: the families' (COLL lines become facts instead) and the general path's.
TABLES: dict[str, S.Schema] = {
    **{name: schema for name, schema in FAMILY_TABLES.items() if name != "collectives"},
    "torch": S.TORCH,
    "known": S.KNOWN,
    "unknown": S.UNKNOWN,
}


def compact(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with its text copied out: a few rows filtered from a batch share its string buffers (Polars'
    string views), and kept across batches they would keep every batch's text alive."""
    # (a view's slice is a view into the same buffer: only a new string copies its bytes out). Not `path`:
    # one literal per input, its rows share one buffer; copied out, a 3.7 KB path cost 3.7 KB per row
    # (a 16 MB log of application lines under such a path: 1.86 GB -> 0.2 GB peak, bench_memory.py).
    cols = [
        pl.concat_str([pl.col(c), pl.lit("")]).alias(c)
        for c, t in df.schema.items()
        if t == pl.Utf8 and c != "path"
    ]
    return df.with_columns(cols) if cols and df.height else df


class Screen(Protocol):
    """Which lines a pattern may claim (candidates for the general path), and the rows of the others.
    The caller's: the candidates depend on what the consumers search for (`keep.inert`)."""

    def clean_text(self, raw: pl.DataFrame) -> pl.Series: ...

    def candidates(self, clean: pl.Series, window: int | None) -> tuple[pl.Series, int | None]: ...

    def rows(self, raw: pl.DataFrame, clean: pl.Series) -> pl.DataFrame: ...


@dataclass(frozen=True)
class Context:
    """What a reading holds constant over its batches."""

    screen: Screen
    tuning: Tuning = DEFAULT  # `fast_paths`, `pending_lines`, `max_line_chars`, the regex thresholds
    coll_rows: bool = False  # every COLL line as a schema.COLLECTIVES row besides the facts
    follow: str | None = (
        None  # a candidate line holding this text: the line after it is named (`Batch.after`)
    )


@dataclass(frozen=True)
class Carry:
    """What a batch hands to the next."""

    window: int | None = None  # rows since the last line that may carry a prefix (None: out of reach)
    pending: tuple[pl.DataFrame, ...] = ()  # candidate lines (path, line, raw) waiting for the general path
    known: pl.Series | None = None  # the opCount sets (COLL_SEQS `seq`) read so far


@dataclass(frozen=True)
class RawBatch:
    """Numbered lines (`path`, `line`, `raw`) read in a row, with the reader's longest line per file so far."""

    lines: pl.DataFrame | None  # None: no more lines
    widest: Mapping[str, int] = field(default_factory=dict)  # characters, per file
    last: bool = False  # the piece ends here: what waits for the general path is read now


@dataclass(frozen=True)
class Batch:
    """A batch's rows, in the order they were made, and the carry for the next batch."""

    # coverage added by the fast steps: (lines, NCCL lines, recognised, NCCL unknown)
    cov: tuple[int, int, int, int]
    coll: CollPart | None  # COLL lines the fast path read
    streams: tuple[pl.DataFrame, ...]  # streams.PART of the fast steps (COLL lines, inert lines)
    after: pl.DataFrame | None  # (path, line) of lines after a candidate line holding `Context.follow`
    marked: frozenset[str]  # inputs holding a line with an nccl-tests marker
    inert: pl.DataFrame | None  # schema.UNKNOWN rows of inert lines with text (none holds a search's needle)
    passes: tuple[General, ...]  # general-path passes run for this batch (zero, one or two)
    carry: Carry


def parse_batch(raw: RawBatch, carry: Carry, ctx: Context) -> Batch:
    """Read one batch of lines (see the module docstring)."""
    with rx.configured(ctx.tuning):
        return _parse(raw, carry, ctx)


def _parse(raw: RawBatch, carry: Carry, ctx: Context) -> Batch:
    widths = {p: min(n, MAX_TEXT) for p, n in raw.widest.items()}
    lines = raw.lines
    out = _Out(carry)
    if lines is not None and lines.height:
        _fast(lines, ctx, out)
        pending = out.pending
        if out.rest.height and (
            sum(p.height for p in pending) >= ctx.tuning.pending_lines
            or sum(int(p.estimated_size()) for p in pending) >= ctx.tuning.pending_bytes
        ):
            out.flush(widths, ctx, last=False)
    if raw.last:
        out.flush(widths, ctx, last=True)
    return out.batch()


@dataclass
class _Out:
    """What `_parse` gathers for one call: the batch's rows so far and the carry it is changing."""

    start: Carry
    cov: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    coll: CollPart | None = None
    streams: list[pl.DataFrame] = field(default_factory=list)
    after: pl.DataFrame | None = None
    marked: frozenset[str] = frozenset()
    inert: pl.DataFrame | None = None
    passes: list[General] = field(default_factory=list)
    rest: pl.DataFrame = field(default_factory=pl.DataFrame)
    window: int | None = None
    pending: list[pl.DataFrame] = field(default_factory=list)
    known: pl.Series | None = None

    def __post_init__(self) -> None:
        self.window, self.pending, self.known = self.start.window, list(self.start.pending), self.start.known

    def flush(self, widths: Mapping[str, int], ctx: Context, *, last: bool) -> None:
        """The general path over the pending lines, `tuning.flush_lines` at a time: a pass holds ~3.6 KB
        per line while it runs (a 64 MB log of evidence lines: 166 k lines at once, +600 MiB;
        bench_memory.py `kept`). A slice that is not the last leaves its open wrapped run to the next."""
        step = max(ctx.tuning.flush_lines, 4 * rejoin.MAX_RUN)  # each slice leaves at most MAX_RUN + 1 lines
        while self.pending:
            raw = pl.concat(self.pending, how="vertical_relaxed")
            more = raw.height > step
            rest = [raw.slice(step)] if more else []
            g = general_pass(
                raw.slice(0, step) if more else raw,
                widths,
                ctx.tuning,
                last=last and not more,
                coll_rows=ctx.coll_rows,
            )
            self.pending = ([g.waiting] if g.waiting is not None else []) + rest
            self.passes.append(g)
            if not more:
                return

    def batch(self) -> Batch:
        carry = Carry(self.window, tuple(self.pending), self.known)
        return Batch(
            (self.cov[0], self.cov[1], self.cov[2], self.cov[3]),
            self.coll,
            tuple(self.streams),
            self.after,
            self.marked,
            self.inert,
            tuple(self.passes),
            carry,
        )


def _fast(lines: pl.DataFrame, ctx: Context, out: _Out) -> None:
    """COLL lines, inert lines and the candidates of one batch."""
    out.cov[0] += lines.height
    if ctx.tuning.fast_paths:
        coll, heads, rest = collfast.take(lines, full=ctx.coll_rows)
        _fast_coll(coll, heads, ctx, out)
    else:
        rest = lines
    out.rest = rest
    if rest.is_empty():
        return
    clean = ctx.screen.clean_text(rest)
    if ctx.tuning.fast_paths:
        mask, out.window = ctx.screen.candidates(clean, out.window)
    else:
        mask = pl.repeat(True, rest.height, eager=True)
    cand = rest.filter(mask)
    if ctx.follow is not None:
        hit = clean.filter(mask).str.contains(ctx.follow, literal=True)
        if hit.any():
            out.after = cand.filter(hit).select("path", pl.col("line") + 1)
    marked = cand.filter(pl.col("raw").str.contains(MARKERS_RX))
    if marked.height:
        out.marked = frozenset(marked["path"].unique().to_list())
    if mask.any():
        out.pending.append(compact(cand))
    if not mask.all():
        rows = ctx.screen.rows(rest.filter(~mask), clean.filter(~mask))
        out.streams.append(streams.part(rows, pid=False))
        live = rows.filter(pl.col("_msg_len") > 0).drop("_msg_len")
        out.inert = S.conform(live.with_columns(pl.lit(False).alias("is_nccl")), S.UNKNOWN)


def _fast_coll(rows: pl.DataFrame, heads: pl.DataFrame, ctx: Context, out: _Out) -> None:
    """COLL lines `collfast` took: NCCL lines, recognised."""
    if rows.is_empty():
        return
    out.cov[1] += rows.height
    out.cov[2] += rows.height
    if ctx.coll_rows:  # every row kept (on demand, stdin), facts from the rows
        full = collfast.with_heads(rows, heads)
        procs, seqs = FC.part_facts(full.select(list(FC.ROWS)))
        out.coll = CollPart(rows.height, procs, seqs, full)
        out.streams.append(streams.part(full))
        return
    procs, seqs, parts = collfacts.facts(rows, heads, out.known)
    out.coll = CollPart(rows.height, procs, seqs)
    held = seqs["seq"].unique()
    out.known = held if out.known is None else pl.concat([out.known, held]).unique()
    out.streams.append(parts)
