"""Trace worker processes: a large set decoded partly by workers comes back exactly as a one-process
read, in file order, with errors at their turn, and a worker that dies leaves its files to the caller."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from trace_fixtures import DLRM

from ncclscope.errors import TraceError
from ncclscope.parse.traces import workers as P
from ncclscope.parse.traces.decode import Scratch, decode
from ncclscope.parse.traces.read import read_traces
from ncclscope.tuning import Tuning

ANY_SIZE = Tuning(trace_pool_min_bytes=0)  # workers for a set of any size


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a 4-core machine (with `ANY_SIZE`: workers for any set)."""
    monkeypatch.setattr(P, "_cores", lambda: 4)


def _files() -> list[str]:
    return sorted(str(p) for p in DLRM.glob("*.json.gz"))


def _plain(files: list[str]) -> list[Any]:
    return [vars(decode(f)) for f in files]


def test_workers_give_what_one_process_gives(workers: None) -> None:
    files = _files()
    assert P._workers_wanted(files, [1] * len(files), ANY_SIZE) == 3
    assert P._workers_wanted(files, [1] * len(files)) == 0  # a small set: decoded by the caller alone
    assert [vars(d) for d in P.decoded(files, Scratch(), ANY_SIZE)] == _plain(files)


def test_read_traces_with_and_without_workers(workers: None) -> None:
    with_workers = read_traces([str(DLRM)], tuning=ANY_SIZE)
    alone = read_traces([str(DLRM)], tuning=Tuning(trace_pool_min_bytes=0, trace_max_workers=0))
    for name in ("collectives", "steps", "kernels", "ranks", "pgs"):
        assert getattr(with_workers, name).equals(getattr(alone, name)), name


def test_shares_are_contiguous_runs_by_bytes() -> None:
    assert P._shares([10] * 10, 1) == [0] * 4 + [1] * 6  # the caller takes 0.8 of a worker's share
    assert P._shares([100, 1, 1, 1], 1) == [0, 1, 1, 1]
    shares = P._shares([5, 7, 1, 30, 2, 2, 9, 4], 3)
    assert shares == sorted(shares) and shares[0] == 0


@pytest.mark.parametrize("bad_at", [0, 6], ids=["caller's-share", "worker's-share"])
def test_errors_come_at_their_turn(workers: None, tmp_path: Path, bad_at: int) -> None:
    """A file that cannot be used gives its TraceError in its place; the files after it still come."""
    files = []
    for i, f in enumerate(_files()):
        dst = tmp_path / f"r{i}.json.gz"
        if i in (bad_at, 7):  # two bad files: the first in order is the one raised
            dst.write_text(json.dumps({"schemaVersion": 1, "name": i}))
        else:
            shutil.copy(f, dst)
        files.append(str(dst))
    got = list(P.decoded(files, Scratch(), ANY_SIZE))
    errors = [i for i, d in enumerate(got) if isinstance(d, TraceError)]
    assert errors == [bad_at, 7] and len(got) == len(files)
    assert re.search(f"r{bad_at}.json.gz.*traceEvents", str(got[bad_at]))
    read = read_traces(files, tuning=ANY_SIZE)  # the others are read; each skipped file is a note
    assert read.ranks.height == len(files) - 2
    assert sum(n.startswith("trace skipped:") for n in read.notes) == 2


@pytest.mark.parametrize(
    "boot",
    ["import sys; sys.exit(3)", "import sys; sys.stdout.buffer.write(b'\\x09' + bytes(7) + b'cut')"],
    ids=["dies", "cut-short"],
)
def test_a_dead_worker_leaves_its_files_to_the_caller(
    workers: None, monkeypatch: pytest.MonkeyPatch, boot: str
) -> None:
    monkeypatch.setattr(P, "_BOOT", boot)
    files = _files()
    assert [vars(d) for d in P.decoded(files, Scratch(), ANY_SIZE)] == _plain(files)


def test_a_worker_that_cannot_start_leaves_its_files_to_the_caller(
    workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    spawn = P._spawn

    def every_other(paths: list[str], tuning: Tuning) -> P._Worker | None:
        started.append(len(paths))
        return spawn(paths, tuning) if len(started) % 2 else None

    monkeypatch.setattr(P, "_spawn", every_other)
    files = _files()
    assert [vars(d) for d in P.decoded(files, Scratch(), ANY_SIZE)] == _plain(files)
    assert len(started) == 3


_SLOW_WRITER = """
import sys, time
class _Slow:
    def __init__(self, raw):
        self.raw = raw
    def write(self, b):
        for i in range(0, len(b), 4096):
            self.raw.write(b[i:i + 4096])
            self.raw.flush()
            time.sleep(0.0005)
    def flush(self):
        self.raw.flush()
class _Out:
    buffer = _Slow(sys.stdout.buffer)
sys.stdout = _Out()
"""


def test_records_read_while_the_worker_still_writes(workers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker writes through the file the caller reads: reading must not move the offset it writes at.
    monkeypatch.setattr(
        P,
        "_BOOT",
        P._BOOT.replace(
            "from ncclscope.parse.traces.workers import work",
            _SLOW_WRITER + "from ncclscope.parse.traces.workers import work",
        ),
    )
    monkeypatch.setattr(P, "POLL_S", 0.0005)
    local: list[str] = []
    monkeypatch.setattr(
        P, "decode", lambda path, scratch, tuning: local.append(path) or decode(path, scratch, tuning)
    )
    files = _files()
    assert [vars(d) for d in P.decoded(files, Scratch(), ANY_SIZE)] == _plain(files)
    own = P._shares([os.path.getsize(f) * P.GZIP_RATIO for f in files], 3).count(0)
    assert len(local) == own  # every other file came from a worker


def test_the_callers_collector_is_never_switched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading traces in the caller's process leaves its garbage collector alone (a library must not
    switch process-wide state; only a worker process of ours turns its own collector off)."""
    import gc

    def refuse() -> None:
        raise AssertionError("gc.disable() in the caller's process")

    monkeypatch.setattr(gc, "disable", refuse)
    alone = read_traces([str(DLRM)], tuning=Tuning(trace_pool_min_bytes=0, trace_max_workers=0))
    assert alone.collectives.height > 0 and gc.isenabled()
