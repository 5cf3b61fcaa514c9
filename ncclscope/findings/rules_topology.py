"""Findings stage, communicator rules: ring/channel consistency, split worlds, missing ranks, stuck init.

Ring and channel lines carry no communicator id; each is attributed to the communicator whose Init
line the same thread prints next (COMPLETE) or last (START / `comm … nRanks`). Reference: real-logs.md
§5 R14 and nccl-messages.md §2.5.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import cite, first_per, make, norm_host, warnings_matching
from ncclscope.records import Finding, Severity

THREAD = ["path", "host", "pid", "tid"]


def with_comm(df: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Add `comm_key` to rows of a per-thread table (rings, channels) from the Init lines around them."""
    inits = ctx.init_rows
    d = norm_host(df).with_row_index("_i").sort("line")
    ends = inits.filter(pl.col("phase") == "complete").select(*THREAD, "line", "comm_key").sort("line")
    starts = inits.filter(pl.col("phase") != "complete").select(*THREAD, "line", "comm_key").sort("line")
    fwd = d.join_asof(ends, on="line", by=THREAD, strategy="forward", check_sortedness=False)
    back = d.select("_i", "line", *THREAD).join_asof(
        starts, on="line", by=THREAD, strategy="backward", check_sortedness=False
    )
    out = fwd.join(back.select("_i", pl.col("comm_key").alias("_back")), on="_i", how="left")
    out = out.with_columns(comm_key=pl.coalesce("comm_key", "_back")).drop("_back")
    keys = out["comm_key"].drop_nulls().unique()
    if keys.len() <= 1:  # one communicator (or none printed): every line belongs to it
        out = out.with_columns(comm_key=pl.lit(keys[0] if keys.len() else "job"))
    return out.sort("_i").drop("_i")


def _order_str(col: str = "order") -> pl.Expr:
    return pl.col(col).cast(pl.List(pl.Utf8)).list.join(" ")


@rule("topology-mismatch", "error", "Ranks of one communicator disagree on rings or channels", "config")
def topology_mismatch(ctx: Context) -> Iterable[Finding]:
    """Within one communicator: ring order (`Channel NN/MM : 0 1 …`) or the channel count MM printed
    differently by two processes; a ring order that visits a rank twice; ring neighbours that contradict
    (`Ring NN : a -> b -> c` on b says next c, c says prev ≠ b) — error. NCCL's `ring … does not loop back`
    WARN — error. `N coll channels` summary differing across ranks — warning."""
    out: list[Finding] = []
    rings = with_comm(ctx.logs.rings, ctx) if ctx.logs.rings.height else None
    if rings is not None:
        orders = rings.filter((pl.col("kind") == "ring_order") & pl.col("order").is_not_null()).with_columns(
            o=_order_str()
        )
        out += _order_checks(orders, ctx)
        out += _neighbour_checks(rings.filter(pl.col("kind") == "ring_neighbors"), ctx)
    ring_warn = ctx.logs.warnings.filter((pl.col("family") == "ring") & ~pl.col("benign").fill_null(False))
    if ring_warn.height:
        out.append(_f("error", "NCCL reports a broken ring", ring_warn, ctx))
    summary = ctx.logs.channels.filter((pl.col("kind") == "summary") & pl.col("coll_channels").is_not_null())
    if summary.height:
        s = with_comm(summary, ctx)
        bad = (
            s.group_by("comm_key").agg(pl.col("coll_channels").n_unique().alias("n")).filter(pl.col("n") > 1)
        )
        rows = s.join(bad.select("comm_key"), on="comm_key")
        if rows.height:
            out.append(
                _f(
                    "warning",
                    "Ranks of one communicator report different channel counts",
                    first_per(rows, ["comm_key", "coll_channels"]),
                    ctx,
                )
            )
    return out


def _f(sev: Severity, title: str, rows: pl.DataFrame, ctx: Context) -> Finding:
    return make(
        "topology-mismatch",
        sev,
        title,
        "All ranks of a communicator must build the same rings and channel count; when they do not, the "
        "ranks wait on peers that never send and the first collective hangs. It means the processes "
        "disagree on the topology: different NCCL versions or settings (NCCL_MIN/MAX_NCHANNELS, "
        "NCCL_ALGO, topology/graph files) or a launcher that mixed up ranks.",
        "Run every rank with the same NCCL build and the same NCCL_* environment; compare the ring lines "
        "(NCCL_DEBUG_SUBSYS=INIT,GRAPH) between the disagreeing ranks.",
        rows,
        ctx,
    )


def _order_checks(orders: pl.DataFrame, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    if orders.is_empty():
        return out
    by_chan = (
        orders.group_by(["comm_key", "channel"])
        .agg(pl.col("o").n_unique().alias("n"))
        .filter(pl.col("n") > 1)
    )
    rows = orders.join(by_chan.select("comm_key", "channel"), on=["comm_key", "channel"])
    if rows.height:
        out.append(
            _f(
                "error",
                "Ranks print different ring orders for the same channel",
                first_per(rows, ["comm_key", "channel", "o"]),
                ctx,
            )
        )
    nch = orders.drop_nulls("nchannels").group_by("comm_key").agg(pl.col("nchannels").n_unique().alias("n"))
    rows = orders.join(nch.filter(pl.col("n") > 1).select("comm_key"), on="comm_key")
    if rows.height:
        out.append(
            _f(
                "error",
                "Ranks of one communicator use different channel counts",
                first_per(rows, ["comm_key", "nchannels"]),
                ctx,
            )
        )
    dup = orders.filter(pl.col("order").list.n_unique() < pl.col("order").list.len())
    if dup.height:
        out.append(
            _f("error", "A ring visits the same rank twice (it does not close over all ranks)", dup, ctx)
        )
    return out


def _neighbour_checks(nb: pl.DataFrame, ctx: Context) -> list[Finding]:
    if nb.is_empty():
        return []
    nb = nb.filter(pl.col("order").list.len() == 3).with_columns(
        prev=pl.col("order").list.get(0), me=pl.col("order").list.get(1), nxt=pl.col("order").list.get(2)
    )
    nb = nb.filter(pl.col("me") >= 0)
    peer = nb.select(
        "comm_key",
        "channel",
        pl.col("me").alias("nxt"),
        pl.col("prev").alias("peer_prev"),
        pl.col("path").alias("p2"),
        pl.col("line").alias("l2"),
    )
    # several lines name one ring position: the first in file order is the evidence (keep="any" varied)
    peer = peer.sort("p2", "l2", nulls_last=True, maintain_order=True).unique(
        ["comm_key", "channel", "nxt"], keep="first", maintain_order=True
    )
    bad = nb.join(peer, on=["comm_key", "channel", "nxt"]).filter(pl.col("peer_prev") != pl.col("me"))
    if bad.is_empty():
        return []
    other = nb.join(bad.select(pl.col("p2").alias("path"), pl.col("l2").alias("line")), on=["path", "line"])
    return [
        _f("error", "Ring neighbours contradict each other: a ring does not close", cite(bad, other), ctx)
    ]


@rule("split-world", "error", "Nodes formed separate communicators instead of one job", "config")
def split_world(ctx: Context) -> Iterable[Finding]:
    """Reasons about the communicators that span hosts, not every communicator a framework creates
    (Megatron/apex build node-local groups of nRanks = GPUs per node inside a larger world). Error when
    ≥2 hosts print Init lines and no communicator spans two of them (communicators told apart only by their
    order whose lines say `nNodes 1` span one node whatever the hosts; one commId on two hosts spans them,
    `nNodes 1` then meaning pods of one machine) (every node formed its own world:
    wrong num_nodes/world size, nccl-tests without MPI); when one communicator (same commId) has a rank
    claimed on two hosts; or on NCCL's `Bootstrap Root : … already checked in / mismatch in rank count`."""
    root = warnings_matching(ctx, r"(?i)already checked in|mismatch in rank count|Bootstrap Root : mismatch")
    if ctx.logs.inits.is_empty() and root.is_empty():
        return []
    inits = ctx.init_rows.filter((pl.col("nranks") >= 2) & (pl.col("host") != ""))
    shape = _comm_hosts(inits)
    # NCCL's own `nNodes 1` overrides what the hosts suggest: such lines are separate communicators
    # (for communicators keyed by order, `n<N>#k`); one commId on two hosts is one communicator whatever nNodes
    # says (with `nNodes 1` the hosts are pods or containers of one machine)
    spanning = shape.filter(
        (pl.col("n_hosts") >= 2)
        & (pl.col("pairs") == pl.col("ranks_seen"))
        & (pl.col("nnodes").is_null() | (pl.col("nnodes") > 1) | pl.col("comm_id").is_not_null())
    )
    claimed = shape.filter(pl.col("comm_id").is_not_null() & (pl.col("pairs") > pl.col("ranks_seen")))
    dup = _claimed_twice(inits.join(claimed.select("comm_key"), on="comm_key"))
    hosts = inits["host"].n_unique()
    separate = inits.clear() if spanning.height or hosts < 2 else first_per(inits, ["host", "comm_key"])
    rows = cite(dup, separate, root)
    if rows.is_empty():
        return []
    largest = int(shape.select(pl.col("nranks").max()).item() or 0) if shape.height else 0
    if separate.height:
        title = (
            f"No communicator spans the job: {hosts} hosts each formed their own (largest: {largest} ranks, "
            "inferred from the Init lines, all on one host)"
        )
    elif dup.height:
        title = "Two processes claim the same rank of one communicator on different hosts"
    else:
        title = "NCCL's bootstrap root saw ranks of two different jobs"
    return [
        make(
            "split-world",
            "error",
            title,
            "Each node created its own communicator of local size (or two processes claimed the same rank), "
            "so ranks never meet: the job hangs at init or every node trains alone.",
            "Give every process a unique global rank and the same world size: check num_nodes/--nnodes, "
            "srun --ntasks-per-node, MASTER_ADDR/PORT; build nccl-tests with MPI=1 and launch with mpirun.",
            rows,
            ctx,
            metrics={"hosts": hosts, "largest_comm_nranks": largest, "spanning_comms": spanning.height},
        )
    ]


def _comm_hosts(inits: pl.DataFrame) -> pl.DataFrame:
    """Per communicator: size, ranks seen, hosts, and distinct (rank, host) pairs (> ranks: a rank on 2 hosts)."""
    return inits.group_by("comm_key").agg(
        pl.col("comm_id").drop_nulls().first(),
        pl.col("nranks").max(),
        pl.col("nnodes").max(),
        pl.col("rank").n_unique().alias("ranks_seen"),
        pl.col("host").n_unique().alias("n_hosts"),
        pl.struct("rank", "host").n_unique().alias("pairs"),
    )


def _claimed_twice(inits: pl.DataFrame) -> pl.DataFrame:
    twice = (
        inits.group_by("comm_key", "rank").agg(pl.col("host").n_unique().alias("n")).filter(pl.col("n") > 1)
    )
    return first_per(inits.join(twice.select("comm_key", "rank"), on=["comm_key", "rank"]), ["host", "rank"])


def _comms(inits: pl.DataFrame) -> pl.DataFrame:
    return inits.group_by("comm_key").agg(
        pl.col("nranks").max(),
        pl.col("rank").n_unique().alias("ranks_seen"),
        pl.col("line").min().alias("_first"),
    )


@rule("missing-ranks", "warning", "Fewer ranks in the evidence than the communicator has", "config")
def missing_ranks(ctx: Context) -> Iterable[Finding]:
    """The world communicator says nRanks N but only k < N ranks appear. A pasted excerpt legitimately
    shows few ranks, so this is info; it is a warning when the input is several per-process files
    (then the missing ranks' logs are what is needed, often the rank that failed first)."""
    comms = ctx.comms
    if comms.is_empty():
        return []
    top = comms.sort(["nranks", "ranks_seen"], descending=True, nulls_last=True).row(0, named=True)
    n = top["nranks"]
    seen = max(int(top["ranks_seen"] or 0), ctx.ranks["rank"].drop_nulls().n_unique())
    if n is None or seen >= n:
        return []
    files = ctx.ranks["path"].drop_nulls().n_unique()
    sev: Severity = "warning" if files > 1 else "info"
    inits = ctx.init_rows.filter(pl.col("comm_key") == top["comm_key"])
    return [
        make(
            "missing-ranks",
            sev,
            f"Only {seen} of {n} ranks appear in the evidence",
            "Findings can only speak for the ranks whose lines were given; in a hang or crash the rank that "
            "failed first is often the one whose log is missing.",
            "Collect every rank's log (NCCL_DEBUG_FILE=/path/nccl.%h.%p) and pass them all.",
            first_per(inits, ["host"]),
            ctx,
            metrics={"nranks": n, "ranks_seen": seen},
        )
    ]


@rule(
    "lightning-world",
    "error",
    "PyTorch Lightning started a different world than NCCL or the launcher",
    "config",
)
def lightning_world(ctx: Context) -> Iterable[Finding]:
    """Lightning prints the world it believes in (`initializing ddp: GLOBAL_RANK: r, MEMBER: m/n`). Error when
    one GLOBAL_RANK is printed by two processes (or twice in one launcher log: Lightning prints it once per
    process), or when n differs from the world communicator's nRanks in the NCCL lines: a wrong num_nodes /
    devices / --ntasks-per-node. Warning when fewer distinct GLOBAL_RANKs than n appear and the inputs hold
    the whole launcher output (the other node's processes never started or started another job)."""
    lw = ctx.logs.torch.filter(pl.col("kind") == "lightning_world")
    if lw.is_empty():
        return []
    out: list[Finding] = []
    # (a GLOBAL_RANK beyond 64 bits is null: no rank to compare)
    twice = (
        lw.filter(pl.col("rank").is_not_null())
        .group_by("rank")
        .agg(pl.len().alias("n"))
        .filter(pl.col("n") > 1)
    )
    sizes = sorted({int(v) for v in lw["world_size"].drop_nulls().to_list()})
    nccl_n = int(ctx.comms.select(pl.col("nranks").max()).item() or 0) if ctx.comms.height else 0
    if twice.height:
        rows = lw.join(twice.select("rank"), on="rank")
        out.append(
            make(
                "lightning-world",
                "error",
                f"{twice.height} GLOBAL_RANK(s) claimed by more than one process "
                f"(e.g. rank {int(twice.select(pl.col('rank').min()).item())})",
                "Two processes that both believe they are global rank r never form one world: the rendezvous "
                "waits for ranks nobody holds and the job hangs at init (or NCCL reports a duplicate GPU).",
                "Make the launcher and Lightning agree: Trainer(num_nodes=…, devices=…) must equal the nodes and "
                "tasks per node the job gets (srun --ntasks-per-node=<GPUs per node>, torchrun --nnodes).",
                rows,
                ctx,
                metrics={"duplicated_ranks": sorted(twice["rank"].to_list())},
            )
        )
    if nccl_n and any(s != nccl_n for s in sizes):
        out.append(
            make(
                "lightning-world",
                "error",
                f"Lightning's world ({'/'.join(map(str, sizes))} members) "
                f"differs from NCCL's ({nccl_n} ranks)",
                "The framework and the communicator disagree on how many ranks exist, so some ranks wait "
                "for peers that are in another world.",
                "Set num_nodes and devices to what the launcher really starts.",
                first_per(lw, ["world_size"]),
                ctx,
                metrics={"lightning_world": sizes, "nccl_nranks": nccl_n},
            )
        )
    seen = lw["rank"].n_unique()
    if not twice.height and len(sizes) == 1 and seen < sizes[0]:
        out.append(
            make(
                "lightning-world",
                "warning",
                f"Only {seen} of {sizes[0]} Lightning members initialised",
                "Lightning expects more members than printed their init line: the processes of another node "
                "never started, started late, or run with other settings; init then hangs.",
                "Check that every node runs the job with the same num_nodes/devices, and collect every "
                "node's output.",
                lw,
                ctx,
                metrics={"members_seen": seen, "world_size": sizes[0]},
            )
        )
    return out
