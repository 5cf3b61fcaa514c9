"""Align stage, identity: (host, pid[, GPU]) → global rank, communicators and per-rank configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "findings"))
from logframes_builder import logs, proc

from ncclscope import schema as S
from ncclscope.align import identify


def _init(
    host: str,
    pid: int,
    dev: int,
    rank: int,
    nranks: int,
    *,
    phase: str = "complete",
    comm_id: str | None = "0xw",
    ptr: str | None = None,
    **kw: object,
) -> dict[str, object]:
    return {
        **proc(host, pid, dev),
        "phase": phase,
        "rank": rank,
        "nranks": nranks,
        "init_cuda_dev": dev,
        "comm_ptr": ptr or f"0x{pid:x}{rank}",
        "comm_id": comm_id,
        **kw,
    }


def _by_rank(ranks: pl.DataFrame) -> dict[int | None, dict[str, object]]:
    return {r["rank"]: r for r in ranks.to_dicts()}


def test_schemas_and_empty_input() -> None:
    ranks, comms = identify(logs())
    assert ranks.schema == pl.Schema(S.RANKS) and comms.schema == pl.Schema(S.COMMS)
    assert ranks.is_empty() and comms.is_empty()


def test_dev_is_not_the_rank() -> None:
    ranks, comms = identify(logs(inits=[_init("a", 10, 3, 11, 16), _init("b", 20, 3, 3, 16)]))
    by = _by_rank(ranks)
    assert set(by) == {3, 11}
    assert by[11]["host"] == "a" and by[11]["cuda_dev"] == 3
    assert comms["nranks"].to_list() == [16] and comms["ranks_seen"].to_list() == [2]


def test_global_rank_is_rank_in_largest_communicator() -> None:
    rows = [
        _init("a", 10, 1, 1, 2, comm_id="0xtp", ptr="0xa"),
        _init("a", 10, 1, 5, 8, ptr="0xb"),
        _init("b", 20, 0, 0, 2, comm_id="0xtp", ptr="0xc"),
        _init("b", 20, 0, 4, 8, ptr="0xd"),
    ]
    ranks, comms = identify(logs(inits=rows))
    by = _by_rank(ranks)
    assert set(by) == {4, 5}
    assert sorted(by[5]["comm_ids"]) == ["0xtp", "0xw"]  # type: ignore[arg-type]
    assert comms.height == 2


def test_process_only_in_subcommunicator_has_unknown_rank() -> None:
    rows = [_init("a", 10, 0, 3, 8), _init("b", 20, 0, 1, 2, comm_id="0xtp")]
    ranks, _ = identify(logs(inits=rows))
    b = ranks.filter(pl.col("host") == "b").row(0, named=True)
    assert b["rank"] is None  # never the sub-communicator rank, never 0 by default


def test_comm_without_commid_linked_by_order_and_pointer() -> None:
    # ≤2.17: no commId; the `comm … nRanks` line and COMPLETE share the comm pointer.
    rows = [
        _init("a", 10, 0, 0, 4, comm_id=None, ptr="0x1", phase="comm", nnodes=2),
        _init("a", 10, 0, 0, 4, comm_id=None, ptr="0x1"),
        _init("b", 20, 0, 3, 4, comm_id=None, ptr="0x9"),
    ]
    ranks, comms = identify(logs(inits=rows))
    assert comms.height == 1
    c = comms.row(0, named=True)
    assert c["comm_key"] == "n4#0" and c["nnodes"] == 2 and c["ranks_seen"] == 2 and c["complete"] == 2
    assert set(ranks["rank"].to_list()) == {0, 3}


def test_commid_propagates_through_comm_pointer() -> None:
    rows = [
        _init("a", 10, 0, 2, 4, comm_id=None, ptr="0x1", phase="comm"),
        _init("a", 10, 0, 2, 4, comm_id="0xabc", ptr="0x1"),
    ]
    _, comms = identify(logs(inits=rows))
    assert comms["comm_key"].to_list() == ["0xabc"]


def test_split_communicator_with_parent() -> None:
    rows = [
        _init("a", 10, 0, 0, 4),
        _init("a", 10, 0, 0, 2, comm_id="0xs", func="ncclCommSplit", parent_comm_ptr="0xa0", color=7, key=0),
    ]
    ranks, comms = identify(logs(inits=rows))
    assert ranks["rank"].to_list() == [0] and sorted(comms["nranks"].to_list()) == [2, 4]


def test_single_process_many_gpus() -> None:
    rows = [_init("a", 10, d, d, 8) for d in range(4)]
    ranks, _ = identify(logs(inits=rows))
    assert ranks["rank"].to_list() == [0, 1, 2, 3]
    assert ranks["cuda_dev"].to_list() == [0, 1, 2, 3] and ranks["pid"].unique().to_list() == [10]


def test_rank_from_connection_lines() -> None:
    conns = [
        {**proc("c", 9, 0), "src_rank": 0, "dst_rank": 8, "direction": "receive", "transport": "NET"},
        {**proc("c", 9, 0), "src_rank": 8, "dst_rank": 0, "direction": "send", "transport": "NET"},
        {**proc("c", 12, 7), "src_rank": 15, "dst_rank": 14, "transport": "P2P"},
    ]
    ranks, comms = identify(logs(connections=conns))
    assert set(ranks["rank"].to_list()) == {8, 15} and comms.is_empty()


def test_single_process_many_gpus_from_connections() -> None:
    conns = [
        {**proc("n", 5, d), "src_rank": d, "dst_rank": (d + 1) % 4, "transport": "P2P"} for d in range(4)
    ]
    ranks, _ = identify(logs(connections=conns))
    assert ranks.height == 4 and ranks["rank"].to_list() == [0, 1, 2, 3]


def test_rank_from_ring_and_tree_lines() -> None:
    rings = [
        {**proc("a", 1, 0), "kind": "ring_neighbors", "channel": 0, "order": [7, 0, 1]},
        {**proc("b", 2, 0), "kind": "tree", "channel": 0, "tree_rank": 3, "tree_up": 1},
    ]
    ranks, _ = identify(logs(rings=rings))
    assert dict(zip(ranks["host"], ranks["rank"])) == {"a": 0, "b": 3}


def test_launcher_tag_is_a_fallback_only_when_global() -> None:
    net = [
        {**proc("a", 1, 0), "kind": "bootstrap", "iface": "eth0", "rank_hint": 2},
        {**proc("b", 2, 0), "kind": "bootstrap", "iface": "eth0", "rank_hint": 5},
    ]
    ranks, _ = identify(logs(network=net))
    assert dict(zip(ranks["host"], ranks["rank"])) == {"a": 2, "b": 5}
    # the same tag on two hosts is a local rank (torchrun `[default0]:`): not a global rank
    net[1]["rank_hint"] = 2
    ranks, _ = identify(logs(network=net))
    assert ranks["rank"].to_list() == [None, None]


def test_no_rank_evidence_means_null_not_zero() -> None:
    ranks, _ = identify(logs(network=[{**proc("a", 1, 0), "kind": "bootstrap", "iface": "eth0"}]))
    assert ranks["rank"].to_list() == [None] and ranks["cuda_dev"].to_list() == [0]


def test_legacy_rank_line() -> None:
    rows = [
        {**proc("a", 1, 0), "phase": "legacy", "comm_ptr": "0x1", "rank": 0, "nranks": 4},
        {**proc("b", 2, 0), "phase": "legacy", "comm_ptr": "0x7", "rank": 2, "nranks": 4},
    ]
    ranks, comms = identify(logs(inits=rows))
    assert set(ranks["rank"].to_list()) == {0, 2} and comms["nranks"].to_list() == [4]


def test_bare_banner_applies_to_its_file_only() -> None:
    a = logs(inits=[], network=[])
    from logframes_builder import table

    versions = pl.concat(
        [
            table("versions", [{"kind": "nccl", "value": "2.14.3"}], path="node1.log"),
            table("versions", [{"kind": "nccl", "value": "2.19.3"}], path="node4.log"),
            table("versions", [{**proc("c", 3, 0), "kind": "nccl", "value": "2.27.5"}], path="node4.log"),
        ]
    )
    net = pl.concat(
        [
            table("network", [{**proc("a", 1, 0), "kind": "bootstrap", "iface": "eth0"}], path="node1.log"),
            table("network", [{**proc("b", 2, 0), "kind": "bootstrap", "iface": "eth0"}], path="node4.log"),
            table("network", [{**proc("c", 3, 0), "kind": "bootstrap", "iface": "eth0"}], path="node4.log"),
        ]
    )
    lf = type(a)(versions=versions, network=net)
    ranks, _ = identify(lf)
    got = dict(zip(ranks["host"], ranks["nccl_version"]))
    assert got == {"a": "2.14.3", "b": "2.19.3", "c": "2.27.5"}  # the prefixed 2.27 banner wins for c


def test_banner_with_launcher_tag_applies_to_that_stream() -> None:
    lf = logs(
        versions=[{"kind": "nccl", "value": "2.5.6", "rank_hint": 0}],
        network=[
            {**proc("a", 1, 0), "kind": "bootstrap", "iface": "lo", "rank_hint": 0},
            {**proc("a", 2, 1), "kind": "bootstrap", "iface": "lo", "rank_hint": 1},
        ],
    )
    ranks, _ = identify(lf)
    assert dict(zip(ranks["pid"], ranks["nccl_version"])) == {1: "2.5.6", 2: None}


def test_config_columns() -> None:
    a, b = proc("a", 1, 0), proc("b", 2, 1)
    lf = logs(
        versions=[{**a, "kind": "cuda_driver", "value": "12040"}],
        network=[
            {**a, "kind": "bootstrap", "index": 0, "iface": "eth0", "address": "10.0.0.1"},
            {**a, "kind": "using_network", "net": "IB"},
            {**a, "kind": "ib_dev", "hca": "mlx5_0", "link_layer": "RoCE"},
            {**b, "kind": "socket_iface", "index": 0, "iface": "ens5", "address": "10.0.1.1", "line": 900},
            {**b, "kind": "socket_iface", "index": 1, "iface": "ens6", "address": "10.0.2.1", "line": 900},
            {**b, "kind": "ib_no_device"},
        ],
        connections=[
            {
                **a,
                "src_rank": 0,
                "dst_rank": 1,
                "direction": "send",
                "transport": "NET",
                "net": "IB",
                "gdr": True,
            }
        ],
    )
    ranks, _ = identify(lf)
    ra, rb = (
        ranks.filter(pl.col("host") == "a").row(0, named=True),
        ranks.filter(pl.col("host") == "b").row(0, named=True),
    )
    assert (ra["iface"], ra["address"], ra["net"], ra["gdr"], ra["cuda_driver"]) == (
        "eth0",
        "10.0.0.1",
        "IB/RoCE",
        True,
        "12040",
    )
    assert (rb["iface"], rb["address"], rb["net"], rb["gdr"]) == (
        "ens5,ens6",
        "10.0.1.1,10.0.2.1",
        "Socket",
        None,
    )


def test_gdr_false_when_ib_without_gdrdma_or_disabled() -> None:
    a, b = proc("a", 1, 0), proc("b", 2, 0)
    lf = logs(
        connections=[
            {
                **a,
                "src_rank": 0,
                "dst_rank": 1,
                "direction": "send",
                "transport": "NET",
                "net": "IB",
                "gdr": False,
            }
        ],
        network=[{**b, "kind": "gdr_disabled", "hca": "mlx5_0"}],
    )
    ranks, _ = identify(lf)
    assert ranks["gdr"].to_list() == [False, False]


def test_pg_name_through_created_comm() -> None:
    lf = logs(
        inits=[_init("a", 1, 0, 0, 2, ptr="0xfeed")],
        torch=[{"kind": "created_comm", "comm_ptr": "0xfeed", "pg_name": "default_pg"}],
    )
    _, comms = identify(lf)
    assert comms["pg_name"].to_list() == ["default_pg"]
