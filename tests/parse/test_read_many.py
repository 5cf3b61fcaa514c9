"""Reading ahead on worker threads hands out every input in order, exactly as reading one by one."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ncclscope.errors import InputError
from ncclscope.parse.logs import reader
from ncclscope.parse.logs.reader import ReadStats, read_chunks, read_many
from ncclscope.tuning import Tuning


def _inputs(tmp: Path) -> list[str]:
    paths = []
    for i in range(7):
        p = tmp / f"r{i}.log"
        body = "".join(f"h{i}:1:1 [0] NCCL INFO line {k}\n" for k in range(50 * (i + 1)))
        if i == 3:
            body += "\x00\x01\x02 binary\n"
        if i == 5:
            p = tmp / "r5.log.gz"
            p.write_bytes(gzip.compress(body.encode()))
        else:
            p.write_text(body)
        paths.append(str(p))
    return paths


@pytest.mark.parametrize(("limit", "budget"), [(64 << 20, 192 << 20), (2000, 5000), (0, 0), (10**9, 1)])
def test_read_many_equals_reading_in_order(tmp_path: Path, limit: int, budget: int) -> None:
    paths = _inputs(tmp_path)
    tuning = Tuning(
        prefetch_bytes=limit, prefetch_budget_bytes=budget
    )  # 2000: some read ahead, some streamed
    got = []
    for path, chunks, stats in read_many(paths, tuning):
        frame = pl.concat(list(chunks))
        got.append((path, frame, stats.lines, stats.binary_lines, stats.notes))
    assert [g[0] for g in got] == paths
    for path, frame, lines, binary, notes in got:
        stats = ReadStats()
        want = pl.concat(list(read_chunks(path, stats)))
        assert_frame_equal(frame, want)
        assert (lines, binary, notes) == (stats.lines, stats.binary_lines, stats.notes)


def test_read_many_reports_an_unreadable_file_in_order(tmp_path: Path) -> None:
    paths = _inputs(tmp_path)
    paths.insert(2, str(tmp_path / "missing.log"))
    seen = []
    with pytest.raises(InputError, match="missing.log"):
        for path, chunks, _ in read_many(paths):
            list(chunks)
            seen.append(path)
    assert seen == paths[:2]


def test_a_consumer_that_stops_early_does_not_hang(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text("".join(f"h:1:1 [0] NCCL INFO line {k}\n" for k in range(200_000)))
    tuning = Tuning(prefetch_bytes=0, read_block_bytes=64 << 10)  # streamed, read ahead block by block
    for _, chunks, _ in read_many([str(big)], tuning):
        for _chunk in chunks:
            break
    stats = ReadStats()
    n = sum(c.height for c in reader._behind(read_chunks(str(big), stats, tuning)))
    assert n == stats.lines == 200_000
