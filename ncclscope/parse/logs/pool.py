"""Parse stage, pool: run `reduce.reduce_piece` over every piece, in this process or on worker processes.

The reduction is a pure function of a piece, so pieces are independent: a big input set is read by the
caller and `workers` worker processes at once (fresh interpreters, `spawn`: Polars starts threads on
import, which `fork` would copy half-made), each handed the next piece as it finishes one; the caller
takes a piece itself whenever every worker has one queued. A worker that dies or cannot start leaves
its pieces to the caller. Results come back as facts (small frames), merged by `merge.Merged`.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from ncclscope.parse.logs.pieces import Piece
from ncclscope.parse.logs.reduce import Keep, PieceFacts, reduce_piece
from ncclscope.tuning import Tuning

Progress = Callable[[PieceFacts], None]


def worker_count(tuning: Tuning, pieces: Sequence[Piece]) -> int:
    """Worker processes for this input set: none for small sets or a single piece."""
    if len(pieces) < 2 or sum(p.size for p in pieces) < tuning.log_pool_min_bytes:
        return 0
    if tuning.log_workers is not None:
        want = tuning.log_workers
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        want = min(cores - 1, 7)
    return max(0, min(want, len(pieces) - 1))


def run(pieces: Sequence[Piece], tuning: Tuning, *, keep: Keep, progress: Progress | None = None) -> list[PieceFacts]:
    """Facts of every piece (in no particular order)."""
    workers = worker_count(tuning, pieces)
    done: list[PieceFacts] = []

    def finish(f: PieceFacts) -> None:
        done.append(f)
        if progress is not None:
            progress(f)

    todo = deque(pieces)
    if workers == 0:
        while todo:
            finish(reduce_piece(todo.popleft(), tuning, keep))
        return done
    ctx = multiprocessing.get_context("spawn")
    inflight: dict[Future[PieceFacts], Piece] = {}
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            while todo or inflight:
                while todo and len(inflight) < 2 * workers:  # one running and one queued per worker
                    p = todo.popleft()
                    inflight[pool.submit(reduce_piece, p, tuning, keep)] = p
                if todo:
                    finish(reduce_piece(todo.pop(), tuning, keep))  # the caller's share, from the back
                ready, _ = wait(list(inflight), timeout=0 if todo else None, return_when=FIRST_COMPLETED)
                for fut in ready:
                    piece = inflight.pop(fut)
                    try:
                        finish(fut.result())
                    except BrokenProcessPool:
                        todo.append(piece)
                        raise
    except BrokenProcessPool:
        todo.extend(inflight.values())
        while todo:
            finish(reduce_piece(todo.popleft(), tuning, keep))
    return done
