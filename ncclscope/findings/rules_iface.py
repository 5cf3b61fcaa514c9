"""Findings stage, interface rules: loopback, virtual/unroutable, mismatched and missing interfaces.

They read the `Bootstrap : Using …` and `NET/Socket : Using …` lists (NETWORK table) and the peer
addresses of socket WARNs (WARNINGS table). Reference: real-logs.md §5 R1.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import cite, job_shape, make, norm_host, warnings_matching
from ncclscope.records import Finding, Severity

IFACE_KINDS = ["bootstrap", "socket_iface"]
VIRTUAL_IFACE = (
    r"^(docker\d*|veth.*|br-.*|virbr.*|cni.*|ip6tnl.*|flannel.*|cali.*|tunl.*|vxlan.*|lxcbr.*|podman.*)$"
)
LINK_LOCAL = r"^(?i:fe80:|169\.254\.)"
DOCKER_BRIDGE = r"^172\.17\."
LOOPBACK_ADDR = r"^(127\.|::1$)"
SOCKET_FAMILIES = ["socket", "bootstrap", "proxy"]

FIX_IFNAME = (
    "Set NCCL_SOCKET_IFNAME to the routable interface on every node (e.g. NCCL_SOCKET_IFNAME=eth0), "
    "or exclude the bad ones (NCCL_SOCKET_IFNAME=^docker0,lo); run containers with --network host."
)


def _iface_rows(ctx: Context) -> pl.DataFrame:
    net = ctx.logs.network
    return net.filter(
        pl.col("kind").is_in(IFACE_KINDS) & (pl.col("iface").is_not_null() | pl.col("address").is_not_null())
    )


def _socket_warnings(ctx: Context) -> pl.DataFrame:
    w = ctx.logs.warnings
    return w.filter(pl.col("family").is_in(SOCKET_FAMILIES) & ~pl.col("benign").fill_null(False))


def _failed(ctx: Context) -> bool:
    return _socket_warnings(ctx).filter(pl.col("level") == "WARN").height > 0


@rule("iface-loopback", "error", "Loopback interface selected for NCCL sockets", "config")
def iface_loopback(ctx: Context) -> Iterable[Finding]:
    """Bootstrap or NET/Socket uses `lo` / 127.x / ::1, or a socket WARN names a 127.x peer.
    Error when the job spans nodes (≥2 hosts, nNodes > 1, nRanks > localRanks or NET channels);
    info when the node count is unknown; nothing on a known single-node job (lo is fine there)."""
    rows = _iface_rows(ctx).filter(
        (pl.col("iface") == "lo") | pl.col("address").fill_null("").str.contains(LOOPBACK_ADDR)
    )
    peers = _socket_warnings(ctx).filter(pl.col("peer").fill_null("").str.contains(LOOPBACK_ADDR))
    if rows.is_empty() and peers.is_empty():
        return []
    shape = job_shape(ctx)
    if shape.multi_node is False:
        return []
    cited = cite(rows, peers)
    if shape.multi_node:
        return [
            make(
                "iface-loopback",
                "error",
                f"Loopback interface used by a multi-node job ({shape.reason})",
                "Loopback can never carry traffic between nodes: peers are told to connect to 127.0.0.1 and "
                "bootstrap or channel setup fails or hangs.",
                FIX_IFNAME,
                cited,
                ctx,
            )
        ]
    return [
        make(
            "iface-loopback",
            "info",
            "Loopback interface selected (fine only if this is a single-node job)",
            "NCCL picked `lo` for its sockets. That works within one node and is fatal across nodes.",
            "If the job spans nodes, set NCCL_SOCKET_IFNAME to the routable interface (or ^docker0,lo).",
            cited,
            ctx,
        )
    ]


@rule("iface-virtual", "error", "Virtual or unroutable interface selected", "config")
def iface_virtual(ctx: Context) -> Iterable[Finding]:
    """Bootstrap/NET/Socket lists docker0, veth*, br-*, virbr*, cni*, ip6tnl*, flannel/cali/tunl/vxlan, an
    IPv6 link-local (fe80::) or 169.254 address; or a socket WARN names a 172.17.x peer. Error when the job
    spans nodes or a socket/bootstrap WARN was printed; warning otherwise; info on a job the facts prove
    single-node (nothing leaves the host). A 172.17.x address on an interface with a physical name (eth0,
    ens5, …) is only possibly Docker's default bridge (it is also an ordinary private subnet, and a VM's or
    container's own eth0): warning when the job spans nodes, info when that is unknown ("if this job spans
    nodes"), nothing on a single-node job."""
    iface, addr = pl.col("iface").fill_null(""), pl.col("address").fill_null("")
    rows = _iface_rows(ctx)
    named = rows.filter(iface.str.contains(VIRTUAL_IFACE) | addr.str.contains(LINK_LOCAL))
    bridge = rows.filter(~iface.str.contains(VIRTUAL_IFACE) & addr.str.contains(DOCKER_BRIDGE))
    peers = _socket_warnings(ctx).filter(pl.col("peer").fill_null("").str.contains(DOCKER_BRIDGE))
    shape = job_shape(ctx)
    out: list[Finding] = []
    if named.height or peers.height:
        out.append(_virtual(ctx, named, peers, shape.multi_node))
    if bridge.height and shape.multi_node is not False and not peers.height:
        out.append(_maybe_bridge(ctx, bridge, shape.multi_node, shape.reason))
    return out


def _virtual(ctx: Context, rows: pl.DataFrame, peers: pl.DataFrame, multi: bool | None) -> Finding:
    name = pl.col("iface").fill_null("?")
    desc = (
        pl.when(name.str.contains(VIRTUAL_IFACE))
        .then(name)
        .otherwise(pl.concat_str([name, pl.lit(" (link-local address)")]))
    )
    names = sorted(set(rows.select(desc.alias("d"))["d"].to_list())) if rows.height else []
    if peers.height:
        names.append(
            "peer " + ", ".join(sorted(set(peers["peer"].drop_nulls().to_list()))) + " (Docker bridge)"
        )
    sev: Severity = (
        "error"
        if (multi or _failed(ctx) or not peers.is_empty())
        else "info"
        if multi is False
        else "warning"
    )
    return make(
        "iface-virtual",
        sev,
        f"NCCL advertises a virtual or unroutable interface: {', '.join(names)}"
        + (" (harmless on this single-node job)" if sev == "info" else ""),
        "Container bridges (docker0, veth, br-, cni), tunnels (ip6tnl) and link-local addresses are not "
        "reachable from other hosts; a peer told to connect there gets 'Connection refused', "
        "'No route to host' or waits forever.",
        FIX_IFNAME,
        cite(rows, peers),
        ctx,
        metrics={"interfaces": names},
    )


def _maybe_bridge(ctx: Context, rows: pl.DataFrame, multi: bool | None, reason: str) -> Finding:
    pairs = sorted({f"{i or '?'} ({a})" for i, a in rows.select("iface", "address").iter_rows()})
    what = ", ".join(pairs)
    sev: Severity = "warning" if multi else "info"
    title = (
        f"NCCL advertises {what}: 172.17.0.0/16 is Docker's default bridge subnet ({reason})"
        if multi
        else f"If this job spans nodes, check {what}: 172.17.0.0/16 is Docker's default bridge subnet"
    )
    return make(
        "iface-virtual",
        sev,
        title,
        "Inside a container on Docker's default bridge, eth0 holds a 172.17.x address that other hosts cannot "
        "reach; on a host or VM whose own network uses 172.17.0.0/16 the address is fine. The name alone "
        "cannot tell the two apart.",
        "If the ranks run in containers, use host networking (--network host) or set NCCL_SOCKET_IFNAME to the "
        "host's routable interface; if 172.17.x is the cluster's own network, nothing to do.",
        rows,
        ctx,
        metrics={"interfaces": pairs},
    )


def _subnet(addr: pl.Expr) -> pl.Expr:
    # IPv4 /24; the corpus anonymisation keeps /24 groupings, and most clusters route a /24 per rack.
    return addr.str.extract(r"^(\d+\.\d+\.\d+)\.\d+$", 1)


@rule("iface-mismatch", "error", "Nodes use different interfaces or subnets", "config")
def iface_mismatch(ctx: Context) -> Iterable[Finding]:
    """Compares each host's first Bootstrap (else NET/Socket) interface across hosts. Different
    interface names: warning (often an NCCL_SOCKET_IFNAME that fits some nodes only), info when all the
    addresses share one IPv4 /24 (the names differ, the network does not). Same names but
    different IPv4 /24 subnets: info (fine when routed). A WARN 'No interface found in the same subnet'
    or 'No usable listening interface found': error."""
    out: list[Finding] = []
    rows = norm_host(_iface_rows(ctx)).filter(pl.col("host") != "")
    first = rows.sort(["line", "index"], nulls_last=True).unique("host", keep="first", maintain_order=True)
    first = first.with_columns(subnet=_subnet(pl.col("address").fill_null("")))
    names = sorted(set(first["iface"].drop_nulls().to_list()))
    if len(names) > 1:
        one_subnet = first["subnet"].null_count() == 0 and first["subnet"].n_unique() == 1
        out.append(
            make(
                "iface-mismatch",
                "info",
                "Hosts name their NICs differently but bootstrap on one subnet: " + ", ".join(names),
                "Node types often name the same network differently; the addresses share one /24, so the "
                "ranks reach each other.",
                "Nothing to do unless connections fail; then pin NCCL_SOCKET_IFNAME to a prefix or list that "
                "names this network on every node type.",
                first,
                ctx,
            )
            if one_subnet
            else make(
                "iface-mismatch",
                "warning",
                "Hosts bootstrap over differently named interfaces: " + ", ".join(names),
                "Every rank must reach every other rank over the interface it advertises; nodes that pick "
                "different NICs often sit on different networks.",
                "Check that the listed interfaces route to each other, and set NCCL_SOCKET_IFNAME to the "
                "same network on every node.",
                first,
                ctx,
            )
        )
    elif first["subnet"].drop_nulls().n_unique() > 1:
        out.append(
            make(
                "iface-mismatch",
                "info",
                "Hosts use the same interface name on different subnets",
                "Different /24 subnets work only when they are routed to each other.",
                "If bootstrap hangs or connects fail, check routing between these subnets.",
                first,
                ctx,
            )
        )
    subnet_warn = warnings_matching(
        ctx, r"(?i)no interface found in the same subnet|no usable listening interface"
    )
    if subnet_warn.height:
        out.append(
            make(
                "iface-mismatch",
                "error",
                "No local interface is in the same subnet as the peer/root address",
                "NCCL_COMM_ID or the peer's advertised address lies in a subnet this host has no interface in "
                "(typically a container's private bridge address, or a public IP behind NAT).",
                "Advertise a routable address: host networking for containers, NCCL_SOCKET_IFNAME on the "
                "shared network, and a MASTER_ADDR/NCCL_COMM_ID every node can reach.",
                subnet_warn,
                ctx,
            )
        )
    return out


@rule("iface-none", "error", "No usable network interface for NCCL's sockets", "config")
def iface_none(ctx: Context) -> Iterable[Finding]:
    """WARN 'Bootstrap : no socket interface found', 'NET/Socket : no interface found', 'no device
    found matching … NCCL_OOB_NET_IFNAME' or 'Socket creation failed : Address family not supported'
    (NCCL needs an IP interface for bootstrap even on one node). Error."""
    rows = warnings_matching(
        ctx,
        r"(?i)no socket interface found|NET/Socket : no interface found|no device found (matching|after excluding)"
        r"|Socket creation failed|No IP interface found",
    )
    if rows.is_empty():
        return []
    return [
        make(
            "iface-none",
            "error",
            "NCCL found no usable interface for its sockets",
            "NCCL bootstraps over TCP even on a single node; with NCCL_SOCKET_IFNAME matching nothing, only "
            "loopback/docker interfaces present, or an address family the host lacks, init cannot start.",
            "Check `ip addr` on the failing host and set NCCL_SOCKET_IFNAME (and NCCL_SOCKET_FAMILY) to an "
            "interface that exists and has an address.",
            rows,
            ctx,
        )
    ]
