"""Parse stage, per-piece reduction: one piece of input -> the compact facts the analysis needs (`PieceFacts`).

A pure function of its input (`reduce_piece`), so pieces can be read by any number of processes and
merged (`merge.py`). It only orchestrates: the piece's lines are read in batches (`engine`), each batch
goes through `lines.parse_batch` (what the lines mean: COLL facts, family rows, PyTorch rows, unknown
lines, and the `Carry` handed to the next batch), and what comes out is kept as `Keep` says (`keep`):
every unknown line (small inputs; else the evidence the rules may cite, `evidence`), every COLL row (a
notebook asking for them, stdin), the other tables within their bounds (`bounded`). Which lines may skip
the general path depends on what the consumers search for, so the screen `parse_batch` is handed is
keep's (`inert`, under the reading's `KeepPolicy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ncclscope import frames_coll as FC
from ncclscope import schema as S
from ncclscope.errors import InputError
from ncclscope.parse.logs.engine.pieces import Piece, read_segment
from ncclscope.parse.logs.engine.reader import ReadStats
from ncclscope.parse.logs.keep import evidence, inert
from ncclscope.parse.logs.keep.bounded import Caps, Held, Trimmed, caps_for
from ncclscope.parse.logs.keep.policy import POSITIONAL, KeepPolicy
from ncclscope.parse.logs.lines import (
    TABLES,
    Carry,
    CollPart,
    Context,
    General,
    RawBatch,
    compact,
    merge_streams,
    parse_batch,
)
from ncclscope.tuning import DEFAULT, Tuning

__all__ = ["TABLES", "CollSelect", "Keep", "PieceFacts", "context", "reduce_piece"]


@dataclass(frozen=True)
class CollSelect:
    """The COLL lines a second look asks for: those of these process keys (`frames_coll.KEY` values)
    at these opCounts."""

    keys: tuple[tuple[object, ...], ...]
    op_counts: tuple[int, ...]

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(list(self.keys), schema={k: S.COLLECTIVES[k] for k in FC.KEY}, orient="row")


@dataclass(frozen=True)
class Keep:
    """Which per-line frames a reduction keeps besides the facts."""

    unknown: bool = False  # every unknown line, within `Tuning.full_unknown_max_lines` and
    # `full_frames_max_bytes` read (else, and past them, the evidence lines rules may cite)
    coll: bool = False  # every COLL line as a COLLECTIVES row
    bounded: bool = True  # False: no bound on the rows kept (a notebook asked for every line: `FullFrames`)
    select: CollSelect | None = (
        None  # with `coll`: only these COLL lines are kept (the hang stage's second look)
    )
    policy: KeepPolicy = POSITIONAL  # what the consumers search unknown lines for (`keep/policy.py`)


@dataclass
class PieceFacts:
    """What one piece reduces to (frames small enough to send between processes)."""

    index: int
    tables: dict[str, pl.DataFrame]
    procs: pl.DataFrame  # schema.COLL_PROCS
    seqs: pl.DataFrame  # schema.COLL_SEQS
    coll_lines: int
    coll_frame: pl.DataFrame | None  # schema.COLLECTIVES, with `keep.coll`
    streams: pl.DataFrame  # streams.PART
    unknown_count: int
    cov: tuple[int, int, int, int]
    rejoined: dict[str, int]
    stats: list[tuple[str, int, ReadStats]]  # (path, segment part, its read stats)
    error: InputError | None = None
    marked: frozenset[str] = frozenset()  # inputs with a line holding an nccl-tests marker
    overflow: pl.DataFrame | None = (
        None  # (path, field, n): values out of range or not a number, kept as null
    )
    whole_unknown: bool = False  # `tables["unknown"]` holds every unknown line of the piece
    trimmed: Trimmed = field(default_factory=Trimmed)  # rows left out, per (table, path) and kind


@dataclass(frozen=True)
class _Screen:
    """`lines.Screen` under the reading's `KeepPolicy`: a line is a candidate for the general path when a
    pattern, or a consumer's search, may claim it (`keep.inert`)."""

    policy: KeepPolicy

    def clean_text(self, raw: pl.DataFrame) -> pl.Series:
        return inert.clean_text(raw)

    def candidates(self, clean: pl.Series, window: int | None) -> tuple[pl.Series, int | None]:
        return inert.candidates(clean, window, self.policy)

    def rows(self, raw: pl.DataFrame, clean: pl.Series) -> pl.DataFrame:
        return inert.rows(raw, clean)


def context(keep: Keep, tuning: Tuning = DEFAULT) -> Context:
    """The `lines.Context` of a reading under `keep`: its screen, its tuning, COLL rows or not, and the
    text whose next line is evidence (`evidence.LAST_ERROR`)."""
    return Context(_Screen(keep.policy), tuning, keep.coll, evidence.LAST_ERROR)


@dataclass
class _Acc:
    """One piece's reading: `lines.parse_batch` per batch, and what the piece keeps of its rows."""

    keep: Keep
    tuning: Tuning
    tables: dict[str, Held] = field(default_factory=dict)
    trimmed: Trimmed = field(default_factory=Trimmed)
    whole: bool = False  # every unknown line kept so far (`keep.unknown`, within its bounds)
    read_bytes: int = 0  # bytes of the lines read, while `whole`
    selected: pl.DataFrame | None = None  # `keep.select` as a frame of keys
    coll_parts: list[tuple[pl.DataFrame, pl.DataFrame]] = field(default_factory=list)
    coll_rows: list[pl.DataFrame] = field(default_factory=list)  # with `keep.coll`
    coll_lines: int = 0
    streams: list[pl.DataFrame] = field(default_factory=list)
    ends: list[pl.DataFrame] = field(default_factory=list)  # per-file last/latest unknown rows
    after: list[pl.DataFrame] = field(default_factory=list)  # (path, line) after a `Last error` line
    widest: dict[str, int] = field(default_factory=dict)  # the reader's longest line per file
    carry: Carry = field(default_factory=Carry)  # what the last batch handed to the next
    ctx: Context = field(init=False)  # what `parse_batch` holds constant over the piece
    unknown_count: int = 0
    cov: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    rejoined: dict[str, int] = field(default_factory=dict)
    marked: set[str] = field(default_factory=set)
    overflow: list[pl.DataFrame] = field(default_factory=list)  # `transform.overflow` parts

    def __post_init__(self) -> None:
        self.whole = self.keep.unknown
        if self.keep.select is not None:
            self.selected = self.keep.select.frame()
        self.ctx = context(self.keep, self.tuning)

    def _chosen(self, rows: pl.DataFrame) -> pl.DataFrame:
        """COLLECTIVES rows kept: all, or those `keep.select` asks for."""
        if self.keep.select is None or self.selected is None:
            return rows
        at = pl.col("op_count").is_in(pl.lit(pl.Series(self.keep.select.op_counts, dtype=pl.Int64)).implode())
        return rows.filter(at).join(self.selected, on=FC.KEY, how="semi", nulls_equal=True)

    def _caps(self, name: str) -> Caps:
        if (name == "unknown" and self.whole) or not self.keep.bounded:  # `whole`: bounded by the budget
            return Caps(0, 0)
        return caps_for(name, self.tuning)

    def add(self, name: str, df: pl.DataFrame) -> None:
        if df.height:
            held = self.tables.get(name)
            if held is None:
                held = self.tables[name] = Held(name, self._caps(name))
            held.append(compact(df), self.trimmed)

    def _over_budget(self, raw: pl.DataFrame) -> bool:
        """Past the bounds of keeping every unknown line (bytes read, lines held)?"""
        if not self.keep.bounded:
            return False
        self.read_bytes += int(raw["raw"].str.len_bytes().sum() or 0) + raw.height
        return (
            self.read_bytes > self.tuning.full_frames_max_bytes
            or self.unknown_count > self.tuning.full_unknown_max_lines
        )

    def _summarise(self) -> None:
        """From here on keep only the evidence of unknown lines; the whole ones held so far become theirs."""
        self.whole = False
        held = self.tables.pop("unknown", None)
        if held is None:
            return
        every = pl.concat(held.parts, how="vertical_relaxed")
        self.add("unknown", evidence.kept(every, self._after_frame(), self.keep.policy))
        self.ends.append(compact(evidence.ends(every)))

    # --- one batch ------------------------------------------------------------------------------
    def widen(self, path: str, stats: ReadStats) -> None:
        """Note the longest line of `path` read so far (for rejoin), before its batch is parsed."""
        self.widest[path] = max(self.widest.get(path, 0), stats.widest)

    def batch(self, raw: pl.DataFrame) -> None:
        """Read one batch of numbered lines."""
        if self.whole and self._over_budget(raw):
            self._summarise()
        self._take(RawBatch(raw, dict(self.widest)))

    def flush(self) -> None:
        """The piece ends: read what waits for the general path."""
        self._take(RawBatch(None, dict(self.widest), last=True))

    def _take(self, raw: RawBatch) -> None:
        b = parse_batch(raw, self.carry, self.ctx)
        self.carry = b.carry
        self.cov = [a + n for a, n in zip(self.cov, b.cov, strict=True)]
        self._coll(b.coll)
        self.streams += [compact(s) for s in b.streams]
        if b.after is not None:
            self.after.append(compact(b.after))
        self.marked |= b.marked
        if b.inert is not None:
            self._unknown(b.inert, patterns=False)  # no search's needle: not a candidate
        for g in b.passes:
            self._general(g)

    def _coll(self, part: CollPart | None) -> None:
        if part is None:
            return
        self.coll_lines += part.lines
        self.coll_parts.append((compact(part.procs), part.seqs))
        if self.keep.coll and part.rows is not None:
            self.coll_rows.append(self._chosen(part.rows))

    def _general(self, g: General) -> None:
        """One general-path pass: its rows held in the order made, its counts added."""
        self.overflow += g.overflow
        for path, n in g.rejoined:
            self.rejoined[path] = self.rejoined.get(path, 0) + n
        self.streams.append(compact(g.streams))
        self._coll(g.coll)
        for name, part in g.tables:
            self.add(name, part)
        self._unknown(g.unknown)
        self.cov = [a + n for a, n in zip(self.cov, g.cov, strict=True)]
        self._prune_after(g.read, g.waiting)

    def _after_frame(self) -> pl.DataFrame:
        if not self.after:
            return pl.DataFrame(schema={"path": pl.Utf8, "line": pl.Int64})
        return pl.concat(self.after)

    def _unknown(self, unknown: pl.DataFrame, *, patterns: bool = True) -> None:
        self.unknown_count += unknown.height
        if self.whole:
            self.add("unknown", unknown)
            if self.keep.bounded and self.unknown_count > self.tuning.full_unknown_max_lines:
                self._summarise()
            return
        self.add("unknown", evidence.kept(unknown, self._after_frame(), self.keep.policy, patterns=patterns))
        self.ends.append(compact(evidence.ends(unknown)))
        if len(self.ends) > 64:  # one or two rows per input and batch: folded as they come
            self.ends = [evidence.ends(pl.concat(self.ends, how="vertical_relaxed"))]

    def _prune_after(self, flushed: pl.DataFrame, waiting: pl.DataFrame | None) -> None:
        """Drop the `Last error` successors already looked at: lines up to the last one flushed of their
        input, unless still waiting (inert lines were looked at when their batch was read). Without
        this, a log of `Last error:` lines held one row per line."""
        if not self.after or flushed.is_empty():
            return
        after = pl.concat(self.after)
        done = flushed.group_by("path").agg(pl.col("line").max().alias("_done"))
        if waiting is not None:
            lo = waiting.group_by("path").agg(pl.col("line").min().alias("_lo"))
            done = done.join(lo, on="path", how="left")
        else:
            done = done.with_columns(pl.lit(None, dtype=pl.Int64).alias("_lo"))
        live = (
            pl.col("_done").is_null() | (pl.col("line") > pl.col("_done")) | (pl.col("line") >= pl.col("_lo"))
        )
        self.after = [
            after.join(done, on="path", how="left").filter(live.fill_null(False)).select("path", "line")
        ]

    # --- the piece's facts ----------------------------------------------------------------------
    def facts(
        self, index: int, stats: list[tuple[str, int, ReadStats]], error: InputError | None
    ) -> PieceFacts:
        tables = {n: held.frame(self.trimmed) for n, held in self.tables.items()}
        if not self.whole and self.ends:
            ends = evidence.ends(pl.concat(self.ends, how="vertical_relaxed"))
            parts = [p for p in (tables.get("unknown"), ends) if p is not None]
            tables["unknown"] = pl.concat(parts, how="vertical_relaxed").unique(
                ["path", "line"], keep="first"
            )
        procs, seqs = FC.merge([p for p, _ in self.coll_parts], [s for _, s in self.coll_parts])
        frame = (
            pl.concat(self.coll_rows, how="vertical_relaxed")
            if self.keep.coll and self.coll_rows
            else (S.empty(S.COLLECTIVES) if self.keep.coll else None)
        )
        return PieceFacts(
            index,
            tables,
            procs,
            seqs,
            self.coll_lines,
            frame,
            merge_streams(self.streams),
            self.unknown_count,
            (self.cov[0], self.cov[1], self.cov[2], self.cov[3]),
            self.rejoined,
            stats,
            error,
            frozenset(self.marked),
            pl.concat(self.overflow) if self.overflow else None,
            self.whole,
            self.trimmed,
        )


def reduce_piece(piece: Piece, tuning: Tuning = DEFAULT, keep: Keep = Keep()) -> PieceFacts:
    """Read one piece and reduce it to facts. An input that cannot be read ends the piece with its error
    (raised by the caller, in input order); what was read before it is kept."""
    acc = _Acc(keep, tuning)
    batch: list[pl.DataFrame] = []
    held = held_bytes = 0
    stats: list[tuple[str, int, ReadStats]] = []
    error: InputError | None = None
    try:
        for seg in piece.segments:
            st = ReadStats()
            stats.append((seg.path, seg.part, st))
            for chunk in read_segment(seg, st, tuning):
                acc.widen(seg.path, st)
                batch.append(chunk)
                held += chunk.height
                held_bytes += int(chunk.estimated_size())
                if held >= tuning.batch_lines or held_bytes >= tuning.batch_bytes:
                    acc.batch(pl.concat(batch))
                    batch, held, held_bytes = [], 0, 0
    except InputError as e:
        error = e
    if batch:
        acc.batch(pl.concat(batch))
    acc.flush()
    return acc.facts(piece.index, stats, error)
