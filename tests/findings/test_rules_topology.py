"""Findings, communicator rules: rings/channels, split worlds, missing ranks, incomplete init."""

from __future__ import annotations

import polars as pl
from logframes_builder import init, logs, proc, run, table, warn

from ncclscope.frames import LogFrames

A, B, C = proc("node-a", 100, 0), proc("node-b", 200, 0), proc("node-a", 101, 1)


def _order(
    p: dict[str, object], channel: int, order: list[int], nch: int = 2, **kw: object
) -> dict[str, object]:
    return {**p, "kind": "ring_order", "channel": channel, "nchannels": nch, "order": order, **kw}


def _nb(p: dict[str, object], channel: int, prev: int, me: int, nxt: int) -> dict[str, object]:
    return {**p, "kind": "ring_neighbors", "channel": channel, "order": [prev, me, nxt]}


def test_ring_order_and_channel_count_disagree() -> None:
    lf = logs(rings=[_order(A, 0, [0, 1, 2, 3]), _order(B, 0, [0, 2, 1, 3], nch=4)])
    titles = {f.title for f in run("topology-mismatch", lf)}
    assert any("ring orders" in t for t in titles) and any("channel counts" in t for t in titles)


def test_ring_visiting_a_rank_twice() -> None:
    [f] = run("topology-mismatch", logs(rings=[_order(A, 0, [0, 1, 1, 3])]))
    assert f.severity == "error"


def test_contradicting_neighbours() -> None:
    lf = logs(rings=[_nb(A, 0, 3, 0, 1), _nb(B, 0, 2, 1, 2)])  # 0 says next is 1; 1 says prev is 2
    [f] = run("topology-mismatch", lf)
    assert "does not close" in f.title and len(f.evidence) == 2


def test_consistent_rings_are_silent() -> None:
    lf = logs(
        rings=[
            _order(A, 0, [0, 1, 2, 3]),
            _order(A, 1, [0, 1, 2, 3]),
            _nb(A, 2, 1, 0, 2),
            _nb(B, 2, 0, 2, 1),
            _nb(C, 2, 2, 1, 0),
        ]
    )
    assert run("topology-mismatch", lf) == []


def test_rings_of_different_communicators_are_not_compared() -> None:
    rows = [
        init(A, 0, 4, comm_id="0x1", phase="start"),
        _order(A, 0, [0, 1, 2, 3]),
        init(A, 0, 4, comm_id="0x1"),
        init(A, 0, 2, comm_id="0x2", phase="start"),
        _order(A, 0, [0, 1]),
        init(A, 0, 2, comm_id="0x2"),
    ]
    rows = [{**r, "line": 1000 + i} for i, r in enumerate(rows)]
    lf = LogFrames(
        inits=table("inits", [r for r in rows if "phase" in r]),
        rings=table("rings", [r for r in rows if "kind" in r]),
    )
    assert run("topology-mismatch", lf) == []


def test_channel_summary_disagrees() -> None:
    lf = logs(
        channels=[{**A, "kind": "summary", "coll_channels": 2}, {**B, "kind": "summary", "coll_channels": 4}]
    )
    [f] = run("topology-mismatch", lf)
    assert f.severity == "warning"


def test_split_world_same_rank_on_two_hosts() -> None:
    lf = logs(inits=[init(A, 0, 8, comm_id="0x1"), init(B, 0, 8, comm_id="0x2")])
    [f] = run("split-world", lf)
    assert f.severity == "error" and f.hosts == ("node-a", "node-b")


def test_split_world_each_host_one_node() -> None:
    # `comm … nRanks 2 nNodes 1` lines carry no commId: nothing says the two hosts share one communicator
    # (with one commId they would: pods of one machine, tests/align/test_facts.py)
    lf = logs(
        inits=[
            init(A, 0, 2, phase="comm", nnodes=1, comm_id=None),
            init(proc("node-b", 7, 0), 1, 2, phase="comm", nnodes=1, comm_id=None),
        ]
    )
    assert [f.id for f in run("split-world", lf)] == ["split-world"]


def test_split_world_silent_for_one_world_and_standalone_single_rank_runs() -> None:
    assert run("split-world", logs(inits=[init(A, 0, 2), init(B, 1, 2)])) == []
    # per-node standalone nranks 1 tests are legitimate
    assert run("split-world", logs(inits=[init(A, 0, 1, comm_id="0x1"), init(B, 0, 1, comm_id="0x2")])) == []


def test_bootstrap_root_rank_checked_in_twice() -> None:
    lf = logs(warnings=[warn(A, "bootstrap", "Bootstrap Root : rank 3 of 8 ranks has already checked in")])
    assert [f.severity for f in run("split-world", lf)] == ["error"]


def test_missing_ranks_info_for_excerpt_warning_for_per_rank_files() -> None:
    [f] = run("missing-ranks", logs(inits=[init(A, 0, 8), init(C, 1, 8)]))
    assert f.severity == "info" and f.metrics == {"nranks": 8, "ranks_seen": 2}
    lf = LogFrames(
        inits=pl.concat(
            [table("inits", [init(A, 0, 4)], path="r0.log"), table("inits", [init(B, 1, 4)], path="r1.log")]
        )
    )
    [f] = run("missing-ranks", lf)
    assert f.severity == "warning"


def test_all_ranks_seen_is_silent() -> None:
    assert run("missing-ranks", logs(inits=[init(A, 0, 2), init(B, 1, 2)])) == []


def test_init_start_without_complete() -> None:
    lf = logs(inits=[init(A, 0, 2, phase="start"), init(A, 0, 2), init(B, 1, 2, phase="start")])
    [f] = run("init-incomplete", lf)
    assert f.severity == "error" and f.ranks == (1,)
    [f] = run("init-incomplete", logs(inits=[init(A, 0, 1, phase="start")]))
    assert f.severity == "warning"


def test_init_complete_is_silent() -> None:
    lf = logs(inits=[init(A, 0, 2, phase="start"), init(A, 0, 2), init(B, 1, 2)])
    assert run("init-incomplete", lf) == []


def test_node_local_communicators_inside_a_larger_world_are_not_a_split() -> None:
    # 2 hosts x 2 GPUs: a 4-rank world plus one 2-rank data-parallel group per node (Megatron/apex style)
    a0, a1, b0, b1 = (
        proc("node-a", 10, 0),
        proc("node-a", 11, 1),
        proc("node-b", 20, 0),
        proc("node-b", 21, 1),
    )
    world = [init(p, r, 4, comm_id="0xw") for p, r in ((a0, 0), (a1, 1), (b0, 2), (b1, 3))]
    local = [
        init(p, r, 2, comm_id=c)
        for p, r, c in ((a0, 0, "0xa"), (a1, 1, "0xa"), (b0, 0, "0xb"), (b1, 1, "0xb"))
    ]
    assert run("split-world", logs(inits=world + local)) == []


def test_node_local_communicators_without_comm_ids_are_not_a_split() -> None:
    # NCCL < 2.19 prints no commId: communicators are keyed by size and creation order per process
    a0, a1, b0, b1 = (
        proc("node-a", 10, 0),
        proc("node-a", 11, 1),
        proc("node-b", 20, 0),
        proc("node-b", 21, 1),
    )
    world = [init(p, r, 4, comm_id=None) for p, r in ((a0, 0), (a1, 1), (b0, 2), (b1, 3))]
    local = [
        init(p, r, 2, comm_id=None, comm_ptr=f"0x{r}ff") for p, r in ((a0, 0), (a1, 1), (b0, 0), (b1, 1))
    ]
    assert run("split-world", logs(inits=world + local)) == []


def test_only_node_local_communicators_on_two_hosts_is_a_split() -> None:
    a0, a1, b0, b1 = (
        proc("node-a", 10, 0),
        proc("node-a", 11, 1),
        proc("node-b", 20, 0),
        proc("node-b", 21, 1),
    )
    local = [
        init(p, r, 2, comm_id=c)
        for p, r, c in ((a0, 0, "0xa"), (a1, 1, "0xa"), (b0, 0, "0xb"), (b1, 1, "0xb"))
    ]
    [f] = run("split-world", logs(inits=local))
    assert "No communicator spans" in f.title and f.metrics["largest_comm_nranks"] == 2


def test_init_incomplete_on_a_pasted_excerpt_is_info() -> None:
    from dataclasses import replace

    from ncclscope.frames import InputInfo

    start = init(A, 0, 2, phase="start", line=5)
    base = logs(
        inits=[start],
        unknown=[{"text": "...", "is_nccl": False, "line": 6}],
        streams=[{"path": "job.log", "host": "node-a", "pid": 100, "first_line": 1, "last_line": 5}],
    )
    [f] = run("init-incomplete", replace(base, inputs=(InputInfo("job.log", 6),)))
    assert f.severity == "info"
    # no elision marker, but the input shows neither the job's start banner nor its end, and the rank is
    # silent after START: the excerpt's end is no job state (issue 29)
    no_marker = replace(base, inputs=(InputInfo("job.log", 6),), unknown=logs().unknown)
    [f] = run("init-incomplete", no_marker)
    assert f.severity == "info" and "if the log is whole" in f.title
    # the rank goes on printing after START, then the user's marker: COMPLETE may be in the cut part
    # (sglang#3398's `。。。` after MNNVL/CUMEM lines); a marker before START proves nothing about the end
    talks = {"streams": [{"path": "job.log", "host": "node-a", "pid": 100, "first_line": 1, "last_line": 9}]}
    after = replace(logs(inits=[start], unknown=[{"text": "。。。", "is_nccl": False, "line": 10}], **talks))
    [f] = run("init-incomplete", replace(after, inputs=(InputInfo("job.log", 10),)))
    assert f.severity == "info"
    before = replace(logs(inits=[start], unknown=[{"text": "。。。", "is_nccl": False, "line": 2}], **talks))
    [f] = run("init-incomplete", replace(before, inputs=(InputInfo("job.log", 10),)))
    assert f.severity == "warning"


def _lw(rank: int, member: str, size: int, **kw: object) -> dict[str, object]:
    return {"kind": "lightning_world", "rank": rank, "detail": f"MEMBER {member}", "world_size": size, **kw}


def test_lightning_duplicate_global_ranks_and_half_world() -> None:
    dup = logs(torch=[_lw(r, f"{r + 1}/4", 4) for r in (0, 1, 0, 1)])
    [f] = run("lightning-world", dup)
    assert f.severity == "error" and f.metrics["duplicated_ranks"] == [0, 1]
    half = logs(torch=[_lw(r, f"{r + 1}/8", 8) for r in range(4)])
    [g] = run("lightning-world", half)
    assert g.severity == "warning" and g.metrics == {"members_seen": 4, "world_size": 8}
    whole = logs(torch=[_lw(r, f"{r + 1}/2", 2) for r in range(2)], inits=[init(A, 0, 2), init(B, 1, 2)])
    assert run("lightning-world", whole) == []


def test_lightning_world_disagrees_with_nccl() -> None:
    lf = logs(
        torch=[_lw(r, f"{r + 1}/2", 2) for r in range(2)],
        inits=[init(A, 0, 4), init(B, 1, 4), init(C, 2, 4), init(proc("node-b", 201, 1), 3, 4)],
    )
    [f] = run("lightning-world", lf)
    assert f.severity == "error" and f.metrics["nccl_nranks"] == 4
