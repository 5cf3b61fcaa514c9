"""Align stage, rank map: communicators from Init lines and the (host, pid[, GPU]) → global rank table.

A process is `(host, pid)`; a process that drives several GPUs (ncclCommInitAll, nccl-tests `-g 8`)
holds one rank per GPU, told apart by the device of the thread that printed the line.
These tables are small (no per-collective rows), where eager Polars is several times faster than
building and optimising a lazy plan; the big COLL table is never touched here.
"""

from __future__ import annotations

import polars as pl

from ncclscope.frames import LogFrames

PROC = ["host", "pid"]
PART = ["host", "pid", "dev"]
_ORIGIN_COLS = ["path", "line", "host", "pid", "cuda_dev", "rank_hint"]


def transport() -> pl.Expr:
    """A connection's transport family (P2P, SHM, NET, COLLNET), whether the column holds the family or
    the whole printed text (`NET/IB/0/GDRDMA`, `direct shared memory`)."""
    t = pl.col("transport").fill_null("")
    return (
        pl.when(t.str.contains("shared memory"))
        .then(pl.lit("SHM"))
        .otherwise(t.str.extract(r"^([A-Z0-9]+)", 1))
    )


def _norm_host(df: pl.DataFrame) -> pl.DataFrame:
    # An empty host field (`:pid:tid [dev]`) and a missing one are the same key.
    return df.with_columns(pl.col("host").fill_null(""))


def init_rows(inits: pl.DataFrame) -> pl.DataFrame:
    """Init lines that name a rank, with `dev` (the rank's GPU) and a communicator key `comm_key`.

    The key is the commId when printed (propagated to the same process's lines for the same
    comm pointer); otherwise `n<nranks>#<k>`: the k-th communicator of that size the process
    (or its GPU) created, which lines up across processes that create communicators in one order.
    """
    # `Init timings` lines repeat a COMPLETE line's rank without its comm pointer: they add nothing.
    df = _norm_host(
        inits.filter(
            pl.col("rank").is_not_null()
            & pl.col("pid").is_not_null()
            & (pl.col("phase").fill_null("") != "timings")
        )
    )
    df = df.with_columns(dev=pl.coalesce("init_cuda_dev", "cuda_dev"))
    same_ptr = pl.col("comm_id").drop_nulls().first().over(["host", "pid", "comm_ptr"])
    same_rank = pl.col("comm_id").drop_nulls().first().over([*PART, "nranks", "rank"])
    df = df.with_columns(
        comm_id=pl.when(pl.col("comm_ptr").is_not_null())
        .then(pl.coalesce("comm_id", same_ptr))
        .otherwise(pl.coalesce("comm_id", same_rank))
    )
    first = pl.col("line").min().over([*PART, "nranks", "comm_ptr"])
    ordinal = (first.rank("dense").over([*PART, "nranks"]) - 1).cast(pl.Int64)
    synthetic = pl.concat_str(
        [pl.lit("n"), pl.col("nranks").cast(pl.Utf8).fill_null("?"), pl.lit("#"), ordinal.cast(pl.Utf8)]
    )
    return df.with_columns(comm_key=pl.coalesce("comm_id", synthetic))


def comm_table(inits: pl.DataFrame, torch: pl.DataFrame) -> pl.DataFrame:
    """One row per communicator key (schema COMMS, plus `_first` line for ordering)."""
    if inits.is_empty():
        return pl.DataFrame(
            schema={
                "comm_key": pl.Utf8,
                "comm_id": pl.Utf8,
                "nranks": pl.Int64,
                "nnodes": pl.Int64,
                "ranks_seen": pl.Int64,
                "complete": pl.Int64,
                "pg_name": pl.Utf8,
                "_first": pl.Int64,
            }
        )
    comms = inits.group_by("comm_key", maintain_order=True).agg(
        pl.col("comm_id").drop_nulls().first(),
        pl.col("nranks").max(),
        pl.col("nnodes").max(),
        pl.col("rank").n_unique().cast(pl.Int64).alias("ranks_seen"),
        pl.col("rank").filter(pl.col("phase") == "complete").n_unique().cast(pl.Int64).alias("complete"),
        pl.col("line").min().alias("_first"),
    )
    return comms.join(_pg_names(inits, torch), on="comm_key", how="left")


def _pg_names(inits: pl.DataFrame, torch: pl.DataFrame) -> pl.DataFrame:
    """PyTorch process-group name per communicator, through `created ncclComm_ 0x…` lines."""
    created = torch.filter((pl.col("kind") == "created_comm") & pl.col("comm_ptr").is_not_null())
    created = created.select("comm_ptr", pg_name=pl.coalesce("pg_name", "pg_desc", "pg_id"))
    ptrs = inits.filter(pl.col("comm_ptr").is_not_null()).select("comm_ptr", "comm_key").unique()
    return (
        ptrs.join(created.drop_nulls("pg_name"), on="comm_ptr")
        .group_by("comm_key")
        .agg(pl.col("pg_name").first())
    )


def world_key(comms: pl.DataFrame) -> tuple[str | None, int | None]:
    """The world communicator: the largest, then the most ranks seen, then the first printed."""
    if comms.is_empty():
        return None, None
    top = comms.sort(["nranks", "ranks_seen", "_first"], descending=[True, True, False], nulls_last=True)
    return top["comm_key"][0], top["nranks"][0]


def origin_rows(logs: LogFrames) -> pl.DataFrame:
    """Every prefixed line's (path, line, host, pid, cuda_dev, rank_hint), from the small tables."""
    tables = [
        logs.inits,
        logs.versions,
        logs.env,
        logs.network,
        logs.rings,
        logs.connections,
        logs.channels,
        logs.warnings,
        logs.trail,
        logs.unknown,
    ]
    parts = [t.select(_ORIGIN_COLS) for t in tables if t.height]
    if logs.streams.height:
        parts.append(
            logs.streams.select(
                "path",
                pl.col("first_line").alias("line"),
                "host",
                "pid",
                pl.lit(None, dtype=pl.Int64).alias("cuda_dev"),
                "rank_hint",
            )
        )
    if not parts:
        return _norm_host(pl.DataFrame(schema={c: logs.inits.schema[c] for c in _ORIGIN_COLS}))
    return _norm_host(pl.concat(parts, how="vertical_relaxed").filter(pl.col("pid").is_not_null()))


def _init_evidence(inits: pl.DataFrame, comms: pl.DataFrame) -> pl.DataFrame:
    """Per (host, pid, dev): its rank in the world communicator (or in a world-sized one)."""
    wkey, wn = world_key(comms)
    ordered = inits.sort("line")
    if wkey is None:
        return (
            ordered.select(*PART)
            .clear()
            .with_columns(
                comm_ids=pl.lit(None, dtype=pl.List(pl.Utf8)),
                init_path=pl.lit(None, dtype=pl.Utf8),
                rank_init=pl.lit(None, dtype=pl.Int64),
            )
        )
    in_world = (
        ordered.filter(pl.col("comm_key") == wkey)
        .group_by(PART)
        .agg(pl.col("rank").first().alias("rank_world"))
    )
    world_sized = (
        ordered.filter(pl.col("nranks").eq_missing(wn))
        .group_by(PART)
        .agg(pl.col("rank").first().alias("rank_alt"))
    )
    ids = ordered.group_by(PART, maintain_order=True).agg(
        pl.col("comm_id").drop_nulls().unique(maintain_order=True).alias("comm_ids"),
        pl.col("path").first().alias("init_path"),
    )
    out = ids.join(in_world, on=PART, how="left", nulls_equal=True)
    out = out.join(world_sized, on=PART, how="left", nulls_equal=True)
    return out.select(
        *PART, "comm_ids", "init_path", pl.coalesce("rank_world", "rank_alt").alias("rank_init")
    )


def _peer_evidence(logs: LogFrames) -> pl.DataFrame:
    """Per (host, pid, dev): the rank that connection, ring and tree lines say printed them.

    A `[receive]` line names the printing rank as destination, every other line as source. Lines of
    sub-communicators give smaller ranks (a group rank never exceeds the global one), so take the max.
    """
    conn = logs.connections.select(
        *PROC,
        pl.col("cuda_dev").alias("dev"),
        pl.when(pl.col("direction") == "receive").then("dst_rank").otherwise("src_rank").alias("me"),
    )
    rings = logs.rings.select(
        *PROC,
        pl.col("cuda_dev").alias("dev"),
        pl.when(pl.col("kind") == "ring_neighbors")
        .then(pl.col("order").list.get(1, null_on_oob=True))
        .when(pl.col("kind") == "tree")
        .then("tree_rank")
        .alias("me"),
    )
    both = _norm_host(pl.concat([conn, rings], how="vertical_relaxed"))
    both = both.filter(pl.col("pid").is_not_null() & pl.col("me").is_not_null() & (pl.col("me") >= 0))
    return both.group_by(PART).agg(pl.col("me").max().alias("rank_peer"), pl.len().alias("n_peer"))


def _hints(origin: pl.DataFrame) -> pl.DataFrame:
    """Launcher rank tags per process, dropped when one tag value shows up on several hosts
    (then they are local ranks, as with torchrun's `[default3]:`, not global ones)."""
    tagged = origin.filter(pl.col("rank_hint").is_not_null())
    hosts_per_tag = tagged.group_by("rank_hint").agg(pl.col("host").n_unique().alias("n"))
    if hosts_per_tag.height and hosts_per_tag["n"].max() > 1:  # type: ignore[operator]
        tagged = tagged.clear()
    return tagged.sort("line", "path").group_by(PROC).agg(pl.col("rank_hint").first().alias("rank_hint"))


def _proc_defaults(origin: pl.DataFrame) -> pl.DataFrame:
    """Per process: the file it first appears in and its most printed CUDA device."""
    first = (
        origin.sort(["path", "line"])
        .group_by(PROC, maintain_order=True)
        .agg(pl.col("path").first().alias("proc_path"))
    )
    devs = origin.drop_nulls("cuda_dev").group_by([*PROC, "cuda_dev"]).agg(pl.len().alias("n"))
    mode = (
        devs.sort(["n", "cuda_dev"], descending=[True, False])
        .group_by(PROC, maintain_order=True)
        .agg(pl.col("cuda_dev").first().alias("dev_mode"))
    )
    return first.join(mode, on=PROC, how="left")


def participants(
    logs: LogFrames, inits: pl.DataFrame, comms: pl.DataFrame, origin: pl.DataFrame
) -> pl.DataFrame:
    """One row per rank-holding participant: host, pid, cuda_dev, path, rank, comm_ids."""
    init_ev = _init_evidence(inits, comms)
    peer_ev = _peer_evidence(logs)
    keys = pl.concat([init_ev.select(PART), peer_ev.select(PART)]).unique()
    cand = (
        keys.join(init_ev, on=PART, how="left", nulls_equal=True)
        .join(peer_ev, on=PART, how="left", nulls_equal=True)
        .with_columns(
            rank=pl.coalesce("rank_init", "rank_peer"),
            weight=pl.col("rank_init").is_not_null().cast(pl.Int64) * 1_000_000
            + pl.col("n_peer").fill_null(0),
        )
    )
    multi = cand.group_by(PROC).agg(pl.col("rank").drop_nulls().n_unique().alias("n_ranks"))
    cand = cand.join(multi, on=PROC)
    # Rows of one process differ by device: the heaviest evidence wins, the lowest device breaks a tie
    # (a bare weight sort is not stable, and `keys` comes in no set order: the pick changed per run).
    best = [pl.col("weight"), pl.col("dev")]
    several = (
        cand.filter((pl.col("n_ranks") > 1) & pl.col("rank").is_not_null())
        .sort(best, descending=[True, False], nulls_last=True)
        .unique([*PROC, "rank"], keep="first", maintain_order=True)
    )
    single = (
        cand.filter(pl.col("n_ranks") <= 1)
        .sort(best, descending=[True, False], nulls_last=True)
        .group_by(PROC, maintain_order=True)
        .agg(
            pl.col("dev").first(),
            pl.col("rank").drop_nulls().first(),
            pl.col("comm_ids").drop_nulls().first(),
            pl.col("init_path").drop_nulls().first(),
        )
    )
    cols = [*PART, "rank", "comm_ids", "init_path"]
    parts = pl.concat([several.select(cols), single.select(cols)], how="vertical_relaxed")
    procs = origin.select(PROC).unique()
    bare = procs.join(parts.select(PROC), on=PROC, how="anti")
    parts = pl.concat([parts, bare], how="diagonal_relaxed")
    defaults = _proc_defaults(origin)
    hints = _hints(origin)
    out = parts.join(defaults, on=PROC, how="left").join(hints, on=PROC, how="left")
    single_proc = pl.len().over(PROC) == 1
    return out.select(
        pl.when(single_proc).then(pl.coalesce("rank", "rank_hint")).otherwise("rank").alias("rank"),
        *PROC,
        pl.coalesce("dev", pl.when(single_proc).then("dev_mode")).alias("cuda_dev"),
        pl.coalesce("init_path", "proc_path").alias("path"),
        pl.col("comm_ids").fill_null(pl.lit([], dtype=pl.List(pl.Utf8))),
    )
