"""Findings stage, configuration rules: transport fallbacks, GPUDirect RDMA, versions, environment, P2P.

They compare what each rank chose (NETWORK, CONNECTIONS, VERSIONS, ENV tables and the RANKS table)
with what the hardware or the other ranks say it should be. Reference: real-logs.md §5 R2, R3, R8, R11.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.align.rankmap import transport
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import (
    CITE,
    PROC,
    cite,
    first_per,
    job_shape,
    make,
    norm_host,
    warnings_matching,
)
from ncclscope.records import Finding, Severity

# NCCL_* settings that every rank must agree on: a difference makes ranks pick different algorithms,
# protocols, buffer sizes or transports, which hangs or corrupts the collective.
MUST_MATCH = {
    "NCCL_PROTO",
    "NCCL_ALGO",
    "NCCL_BUFFSIZE",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_COLLNET_ENABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_CROSS_NIC",
    "NCCL_NET_PLUGIN",
}
# Settings that name the process or its host and so differ across ranks by design: NCCL_HOSTID is the
# host's identity (src/misc/utils.cc getHostHash), NCCL_DEBUG_FILE the process's own log.
PER_HOST = {"NCCL_HOSTID", "NCCL_DEBUG_FILE"}
GDR_NETS = r"NET/(?:IB|OFI|AWS|EFA|Libfabric|GIN)"
PLUGIN_FAIL = (
    r"(?i)fi_getinfo\(\) call failed|fi_getinfo: provider \w+ output empty list|"
    r"Failed to initialize any NET plugin|Invalid type of PCI bus"
)


OFI_TCP = r"Selected [Pp]rovider is (?:tcp|sockets|udp)\b"


def _socket_users(ctx: Context) -> pl.DataFrame:
    """Lines showing a process moving data over TCP: `Using network Socket` (2.4+; `Using internal Network
    Socket` before), `via NET/Socket` channels, aws-ofi-nccl on its TCP provider, or `NET/IB : No device
    found.` in a job that spans nodes (NCCL then has only its socket transport)."""
    net = ctx.logs.network.filter((pl.col("kind") == "using_network") & (pl.col("net") == "Socket"))
    conn = ctx.logs.connections.filter((transport() == "NET") & (pl.col("net") == "Socket"))
    ofi = ctx.logs.network.filter(pl.col("detail").fill_null("").str.contains(OFI_TCP))
    no_ib = ctx.logs.network.filter(pl.col("kind") == "ib_no_device")
    no_ib = no_ib if job_shape(ctx).multi_node else no_ib.clear()
    return norm_host(
        cite(first_per(net, PROC), first_per(conn, PROC), first_per(ofi, PROC), first_per(no_ib, PROC))
    )


def _ib_users(ctx: Context) -> pl.DataFrame:
    """Lines showing a process on IB/RoCE: `NET/IB : Using [0]mlx5…`, `Using network IB…`, `via NET/IB…`."""
    net = ctx.logs.network.filter(
        (pl.col("kind") == "ib_dev")
        | ((pl.col("kind") == "using_network") & pl.col("net").fill_null("").str.starts_with("IB"))
    )
    conn = ctx.logs.connections.filter(
        (transport() == "NET") & pl.col("net").fill_null("").str.starts_with("IB")
    )
    return norm_host(cite(net, conn))


def _ib_absent_reasons(ctx: Context) -> pl.DataFrame:
    """Why IB was not used, as cited lines plus a short `reason`: NCCL_IB_DISABLE=1, `NET/IB : No device
    found.`, libibverbs missing."""
    env = ctx.logs.env.filter(
        (pl.col("name") == "NCCL_IB_DISABLE") & pl.col("value").str.strip_chars(". ").eq("1")
    )
    net = ctx.logs.network.filter(pl.col("kind").is_in(["ib_no_device", "ibverbs_missing"]))
    rows = pl.concat(
        [
            env.select(*CITE, reason=pl.lit("NCCL_IB_DISABLE=1")),
            net.select(
                *CITE,
                reason=pl.when(pl.col("kind") == "ib_no_device")
                .then(pl.lit("NET/IB found no device"))
                .otherwise(pl.lit("libibverbs not found")),
            ),
        ]
    )
    return first_per(rows, ["path", "reason"])


@rule(
    "net-socket-fallback",
    "warning",
    "Inter-node traffic on TCP sockets instead of IB/RoCE",
    "config",
    searches=(PLUGIN_FAIL,),
)
def net_socket_fallback(ctx: Context) -> Iterable[Finding]:
    """Inter-node data over NET/Socket (`Using network Socket` on a multi-node job, or `via NET/Socket`
    channels). Warning, naming why IB is absent (NCCL_IB_DISABLE=1, `NET/IB : No device found`, libibverbs
    missing) when the log says; the title also says when other ranks use IB/RoCE, when the socket interface is
    IPoIB (ib*), or when a NET plugin failed to initialise (aws-ofi-nccl `fi_getinfo() … failed`). When the job
    facts cannot tell whether the job spans nodes: info, "if this job spans nodes, …"; nothing on a job they
    show on one node."""
    out: list[Finding] = []
    # libfabric prints its own `<warn> fi_getinfo: …` lines (no NCCL prefix): they stay unknown lines.
    plugin = cite(
        warnings_matching(ctx, PLUGIN_FAIL),
        ctx.logs.network.filter(pl.col("detail").fill_null("").str.contains(PLUGIN_FAIL)),
        ctx.logs.unknown.filter(pl.col("text").fill_null("").str.contains(PLUGIN_FAIL)),
    )
    plugin = plugin.unique(["path", "line"], keep="first", maintain_order=True)
    if plugin.height:
        out.append(
            make(
                "net-socket-fallback",
                "warning",
                "The network plugin failed to initialise",
                "When the EFA/OFI or other NET plugin cannot start, NCCL falls back to its internal IB or "
                "TCP-socket transport (much slower) or fails at the first inter-node connection.",
                "Expose the fabric devices to the container (/dev/infiniband/*, EFA), check the provider "
                "with fi_info, and load the plugin's libraries on every node.",
                plugin,
                ctx,
            )
        )
    sock = _socket_users(ctx)
    inter_node = ctx.logs.connections.filter((transport() == "NET") & (pl.col("net") == "Socket")).height > 0
    shape = job_shape(ctx)
    if sock.is_empty() or shape.multi_node is False:
        return out
    if not (inter_node or shape.multi_node):
        out.append(_socket_if_multi_node(ctx, sock))
        return out
    ib = _ib_users(ctx).join(sock.select(PROC).unique(), on=PROC, how="anti")
    ifaces = norm_host(ctx.logs.network.filter(pl.col("kind").is_in(["bootstrap", "socket_iface"])))
    ipoib = ifaces.join(sock.select(PROC).unique(), on=PROC).filter(
        pl.col("iface").fill_null("").str.starts_with("ib")
    )
    reasons = _ib_absent_reasons(ctx)
    cited = cite(sock, first_per(ib, ["host"]), reasons, first_per(ipoib, ["host"]))
    sev: Severity
    if ib.height:
        sev, title = "warning", "Some ranks use TCP sockets between nodes while others use IB/RoCE"
    elif ipoib.height:
        sev, title = (
            "warning",
            "Inter-node traffic runs over sockets on an IPoIB interface (IB hardware unused)",
        )
    else:
        why = ", ".join(sorted(set(reasons["reason"].to_list())))
        sev, title = (
            "warning",
            "Inter-node traffic runs over TCP sockets (NET/Socket)" + (f": {why}" if why else ""),
        )
    out.append(
        make(
            "net-socket-fallback",
            sev,
            title,
            "NET/Socket is many times slower than IB/RoCE verbs; on a cluster with HCAs it means verbs "
            "could not be used (IB disabled, no libibverbs, /dev/infiniband not mapped into the container), "
            "which shows up as slow training or a hang at scale.",
            "If the nodes have IB/RoCE/EFA NICs: install libibverbs (rdma-core) in the image, map "
            "/dev/infiniband into the container, and do not set NCCL_IB_DISABLE=1.",
            cited,
            ctx,
        )
    )
    return out


def _socket_if_multi_node(ctx: Context, sock: pl.DataFrame) -> Finding:
    """The job's node count is unknown (an excerpt, one host's file): say what sockets would mean across nodes."""
    return make(
        "net-socket-fallback",
        "info",
        "If this job spans nodes, its inter-node traffic runs over TCP sockets (NET/Socket)",
        "NCCL picked its socket transport; within one node that is harmless (P2P/SHM carry the data), across "
        "nodes it is many times slower than IB/RoCE verbs. The lines given do not say how many nodes the job spans.",
        "If the job spans nodes with IB/RoCE/EFA NICs: install libibverbs (rdma-core) or the OFI plugin in the "
        "image, map /dev/infiniband into the container, and do not set NCCL_IB_DISABLE=1.",
        cite(first_per(sock, PROC), _ib_absent_reasons(ctx)),
        ctx,
    )


# GPU models on which GPUDirect RDMA cannot be on, each with its reason: there gdr-disabled is info.
NO_GDR_GPUS = {
    "GB10": (
        "NVIDIA GB10 (DGX Spark) has one unified memory: its GPU allocations cannot be reached by PCIe devices, "
        "so GPUDirect RDMA (nvidia-peermem, dma-buf) is not supported there (NVIDIA developer forum, "
        "'DGX Spark GPUDirect RDMA')"
    ),
}


def _no_gdr_platform(ctx: Context) -> str | None:
    """The reason GDR cannot be on, when every GPU the inputs name is a model listed in NO_GDR_GPUS."""
    names = set(ctx.nccltests.devices["gpu_name"].drop_nulls().to_list())
    hits = {k for n in names for k in NO_GDR_GPUS if k in n}
    if not names or len(hits) != 1 or not all(any(k in n for k in hits) for n in names):
        return None
    return NO_GDR_GPUS[hits.pop()]


# Why GDR is off and what to try: NCCL's own causes, or the OFI plugin's word that its provider cannot do it.
GDR_OFF = (
    (
        "Without GPUDirect RDMA every inter-node transfer is copied through CPU memory, cutting bandwidth "
        "several-fold. NCCL ≤ 2.22.3 looked only for the nv_peer_mem module and misses nvidia-peermem; "
        "other causes are the module not loaded, NCCL_NET_GDR_LEVEL, or GPU and NIC far apart on PCIe."
    ),
    (
        "Load nvidia-peermem (or nv_peer_mem), upgrade NCCL to ≥ 2.23.4 on nvidia-peermem systems, and "
        "check NCCL_NET_GDR_LEVEL and the GPU–NIC PCIe topology (nvidia-smi topo -m)."
    ),
)
# aws-ofi-nccl prints `Could not disable CUDA API usage for HMEM, disabling GDR` and `Need to force simple
# protocol: GDR not supported` when its libfabric provider cannot move GPU memory itself (seen on EFA, NCCL
# 2.29.2 + aws-ofi-nccl 1.18 on g7e.8xlarge): nv_peer_mem advice does not apply there.
OFI_NO_GDR = r"NET/OFI .*(?:disabling GDR|GDR not supported)"
GDR_OFF_BY_PLUGIN = (
    (
        "The OFI network plugin turned GPUDirect RDMA off itself: its libfabric provider cannot read or write "
        "GPU memory, so every inter-node transfer is copied through CPU memory (and the plugin forces the "
        "Simple protocol). On EFA that is the case where the instance type's EFA has no RDMA support or "
        "libfabric / the EFA driver is too old for FI_HMEM."
    ),
    (
        "Check that the instance type's EFA supports RDMA and that the EFA installer, libfabric and "
        "aws-ofi-nccl are current; where the hardware cannot do RDMA, compare bandwidth only with the NIC's "
        "line rate."
    ),
)


def _gdr_off_only_on_some_paths(conn: pl.DataFrame, plain: pl.DataFrame) -> bool:
    """Every process that prints NET/IB channels without `/GDRDMA` also prints some with it: GDR works on each
    node, and NCCL turned it off per connection, where the NIC it picked is farther from the GPU than
    NCCL_NET_GDR_LEVEL allows (net.cc decides `useGdr` per peer and channel). Seen in a healthy 2-node
    MI325X run (RCCL 2.22.3): its 16-rank communicators use GDRDMA, its 8-rank ones (4 GPUs a node) do not."""
    with_gdr = conn.filter(pl.col("gdr").fill_null(False)).select(PROC).unique()
    missing = plain.select(PROC).unique().join(with_gdr, on=PROC, how="anti")
    return not plain.is_empty() and missing.is_empty()


def _gdr_partial(ctx: Context, cited: pl.DataFrame) -> Finding:
    return make(
        "gdr-disabled",
        "info",
        "GPUDirect RDMA works on every process, but some channels go without it",
        "Some NET/IB channel connections print no /GDRDMA, but every process that prints them also prints "
        "GDRDMA ones, so GDR itself works on each node. NCCL decides GDR per "
        "connection: it leaves it off where the NIC a channel uses is farther from the GPU (PCIe distance) than "
        "NCCL_NET_GDR_LEVEL allows, often in communicators with fewer GPUs per node.",
        "Nothing is broken. If those communicators' inter-node bandwidth matters, check the GPU–NIC pairing "
        "(nvidia-smi topo -m, rocm-smi --showtopo) and NCCL_NET_GDR_LEVEL.",
        cited,
        ctx,
    )


@rule("gdr-disabled", "warning", "GPUDirect RDMA not used on IB", "config")
def gdr_disabled(ctx: Context) -> Iterable[Finding]:
    """`NET/IB : GPU Direct RDMA Disabled for HCA …` (an INFO line), NET/IB channels without `/GDRDMA`,
    or `Connected all rings, use ring PXN x GDR 0`. Warning: GPUDirect RDMA off costs much of the
    inter-node bandwidth (one thread: ~180 → ~10 GB/s). Only on RDMA networks (NET/IB, IBext, RoCE, OFI/EFA)
    and only when inter-node traffic may exist (not on a job the evidence shows on one node): a single-node
    run or a socket NIC has no GDR to lose. Info, not a warning, when every GPU named is a model that cannot
    have GDR (NO_GDR_GPUS: NVIDIA GB10), and info when every process without GDR on some channels has it on
    others (NCCL's per-connection choice by GPU–NIC distance, not a node that lacks GDR)."""
    conn = ctx.logs.connections.filter(
        (transport() == "NET") & pl.col("net").fill_null("").str.starts_with("IB")
    )
    if conn.is_empty() and job_shape(ctx).multi_node is False:
        return []  # a single-node job: no inter-node traffic, GDR does not apply
    # `NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'` is a socket NIC: GDR is an RDMA feature
    off = ctx.logs.network.filter(
        (pl.col("kind") == "gdr_disabled") & pl.col("text").fill_null("").str.contains(GDR_NETS)
    )
    plain = conn.filter(~pl.col("gdr").fill_null(False))
    # `use ring PXN 0 GDR 0` is printed on every network; on a process that uses sockets it says nothing.
    on_socket = ctx.logs.network.filter(
        (pl.col("kind") == "using_network") & (pl.col("net") == "Socket")
    ).select(PROC)
    gdr0 = ctx.logs.channels.filter(pl.col("gdr") == 0).join(on_socket.unique(), on=PROC, how="anti")
    if off.is_empty() and plain.is_empty() and gdr0.is_empty():
        return []
    ofi = ctx.logs.network.filter(
        (pl.col("kind") == "ofi") & pl.col("text").fill_null("").str.contains(OFI_NO_GDR)
    )
    cited = cite(first_per(ofi, PROC), first_per(off, PROC), first_per(plain, PROC), first_per(gdr0, PROC))
    platform = _no_gdr_platform(ctx)
    if platform is not None:
        return [
            make(
                "gdr-disabled",
                "info",
                "GPUDirect RDMA is off, as it must be on this GPU",
                platform
                + ". NCCL stages inter-node transfers through host buffers; nothing in the setup can "
                "turn GDR on.",
                "Nothing to fix here; compare bandwidth with runs on the same platform only.",
                cited,
                ctx,
            )
        ]
    if off.is_empty() and gdr0.is_empty() and _gdr_off_only_on_some_paths(conn, plain):
        return [_gdr_partial(ctx, cited)]
    some = conn.height > plain.height > 0
    title = (
        "GPUDirect RDMA is used by some ranks but not others"
        if some
        else "GPUDirect RDMA is off: inter-node traffic is staged through host memory"  # IB, RoCE, EFA alike
    )
    why, fix = GDR_OFF_BY_PLUGIN if ofi.height else GDR_OFF
    return [make("gdr-disabled", "warning", title, why, fix, cited, ctx)]


def _version_lines(ctx: Context, kind: str) -> pl.DataFrame:
    v = ctx.logs.versions.filter(pl.col("kind") == kind)
    return first_per(v, ["value"])


@rule("version-mismatch", "error", "NCCL or CUDA driver versions differ across ranks", "config")
def version_mismatch(ctx: Context) -> Iterable[Finding]:
    """Ranks report different NCCL versions (per-rank banner from 2.27, per-file bare banner before,
    or torch's `NCCL version` text): error. Different `cudaDriverVersion`: warning. An external net
    plugin (FastSocket, aws-ofi, HPC-X) loaded on some hosts while others run the internal one: warning.
    NCCL's own `Mismatched NCCL version detected` WARN: error."""
    out: list[Finding] = []
    r = ctx.ranks
    versions = r["nccl_version"].drop_nulls().unique().sort().to_list()
    warn = ctx.logs.warnings.filter((pl.col("family") == "version") & ~pl.col("benign").fill_null(False))
    if len(versions) > 1 and not _differ_within_a_job(ctx, "nccl_version"):
        versions = versions[:1]  # separate jobs (align.facts) on different versions: no mismatch
    if len(versions) > 1 or warn.height:
        cited = cite(_version_lines(ctx, "nccl"), warn)
        f = make(
            "version-mismatch",
            "error",
            "Ranks run different NCCL versions: " + ", ".join(versions or ["?"]),
            "NCCL's wire protocol is not compatible across versions; mixed installs fail with misleading errors "
            "(bad address family, wrong magic/type, collective mismatch, truncated messages) or hang silently.",
            "Install one NCCL (and one net plugin) on every node: same pip wheel/container image; check that "
            "torch does not load a different libnccl than the system one.",
            cited,
            ctx,
            metrics={"nccl_versions": versions},
        )
        by_version = r.drop_nulls("nccl_version").group_by("nccl_version").agg(pl.col("rank").drop_nulls())
        out.append(f)
        f.metrics["ranks_by_version"] = {v: sorted(rs) for v, rs in sorted(by_version.iter_rows())}
    out += _plugin_mismatch(ctx)
    drivers = r["cuda_driver"].drop_nulls().unique().sort().to_list()
    if len(drivers) > 1 and _differ_within_a_job(ctx, "cuda_driver"):
        out.append(
            make(
                "version-mismatch",
                "warning",
                "Ranks run different CUDA drivers: " + ", ".join(drivers),
                "Nodes on different drivers behave differently (P2P, NVLS, CUMEM support) and are a common "
                "hidden difference between a working and a failing node.",
                "Put every node on the same driver version.",
                _version_lines(ctx, "cuda_driver"),
                ctx,
                metrics={"cuda_drivers": drivers},
            )
        )
    return out


def _differ_within_a_job(ctx: Context, col: str) -> bool:
    """Whether some job (`JobFacts.jobs`; the whole input when it holds one) has ranks with different `col`."""
    r = ctx.ranks.drop_nulls(col).with_columns(ctx.facts.job_of())
    return bool((r.group_by("_job").agg(pl.col(col).n_unique().alias("_n"))["_n"] > 1).any())


PLUGIN_NAME = (
    r"Loaded (?:net|collnet) plugin (\S+)|Successfully loaded external plugin (\S+)|"
    r"Initialized NET plugin (\S+)|P2P plugin (\S+)|Plugin Path : (\S+)"
)


def _plugin_mismatch(ctx: Context) -> list[Finding]:
    """Hosts that load an external net plugin (FastSocket, aws-ofi, HPC-X SHARP) next to hosts that
    run NCCL's internal one: a silent hang or bogus bootstrap errors (real-logs.md R8)."""
    rows = norm_host(
        ctx.logs.network.filter((pl.col("kind") == "plugin") & pl.col("detail").str.contains("Plugin|plugin"))
    )
    rows = rows.filter(pl.col("host") != "").with_columns(
        name=pl.coalesce([pl.col("detail").str.extract(PLUGIN_NAME, i) for i in range(1, 6)])
    )
    per_host = rows.group_by("host").agg(
        pl.col("name").drop_nulls().unique().sort().str.join("+").alias("plugins")
    )
    per_host = per_host.with_columns(
        pl.when(pl.col("plugins") == "")
        .then(pl.lit("internal"))
        .otherwise(pl.col("plugins"))
        .alias("plugins")
    )
    if per_host["plugins"].n_unique() < 2:
        return []
    cited = cite(
        first_per(rows.filter(pl.col("name").is_not_null()), ["host", "name"]), first_per(rows, ["host"])
    )
    summary = ", ".join(f"{h}: {p}" for h, p in per_host.sort("host").iter_rows())
    return [
        make(
            "version-mismatch",
            "warning",
            f"Nodes use different network plugins ({summary})",
            "A net plugin present on some nodes only makes ranks speak different transports; jobs then hang "
            "silently or fail with misleading bootstrap errors.",
            "Install the same net plugin (or none) on every node; check NCCL_NET_PLUGIN and LD_LIBRARY_PATH.",
            cited,
            ctx,
        )
    ]


@rule("env-mismatch", "error", "NCCL_* environment differs across ranks", "config")
def env_mismatch(ctx: Context) -> Iterable[Finding]:
    """A `NCCL_X set by environment to V` value differs between processes at the same occurrence (the
    k-th time each process prints X: an application may change X between two communicators, which is
    no mismatch), trailing '.' ignored; or X is printed by some processes of the world communicator and
    not by others that print their environment (set on some ranks, unset on others). Error for settings
    every rank must share (NCCL_PROTO, NCCL_ALGO, NCCL_BUFFSIZE, NCCL_IB_DISABLE, NCCL_NET,
    NCCL_COLLNET_ENABLE, NCCL_NVLS_ENABLE, channel counts, NCCL_CROSS_NIC, NCCL_NET_PLUGIN); warning for
    the rest (e.g. NCCL_SOCKET_IFNAME may differ on heterogeneous nodes). Names that identify the host or
    the process (PER_HOST: NCCL_HOSTID, NCCL_DEBUG_FILE) differ by design and are not compared."""
    env = _env_rows(ctx).filter(~pl.col("name").is_in(list(PER_HOST))).with_columns(ctx.facts.job_of())
    if env["who"].n_unique() < 2:
        return []
    out: list[Finding] = []
    for name, rows, values in _value_diffs(env) + _set_unset(env, ctx):
        sev: Severity = "error" if name in MUST_MATCH else "warning"
        out.append(
            make(
                "env-mismatch",
                sev,
                f"{name} differs across ranks: " + " vs ".join(values),
                "Ranks configured differently make different choices (transport, protocol, algorithm, "
                "buffer size); NCCL does not check this and the job fails or hangs in confusing ways.",
                f"Set {name} identically on every node (launcher env, container env, ~/.bashrc, "
                "/etc/nccl.conf); diff the `set by environment` lines between ranks.",
                rows,
                ctx,
                metrics={"name": name, "values": values},
            )
        )
    return out


def _env_rows(ctx: Context) -> pl.DataFrame:
    env = (
        norm_host(ctx.logs.env)
        .sort("path", "line")
        .with_columns(
            v=pl.col("value").fill_null("").str.strip_chars().str.strip_chars_end("."),
            who=pl.when(pl.col("pid").is_not_null())
            .then(pl.concat_str(["host", pl.col("pid").cast(pl.Utf8)], separator=":"))
            .otherwise(pl.col("path")),
        )
    )
    return env.with_columns(k=pl.col("v").cum_count().over("who", "name"))


def _value_diffs(env: pl.DataFrame) -> list[tuple[str, pl.DataFrame, list[str]]]:
    """Names whose k-th value differs between processes of one job (`_job`, from `JobFacts.jobs`)."""
    diff = env.group_by("name", "k", "_job").agg(
        pl.col("v").n_unique().alias("n"), pl.col("who").n_unique().alias("w")
    )
    out = []
    for name in sorted(set(diff.filter((pl.col("n") > 1) & (pl.col("w") > 1))["name"].to_list())):
        at = diff.filter((pl.col("name") == name) & (pl.col("n") > 1)).sort("k", "_job").row(0, named=True)
        rows = first_per(
            env.filter((pl.col("name") == name) & (pl.col("k") == at["k"]) & (pl.col("_job") == at["_job"])),
            ["v"],
        )
        out.append((name, rows, rows["v"].to_list()))
    return out


def _set_unset(env: pl.DataFrame, ctx: Context) -> list[tuple[str, pl.DataFrame, list[str]]]:
    """Names printed by some world-communicator processes that print their environment but not by others.
    Only the world communicator's members are compared: NCCL reads many variables only on the code path
    that needs them, and processes outside it (evaluation, a second job step) take other paths."""
    members = _world_members(ctx)
    env = env.join(members, on=["host", "pid"], how="semi")
    who = env["who"].unique()
    if who.len() < 2:
        return []
    per = env.group_by("name").agg(pl.col("who").unique())
    out = []
    for name, have in per.filter(pl.col("who").list.len() < who.len()).sort("name").iter_rows():
        missing = sorted(set(who.to_list()) - set(have))
        rows = first_per(env.filter(pl.col("name") == name), ["v"])
        unset = first_per(env.filter(pl.col("who") == missing[0]), ["who"]).with_columns(v=pl.lit("(unset)"))
        cited = pl.concat([rows, unset], how="vertical_relaxed")
        out.append(
            (name, cited, [*rows["v"].to_list(), f"unset on {len(missing)} process(es), e.g. {missing[0]}"])
        )
    return out


def _world_members(ctx: Context) -> pl.DataFrame:
    """(host, pid) of the processes in the world communicator (empty when none is known)."""
    if ctx.comms.is_empty():
        return pl.DataFrame(schema={"host": pl.Utf8, "pid": pl.Int64})
    wkey = ctx.comms.sort(["nranks", "ranks_seen"], descending=True, nulls_last=True)["comm_key"][0]
    inits = ctx.init_rows.filter(pl.col("comm_key") == wkey)
    return inits.select("host", "pid").unique()


@rule("p2p-degraded", "error", "Intra-node traffic not on P2P", "config")
def p2p_degraded(ctx: Context) -> Iterable[Finding]:
    """Error: WARN `P2P is disabled between NVLINK connected GPUs` (fatal). Warning: NCCL_P2P_DISABLE=1,
    or NET channels between two ranks on the same host. Info: intra-node channels over SHM (expected on
    PCIe boxes without P2P support, a bandwidth loss on NVLink boxes)."""
    out: list[Finding] = []
    nvlink = warnings_matching(ctx, r"(?i)P2P is disabled between NVLINK")
    if nvlink.height:
        out.append(
            make(
                "p2p-degraded",
                "error",
                "P2P is disabled between NVLink-connected GPUs",
                "NCCL found NVLink but P2P access fails between those GPUs, which points at a hardware or "
                "driver problem; NCCL stops rather than run degraded.",
                "Check `nvidia-smi topo -m` and `nvidia-smi nvlink -s`, reboot/reset the node; "
                "NCCL_IGNORE_DISABLED_P2P=1 proceeds at reduced speed.",
                nvlink,
                ctx,
            )
        )
    env = ctx.logs.env.filter(
        (pl.col("name") == "NCCL_P2P_DISABLE") & pl.col("value").str.strip_chars(". ").eq("1")
    )
    same_host_net = _same_host(ctx, ctx.logs.connections.filter(transport() == "NET"))
    if env.height or same_host_net.height:
        ids = _split_host_ids(ctx, same_host_net) if not env.height else ctx.logs.env.clear()
        cited = cite(first_per(env, ["text"]), first_per(same_host_net, PROC), first_per(ids, PROC))
        why = (
            "GPUs in one node then exchange data through host memory or the network instead of "
            "NVLink/PCIe peer access: a large bandwidth loss."
        )
        fix = (
            "Drop NCCL_P2P_DISABLE once P2P works (it is a diagnostic for PCIe ACS/IOMMU hangs); "
            "if P2P hangs, disable ACS or the IOMMU (intel_iommu=off / iommu=pt) or upgrade the driver."
        )
        title = (
            "P2P disabled by NCCL_P2P_DISABLE=1" if env.height else "Ranks on one host talk through the NIC"
        )
        if ids.height:
            title += ": NCCL_HOSTID gives them different host ids"
            why = (
                "NCCL tells nodes apart by the host name or NCCL_HOSTID; processes on one machine with "
                "different NCCL_HOSTID values are different nodes to NCCL, so it connects them over the "
                "network instead of NVLink/PCIe or shared memory. " + why
            )
            fix = "Give every process on a machine the same NCCL_HOSTID (or leave it unset)."
        out.append(make("p2p-degraded", "warning", title, why, fix, cited, ctx))
    shm = ctx.logs.connections.filter(transport() == "SHM")
    if shm.height and not env.height:
        out.append(
            make(
                "p2p-degraded",
                "info",
                "Intra-node channels run over shared memory (SHM), not P2P",
                "SHM is what NCCL uses when GPUs cannot reach each other directly (PCIe across CPU sockets, "
                "VMs, consumer GPUs); on NVLink systems it would be a bandwidth loss.",
                "If these GPUs share NVLink or a PCIe switch, check `nvidia-smi topo -m`, NCCL_P2P_LEVEL and "
                "the container's IPC settings (--ipc=host).",
                first_per(shm, PROC),
                ctx,
            )
        )
    return out


def _split_host_ids(ctx: Context, same_host_net: pl.DataFrame) -> pl.DataFrame:
    """`NCCL_HOSTID set by environment to …` lines of processes on a host where several values appear,
    among hosts with same-host NET channels (empty when none)."""
    if same_host_net.is_empty():
        return ctx.logs.env.clear()
    ids = norm_host(ctx.logs.env).filter(pl.col("name") == "NCCL_HOSTID")
    hosts = set(norm_host(same_host_net)["host"].drop_nulls().to_list())
    ids = ids.filter(pl.col("host").is_in(list(hosts)))
    split = ids.group_by("host").agg(pl.col("value").n_unique().alias("_n")).filter(pl.col("_n") > 1)
    return ids.join(split.select("host"), on="host", how="semi")


def _same_host(ctx: Context, conn: pl.DataFrame) -> pl.DataFrame:
    """Connection rows whose two ends live on the same (known) host. Connection lines print
    communicator-local ranks: each line is read in the communicators where the printing process holds the
    rank it prints for itself (the source, the destination of a `[receive]` line), and its peer's host is
    looked up among that communicator's members. A row counts only when every such communicator puts the
    peer on the printer's host (an unknown communicator proves nothing)."""
    if conn.is_empty():
        return conn
    members = norm_host(ctx.init_rows).select("comm_key", "rank", "host", "pid").unique()
    rows = norm_host(conn).with_columns(
        _me=pl.when(pl.col("direction") == "receive").then("dst_rank").otherwise("src_rank"),
        _peer=pl.when(pl.col("direction") == "receive").then("src_rank").otherwise("dst_rank"),
    )
    mine = rows.select("path", "line", "host", "pid", "_me", "_peer").join(
        members.rename({"rank": "_me"}), on=["host", "pid", "_me"]
    )
    peers = mine.join(
        members.select("comm_key", pl.col("rank").alias("_peer"), pl.col("host").alias("_peer_host")),
        on=["comm_key", "_peer"],
        how="left",
    )
    verdict = peers.group_by("path", "line").agg(
        (pl.col("_peer_host").is_not_null() & (pl.col("_peer_host") == pl.col("host"))).all().alias("_same")
    )
    same = verdict.filter(pl.col("_same")).select("path", "line")
    return rows.join(same, on=["path", "line"], how="semi").drop("_me", "_peer")
