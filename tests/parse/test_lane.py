"""The COLL shape lane gives exactly the rows the general path gives, and hands odd lines to it."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ncclscope.parse import read_logs
from ncclscope.parse.logs import lane, match
from ncclscope.parse.logs import read as logs
from ncclscope.parse.logs.read import prepare
from ncclscope.parse.logs.reader import ReadStats, read_chunks

P = "node-1:100:101 [0] NCCL "
MSG = ("AllReduce: opCount {op} sendbuff 0x7f01 recvbuff 0x7f02 count {n} datatype 7 op 0 root 0 "
       "comm 0x55aa [nranks=4] stream 0x55bb")
ODD = [  # (line, takes the lane)
    ("[rank3]:" + P + "INFO " + MSG.format(op="1a", n=8), True),
    ("[2025-04-06 22:31:56] " + P + "INFO " + MSG.format(op="0", n=8), True),
    (P + "INFO " + MSG.format(op="ffffffff", n=16) + "   ", True),  # trailing blanks
    ("\x1b[36m" + P + "INFO " + MSG.format(op="2", n=8) + "\x1b[0m", True),  # ANSI colours
    (P + "WARN " + MSG.format(op="3", n=8), False),  # a WARN row is also a warnings row
    (P + "INFO " + MSG.format(op="zz", n=8), False),  # not a hex token
    (P + "INFO " + MSG.format(op="4", n=8) + " again: opCount 5 sendbuff x", False),  # the literal twice
    (P + "INFO AllReduce: opCount 6 sendbuff 0x7f01 and then nothing the grammar knows", False),
    ("no prefix at all: opCount 7 sendbuff 0x1", False),
    (P + "INFO " + MSG.format(op="8", n="9" * 2100), False),  # longer than MAX_TEXT
    (P + "INFO " + MSG.format(op="1" * 30, n=8), True),  # opCount past 64 bits: null, as the general path
]


def _write(tmp: Path) -> list[str]:
    a = [P + "INFO " + MSG.format(op=f"{i:x}", n=1 << (i % 5)) for i in range(40)]
    a[10:10] = [line for line, _ in ODD]
    b = ["node-2:200:201 [1] NCCL INFO " + MSG.format(op=f"{i:x}", n=4) for i in range(30)]
    paths = []
    for name, lines in (("a.log", a), ("b.log", b)):
        (tmp / name).write_text("\n".join(lines) + "\n")
        paths.append(str(tmp / name))
    return paths


def test_lane_equals_general_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _write(tmp_path)
    monkeypatch.setattr(match, "SMALL", 0)
    fast = read_logs(paths)
    monkeypatch.setattr(match, "VARYING", {})
    plain = read_logs(paths)
    assert fast.coverage == plain.coverage
    for name in fast.table_names():
        assert_frame_equal(getattr(fast, name), getattr(plain, name))
    assert_frame_equal(fast.streams, plain.streams)
    assert fast.collectives.height == 40 + 30 + 8  # the WARN and doubled-literal lines are COLL rows too


def test_lane_takes_plain_shapes_and_leaves_odd_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _write(tmp_path)
    monkeypatch.setattr(match, "SMALL", 0)
    raw = pl.concat([c for p in paths for c in read_chunks(p, ReadStats())])
    part, rest = lane.Lane(prepare).split(raw)
    coll = part.frame()
    assert coll.height + rest.height == raw.height
    taken = set(coll["text"].to_list())
    for line, expected in ODD:
        assert (line in taken) == expected, line
    assert rest.select("path", "line").equals(raw.join(rest, on=["path", "line"], how="semi").select("path", "line"))
    ranked = coll.filter(pl.col("text").str.starts_with("[rank3]:"))
    assert ranked.select("rank_hint", "op_count", "count").rows() == [(3, 0x1a, 8)]


def test_shapes_are_parsed_once_across_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches and a small general-path buffer: same frames as one batch, each shape learned once."""
    paths = _write(tmp_path)
    monkeypatch.setattr(match, "SMALL", 0)
    whole = read_logs(paths)
    monkeypatch.setattr(logs, "BATCH_LINES", 7)
    monkeypatch.setattr(logs, "PENDING_LINES", 5)
    learned: list[tuple[int, int]] = []
    calls: list[int] = []
    real = lane.Lane._learn

    def spy(self: lane.Lane, reps: pl.DataFrame) -> None:
        calls.append(reps.height)
        learned.extend(reps.select("_h1", "_h2").rows())
        real(self, reps)

    monkeypatch.setattr(lane.Lane, "_learn", spy)
    small = read_logs(paths)
    assert small.coverage == whole.coverage
    for name in whole.table_names():
        assert_frame_equal(getattr(small, name), getattr(whole, name))
    assert_frame_equal(small.streams, whole.streams)
    assert len(calls) > 1  # shapes met in several batches…
    assert len(learned) == len(set(learned))  # …each parsed once
