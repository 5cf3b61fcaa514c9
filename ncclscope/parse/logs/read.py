"""Parse stage, NCCL logs: read every input and fill `LogFrames`, with memory bounded by what the analysis needs.

The inputs are cut into pieces (`pieces`: small files together, big plain files at line ends); each
piece is reduced to facts by a pure function (`reduce.reduce_piece`: COLL lines field by field,
inert application lines rejected once, the rest through the grammar's families and matchers), on
worker processes when the set is big (`pool`), and the facts are merged (`merge`). Small inputs keep
every COLL and unknown line as frames; big ones keep the facts (per process and communicator key, per
distinct opCount sequence) and the evidence lines rules may cite, and read the input again when a
notebook asks for the full frames (`LogFrames.collectives`, `LogFrames.unknown_lines`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import polars as pl

from ncclscope.frames import FullFrames, LogFrames
from ncclscope.frames_coll import KEY, CollFacts
from ncclscope.parse.inputs import STDIN
from ncclscope.parse.logs.engine import pieces as P
from ncclscope.parse.logs.engine import pool
from ncclscope.parse.logs.engine.reader import file_size
from ncclscope.parse.logs.engine.spawn import workers_for
from ncclscope.parse.logs.engine.spool import Spool
from ncclscope.parse.logs.keep.policy import POSITIONAL, KeepPolicy
from ncclscope.parse.logs.merge import Merged
from ncclscope.parse.logs.reduce import CollSelect, Keep, PieceFacts, reduce_piece
from ncclscope.tuning import DEFAULT, Tuning

__all__ = ["read_logs"]


MIN_PIECE = 8 << 20  # pieces are cut smaller than `Tuning.piece_bytes` to share out a set, down to this
ROUNDS = (0.75, 0.25)  # with workers: the share of the set each round of pieces (one per process) holds


def _steps(size: int, workers: int, tuning: Tuning) -> list[int]:
    """Piece sizes in turn. One process reads pieces of `piece_bytes` (batches bound its memory; the general
    path's per-call costs, ~0.03-0.05 s, are paid once per piece). With workers, each process gets one
    piece per round and the second round is smaller, so that all finish near the same time (the CLI
    starts its workers before its own imports, so they start with the caller; a worker started late or
    slowed takes fewer of the second round's pieces). Two rounds, not three: on 2 cores the 243 MB COLL
    set ran 5% faster (one general-path pass fewer per process). And a piece costs ~0.07 s beyond its
    lines, so a round whose pieces would hold less than `tuning.round_min_bytes` each joins the round
    before: the 243 MB set in one round took 0.94x the wall time of two rounds, 0.97x with another
    program busy on one core (10 and 8 paired runs, bench/README.md)."""
    if workers == 0:
        return [tuning.piece_bytes]
    procs = workers + 1
    rounds = list(ROUNDS)
    while len(rounds) > 1 and size * rounds[-1] / procs < tuning.round_min_bytes:
        last = rounds.pop()
        rounds[-1] += last
    return [
        min(tuning.piece_bytes, max(MIN_PIECE, int(size * f / procs) + 1))
        for f in rounds
        for _ in range(procs)
    ]


def _fmt(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1_000_000 else f"{n / 1e3:.1f}k" if n >= 10_000 else str(n)


def _merged(
    paths: Sequence[str],
    tuning: Tuning,
    keep: Keep,
    progress: Callable[[str], None] | None,
    sources: Mapping[str, str],
) -> Merged:
    size = sum(file_size(sources.get(p, p)) or 0 for p in paths)
    workers = workers_for(tuning, size)
    plan = P.plan(paths, tuning, _steps(size, workers, tuning), sources)
    left = Counter(seg.path for piece in plan for seg in piece.segments)  # segments still to read, per file
    segments = {piece.index: piece.segments for piece in plan}
    done = [0, 0]  # files, lines

    def tick(f: PieceFacts) -> None:
        for seg in segments.get(f.index, ()):
            left[seg.path] -= 1
            done[0] += left[seg.path] == 0
        done[1] += sum(st.lines for _, _, st in f.stats)
        if progress is not None:
            progress(f"read {done[0]}/{len(left)} files, {_fmt(done[1])} lines")

    facts = pool.run(plan, tuning, reduce=reduce_piece, keep=keep, progress=tick)
    return Merged(facts, paths, tuning, keep=keep)


def _full_frames(paths: Sequence[str], tuning: Tuning, spool: Spool | None, policy: KeepPolicy) -> FullFrames:
    keep = Keep(unknown=True, coll=True, bounded=False, policy=policy)
    m = _merged(paths, tuning, keep, None, _sources(spool))
    assert m.coll_frame is not None
    return FullFrames(m.coll_frame, m.tables["unknown"])


def _coll_rows(
    paths: Sequence[str],
    tuning: Tuning,
    spool: Spool | None,
    policy: KeepPolicy,
    keys: pl.DataFrame,
    op_counts: Sequence[int],
) -> pl.DataFrame:
    """schema.COLLECTIVES rows of `keys` (frames_coll.KEY) at `op_counts`, the inputs read again: each piece
    keeps only those rows (`Keep.select`), so the memory held is that of the rows asked for."""
    sel = CollSelect(
        tuple(keys.select(KEY).unique(maintain_order=True).rows()), tuple(sorted(set(op_counts)))
    )
    m = _merged(paths, tuning, Keep(coll=True, select=sel, policy=policy), None, _sources(spool))
    assert m.coll_frame is not None
    return m.coll_frame


def _sources(spool: Spool | None) -> dict[str, str]:
    return {STDIN: spool.name} if spool is not None else {}


def read_logs(
    paths: Sequence[str],
    *,
    progress: Callable[[str], None] | None = None,
    tuning: Tuning = DEFAULT,
    policy: KeepPolicy = POSITIONAL,
) -> LogFrames:
    """Read NCCL/PyTorch logs into typed frames; raise `InputError` only if nothing could be read.

    The COLL lines are kept as facts (`LogFrames.coll`); `LogFrames.collectives` reads the input again
    when asked (stdin from its spool, `spool.py`). Unknown lines are kept whole for inputs up to
    `tuning.full_frames_max_bytes`, else only those rules may cite (`LogFrames.unknown_lines` reads
    them all again). `policy`: what the consumers search unknown lines for (the session passes theirs; the
    default keeps only the positional evidence of a big input)."""
    spool = Spool(tuning=tuning) if STDIN in paths else None
    sources = _sources(spool)
    size = sum(file_size(sources.get(p, p)) or 0 for p in paths)
    keep = Keep(unknown=size <= tuning.full_frames_max_bytes, policy=policy)
    m = _merged(paths, tuning, keep, progress, sources)
    coll = CollFacts(m.procs, m.seqs, m.coll_lines, m.coll_frame)
    return LogFrames(
        **{n: t for n, t in m.tables.items()},
        coll=coll,
        streams=m.streams,
        inputs=tuple(m.inputs),
        coverage=m.coverage,
        notes=(*spool.notes, *m.notes) if spool is not None else m.notes,
        nccltests_marked=m.marked - {STDIN},
        unknown_count=None if m.whole_unknown else m.unknown_count,
        repeats=m.repeats,
        rebuild=partial(
            _full_frames, tuple(paths), tuning, spool, policy
        ),  # (each holds the spool while it lives)
        fetch_coll=partial(_coll_rows, tuple(paths), tuning, spool, policy),
    )
