"""Parse stage, pool: run a reduction over every piece, in this process and on worker processes.

The reduction (the reader's is `reduce.reduce_piece`) is a pure, module-level function of a piece, the
tuning and what to keep, so pieces are independent and the function travels to a worker by its name. A big input set is read by the
caller and `workers` worker processes at once. Each worker is a fresh interpreter (`worker.py`, started
with `-c`, not `multiprocessing`: a spawned child would re-run the caller's main module, a notebook's or
`python -m ncclscope`'s, and `fork` would copy Polars' threads half-made) that reads pickled pieces on
stdin and writes pickled facts on stdout. One thread per worker feeds it the next piece as soon as it
returns one; the caller takes pieces from the same queue. A worker that dies or cannot
start leaves its piece to the others. Results come back as whatever the reduction returns (the reader's:
facts, small frames, merged by `merge.Merged`); an exception it raises is raised here.
"""

from __future__ import annotations

import pickle
import struct
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar

from ncclscope.parse.logs.engine import spawn
from ncclscope.parse.logs.engine.pieces import Piece
from ncclscope.parse.logs.engine.spawn import workers_for
from ncclscope.tuning import Tuning

R = TypeVar("R")
Reduction = Callable[[Piece, Tuning, Any], R]  # module-level, so that a worker finds it by its name
_LEN = struct.Struct("<Q")


def worker_count(tuning: Tuning, pieces: Sequence[Piece]) -> int:
    """Worker processes for these pieces: as `workers_for`, and fewer than the pieces."""
    return max(0, min(workers_for(tuning, sum(p.size for p in pieces)), len(pieces) - 1))


def send(out: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)))
    out.write(data)
    out.flush()


def receive(inp: IO[bytes]) -> object:
    """The next pickled object (only from our own worker or caller); EOFError at the end of the stream."""
    head = inp.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError
    (n,) = _LEN.unpack(head)
    data = inp.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)  # written by a worker this process started (or by that caller)


class _Queue:
    """Pieces left, taken in order (the planner makes the last ones the smallest)."""

    def __init__(self, pieces: Sequence[Piece]) -> None:
        self.todo = deque(pieces)
        self.lock = threading.Lock()

    def take(self) -> Piece | None:
        with self.lock:
            return self.todo.popleft() if self.todo else None

    def give_back(self, piece: Piece) -> None:
        with self.lock:
            self.todo.append(piece)


def _feed(
    proc: subprocess.Popen[bytes],
    queue: _Queue,
    tuning: Tuning,
    reduce: Reduction[R],
    keep: object,
    finish: Callable[[R], None],
    failed: list[BaseException],
    fed: threading.Event,
) -> None:
    """One worker: send it pieces one by one until none is left; its failure leaves the piece to others.
    `fed` is set once none of its pieces is in flight; the worker's exit is then awaited here, not by
    the caller."""
    assert proc.stdin is not None and proc.stdout is not None
    try:
        while (piece := queue.take()) is not None:
            try:
                send(proc.stdin, (reduce, piece, tuning, keep))
                got = receive(proc.stdout)
            except (OSError, EOFError, pickle.UnpicklingError):
                queue.give_back(piece)  # the worker died or could not start
                return
            if isinstance(got, BaseException):  # a bug in the reduction: the caller raises it
                failed.append(got)
                return
            finish(got)  # type: ignore[arg-type]
    finally:
        fed.set()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        proc.wait()


def run(
    pieces: Sequence[Piece],
    tuning: Tuning,
    *,
    reduce: Reduction[R],
    keep: object,
    progress: Callable[[R], None] | None = None,
) -> list[R]:
    """`reduce(piece, tuning, keep)` of every piece (in no particular order)."""
    done: list[R] = []
    lock = threading.Lock()

    def finish(f: R) -> None:
        with lock:
            done.append(f)
            if progress is not None:
                progress(f)

    queue = _Queue(pieces)
    failed: list[BaseException] = []
    feeding: list[threading.Event] = []
    workers = worker_count(tuning, pieces)
    for _ in range(workers):
        proc = spawn.take(workers)  # one the CLI started early, or a new one
        if proc is None:
            break
        fed = threading.Event()
        threading.Thread(
            target=_feed,
            args=(proc, queue, tuning, reduce, keep, finish, failed, fed),
            daemon=True,
            name="ncclscope-log-worker",
        ).start()
        feeding.append(fed)
    # Until every piece is done: a worker that dies gives its piece back before its event is set.
    try:
        while (piece := queue.take()) is not None or not all(e.is_set() for e in feeding):
            if piece is not None:
                finish(reduce(piece, tuning, keep))
            else:
                next(e for e in feeding if not e.is_set()).wait(timeout=0.05)
    finally:
        spawn.release()  # the CPU `prestart` kept this process to: every CPU again for what follows
    if failed:
        raise failed[0]
    return done
