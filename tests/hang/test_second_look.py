"""Issue 30: the hang stage's second look at COLL lines reads back only the lines it asks for (the
communicator's keys at its first mismatched opCounts), never every COLL row, and finds the same verdict."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ncclscope.hang import build_hang_view
from ncclscope.hang.coll import MISMATCH_OPS, coll_mismatches
from ncclscope.parse import read_logs
from ncclscope.parse.logs import reduce
from ncclscope.tuning import Tuning


def _coll(rank: int, op_count: int, op: str) -> str:
    return (
        f"node-0{rank // 4}:{4000 + rank}:{4100 + rank} [{rank % 4}] NCCL INFO {op}: opCount {op_count:x} "
        f"sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0 comm 0x55{rank} "
        "[nranks=8] stream 0x5"
    )


def _init(rank: int) -> str:
    return (
        f"node-0{rank // 4}:{4000 + rank}:{4100 + rank} [{rank % 4}] NCCL INFO ncclCommInitRank comm 0x55{rank} "
        f"rank {rank} nranks 8 cudaDev {rank % 4} nvmlDev {rank % 4} busId {rank % 4}f000 commId 0xe5509a - Init COMPLETE"
    )


def _desync(tmp_path: Path, ops: int, bad_from: int) -> str:
    lines = [_init(r) for r in range(8)] + [
        _coll(r, k, "ReduceScatter" if r == 7 and k >= bad_from else "AllReduce")
        for k in range(ops)
        for r in range(8)
    ]
    p = tmp_path / "desync.log"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_second_look_reads_back_only_what_it_asks_for(tmp_path: Path, monkeypatch: object) -> None:
    path = _desync(tmp_path, ops=600, bad_from=300)
    logs = read_logs([path], tuning=Tuning(full_frames_max_bytes=0, batch_lines=1000))
    assert logs.coll.frame is None  # the lines are not held: only the facts
    kept: list[int] = []
    real = reduce._Acc.facts

    def spy(self: reduce._Acc, *a: object, **k: object) -> reduce.PieceFacts:
        f = real(self, *a, **k)  # type: ignore[arg-type]
        if self.keep.select is not None and f.coll_frame is not None:
            kept.append(f.coll_frame.height)
        return f

    mp = __import__("pytest").MonkeyPatch()
    mp.setattr(reduce._Acc, "facts", spy)
    try:
        mism = coll_mismatches(logs)
    finally:
        mp.undo()
    assert kept and sum(kept) == 8 * MISMATCH_OPS  # 8 ranks at the first 16 mismatched opCounts, of 4,800
    assert mism["op_count"].to_list() == list(range(300, 300 + MISMATCH_OPS))
    first = mism.row(0, named=True)
    assert first["sigs"][-1].startswith("ReduceScatter") and first["ranks"][-1] == 7
    v = build_hang_view(logs, None).verdicts[0]
    assert v.klass == "c" and v.culprits == (7,) and v.seq == 300


def test_second_look_from_a_kept_frame_is_the_same(tmp_path: Path) -> None:
    path = _desync(tmp_path, ops=40, bad_from=20)
    logs = read_logs([path])
    held = logs.collectives  # the full frame, read once
    keys = held.select("host", "pid", "comm_ptr", "rank_hint", "nranks").unique()
    a = logs.coll_lines_at(keys, [20, 21])
    assert a.height == 16 and set(a["op_count"].to_list()) == {20, 21}
    assert a.equals(held.filter(pl.col("op_count").is_in([20, 21])))
