"""Session.notes gathers every stage's notes: an unreadable Flight Recorder dump is reported."""

from __future__ import annotations

import pickle
from pathlib import Path

import ncclscope

LOG = "node-a:100:101 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"


def test_an_unreadable_dump_is_a_note(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text(LOG, encoding="utf-8")
    good = {"version": "2.4", "pg_config": {}, "pg_status": {}, "entries": []}
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(good))
    (tmp_path / "nccl_trace_rank_1").write_bytes(pickle.dumps(good)[:-7])  # cut short
    s = ncclscope.analyze(
        [str(log), str(tmp_path / "nccl_trace_rank_0"), str(tmp_path / "nccl_trace_rank_1")]
    )
    assert s.flight is not None and s.flight.notes
    assert set(s.flight.notes) <= set(s.notes)
    assert any("nccl_trace_rank_1" in n for n in s.notes)
