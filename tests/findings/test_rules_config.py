"""Findings, configuration rules: transport fallbacks, GDR, versions, environment, P2P."""

from __future__ import annotations

from logframes_builder import init, logs, proc, run, warn

A, B = proc("node-a", 100, 0), proc("node-b", 200, 0)


def _conn(
    p: dict[str, object],
    src: int,
    dst: int,
    transport: str,
    net: str | None = None,
    gdr: bool | None = None,
    direction: str | None = "send",
) -> dict[str, object]:
    return {
        **p,
        "channel": 0,
        "src_rank": src,
        "dst_rank": dst,
        "transport": transport,
        "net": net,
        "gdr": gdr,
        "direction": direction if transport == "NET" else None,
    }


def test_socket_while_other_node_uses_ib_is_warning() -> None:
    lf = logs(
        network=[
            {**A, "kind": "using_network", "net": "Socket"},
            {**B, "kind": "using_network", "net": "IB"},
        ],
        connections=[_conn(A, 0, 1, "NET", "Socket")],
        inits=[init(A, 0, 2), init(B, 1, 2)],
    )
    [f] = run("net-socket-fallback", lf)
    assert f.severity == "warning" and "IB" in f.title


def test_socket_between_nodes_without_ib_is_warning_with_reason() -> None:
    lf = logs(
        network=[{**A, "kind": "using_network", "net": "Socket"}, {**A, "kind": "ib_no_device"}],
        connections=[_conn(A, 1, 0, "NET", "Socket", direction="receive")],
    )
    [f] = run("net-socket-fallback", lf)
    assert f.severity == "warning" and len(f.evidence) >= 2 and "NET/IB found no device" in f.title


def test_socket_on_ipoib_is_warning() -> None:
    lf = logs(
        network=[
            {**A, "kind": "socket_iface", "iface": "ib0", "address": "192.168.1.1"},
            {**A, "kind": "using_network", "net": "Socket"},
        ],
        connections=[_conn(A, 0, 1, "NET", "Socket")],
    )
    [f] = run("net-socket-fallback", lf)
    assert f.severity == "warning"


def test_socket_on_unknown_node_count_is_conditional_and_ib_is_silent() -> None:
    [f] = run("net-socket-fallback", logs(network=[{**A, "kind": "using_network", "net": "Socket"}]))
    assert f.severity == "info" and f.title.startswith("If this job spans nodes")
    one_node = [init(A, 0, 2), init(proc("node-a", 101, 1), 1, 2)]
    using = {**A, "kind": "using_network", "net": "Socket"}
    assert run("net-socket-fallback", logs(network=[using], inits=one_node)) == []
    lf = logs(
        network=[{**A, "kind": "using_network", "net": "IB"}], connections=[_conn(A, 0, 1, "NET", "IB", True)]
    )
    assert run("net-socket-fallback", lf) == []


def test_net_plugin_failed_to_initialise() -> None:
    lf = logs(warnings=[warn(A, "plugin", "NET/OFI OFI fi_getinfo() call failed: No data available")])
    [f] = run("net-socket-fallback", lf)
    assert f.severity == "warning"


def test_gdr_disabled_line_and_ib_without_gdrdma() -> None:
    ib = {
        **A,
        "kind": "gdr_disabled",
        "hca": "mlx5_0",
        "text": "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
    }
    [f] = run("gdr-disabled", logs(network=[ib], inits=[init(A, 0, 2), init(B, 1, 2)]))
    assert f.severity == "warning"
    [f] = run("gdr-disabled", logs(connections=[_conn(A, 5, 12, "NET", "IB", False)]))
    assert f.severity == "warning"
    mixed = logs(connections=[_conn(A, 0, 1, "NET", "IB", True), _conn(B, 1, 0, "NET", "IB", False)])
    [f] = run("gdr-disabled", mixed)
    assert "some ranks" in f.title


def test_gdr_off_only_on_some_channels_of_each_process_is_info() -> None:
    # NCCL picks GDR per connection (GPU–NIC distance vs NCCL_NET_GDR_LEVEL): a process with GDRDMA on some
    # channels has working GDR; its plain channels are a placement choice, not a node without GDR
    a2 = proc("node-a", 101, 1)
    per_path = [
        _conn(A, 0, 8, "NET", "IB", True),
        _conn(A, 0, 4, "NET", "IB", False),
        _conn(a2, 1, 9, "NET", "IB", True),
        _conn(a2, 1, 5, "NET", "IB", False),
    ]
    [f] = run("gdr-disabled", logs(connections=per_path))
    assert f.severity == "info" and "every process" in f.title
    # one process that never shows GDRDMA keeps the warning
    [g] = run("gdr-disabled", logs(connections=[*per_path, _conn(B, 2, 3, "NET", "IB", False)]))
    assert g.severity == "warning" and "some ranks" in g.title
    # a `GPU Direct RDMA Disabled` line alongside still warns
    ib = {
        **A,
        "kind": "gdr_disabled",
        "hca": "mlx5_0",
        "text": "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
    }
    [h] = run("gdr-disabled", logs(connections=per_path, network=[ib]))
    assert h.severity == "warning"


def test_gdr_off_on_efa_names_no_ib() -> None:
    # aws-ofi-nccl on EFA: `Connected all rings, use ring PXN 0 GDR 0` and `via NET/Libfabric/0`, no IB at all
    lf = logs(
        network=[{**A, "kind": "using_network", "net": "Libfabric"}],
        channels=[{**A, "gdr": 0}],
        inits=[init(A, 0, 2), init(B, 1, 2)],
    )
    [f] = run("gdr-disabled", lf)
    assert f.severity == "warning" and "IB" not in f.title and "inter-node" in f.title
    assert "nv_peer_mem" in f.why  # no plugin line: NCCL's own causes
    # the plugin's own word: cited first, and its cause replaces the nv_peer_mem advice
    text = "NET/OFI Need to force simple protocol: GDR not supported"
    lf = logs(
        network=[{**A, "kind": "ofi", "text": text}, {**A, "kind": "using_network", "net": "Libfabric"}],
        channels=[{**A, "gdr": 0}],
        inits=[init(A, 0, 2), init(B, 1, 2)],
    )
    [g] = run("gdr-disabled", lf)
    assert g.severity == "warning" and "plugin" in g.why and "nv_peer_mem" not in g.why
    assert g.evidence[0].text == text


def test_gdr_on_or_socket_is_silent() -> None:
    assert run("gdr-disabled", logs(connections=[_conn(A, 3, 6, "NET", "IB", True)])) == []
    assert run("gdr-disabled", logs(connections=[_conn(A, 3, 6, "NET", "Socket", False)])) == []


def test_nccl_version_mismatch_is_error_driver_mismatch_warning() -> None:
    lf = logs(
        versions=[
            {**A, "kind": "nccl", "value": "2.14.3"},
            {**B, "kind": "nccl", "value": "2.19.3"},
            {**A, "kind": "cuda_driver", "value": "12000"},
            {**B, "kind": "cuda_driver", "value": "12040"},
        ],
        inits=[init(A, 0, 2), init(B, 1, 2)],
    )
    found = {f.severity: f for f in run("version-mismatch", lf)}
    assert set(found) == {"error", "warning"}
    assert found["error"].ranks == (0, 1) and found["error"].metrics["ranks_by_version"] == {
        "2.14.3": [0],
        "2.19.3": [1],
    }


def test_same_versions_silent_and_nccl_check_warn_fires() -> None:
    same = logs(versions=[{**A, "kind": "nccl", "value": "2.19.3"}, {**B, "kind": "nccl", "value": "2.19.3"}])
    assert run("version-mismatch", same) == []
    lf = logs(
        warnings=[
            warn(A, "version", "Mismatched NCCL version detected : rank 0 version 22705 rank 1 version 21903")
        ]
    )
    [f] = run("version-mismatch", lf)
    assert f.severity == "error"


def test_env_mismatch_severity_by_setting() -> None:
    lf = logs(
        env=[
            {**A, "name": "NCCL_PROTO", "value": "LL"},
            {**B, "name": "NCCL_PROTO", "value": "Simple"},
            {**A, "name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
            {**B, "name": "NCCL_SOCKET_IFNAME", "value": "ens5"},
        ]
    )
    found = {f.metrics["name"]: f.severity for f in run("env-mismatch", lf)}
    assert found == {"NCCL_PROTO": "error", "NCCL_SOCKET_IFNAME": "warning"}


def test_env_same_everywhere_or_one_process_is_silent() -> None:
    lf = logs(
        env=[
            {**A, "name": "NCCL_IB_DISABLE", "value": "1"},
            {**B, "name": "NCCL_IB_DISABLE", "value": "1"},
            {**A, "name": "NCCL_ALGO", "value": "Ring"},
        ]
    )
    assert run("env-mismatch", lf) == []


def test_p2p_disabled_by_env_and_nvlink_warn() -> None:
    [f] = run("p2p-degraded", logs(env=[{**A, "name": "NCCL_P2P_DISABLE", "value": "1"}]))
    assert f.severity == "warning"
    lf = logs(warnings=[warn(A, "p2p", "P2P is disabled between NVLINK connected GPUs 1 and 3. ...")])
    assert [f.severity for f in run("p2p-degraded", lf)] == ["error"]


def test_net_between_ranks_of_one_host_is_warning() -> None:
    a1 = proc("node-a", 101, 1)
    lf = logs(inits=[init(A, 0, 2), init(a1, 1, 2)], connections=[_conn(A, 0, 1, "NET", "IB", True)])
    [f] = run("p2p-degraded", lf)
    assert f.severity == "warning"


def test_shm_is_info_and_p2p_is_silent() -> None:
    [f] = run("p2p-degraded", logs(connections=[_conn(A, 2, 0, "SHM")]))
    assert f.severity == "info"
    assert run("p2p-degraded", logs(connections=[_conn(A, 0, 1, "P2P")])) == []


def test_net_plugin_on_some_nodes_only() -> None:
    lf = logs(
        network=[
            {**A, "kind": "plugin", "detail": "NET/Plugin: Loaded net plugin FastSocket (v4)"},
            {**B, "kind": "plugin", "detail": "NET/Plugin : No plugin found (libnccl-net.so)."},
        ]
    )
    [f] = run("version-mismatch", lf)
    assert f.severity == "warning" and "FastSocket" in f.title and f.hosts == ("node-a", "node-b")
    same = logs(
        network=[
            {**A, "kind": "plugin", "detail": "NET/Plugin : No plugin found (libnccl-net.so)."},
            {**B, "kind": "plugin", "detail": "NET/Plugin: Using internal network plugin."},
        ]
    )
    assert run("version-mismatch", same) == []


def test_env_changed_between_communicators_in_every_process_is_no_mismatch() -> None:
    # an application that sets NCCL_COLLNET_ENABLE=0 before its second communicator, on every rank
    rows = [{**p, "name": "NCCL_COLLNET_ENABLE", "value": v} for v in ("1.", "0.") for p in (A, B)]
    assert run("env-mismatch", logs(env=rows)) == []


def test_env_set_on_some_world_ranks_and_unset_on_others() -> None:
    inits = [init(A, 0, 2), init(B, 1, 2)]
    env = [
        {**A, "name": "NCCL_ALGO", "value": "Ring"},
        {**A, "name": "NCCL_DEBUG", "value": "INFO"},
        {**B, "name": "NCCL_DEBUG", "value": "INFO"},
    ]
    [f] = run("env-mismatch", logs(inits=inits, env=env))
    assert f.severity == "error" and f.metrics["name"] == "NCCL_ALGO" and "unset" in str(f.metrics["values"])


def test_env_unset_outside_the_world_communicator_is_not_compared() -> None:
    other = proc("node-c", 300, 0)  # a process of another communicator reads other variables
    inits = [init(A, 0, 2), init(B, 1, 2), init(other, 0, 1, comm_id="0xother")]
    env = [{**p, "name": "NCCL_ALGO", "value": "Ring"} for p in (A, B)] + [
        {**other, "name": "NCCL_DEBUG", "value": "INFO"}
    ]
    assert run("env-mismatch", logs(inits=inits, env=env)) == []


def test_gdr_line_on_sockets_or_without_inter_node_traffic_is_silent() -> None:
    sock = {
        **A,
        "kind": "gdr_disabled",
        "hca": "eth0",
        "text": "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'",
    }
    assert run("gdr-disabled", logs(network=[sock], inits=[init(A, 0, 2), init(B, 1, 2)])) == []
    ib = {
        **A,
        "kind": "gdr_disabled",
        "hca": "mlx5_0",
        "text": "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
    }
    one_node = [init(A, 0, 2), init(proc("node-a", 101, 1), 1, 2)]
    assert run("gdr-disabled", logs(network=[ib], inits=one_node)) == []


def test_socket_fallback_in_old_and_plugin_spellings() -> None:
    two_nodes = [init(A, 0, 2), init(B, 1, 2)]
    ofi = {**A, "kind": "plugin", "detail": "NET/OFI Selected Provider is tcp;ofi_rxm (found 1 nics)"}
    [f] = run("net-socket-fallback", logs(network=[ofi], inits=two_nodes))
    assert "TCP sockets" in f.title
    no_ib = {**A, "kind": "ib_no_device", "text": "NET/IB : No device found."}
    [f] = run("net-socket-fallback", logs(network=[no_ib], inits=two_nodes))
    assert "TCP sockets" in f.title
    one_node = [init(A, 0, 2), init(proc("node-a", 101, 1), 1, 2)]
    assert run("net-socket-fallback", logs(network=[no_ib], inits=one_node)) == []
