"""Parse stage, torch.profiler traces: decode a large trace set on the other cores too.

Decoding is pure Python and holds the GIL, so the other cores need other processes. Each worker is a
fresh interpreter that loads only the decoder (msgspec and this package's `errors`, `traces.decode`,
`trace_events`, under stand-in parent packages: no Polars, ~50 ms to start, ~30 MB) and is given the
files after the caller's own share, in order; it writes one msgpack record per file (the decoded
columns, or the file's TraceError message) to an unnamed temporary file, each read as soon as it
is whole. The caller decodes the first files meanwhile, so files come back, and errors with them, in file
order as a one-process read would. A worker that fails or is killed leaves its files to the caller.
`Tuning.trace_max_workers` (the CLI fills it from `NCCLSCOPE_TRACE_WORKERS`) sets how many at most, 0 none.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import IO

import msgspec

from ncclscope.errors import TraceError
from ncclscope.parse.traces.decode import Scratch, decode
from ncclscope.parse.traces.events import DecodedTrace
from ncclscope.tuning import DEFAULT, Tuning

GZIP_RATIO = 8
POLL_S = 0.005  # while a worker's next record is not whole yet
MAX_RECORD = 1 << 36  # a longer length prefix is not ours: the worker's output is not to be trusted
OWN_SHARE = 0.8  # the caller also builds frames and reads the workers' records: it takes a bit less


class _Record(msgspec.Struct, array_like=True):
    path: str
    error: str | None = None
    trace: DecodedTrace | None = None


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Record)
_TUNING = msgspec.json.Decoder(Tuning)
_PKG = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Stand-in `ncclscope` and `ncclscope.parse` packages (their __init__ imports Polars and every stage).
_BOOT = (
    "import sys, types\n"
    "for name, sub in (('ncclscope', ''), ('ncclscope.parse', 'parse')):\n"
    "    mod = types.ModuleType(name)\n"
    "    mod.__path__ = [sys.argv[1] + sub]\n"
    "    sys.modules[name] = mod\n"
    "from ncclscope.parse.traces.workers import work\n"
    "work(sys.argv[3:], sys.argv[2])\n"
)


@dataclass
class _Worker:
    paths: list[str]
    proc: subprocess.Popen[bytes]
    out: IO[bytes]
    pos: int = 0  # where its next record starts in `out`


def decoded(
    files: Sequence[str], scratch: Scratch, tuning: Tuning = DEFAULT
) -> Generator[DecodedTrace | TraceError, None, None]:
    """Every file decoded, in order; a file that cannot be used gives its TraceError in its place."""
    runs = _start(files, tuning)  # consecutive runs of files: a worker's, or the caller's (str)
    try:
        for run in runs:
            if isinstance(run, _Worker):
                yield from _collect(run, scratch, tuning)
            else:
                yield _decode(run, scratch, tuning)
    finally:
        for run in runs:
            if isinstance(run, _Worker):
                _stop(run)


def _decode(path: str, scratch: Scratch, tuning: Tuning) -> DecodedTrace | TraceError:
    try:
        return decode(path, scratch, tuning)
    except TraceError as e:
        return e


def work(paths: Sequence[str], tuning: str = "{}") -> None:
    """Worker side: one length-prefixed msgpack record per file to stdout. The worker is a process of its
    own that makes millions of short-lived objects and no cycle: the cyclic collector is off in it only (the
    caller's process is never switched; there it costs ~7% of the decode's CPU, see bench/README)."""
    gc.disable()
    scratch, out, tune = Scratch(), sys.stdout.buffer, _TUNING.decode(tuning)
    for path in paths:
        got = _decode(path, scratch, tune)
        rec = _Record(path, error=str(got)) if isinstance(got, TraceError) else _Record(path, trace=got)
        body = _ENCODER.encode(rec)
        out.write(len(body).to_bytes(8, "little") + body)
        out.flush()
    scratch.close()


def _workers_wanted(files: Sequence[str], sizes: list[int], tuning: Tuning = DEFAULT) -> int:
    n = min(tuning.trace_max_workers, _cores() - 1, len(files) - 1)
    usable = bool(sys.executable) and hasattr(os, "pread")
    return n if n >= 1 and usable and sum(sizes) >= tuning.trace_pool_min_bytes else 0


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _shares(sizes: list[int], n: int) -> list[int]:
    """Share index (0: the caller, then each worker) of every file: contiguous runs, by bytes."""
    weights = [OWN_SHARE] + [1.0] * n
    edges = list(accumulate(w / sum(weights) * sum(sizes) for w in weights))
    out: list[int] = []
    before = 0
    for size in sizes:  # the share whose byte range holds the file's middle; the caller has the first
        out.append(next(i for i, e in enumerate(edges) if before + size / 2 <= e or i == n) if out else 0)
        before += size
    return out


def _start(files: Sequence[str], tuning: Tuning) -> list[_Worker | str]:
    """The files in order, each run after the caller's first share handed to a worker if one starts."""
    try:  # decoding work by bytes; Kineto's JSON gzips ~8:1
        sizes = [os.path.getsize(f) * (GZIP_RATIO if f.endswith((".gz", ".zst")) else 1) for f in files]
    except OSError:
        return list(files)  # the caller's read says which file
    n = _workers_wanted(files, sizes, tuning)
    shares = _shares(sizes, n) if n else [0] * len(files)
    out: list[_Worker | str] = []
    for k in range(n + 1):
        paths = [f for f, s in zip(files, shares, strict=True) if s == k]
        worker = _spawn(paths, tuning) if k and paths else None
        out.extend([worker] if worker else paths)
    return out


def _spawn(paths: list[str], tuning: Tuning = DEFAULT) -> _Worker | None:
    tmp = tempfile.TemporaryFile()  # noqa: SIM115  # open until its records are read (closed in _stop)
    args = [sys.executable, "-c", _BOOT, _PKG + os.sep, msgspec.json.encode(tuning).decode(), *paths]
    try:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=tmp, stderr=subprocess.DEVNULL)
    except OSError:
        tmp.close()
        return None  # the caller decodes these files itself
    return _Worker(paths, proc, tmp)


def _collect(w: _Worker, scratch: Scratch, tuning: Tuning) -> Iterator[DecodedTrace | TraceError]:
    """The worker's records in order, each as soon as it is whole (one in memory at a time); files the
    worker did not finish are decoded here."""
    for i, path in enumerate(w.paths):
        rec = _next_record(w)
        if rec is None or rec.path != path:  # the worker died: the rest is decoded here
            yield from (_decode(p, scratch, tuning) for p in w.paths[i:])
            return
        if rec.error is not None:
            yield TraceError(rec.error)
        else:
            yield rec.trace if rec.trace is not None else _decode(path, scratch, tuning)


def _next_record(w: _Worker) -> _Record | None:
    """The next whole record of the worker's file, waiting while it runs; None once it has exited.

    Read with `pread` at our own position: the worker writes through the same open file, whose
    offset a seek or read of ours would move under its writes."""
    fd = w.out.fileno()
    while True:
        exited = w.proc.poll() is not None  # (first: once it has exited, a short read is final)
        head = os.pread(fd, 8, w.pos)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        body = _pread_all(fd, n, w.pos + 8) if 0 <= n <= MAX_RECORD else b""
        if len(body) == n:
            w.pos += 8 + n
            try:
                return _DECODER.decode(body)
            except msgspec.DecodeError:
                return None
        if exited or n > MAX_RECORD:
            return None
        time.sleep(POLL_S)


def _pread_all(fd: int, n: int, at: int) -> bytes:
    parts, got = [], 0
    while got < n and (part := os.pread(fd, n - got, at + got)):
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _stop(w: _Worker) -> None:
    if w.proc.poll() is None:  # the caller stopped early (an error in an earlier file)
        w.proc.kill()
        w.proc.wait()
    w.out.close()
