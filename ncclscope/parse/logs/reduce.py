"""Parse stage, per-piece reduction: one piece of input -> the compact facts the analysis needs (`PieceFacts`).

A pure function of its input (`reduce_piece`), so pieces can be read by any number of processes and
merged (`merge.py`). Each batch of lines is split three ways, all vectorised: COLL lines are parsed
field by field (`collfast`) and reduced at once to per-process facts (`frames_coll`); lines no pattern
can claim are inert (`inert`): they feed the stream table and the line count only; the rest, a small
share of a big log, takes the general path (peel, rejoin, families, PyTorch matcher, catalogs), gathered
across batches into one pass. `Keep` says which per-line frames are kept besides: every unknown line
(small inputs; else the evidence the rules may cite, `evidence`), every COLL row (a notebook asking for
them, stdin).
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
from ncclscope.parse.logs.lines import collfacts, collfast, peel, rejoin, rx, streams
from ncclscope.parse.logs.lines.catalog import split_known, split_torch_known
from ncclscope.parse.logs.lines.match import match_families
from ncclscope.parse.logs.lines.peel import MAX_TEXT
from ncclscope.parse.logs.lines.prepare import prepare
from ncclscope.parse.logs.lines.runtime_rows import torch_rows
from ncclscope.parse.logs.lines.transform import TABLES as FAMILY_TABLES
from ncclscope.parse.logs.lines.transform import overflow
from ncclscope.parse.nccltests.markers import MARKERS_RX
from ncclscope.tuning import DEFAULT, Tuning

# The frames a piece keeps: the families' tables (COLL lines become facts instead) and the general path's.
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


def _compacted(parts: tuple[pl.DataFrame, pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    return compact(parts[0]), parts[1]


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


@dataclass
class _Acc:
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
    known: pl.Series | None = None  # the sets (COLL_SEQS `seq`) this piece's batches hold so far
    streams: list[pl.DataFrame] = field(default_factory=list)
    pending: list[pl.DataFrame] = field(default_factory=list)  # candidate lines for the general path
    ends: list[pl.DataFrame] = field(default_factory=list)  # per-file last/latest unknown rows
    after: list[pl.DataFrame] = field(default_factory=list)  # (path, line) after a `Last error` line
    widths: dict[str, int] = field(default_factory=dict)  # longest line per file
    carry: int | None = None  # rejoin window open at the end of the last batch
    unknown_count: int = 0
    cov: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    rejoined: dict[str, int] = field(default_factory=dict)
    marked: set[str] = field(default_factory=set)
    overflow: list[pl.DataFrame] = field(default_factory=list)  # `transform.overflow` parts

    def __post_init__(self) -> None:
        self.whole = self.keep.unknown
        if self.keep.select is not None:
            self.selected = self.keep.select.frame()

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
    def batch(self, raw: pl.DataFrame) -> None:
        if self.whole and self._over_budget(raw):
            self._summarise()
        self.cov[0] += raw.height
        if self.tuning.fast_paths:
            coll, heads, rest = collfast.take(raw, full=self.keep.coll)
            self._fast_coll(coll, heads)
        else:
            rest = raw
        if rest.is_empty():
            return
        clean = inert.clean_text(rest)
        if self.tuning.fast_paths:
            mask, self.carry = inert.candidates(clean, self.carry, self.keep.policy)
        else:
            mask = pl.repeat(True, rest.height, eager=True)
        self._after(rest.filter(mask), clean.filter(mask))
        self._marked(rest.filter(mask))
        if mask.any():
            self.pending.append(compact(rest.filter(mask)))
        if not mask.all():
            self._inert(rest.filter(~mask), clean.filter(~mask))
        pending = self.pending
        if (
            sum(p.height for p in pending) >= self.tuning.pending_lines
            or sum(int(p.estimated_size()) for p in pending) >= self.tuning.pending_bytes
        ):
            self.flush(final=False)

    def widen(self, path: str, stats: ReadStats) -> None:
        """Note the longest line of `path` read so far (for rejoin), before its batch is parsed."""
        self.widths[path] = max(self.widths.get(path, 0), min(stats.widest, MAX_TEXT))

    def _fast_coll(self, rows: pl.DataFrame, heads: pl.DataFrame) -> None:
        """COLL lines `collfast` took: NCCL lines, recognised."""
        if rows.is_empty():
            return
        self.coll_lines += rows.height
        self.cov[1] += rows.height
        self.cov[2] += rows.height
        if self.keep.coll:  # every row kept (on demand, stdin), facts from the rows
            full = collfast.with_heads(rows, heads)
            self.coll_rows.append(self._chosen(full))
            self.coll_parts.append(_compacted(FC.part_facts(full.select(list(FC.ROWS)))))
            self.streams.append(compact(streams.part(full)))
            return
        procs, seqs, parts = collfacts.facts(rows, heads, self.known)
        self.coll_parts.append((compact(procs), seqs))
        held = seqs["seq"].unique()
        self.known = held if self.known is None else pl.concat([self.known, held]).unique()
        self.streams.append(compact(parts))

    def _coll(self, coll: pl.DataFrame) -> None:
        """COLL rows of the general path (schema.COLLECTIVES), counted with the other families."""
        self.coll_lines += coll.height
        self.coll_parts.append(_compacted(FC.part_facts(coll.select(list(FC.ROWS)))))
        if self.keep.coll:
            self.coll_rows.append(self._chosen(S.conform(coll, S.COLLECTIVES)))

    def _after(self, cand: pl.DataFrame, clean: pl.Series) -> None:
        le = clean.str.contains(evidence.LAST_ERROR, literal=True)
        if le.any():
            self.after.append(compact(cand.filter(le).select("path", pl.col("line") + 1)))

    def _marked(self, cand: pl.DataFrame) -> None:
        """Inputs holding an nccl-tests marker (a needle: such lines are candidates; no COLL line holds one)."""
        hit = cand.filter(pl.col("raw").str.contains(MARKERS_RX))
        if hit.height:
            self.marked.update(hit["path"].unique().to_list())

    def _after_frame(self) -> pl.DataFrame:
        if not self.after:
            return pl.DataFrame(schema={"path": pl.Utf8, "line": pl.Int64})
        return pl.concat(self.after)

    def _inert(self, raw: pl.DataFrame, clean: pl.Series) -> None:
        rows = inert.rows(raw, clean)
        self.streams.append(compact(streams.part(rows, pid=False)))
        live = (
            rows.filter(pl.col("_msg_len") > 0).drop("_msg_len").with_columns(pl.lit(False).alias("is_nccl"))
        )
        self._unknown(S.conform(live, S.UNKNOWN), patterns=False)  # no search's needle: not a candidate

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

    # --- the general path, once per gathered set of candidate lines ------------------------------
    def flush(self, *, final: bool = True) -> None:
        """The general path over the pending lines, `tuning.flush_lines` at a time: it holds ~3.6 KB per line
        while it runs (a 64 MB log of evidence lines: 166 k lines at once, +600 MiB; bench_memory.py `kept`)."""
        step = max(self.tuning.flush_lines, 4 * rejoin.MAX_RUN)  # each slice leaves at most MAX_RUN + 1 lines
        while self.pending:
            raw = pl.concat(self.pending, how="vertical_relaxed")
            more = raw.height > step
            self.pending = [raw.slice(step)] if more else []
            self._flush(raw.slice(0, step) if more else raw, final=final and not more)
            if not more:
                return

    def _flush(self, raw: pl.DataFrame, *, final: bool) -> None:
        df = prepare(raw, self.tuning)
        cut = df.height if final else rejoin.open_tail(df)  # a wrapped run may go on in the next block
        if cut < df.height:
            self.pending, df = [raw.slice(cut), *self.pending], df.slice(0, cut)
        self.overflow.append(overflow(df, peel.OVF_PREFIX))
        df = df.drop(peel.OVF_PREFIX)
        df, folded = rejoin.rejoin(df, self.widths)
        for path, n in folded.items():
            self.rejoined[path] = self.rejoined.get(path, 0) + n
        self.streams.append(compact(streams.part(df)))
        live = df.filter(pl.col("prefixed") | (pl.col("msg").str.len_chars() > 0))
        matched, rest = match_families(live)
        self.overflow += matched.overflow
        for name, part in matched.tables.items():
            if name == "collectives":
                self._coll(part)
            else:
                self.add(name, part)
        nccl_unknown = rest.filter(pl.col("prefixed"))
        other = rest.filter(~pl.col("prefixed"))
        torch, other, bad = torch_rows(other)
        self.overflow.append(bad)
        self.add("torch", torch)
        torch_known, other = split_torch_known(other)  # PyTorch messages torch.lark has no family for
        self.add("known", torch_known)
        self.add("warnings", matched.unknown_warnings(nccl_unknown))
        known, nccl_unknown = split_known(nccl_unknown)  # the catalog names what no family claims
        self.add("known", known)
        unknown = pl.concat(
            [
                nccl_unknown.with_columns(pl.lit(True).alias("is_nccl")),
                other.with_columns(pl.lit(False).alias("is_nccl")),
            ],
            how="vertical_relaxed",
        )
        self._unknown(S.conform(unknown, S.UNKNOWN))
        n_nccl = live.filter(pl.col("prefixed")).height + matched.bare_lines + torch.height
        n_folded = sum(folded.values())  # parts of the line before: NCCL lines, recognised with it
        self.cov[1] += n_nccl + n_folded
        self.cov[2] += matched.lines + torch.height + known.height + n_folded
        self.cov[3] += nccl_unknown.height
        self._prune_after(raw.slice(0, cut))

    def _prune_after(self, flushed: pl.DataFrame) -> None:
        """Drop the `Last error` successors already looked at: lines up to the last one flushed of their
        input, unless still pending (inert lines were looked at when their batch was read). Without
        this, a log of `Last error:` lines held one row per line."""
        if not self.after or flushed.is_empty():
            return
        after = pl.concat(self.after)
        done = flushed.group_by("path").agg(pl.col("line").max().alias("_done"))
        if self.pending:
            lo = pl.concat(self.pending).group_by("path").agg(pl.col("line").min().alias("_lo"))
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
            streams.merge(self.streams),
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
    with rx.configured(tuning):
        return _reduce(piece, tuning, keep)


def _reduce(piece: Piece, tuning: Tuning, keep: Keep) -> PieceFacts:
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
