"""Align stage, job facts: what the evidence says about the job, derived once, each with how and how sure.

Rules used to assume things about the job (one host per node, communicator-local ranks equal to global
ones, opCount growing, an excerpt's end being the job's end). `JobFacts` states each such fact once, with
the lines it was inferred from (`how`) and a confidence: `proven` (NCCL printed it), `likely` (inferred
from indirect evidence) or `unknown` (then `value` is None and a rule must speak conditionally).

Precedence (each with its reason):
- nodes: NCCL's own `nNodes` (Init/comm lines) beats the host names: pods of one machine carry different
  host names while NCCL counts one node (k8s pods, `NCCL_HOSTID`), and names glued to an nccl-tests row
  (`-1node-00`) are no hosts at all.
- nccl-tests' device list (`#  Rank  0 Group  0 Pid … on <host> device …`, one row per rank of the test,
  gathered by rank 0: src/common.cu of NVIDIA/nccl-tests) comes next when it lists every rank 0..n-1 once:
  its host names are the test's nodes (a one-host test with a bridge interface never leaves the host).
- a NET channel alone is no proof of several nodes (NCCL also uses NET between local GPUs when P2P and
  SHM are off): `likely`.
- an input is `whole` only when it shows the job's start (a version banner or Init START) and its end
  (teardown, the application's success marker or nccl-tests' `# Avg bus bandwidth` footer).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import polars as pl

from ncclscope.align.facts_inputs import (
    UNKNOWN,
    Fact,
    InputFact,
    inputs_of,
    jobs_of,
    launcher_of,
    library_of,
    opcount_of,
)
from ncclscope.frames import LogFrames

GLUED_TAIL = frozenset("0123456789.+)|")  # how a table column or a printed number ends


# Settings that change the data path, each with what it changes (the health summary lists those set; the
# bandwidth rule names those in LOWERS_BANDWIDTH as the cause of a slow run).
DATA_PATH_SETTINGS = {
    "NCCL_P2P_LEVEL": "how far apart two GPUs may be and still use P2P (LOC: never)",
    "NCCL_P2P_DISABLE": "1 turns P2P off: intra-node traffic goes through SHM or the NIC",
    "NCCL_SHM_DISABLE": "1 turns shared memory off",
    "NCCL_IB_DISABLE": "1 turns IB/RoCE off: inter-node traffic on TCP sockets",
    "NCCL_NET": "forces the network transport",
    "NCCL_NET_GDR_LEVEL": "how close GPU and NIC must be for GPUDirect RDMA",
    "NCCL_NET_GDR_READ": "GPUDirect RDMA for sends",
    "NCCL_PXN_DISABLE": "1 turns PXN (send through a peer GPU's NIC) off",
    "NCCL_TOPO_FILE": "replaces the detected topology",
    "NCCL_GRAPH_FILE": "replaces the searched rings/trees",
    "NCCL_MIN_NCHANNELS": "lower bound on channels",
    "NCCL_MAX_NCHANNELS": "upper bound on channels (fewer channels, less bandwidth)",
    "NCCL_ALGO": "restricts the algorithms",
    "NCCL_PROTO": "restricts the protocols",
    "NCCL_SOCKET_IFNAME": "the interface for bootstrap and socket traffic",
    "NCCL_IB_HCA": "the HCAs NCCL may use",
    "NCCL_CROSS_NIC": "whether rings may cross NICs",
    "NCCL_NVLS_ENABLE": "NVLink SHARP",
    "NCCL_COLLNET_ENABLE": "CollNet/SHARP",
}
# Those that can only take bandwidth away from what NCCL would pick on its own.
LOWERS_BANDWIDTH = frozenset(
    {
        "NCCL_P2P_LEVEL",
        "NCCL_P2P_DISABLE",
        "NCCL_SHM_DISABLE",
        "NCCL_IB_DISABLE",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_TOPO_FILE",
        "NCCL_GRAPH_FILE",
        "NCCL_MAX_NCHANNELS",
        "NCCL_ALGO",
        "NCCL_PROTO",
    }
)


@dataclass(frozen=True)
class CommFact:
    """One communicator: its key (commId or `n<N>#k`), size, nodes, the hosts and global ranks of its members.
    `global_ranks`: its comm-local ranks are the world ranks (the world itself, or a prefix of it)."""

    key: str
    comm_id: str | None
    nranks: int | None
    nnodes: int | None
    ranks_seen: int
    complete: int
    hosts: tuple[str, ...]
    global_ranks: bool


@dataclass(frozen=True)
class JobFacts:
    """Facts about the job every rule reads instead of re-deriving them (see the module docstring)."""

    hosts: tuple[str, ...] = ()
    phantom_hosts: tuple[str, ...] = ()
    nodes: Fact = UNKNOWN
    multi_node: Fact = UNKNOWN
    world_size: Fact = UNKNOWN
    launcher: Fact = UNKNOWN
    library: Fact = UNKNOWN
    opcount_sequence: Fact = UNKNOWN
    communicators: tuple[CommFact, ...] = ()
    inputs: tuple[InputFact, ...] = field(default=())
    jobs: tuple[tuple[str, ...], ...] = ()  # input paths per job, when the inputs hold several (else empty)
    several_jobs: Fact = UNKNOWN

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def comm(self, key: str) -> CommFact | None:
        return next((c for c in self.communicators if c.key == key), None)

    def job_of(self) -> pl.Expr:
        """The job index of each row's `path` (0 for every row when the inputs hold one job)."""
        expr = pl.lit(0)
        for i, paths in enumerate(self.jobs):
            expr = pl.when(pl.col("path").is_in(list(paths))).then(pl.lit(i)).otherwise(expr)
        return expr.alias("_job")


def real_hosts(procs: pl.DataFrame) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(hosts, phantoms) from (host, pid) rows. A phantom is another host's name with text glued before it
    (`-1node-00` beside `node-00`: an nccl-tests row's last column run into the next line's prefix) whose
    pids are all that host's pids, the glued text ending as a table column does (a digit, `.`, `+`, `)`), not
    as a host name's own part (`job-` of `job-worker-0` beside `worker-0`)."""
    rows = procs.filter(pl.col("host").fill_null("") != "").select("host", "pid").unique()
    pids: dict[str, set[int]] = {}
    for h, p in rows.iter_rows():
        pids.setdefault(h, set()).add(p)
    phantom = {
        h
        for h in pids
        for g in pids
        if g != h and h.endswith(g) and pids[h] <= pids[g] and h[-len(g) - 1] in GLUED_TAIL
    }
    return tuple(sorted(set(pids) - phantom)), tuple(sorted(phantom))


def derive(
    logs: LogFrames,
    ranks: pl.DataFrame,
    comms: pl.DataFrame,
    inits: pl.DataFrame,
    devices: pl.DataFrame | None = None,
) -> JobFacts:
    """Every fact of one analysis, from the log tables, the rank map (`inits`: `rankmap.init_rows`) and
    nccl-tests' device lists (`devices`: schema.NCCLTESTS_DEVICES, when the input holds any)."""
    # every (host, pid) that printed a prefixed line: the rank map has dropped the phantoms already
    procs = [t.select("host", "pid") for t in (ranks, inits, logs.streams) if t.height]
    hosts, phantom = real_hosts(pl.concat(procs, how="vertical_relaxed")) if procs else ((), ())
    real = {h: next(g for g in hosts if h.endswith(g)) for h in phantom if any(h.endswith(g) for g in hosts)}
    communicators = _communicators(comms, inits.with_columns(pl.col("host").replace(real)))
    nodes, multi = _nodes(logs, hosts, communicators, devices)
    jobs, several = jobs_of(inits)
    return JobFacts(
        hosts=hosts,
        phantom_hosts=phantom,
        nodes=nodes,
        multi_node=multi,
        world_size=_world_size(communicators, ranks),
        launcher=launcher_of(logs),
        library=library_of(logs),
        opcount_sequence=opcount_of(logs),
        communicators=communicators,
        inputs=inputs_of(logs),
        jobs=jobs,
        several_jobs=several,
    )


def _communicators(comms: pl.DataFrame, inits: pl.DataFrame) -> tuple[CommFact, ...]:
    if comms.is_empty():
        return ()
    members = inits.group_by("comm_key").agg(
        pl.col("host").fill_null("").unique().sort().alias("hosts"),
        pl.col("rank").drop_nulls().unique().sort().alias("ranks"),
    )
    top = int(comms["nranks"].max() or 0)  # type: ignore[arg-type]
    out = []
    for row in comms.join(members, on="comm_key", how="left").sort("comm_key").iter_rows(named=True):
        n = row["nranks"]
        out.append(
            CommFact(
                key=row["comm_key"],
                comm_id=row["comm_id"],
                nranks=n,
                nnodes=row["nnodes"],
                ranks_seen=int(row["ranks_seen"] or 0),
                complete=int(row["complete"] or 0),
                hosts=tuple(h for h in (row["hosts"] or []) if h),
                global_ranks=n is not None and n == top,
            )
        )
    return tuple(out)


def _nodes(
    logs: LogFrames, hosts: tuple[str, ...], comms: tuple[CommFact, ...], devices: pl.DataFrame | None
) -> tuple[Fact, Fact]:
    """(node count, spans nodes); NCCL's nNodes first, then nccl-tests' whole device list, then the host
    names, then indirect evidence."""
    world = max(comms, key=lambda c: (c.nranks or 0, c.ranks_seen), default=None)
    nn = [c.nnodes for c in comms if c.nnodes is not None]
    if world is not None and world.nnodes is not None:
        how = f"NCCL prints nNodes {world.nnodes} for the {world.nranks}-rank communicator"
        return Fact(world.nnodes, how), Fact(world.nnodes > 1, how)
    if nn and max(nn) > 1:
        how = f"NCCL prints nNodes {max(nn)}"
        return Fact(max(nn), how, "likely"), Fact(True, how)
    inits = logs.inits
    if inits.height and inits.filter(pl.col("nranks") > pl.col("local_ranks")).height:
        return UNKNOWN, Fact(True, "Init lines say nRanks > localRanks")
    listed = device_list_hosts(devices)
    if listed:
        how = f"nccl-tests lists every rank of its run on {len(listed)} host(s): {', '.join(listed[:4])}"
        return Fact(len(listed), how), Fact(len(listed) > 1, how)
    if len(hosts) > 1:
        how = f"{len(hosts)} host names print NCCL lines"
        return Fact(len(hosts), how, "likely"), Fact(True, how, "likely")
    if (
        world is not None
        and len(hosts) == 1
        and world.nranks is not None
        and world.ranks_seen >= world.nranks
    ):
        how = f"all {world.nranks} ranks of the largest communicator print from one host"
        return Fact(1, how), Fact(False, how)
    from ncclscope.align.rankmap import transport

    if logs.connections.filter(transport() == "NET").height:
        how = "channels run over NET (NCCL uses the network between nodes, or locally when P2P/SHM are off)"
        return UNKNOWN, Fact(True, how, "likely")
    if nn:
        return Fact(1, "NCCL prints nNodes 1", "likely"), Fact(False, "NCCL prints nNodes 1", "likely")
    how = f"{len(hosts)} host visible; the lines do not say how many nodes the job spans"
    return UNKNOWN, Fact(None, how, "unknown")


def device_list_hosts(devices: pl.DataFrame | None) -> tuple[str, ...]:
    """The hosts of nccl-tests' device lists that name each rank 0..n-1 exactly once (one list per input
    and run); empty when no list is whole or one names no host."""
    if devices is None or devices.is_empty():
        return ()
    hosts: set[str] = set()
    for _key, rows in devices.group_by(["path", "run"], maintain_order=True):
        got = sorted(r for r in rows["rank"].to_list() if r is not None)
        if got != list(range(len(got))) or not got or len(got) != rows.height:
            continue
        names = [h for h in rows["host"].to_list() if h]
        if len(names) != rows.height:
            return ()
        hosts.update(names)
    return tuple(sorted(hosts))


def _world_size(comms: tuple[CommFact, ...], ranks: pl.DataFrame) -> Fact:
    sizes = [c.nranks for c in comms if c.nranks is not None]
    if sizes:
        return Fact(max(sizes), "the largest communicator's nranks in its Init lines")
    seen = ranks["rank"].drop_nulls().n_unique() if ranks.height else 0
    if seen:
        return Fact(seen, f"{seen} distinct ranks in the lines (at least)", "likely")
    return UNKNOWN
