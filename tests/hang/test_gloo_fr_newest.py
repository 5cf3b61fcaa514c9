"""Gloo Flight Recorder dumps name no group members: a size mismatch goes only to a group some rank
waits in, and a group where every reporting rank created newer work elsewhere is not hung.

Judged on the real capture samples/judge/j4_mismatch_r1_tp2dp2 (SOURCE.md there: rank 1 entered
all_reduce #25 on PG 1 = {0, 1} with a different size, gloo aborted it; no dump from rank 1). Before
this reading every group got the culprit, and the verdict sat on PG 0 #4, a finished collective.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ncclscope
from ncclscope.hang.progress import newest_groups, untracked_groups
from ncclscope.parse.flight.read import read_flight

J4 = Path(__file__).resolve().parents[2] / "samples" / "judge" / "j4_mismatch_r1_tp2dp2"


@pytest.fixture(scope="module")
def j4() -> ncclscope.Session:
    return ncclscope.analyze([str(J4)])


def _hang(s: ncclscope.Session) -> dict[str, dict[str, Any]]:
    return {
        str(f.metrics["communicator"]).split(" (")[0]: dict(f.metrics)
        for f in s.findings
        if f.id == "collective-hang"
    }


def test_each_rank_waits_in_the_group_of_its_newest_entry() -> None:
    """From the dumps alone: rank 0 last created PG 1's #25 (the TP all_reduce of step 4), ranks 2
    and 3 their data-parallel group's #14 (DDP's gradient all_reduce of step 4)."""
    fr = read_flight([str(p) for p in sorted((J4 / "flight").iterdir())])
    untracked = untracked_groups(fr)
    assert untracked == {"0", "1", "2", "3", "4"}
    assert newest_groups(fr, untracked) == {0: "1", 2: "3", 3: "4"}
    assert newest_groups(fr, set()) == {}


def test_the_mismatch_sits_where_rank_1_aborted(j4: ncclscope.Session) -> None:
    from ncclscope.report import document_for

    v = document_for(j4)["verdict"]
    assert v["ranks"] == [1] and "#25 on PG 1 (TENSOR_MODEL_PARALLEL_GROUP)" in v["text"]


def test_groups_nobody_waits_in_are_not_hung_and_get_no_culprit(j4: ncclscope.Session) -> None:
    h = _hang(j4)
    assert (h["PG 1"]["class"], h["PG 1"]["culprit_ranks"], h["PG 1"]["seq"]) == ("c", [1], 25)
    # PG 0 = all ranks, PG 2 = {2, 3}: every reporting rank moved on to a later collective elsewhere
    for pg in ("PG 0", "PG 2"):
        assert (h[pg]["class"], h[pg]["culprit_ranks"]) == ("e", [])
    # PG 3 = {0, 2}: rank 0 never entered #14 (it waits in PG 1): not a size mismatch of rank 1's
    assert h["PG 3"]["class"] != "c"
    mism = {
        str(f.metrics["communicator"]).split(" (")[0] for f in j4.findings if f.id == "collective-mismatch"
    }
    # PG 4 = {1, 3} keeps it: its one reporting rank waits there and nothing tells it from PG 1
    assert mism == {"PG 1", "PG 4"}
