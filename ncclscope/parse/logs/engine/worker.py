"""Parse stage, log worker process: reduce the pieces its caller (`pool.run`) sends, one at a time.

Started as `python -c` by the pool: reads a pickled (reduction, piece, tuning, keep) on stdin (the
reduction by its module and name: unpickling imports it), writes the pickled result (or the exception
the reduction raised) on stdout, until stdin ends. The boot line then
ends the process without tearing down its frames one by one (`os._exit`, as the CLI does).
"""

from __future__ import annotations

import pickle
import sys

from ncclscope.parse.logs.engine.pool import receive, send


def serve() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the channel
    while True:
        try:
            job = receive(inp)
        except EOFError:
            return
        assert isinstance(job, tuple) and len(job) == 4
        reduce, piece, tuning, keep = job
        try:
            result: object = reduce(piece, tuning, keep)
        except Exception as e:  # noqa: BLE001 - handed to the caller, raised there
            try:
                pickle.dumps(e)
                result = e
            except Exception:  # noqa: BLE001 - an exception that cannot travel: its text does
                result = RuntimeError(f"{type(e).__name__}: {e}")
        send(out, result)
