"""Findings, interface rules: each fires on its signal and stays quiet on the benign look-alike."""

from __future__ import annotations

from logframes_builder import init, logs, proc, run, warn

A, B = proc("node-a", 100, 0), proc("node-b", 200, 0)


def _boot(
    p: dict[str, object], iface: str, addr: str, kind: str = "bootstrap", **kw: object
) -> dict[str, object]:
    return {**p, "kind": kind, "index": 0, "iface": iface, "address": addr, **kw}


def test_loopback_multi_node_is_error() -> None:
    lf = logs(network=[_boot(A, "lo", "127.0.0.1"), _boot(B, "eth0", "10.0.0.2")])
    [f] = run("iface-loopback", lf)
    assert f.severity == "error" and f.hosts == ("node-a",) and f.evidence[0].text


def test_loopback_single_node_known_is_silent_unknown_is_info() -> None:
    silent = logs(
        network=[_boot(A, "lo", "127.0.0.1")], inits=[init(A, 0, 2, phase="comm", nnodes=1, local_ranks=2)]
    )
    assert run("iface-loopback", silent) == []
    [f] = run("iface-loopback", logs(network=[_boot(A, "lo", "127.0.0.1")]))
    assert f.severity == "info"


def test_loopback_absent() -> None:
    assert (
        run("iface-loopback", logs(network=[_boot(A, "eth0", "10.0.0.1"), _boot(B, "eth0", "10.0.0.2")]))
        == []
    )


def test_virtual_iface_and_link_local() -> None:
    lf = logs(
        network=[
            _boot(A, "ens5", "172.16.8.1"),
            {**_boot(A, "veth75fa", "fe80::1%veth75fa"), "index": 1},
            _boot(B, "ens5", "172.16.8.2"),
        ]
    )
    [f] = run("iface-virtual", lf)
    assert f.severity == "error" and "veth75fa" in f.title


def test_virtual_iface_single_host_is_warning() -> None:
    [f] = run("iface-virtual", logs(network=[_boot(A, "ip6tnl0", "fe80::b90a%ip6tnl0")]))
    assert f.severity == "warning"


def test_docker_bridge_peer_in_connect_failure() -> None:
    lf = logs(
        warnings=[
            warn(A, "socket", "Connect to 172.17.0.3<37551> failed : Connection refused", peer="172.17.0.3")
        ]
    )
    [f] = run("iface-virtual", lf)
    assert f.severity == "error"


def test_virtual_iface_absent() -> None:
    lf = logs(network=[_boot(A, "enp161s0f0", "198.19.172.171"), _boot(B, "ib0", "192.168.52.2")])
    assert run("iface-virtual", lf) == []


def test_iface_names_differ_across_hosts() -> None:
    [f] = run("iface-mismatch", logs(network=[_boot(A, "eth0", "10.0.0.1"), _boot(B, "ib0", "10.1.0.2")]))
    assert f.severity == "warning" and f.hosts == ("node-a", "node-b")


def test_same_name_other_subnet_is_info_and_same_subnet_silent() -> None:
    [f] = run(
        "iface-mismatch", logs(network=[_boot(A, "eth0", "10.18.114.244"), _boot(B, "eth0", "10.126.49.242")])
    )
    assert f.severity == "info"
    assert (
        run("iface-mismatch", logs(network=[_boot(A, "eth0", "10.0.0.1"), _boot(B, "eth0", "10.0.0.2")]))
        == []
    )


def test_same_host_different_ifaces_is_not_a_mismatch() -> None:
    a2 = proc("node-a", 101, 1)
    assert (
        run("iface-mismatch", logs(network=[_boot(A, "ib0", "10.10.10.2"), _boot(a2, "ib1", "10.31.58.2")]))
        == []
    )


def test_no_interface_in_same_subnet_is_error() -> None:
    lf = logs(
        warnings=[
            warn(B, "socket", "Net : No interface found in the same subnet as remote address 1.2.3.4<1778>")
        ]
    )
    [f] = run("iface-mismatch", lf)
    assert f.severity == "error"


def test_no_usable_interface() -> None:
    lf = logs(
        warnings=[warn({}, "socket", "Socket creation failed : Address family not supported by protocol")]
    )
    [f] = run("iface-none", lf)
    assert f.severity == "error"
    assert (
        run(
            "iface-none",
            logs(warnings=[warn(A, "socket", "Connect to 10.0.0.1<1> failed : Connection refused")]),
        )
        == []
    )


def test_iface_names_differ_on_one_subnet_is_info() -> None:
    # two node types name the same network differently (a real 2-node Dell run: eno8403 / eno12399)
    lf = logs(network=[_boot(A, "eno8403", "100.71.151.243"), _boot(B, "eno12399", "100.71.151.66")])
    [f] = run("iface-mismatch", lf)
    assert f.severity == "info" and "one subnet" in f.title
