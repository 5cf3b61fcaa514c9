"""Findings stage, network error rules: failed connections and IB/RoCE/OFI completion errors.

The root is told apart from its echoes: the first failure in time when lines carry timestamps, else
in causal order (connect refused, IB status 12/4, CUDA errors before 'closed by remote peer', IB
status 5, `[Service thread]` closures). Reference: real-logs.md §5 R1, R4–R6.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from ncclscope.findings import meanings as M
from ncclscope.findings.context import in_context
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import CITE, cite, job_shape, live_warnings, make, norm_host, where
from ncclscope.records import Finding, Severity

ECHO = (
    r"(?i)closed by remote peer|broken pipe|reset by peer|call to recv|recv from|socket recv failed|"
    r"service thread|failed to execute operation|abort called|closed by localRank|remote process"
)
RETRY = r"(?i)retrying"
# Interface-selection failures belong to the iface-* rules, not to connection-failure.
IFACE_MSG = (
    r"(?i)no interface found|no socket interface|no usable listening|Socket creation failed|no device found"
)
SOCKET_FAMILIES = ["socket", "bootstrap", "proxy"]
LINK_LOCAL_SCOPE = re.compile(r"%([\w.-]+)<")  # `fe80::…%ib1<port>`: the interface the address is scoped to
SOCKET_FILES = r"(?i)(socket|bootstrap|net_socket)\.(cc|cu|h)$"
IB_STATUS = {
    1: "local length error",
    2: "local QP operation error",
    4: "local protection error (memory registration / GPUDirect RDMA, often ACS or IOMMU)",
    5: "work request flushed — a consequence of an earlier error",
    9: "remote invalid request (the peer's QP rejected the request; look for an error on the peer first)",
    10: "remote access error",
    11: "remote operation error",
    12: "transport retry counter exceeded (link down or peer unreachable; RoCE GID/traffic class)",
    13: "RNR retry counter exceeded (receiver not ready)",
}
# ibv async events that put a QP, CQ, port or the device in error (NCCL >= 2.19 prints `async fatal event`;
# older releases print every event as `Got async event : <ibv_event_type_str>` and 2.19-2.2x the non-fatal
# ones as `Got async error event`, so the libibverbs event
# strings are named: QP access/request/catastrophic errors, CQ error, port error, device catastrophic).
# They are raised on the host whose NIC failed, before the completion errors its peers then see.
IB_FATAL_ASYNC = (
    r"(?i)async fatal event|access violation work queue|invalid request local work queue|"
    r"catastrophic error|\bCQ error|port error"
)
# ibv async events that report a notification, not a failure (libibverbs ibv_event_type_str): the subnet
# manager asking clients to re-register (after an SM restart: `client reregistration`), a new master SM, a
# migrated path, queue bookkeeping. NCCL before 2.19 printed every event as a WARN (`Got async event : %s`,
# net_ib.cc ncclIbAsyncThreadMain); alone they are no failure. Not here: a GID table change (a RoCE address
# changed under NCCL's GID: see findings.meanings), LID/P_Key changes (paths or partitions changed) and
# `port active` (the port was down before it): each can break connections that were set up.
IB_NOTICE_ASYNC = (
    r"(?i)client reregistration|SM change|path migrated|communication established|send queue drained|"
    r"last WQE reached|SRQ limit reached"
)
FAILURE_FAMILIES = ["ib_completion", "ib_async", "cuda", "oom", "shm", "duplicate_gpu", "nvls"]


def _ordered(rows: pl.DataFrame, rank_expr: pl.Expr) -> pl.DataFrame:
    """Time order when every row has a timestamp, else causal class (`rank_expr`, lower first) then line."""
    rows = rows.with_columns(_cls=rank_expr)
    if rows.height and rows["ts_us"].null_count() == 0:
        return rows.sort(["ts_us", "_cls", "path", "line"])
    return rows.sort(["_cls", "ts_us", "path", "line"], nulls_last=True)


def _retry_exhausted() -> pl.Expr:
    nums = pl.col("message").fill_null("").str.extract_groups(r"\((\d+)/(\d+)\)")
    return nums.struct.field("1").cast(pl.Int64, strict=False) >= nums.struct.field("2").cast(
        pl.Int64, strict=False
    )


def _echo_lines(ctx: Context) -> pl.DataFrame:
    """Socket-layer WARNs and retries, classed 0 root / 1 exhausted retry / 2 retry / 3 echo."""
    w = live_warnings(ctx)
    msg = pl.col("message").fill_null("")
    sock = w.filter(
        (pl.col("family").is_in(SOCKET_FAMILIES) | msg.str.contains(ECHO)) & ~msg.str.contains(IFACE_MSG)
    )
    return sock.with_columns(
        cls=pl.when(msg.str.contains(RETRY))
        .then(pl.when(_retry_exhausted()).then(1).otherwise(2))
        .when(msg.str.contains(ECHO))
        .then(3)
        .otherwise(0)
    )


def _silent_trails(ctx: Context) -> pl.DataFrame:
    """The deepest error-trail frame of processes that printed no WARN, when it is in socket/bootstrap
    code (some connect failures print no WARN at all: the trail is the only clue)."""
    trail = norm_host(ctx.logs.trail)
    deepest = trail.sort("line").unique(["path", "host", "pid", "tid"], keep="first", maintain_order=True)
    deepest = deepest.filter(pl.col("src_file").fill_null("").str.contains(SOCKET_FILES))
    warned = (
        norm_host(live_warnings(ctx).filter(pl.col("level") == "WARN")).select("path", "host", "pid").unique()
    )
    return deepest.join(warned, on=["path", "host", "pid"], how="anti", nulls_equal=True)


@rule("connection-failure", "error", "A connection between ranks failed", "errors")
def connection_failure(ctx: Context) -> Iterable[Finding]:
    """Socket/bootstrap/proxy failures: connect refused / timed out / no route / aborted (root), connect
    retries (root when the last retry `(n/n)` is printed, else a warning sign), and their echoes (connection
    closed by remote peer, recv failed, Broken pipe, `[Proxy Service] Failed to execute operation`,
    `[Service thread]` closures). Also a silent error trail whose deepest frame is socket/bootstrap code.
    The first failure (ts_us when every line has one, else root before retries before echoes) is named.
    Lines printed after an input's teardown began (align.phase) in a job with no earlier failure are the
    job ending and are not reported. Error; warning when only echoes are seen and an IB/CUDA/SHM error elsewhere explains them, or when
    only unexhausted retries are seen, or when only echoes are seen in a job whose stuck collective or dead
    rank the hang rules name (the teardown that follows it closes every connection)."""
    if ctx.logs.warnings.is_empty() and ctx.logs.trail.is_empty():
        return []
    lines = _echo_lines(ctx).select(*CITE, pl.col("cls").cast(pl.Int32), "message", silent=pl.lit(False))
    silent = _silent_trails(ctx).select(
        *CITE, cls=pl.lit(0, dtype=pl.Int32), message=pl.lit(None, dtype=pl.Utf8), silent=pl.lit(True)
    )
    rows = pl.concat([lines, silent], how="vertical_relaxed")
    rows = rows.filter(~ctx.phase.benign_teardown(rows))
    if rows.is_empty():
        return []
    # A WARN that names the failure comes before a silent trail of the same class (that one is only inferred).
    rows = _ordered(rows, pl.col("cls") * 2 + pl.col("silent").cast(pl.Int32))
    first = rows.row(0, named=True)
    others = live_warnings(ctx).filter(pl.col("family").is_in(FAILURE_FAMILIES) & (pl.col("level") == "WARN"))
    # Only peers closing on us, in a job whose hang or dead rank the hang rules name: the closures are the
    # communicators being torn down after it (the watchdog's abort, the launcher's SIGTERM), not a cause.
    hang = bool(ctx.hang.verdicts or ctx.hang.exited)
    sev: Severity
    if rows.filter(pl.col("cls") <= 1).height:
        sev = "error"
    elif rows.filter(pl.col("cls") == 3).height:
        sev = "warning" if others.height or hang else "error"
    else:
        sev = "warning"
    what = (
        "socket/bootstrap failure inferred from the error trail (no WARN printed)"
        if first["silent"]
        else (first["message"] or first["text"] or "").strip()[:140]
    )
    title = f"Connection failure, first {where(rows.head(1), ctx)}: {what}"
    if first["cls"] == 3:  # the earliest line is already an echo: the peer itself failed first
        title = (
            f"A peer went away (crash, OOM kill, preemption?), first seen {where(rows.head(1), ctx)}: {what}"
        )
    if sev == "warning" and others.height:
        title = f"Connections closed as a consequence of an earlier {others['family'][0]} error"
    elif sev == "warning" and hang and first["cls"] == 3:
        title = "Connections closed as a consequence of the hang or the dead rank named above"
    peers = rows.filter(pl.col("cls") == 3).select("host", "pid").unique().height
    if peers:
        title += f" (+ echoes in {peers} process(es))"
    cited = pl.concat(
        [
            rows.head(3),
            rows.filter(pl.col("cls") == 3)
            .unique(["host", "pid"], keep="first", maintain_order=True)
            .head(6),
        ]
    )
    message = first["message"] or ""
    why, fix = _advice(message)
    local = _local_cause(message, first["cls"], ctx)
    if local == "loopback":
        title = f"NCCL's sockets use a loopback address, unreachable from other nodes, first {where(rows.head(1), ctx)}: {what}"
    elif _cause(message) == "loopback":  # a single-node job: loopback is fine there, the advice is not
        why, fix = GENERIC.why, GENERIC.fix
    fam = M.family_of(message) if message else None
    if fam is not None and fam.id in NOT_A_CONNECTION and _cause(message) == "generic":
        # the first line is a rendezvous that went wrong, not a link: its meaning decides the advice
        why, fix = fam.advice(message)
        title = f"{NOT_A_CONNECTION[fam.id]}, first {where(rows.head(1), ctx)}: {what}"
    if local == "link-local":
        scope = LINK_LOCAL_SCOPE.search(message)
        title = (
            "NCCL's sockets use a link-local address, not routable between nodes"
            + (f" (interface {scope.group(1)})" if scope else "")
            + f", first {where(rows.head(1), ctx)}: {what}"
        )
    seen = in_context(fam.id, message, ctx) if fam is not None else None
    if seen is not None:  # the job's other lines change what the first line means (findings.context)
        why, fix = seen.why, seen.fix
        title = f"{seen.label}, first {where(rows.head(1), ctx)}: {what}"
    return [
        make(
            "connection-failure",
            sev,
            title,
            why,
            fix,
            cited,
            ctx,
            ordered=True,
            metrics={
                "cause": _cause(message),
                "cause_class": seen.cause
                if seen is not None
                else "configuration"
                if local
                else _cause_class(first["cls"], fam, message),
                "role": _role(rows),
            },
        )
    ]


# Meaning families (findings.meanings) whose line, first in a connection failure, is not a failed link.
NOT_A_CONNECTION = {
    "bootstrap-rank-claimed-twice": "Two processes claimed one rank at bootstrap (not a connection failure)",
    "incompatible-peer": "An incompatible peer answered (not a blocked network)",
    # net_socket.cc: the peer sent more than this rank's posted receive: the ranks disagree on the operation
    "collective-mismatch": "The ranks disagree on the operation (not a connection failure)",
    "version-mismatch": "Ranks run different NCCL versions",
    "socket-no-interface": "No usable network interface for NCCL's sockets",
}


def _local_cause(message: str, cls: int, ctx: Context) -> str | None:
    """`link-local` or `loopback` when the first failed connect went to such an address (not an echo): the
    address chosen is the fault, not the network under it; loopback only where the job may span nodes."""
    cause = _cause(message)
    if cls == 3 or cause not in ("link-local", "loopback"):
        return None
    return None if cause == "loopback" and job_shape(ctx).multi_node is False else cause


def _cause_class(cls: int, fam: M.Family | None, message: str) -> str:
    """The cause class (findings.meanings.CAUSES) of a connection failure's first line: an echo (the peer
    went away first) is `peer-failure`; else its meaning's class (by family and words), or `network`."""
    if cls == 3:
        return "peer-failure"
    cause = fam.cause_of(message) if fam is not None else "network"
    return cause if cause != "peer-failure" else "network"


@dataclass(frozen=True)
class Advice:
    pattern: str  # regex on the first failure's message
    why: str
    fix: str


GENERIC = Advice(
    "",
    "A refused/timed-out connect means the peer was not listening (crashed, not started, blocked by a firewall) "
    "or is unreachable (wrong interface or route). 'Connection closed by remote peer', 'Broken pipe' and "
    "service-thread closures are echoes: the peer went away first (crash, OOM, preemption) and the first "
    "failing rank or host is the one to diagnose.",
    "Diagnose the first failing host/rank: its own log (segfault, OOM killer, CUDA error), the firewall and "
    "routes between nodes (ports NCCL opens are ephemeral), MASTER_ADDR and NCCL_SOCKET_IFNAME.",
)
# The first failure's own words decide the advice (NCCL's socket.cc / bootstrap.cc messages).
ADVICE: dict[str, Advice] = {
    # An IPv6 fe80::/10 address (with its `%<iface>` scope, as NCCL's socket.cc prints it) or IPv4 169.254/16
    # is valid on one link only (RFC 4291 2.5.6, RFC 3927): a peer on another node can never reach it.
    # 127.0.0.0/8 or ::1 in a failed connect: the peer advertised its own loopback (NCCL picked `lo`), which
    # no other host reaches; on a job the facts prove single-node it is no fault (see _local_cause).
    "loopback": Advice(
        r"(?:\b127\.\d+\.\d+\.\d+|\[?::1\]?)<\d+>",
        "The address in the failed connect is a loopback address (127.0.0.0/8 or ::1): the peer advertised its "
        "own loopback interface, which only its own host can reach. NCCL picked `lo` for its sockets "
        "(NCCL_SOCKET_IFNAME=lo, or no other interface matched), so ranks on other nodes cannot connect.",
        "Set NCCL_SOCKET_IFNAME to the interface on the nodes' shared network (e.g. eth0, ens*, enp* on AWS "
        "p5); check that MASTER_ADDR is the node's routable address, not localhost.",
    ),
    "link-local": Advice(
        r"(?i)\bfe[89ab][0-9a-f]:[0-9a-f:]*%|\b169\.254\.\d+\.\d+<",
        "The address in the failed connect is link-local (IPv6 fe80::/10 with a %<interface> scope, or IPv4 "
        "169.254/16): it is valid only on one link and is not routed between nodes. NCCL chose an interface "
        "whose only address is link-local (an IPoIB `ib*` or a VM/container interface without IPv4), so the "
        "peers cannot reach the address it advertised.",
        "Set NCCL_SOCKET_IFNAME to the interface that carries the nodes' routable address (eth*/ens*/bond*), "
        "or give that interface an IPv4 or global address; NCCL_SOCKET_FAMILY=AF_INET keeps NCCL off IPv6.",
    ),
    "incompatible-peer": Advice(
        r"(?i)with family \d+|neither AF_INET|wrong (?:magic|type)|Invalid NCCL_COMM_ID|message truncated : received",
        "The peer answered, but with bytes this rank cannot read (an unknown address family, a wrong magic or "
        "message type, a truncated message): an incompatible peer, not a blocked network. Typical causes: another "
        "NCCL version or net plugin on that node, ranks of two jobs meeting on one port, or a stray connection.",
        "Check that every node runs the same NCCL and net plugin (the `NCCL version` and `NET/Plugin` lines), "
        "that no other job uses the same MASTER_PORT / NCCL_COMM_ID, and that nothing else (a port scanner, a "
        "health check) connects to the job's ports. A firewall does not cause this.",
    ),
    "no-route": Advice(
        r"(?i)no route to host|network is unreachable",
        "The kernel has no route to the address the peer advertised: that address belongs to an interface the "
        "other nodes cannot reach (a docker bridge, a management NIC, a second subnet).",
        "Set NCCL_SOCKET_IFNAME to the interface on the nodes' shared network, and check `ip route get <addr>` "
        "from the failing node.",
    ),
    "refused": Advice(
        r"(?i)connection refused",
        "Nothing listened at the peer's address and port: the peer had exited (crash, OOM kill) or had not started "
        "yet, or a firewall rejected the connection.",
        "Look at the peer's own log for how it ended; start all ranks together; open the ephemeral port range "
        "between nodes.",
    ),
    "timeout": Advice(
        r"(?i)timed? ?out|timeout|exceeded (?:retries|timeouts)",
        "Connection attempts got no answer at all: packets are dropped on the way (firewall, security group) or "
        "the peer is stalled.",
        "Check firewalls/security groups between the nodes for the whole ephemeral port range and that the "
        "advertised address is reachable (`nc -zv <addr> <port>`).",
    ),
}


def _role(rows: pl.DataFrame) -> str:
    """What the connection lines are as a whole (the diagnosis reads it): `root` when a connect failed
    outright or ran out of retries, `echo` when only a peer's going away is seen (or seen first), else
    `retry` (retries still running)."""
    classes = set(rows["cls"].to_list())
    if classes & {0, 1}:
        return "root"
    return "echo" if 3 in classes and (rows["cls"][0] == 3 or classes == {3}) else "retry"


def _cause(message: str) -> str:
    return next((k for k, a in ADVICE.items() if re.search(a.pattern, message)), "generic")


def _advice(message: str) -> tuple[str, str]:
    a = ADVICE.get(_cause(message), GENERIC)
    return a.why, a.fix


def _ib_rows(ctx: Context) -> pl.DataFrame:
    """IB completion/async WARNs, the same WARN text embedded in a torch/XLA `Last error` (a pasted error
    flattened onto one line), and OFI-plugin completion errors (the libfabric equivalent)."""
    cols = [*CITE, "family", "status", "message"]
    w = live_warnings(ctx).filter(pl.col("family").is_in(["ib_completion", "ib_async"])).select(cols)
    pat = IB_COMPLETION
    status = (
        pl.col("text").str.extract(r"(?:with error |status=[A-Z_]*\(?)(\d+)", 1).cast(pl.Int64, strict=False)
    )
    emb = cite(
        ctx.logs.torch.filter(pl.col("text").fill_null("").str.contains(pat)),
        ctx.logs.unknown.filter(pl.col("text").fill_null("").str.contains(pat)),
    )
    emb = emb.select(*CITE, family=pl.lit("ib_completion"), status=status, message=pl.col("text"))
    ofi_net = ctx.logs.network.filter(pl.col("detail").fill_null("").str.contains(r"completed with error"))
    ofi_warn = live_warnings(ctx).filter(
        pl.col("message").fill_null("").str.contains(r"NET/OFI.*completed with error")
    )
    ofi = pl.concat([ofi_net.select(*CITE, message=pl.col("detail")), ofi_warn.select(*CITE, "message")])
    ofi = ofi.select(
        *CITE, family=pl.lit("ofi_completion"), status=pl.lit(None, dtype=pl.Int64), message="message"
    )
    return pl.concat([w, emb, ofi], how="vertical_relaxed")


IB_COMPLETION = r"Got completion from peer|NET/IB ?: Got completion"  # also pasted into another message


@rule(
    "ib-error",
    "error",
    "InfiniBand/RoCE (or OFI) completion or async error",
    "errors",
    searches=(IB_COMPLETION,),
)
def ib_error(ctx: Context) -> Iterable[Finding]:
    """`NET/IB : Got completion from peer … with error|status=N … vendor err M` (also inside a torch `Last
    error`), `Got async event`, and aws-ofi-nccl `NET/OFI Request … completed with error`. Status decoded:
    12 retry exceeded, 4 local protection, 13 RNR retry, 10 remote access; 5 (flushed) is a consequence of an
    earlier error and ranks after every other status. Without timestamps, an async event that puts a QP, CQ,
    port or device in error (IB_FATAL_ASYNC) is the first failure of its host and ranks before completion
    errors (a peer's status 9/10/12 follows it); other async events rank after them. Error."""
    w = _ib_rows(ctx)
    if w.is_empty():
        return []
    fatal = (pl.col("family") == "ib_async") & pl.col("message").fill_null("").str.contains(IB_FATAL_ASYNC)
    rows = _ordered(
        w,
        pl.when(fatal)
        .then(0)
        .when(pl.col("status") == 5)
        .then(3)
        .when(pl.col("family") == "ib_completion")
        .then(1)
        .otherwise(2),
    )
    first = rows.row(0, named=True)
    status = first["status"]
    meaning = IB_STATUS.get(int(status), "see ibv_wc_status") if status is not None else None
    msg = pl.col("message").fill_null(pl.col("text"))
    if rows.filter((pl.col("family") != "ib_async") | ~msg.str.contains(IB_NOTICE_ASYNC)).is_empty():
        return [_ib_notice(rows, ctx)]
    if first["family"] == "ib_async":
        title = f"IB async event, first {where(rows.head(1), ctx)}: {first['message'] or first['text']}"[:160]
    elif first["family"] == "ofi_completion":
        title = f"Network completion error from the OFI plugin: {first['message']}"[:160]
    elif status is None:
        title = f"IB completion error, first {where(rows.head(1), ctx)}"
    else:
        title = f"IB completion error status {status} ({meaning}) first {where(rows.head(1), ctx)}"
    statuses = sorted({int(v) for v in w["status"].drop_nulls().to_list()})
    why, hint, cause = _ib_advice(str(first["message"] or first["text"] or ""), status)
    cited = rows.unique(["host", "pid", "status"], keep="first", maintain_order=True).head(8)
    return [
        make(
            "ib-error",
            "error",
            title,
            why,
            hint,
            cited,
            ctx,
            ordered=True,
            metrics={"statuses": statuses, "cause_class": cause},
        )
    ]


def _ib_notice(rows: pl.DataFrame, ctx: Context) -> Finding:
    """Only notification events (IB_NOTICE_ASYNC): said as info, with what they usually mean."""
    first = rows.row(0, named=True)
    return make(
        "ib-error",
        "info",
        f"IB port notification (not an error), first {where(rows.head(1), ctx)}: {first['message'] or first['text']}"[
            :160
        ],
        "libibverbs reports these asynchronous events as notifications (the subnet manager asking clients to "
        "re-register after it restarts, a new master SM, a migrated path); NCCL before 2.19 printed every async "
        "event as a WARN. No queue pair, completion queue, port or device went to error.",
        "Nothing to fix on its own. If the job failed or slowed at the same time, check the subnet manager's log "
        "and the port's counters (ibstat, perfquery): an SM restart can briefly reroute traffic.",
        rows.unique(["host", "pid"], keep="first", maintain_order=True).head(8),
        ctx,
        ordered=True,
        metrics={"statuses": [], "cause_class": "info"},
    )


IB_WHY = (
    "An RDMA work request failed: the queue pair goes to error state and NCCL aborts the communicator; "
    "status 5 (flushed) errors on other ranks are the fallout, the earliest non-5 error is the root."
)
IB_HINT = (
    "Find the node that reported first and check its links and HCA health (ibstat, ibv_devinfo, fi_info)."
)


def _ib_advice(message: str, status: int | None) -> tuple[str, str, str]:
    """(why, try, cause class) of the first IB error: the ib-completion family's variant its words (status,
    async event) pick (findings.meanings), else the general completion-error advice."""
    fam = M.by_id()["ib-completion"]
    text = message if status is None else f"{message} status={status}"
    found = fam.variant(text)
    if found is None:
        return IB_WHY, IB_HINT, "peer-failure" if status == 5 else "network"
    return found.why, found.fix, found.cause or fam.cause
