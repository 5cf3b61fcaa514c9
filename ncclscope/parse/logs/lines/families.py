"""Parse stage, family table: which frame each grammar family fills, with its constant columns.

The grammar names the shapes; this table says where each one goes. `warn` is the `warnings.family`
label used when the line is a WARN (or the family lives in the warnings frame); `benign` marks the
noise that real-logs.md §6 whitelists (plugin probing, libibverbs on Ethernet hosts, CollNet, …).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    table: str
    const: dict[str, object] = field(default_factory=dict)
    warn: str = "other"
    benign: bool = False


def _w(label: str, benign: bool = False) -> Family:
    return Family("warnings", warn=label, benign=benign)


def _net(kind: str, warn: str = "other", benign: bool = False) -> Family:
    return Family("network", {"kind": kind}, warn=warn, benign=benign)


def _ch(kind: str) -> Family:
    return Family("channels", {"kind": kind})


FAMILIES: dict[str, Family] = {
    # collectives, connections, rings
    "coll": Family("collectives"),
    "coll_acc": Family("collectives"),  # RCCL 2.27's ` acc (nil)` variant
    "conn": Family("connections"),
    "conn_legacy_net": Family("connections"),
    "collnet_conn": Family("connections", {"kind": "collnet"}),
    "ring_order": Family("rings", {"kind": "ring_order"}),
    "ring_neighbors": Family("rings", {"kind": "ring_neighbors"}),
    "trees": Family("rings", {"kind": "tree"}),
    "tree": Family("rings", {"kind": "tree"}),
    "trail": Family("trail"),
    # communicators
    "init": Family("inits"),
    "comm_topo": Family("inits", {"phase": "comm"}),
    "comm_legacy": Family("inits", {"phase": "legacy"}),
    "comm_end": Family("inits"),
    "init_timings": Family("inits", {"phase": "timings"}),
    # versions and environment
    "version_banner": Family("versions"),
    "git_version": Family("versions", {"kind": "nccl_git"}),
    "cuda_driver": Family("versions", {"kind": "cuda_driver"}),
    "env_set": Family("env"),
    "env_set_to": Family("env"),
    # network
    "bootstrap": _net("bootstrap"),
    "socket_ifaces": _net("socket_iface"),
    "net_iface_legacy": _net("socket_iface"),
    "socket_count": _net("socket_count"),
    "socket_threads": _net("socket_threads"),
    "ib_devices": _net("ib_dev"),
    "ib_dev_legacy": _net("ib_dev"),
    "ib_sideband": _net("ib_oob"),
    "ib_no_device": _net("ib_no_device", warn="ib_verbs"),
    "ibverbs_missing": _net("ibverbs_missing", warn="plugin", benign=True),
    "using_network": _net("using_network"),
    "gdr_hca": _net("gdr"),
    "gdr_gpu": _net("gdr"),
    "plugin_loaded": _net("plugin", warn="plugin", benign=True),
    "plugin": _net("plugin", warn="plugin", benign=True),
    "plugin_nonet": _net("plugin", warn="plugin", benign=True),
    "ofi": _net("ofi", warn="plugin"),
    "fastsocket": _net("plugin", warn="plugin", benign=True),
    "nic_distance": _net("nic_distance"),
    "ip_interfaces": _net("nic_distance"),
    # channels, graph, tuning
    "channel_summary": _ch("summary"),
    "connected": _ch("connected"),
    "thread_thresholds": _ch("thread_thresholds"),
    "chunksize": _ch("p2p_chunksize"),
    "launch_mode": _ch("launch_mode"),
    "affinity": _ch("affinity"),
    "pattern": _ch("graph_pattern"),
    "graph_path": _ch("graph_path"),
    "nvls_support": _ch("nvls_support"),
    "nvls_comm": _ch("nvls_comm"),
    "nvls_heads": _ch("nvls_heads"),
    "proxy_core": _ch("proxy_core"),
    "legacy_threads": _ch("legacy_threads"),
    "topo_info": _ch("topology"),
    # warnings and errors
    "ws_connect": _w("socket"),
    "ws_connect_retry": _w("socket"),
    "ws_poll_connect": _w("socket"),
    "ws_closed": _w("socket"),
    "ws_recv": _w("socket"),
    "ws_opid": _w("proxy"),
    "ws_socket_create": _w("socket"),
    "ws_no_iface": _w("socket"),
    "ws_same_subnet": _w("socket"),
    "ws_family": _w("socket"),
    "ws_accept": _w("socket"),
    "ws_service": _w("proxy"),
    "ws_proxy_service": _w("proxy"),
    "ws_proxy_opid": _w("proxy", benign=True),
    "ib_completion": _w("ib_completion"),
    "ib_async": _w("ib_async"),
    "ib_mismatch": _w("collective_mismatch"),
    "ib_verbs": _w("ib_verbs"),
    "cuda_failure": _w("cuda"),
    "cuda_alloc": _w("oom"),
    "shm_fallocate": _w("shm"),
    "shm_segment": _w("shm"),
    "shm_extend": _w("shm"),
    "shm_map": _w("shm"),
    "duplicate_gpu": _w("duplicate_gpu"),
    "version_mismatch": _w("version"),
    "coll_mismatch": _w("collective_mismatch"),
    "nvls_bind": _w("nvls"),
    "ring_error": _w("ring"),
    "bootstrap_root": _w("bootstrap"),
    "msg_truncated": _w("socket"),
    "collnet_unsupported": _w("collnet", benign=True),
    "p2p_disabled": _w("p2p"),
    "nccl_error_misc": _w("init"),
}

# Fields printed in hex by NCCL (opCount is `%lx`).
HEX_FIELDS = frozenset({"op_count"})

# Families whose lines differ mostly in one field: the fast path parses each distinct rest once.
VARYING: dict[str, str] = {"coll": "op_count", "coll_acc": "op_count"}


@dataclass(frozen=True)
class Benign:
    pattern: str  # regex on the message
    reason: str  # why a healthy run prints it


# WARNs (and NOWARN-downgraded INFOs) that healthy runs print, each with why it is harmless. A line is
# benign when its family is or its message matches one of these; `unexplained-warn` lists them with
# the reason instead of raising them. Sources: NCCL's transport.cc/net.cc/nvls.cc and the SHARP plugin.
BENIGN_WARNS: tuple[Benign, ...] = (
    Benign(
        r"SHARP coll init error|Cannot initialize CollNet|CollNet is not supported|CollNet currently only supports",
        "CollNet/SHARP is optional: without a SHARP-capable fabric (or with it unconfigured) NCCL falls back to "
        "its own rings and trees",
    ),
    Benign(
        r"NET/Plugin ?: ?(?:dlerror|Plugin load returned|No plugin found|Could not find|Failed to find)",
        "NCCL looks for an external net plugin first and uses its internal IB/Socket transports when none is "
        "installed",
    ),
    Benign(
        r"ibv_open_device|ibv_get_device_list|NET/IB : Unable to open device|Failed to open libibverbs",
        "NCCL probes InfiniBand at init; on a node without usable IB it uses sockets (net-socket-fallback "
        "judges whether that matters for this job)",
    ),
    Benign(
        r"Proceeding without NVLS support|NVLS multicast support is not available|Disabling NVLS support",
        "NVLS needs NVSwitch systems with multicast support; NCCL says it proceeds without it",
    ),
    Benign(
        r"RMA/Socket : rma_socket requires GDRCopy",
        "NCCL 2.32 probes its socket RMA transport (one-sided put/get) at init; without GDRCopy that optional "
        "transport stays off, and collectives and send/recv do not use it (seen on healthy 2.32.3 runs)",
    ),
    Benign(
        r"MSCCL\+\+: Cannot enable MSCCL\+\+",
        "RCCL's optional MSCCL++ path is off in this environment; RCCL uses its own algorithms",
    ),
)
BENIGN_WARN_PATTERN = "|".join(f"(?:{b.pattern})" for b in BENIGN_WARNS)
