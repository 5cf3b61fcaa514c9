"""Parse stage, merge: the facts of every piece -> one `LogFrames` (the reduce step).

Pieces arrive in any order; they are put back in input order, the lines of a cut file's later
segments are shifted by the lines before them, and then each kind of fact is combined: tables are
concatenated (they are small: init lines, WARNs, PyTorch lines, evidence), COLL facts merged per process
key (`frames_coll.merge`), stream parts merged per stream (`streams.merge`), counts summed. The cost is
proportional to the facts, not to the input: per piece a few frames of at most a few thousand rows
for a healthy job (one row per process key and per distinct opCount sequence).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ncclscope import frames_coll as FC
from ncclscope import schema as S
from ncclscope.errors import InputError
from ncclscope.frames import Coverage, InputInfo, in_order
from ncclscope.parse.logs.engine.reader import ReadStats, count_notes
from ncclscope.parse.logs.keep.bounded import Caps, Trimmed, bound, caps_for
from ncclscope.parse.logs.lines import STREAM_LINE_COLUMNS, final_streams, merge_streams
from ncclscope.parse.logs.reduce import TABLES, Keep, PieceFacts
from ncclscope.tuning import Tuning


def _shift(f: PieceFacts, by: int) -> PieceFacts:
    if by == 0:
        return f
    line = pl.col("line") + by
    tables = {n: t.with_columns(line) for n, t in f.tables.items()}
    st = f.streams.with_columns([pl.col(c) + by for c in STREAM_LINE_COLUMNS])
    frame = f.coll_frame.with_columns(line) if f.coll_frame is not None else None
    return PieceFacts(
        f.index,
        tables,
        f.procs.with_columns(line),
        f.seqs,
        f.coll_lines,
        frame,
        st,
        f.unknown_count,
        f.cov,
        f.rejoined,
        f.stats,
        f.error,
        f.marked,
        f.overflow,
        f.whole_unknown,
        f.trimmed,
    )


def _offsets(facts: Sequence[PieceFacts]) -> list[int]:
    """Per piece: lines of its file before it (non-zero only for the later segments of a cut file)."""
    seen: dict[str, int] = {}
    out = []
    for f in facts:
        first = f.stats[0] if f.stats else None
        if first is not None and first[1] > 0:
            out.append(seen.get(first[0], 0))
        else:
            out.append(0)
        for path, part, st in f.stats:
            seen[path] = (seen.get(path, 0) if part > 0 else 0) + st.lines
    return out


def _inputs(facts: Sequence[PieceFacts], tuning: Tuning) -> tuple[list[InputInfo], list[str], int, int]:
    """(one InputInfo per input, read notes in input order, lines, readable lines)."""
    inputs: list[InputInfo] = []
    notes: list[str] = []
    whole: list[tuple[str, ReadStats]] = []
    for f in facts:
        for path, part, st in f.stats:
            if part > 0 and whole and whole[-1][0] == path:  # the next cut of the same file
                acc = whole[-1][1]
                acc.lines += st.lines
                acc.binary_lines += st.binary_lines
                acc.long_lines += st.long_lines
                acc.replaced_lines += st.replaced_lines
                acc.notes += st.notes
            else:
                kept = ReadStats(st.lines, st.binary_lines, st.long_lines, list(st.notes))
                kept.replaced_lines = st.replaced_lines
                whole.append((path, kept))
    total = readable = 0
    for path, st in whole:
        inputs.append(InputInfo(path, st.lines))
        notes += st.notes + count_notes(path, st, tuning)
        total += st.lines
        readable += st.lines - st.binary_lines
    return inputs, notes, total, readable


def _table(parts: list[pl.DataFrame], schema: S.Schema) -> pl.DataFrame:
    if not parts:
        return S.empty(schema)
    df = pl.concat(parts, how="vertical_relaxed")
    return df if in_order(df) else df.sort(["path", "line"], maintain_order=True)


def _overflow_notes(facts: Sequence[PieceFacts]) -> list[str]:
    parts = [f.overflow for f in facts if f.overflow is not None and f.overflow.height]
    if not parts:
        return []
    per = pl.concat(parts).group_by("path", "field", maintain_order=True).agg(pl.col("n").sum())
    return [
        f"{path}: {n} value(s) of field {field} beyond 64 bits or not a number; kept as null"
        for path, field, n in per.iter_rows()
    ]


class Merged:
    """Every piece's facts combined (see the module docstring)."""

    def __init__(
        self, facts: Sequence[PieceFacts], paths: Sequence[str], tuning: Tuning, *, keep: Keep
    ) -> None:
        ordered = sorted(facts, key=lambda f: f.index)
        errors = [f.error for f in ordered if f.error is not None]
        if errors:
            raise errors[0]
        ordered = [_shift(f, by) for f, by in zip(ordered, _offsets(ordered), strict=True)]
        self.inputs, notes, total, readable = _inputs(ordered, tuning)
        rejoined: dict[str, int] = {}
        for f in ordered:
            for p, n in f.rejoined.items():
                rejoined[p] = rejoined.get(p, 0) + n
        self.notes = tuple(
            notes
            + [f"{p}: {n} wrapped line(s) re-joined to the line before" for p, n in rejoined.items()]
            + _overflow_notes(ordered)
        )
        if paths and readable == 0:
            what = "empty" if total == 0 else "binary data, not text"
            why = f"; {notes[0]}" if notes else ""  # (a decompression cap or damage that cut the input short)
            raise InputError(
                f"nothing to analyze: the log input is {what} ({', '.join(list(paths)[:3])}){why}"
            )
        # Every unknown line only if every piece kept them all (else the evidence of each, `evidence.py`).
        self.whole_unknown = keep.unknown and all(f.whole_unknown for f in ordered)
        trimmed = Trimmed()
        for f in ordered:
            trimmed.add(f.trimmed)
        self.tables = {
            n: _table([f.tables[n] for f in ordered if n in f.tables], s) for n, s in TABLES.items()
        }
        if not self.whole_unknown:
            self.tables["unknown"] = self.tables["unknown"].unique(
                ["path", "line"], keep="first", maintain_order=True
            )
        for name in TABLES:
            if name != "unknown" or not self.whole_unknown:
                caps = caps_for(name, tuning) if keep.bounded else Caps(0, 0)
                self.tables[name] = bound(self.tables[name], name, caps, trimmed)
        self.notes += tuple(trimmed.notes())
        self.repeats = trimmed.repeats(self.tables)
        self.procs, self.seqs = FC.merge([f.procs for f in ordered], [f.seqs for f in ordered])
        self.coll_lines = sum(f.coll_lines for f in ordered)
        frames = [f.coll_frame for f in ordered if f.coll_frame is not None and f.coll_frame.height]
        self.coll_frame = _table(frames, S.COLLECTIVES) if keep.coll else None
        self.streams = final_streams(merge_streams([f.streams for f in ordered]))
        self.unknown_count = sum(f.unknown_count for f in ordered)
        if keep.unknown and not self.whole_unknown:
            note = (
                f"{self.unknown_count} unrecognised line(s) were counted, not kept: past "
                f"{tuning.full_unknown_max_lines} of them or {tuning.full_frames_max_bytes >> 20} MiB read, "
                "only those rules may cite were kept"
            )
            self.notes += (note,)
        c = [sum(f.cov[i] for f in ordered) for i in range(4)]
        self.coverage = Coverage(*c)
        self.marked = frozenset().union(*[f.marked for f in ordered])
