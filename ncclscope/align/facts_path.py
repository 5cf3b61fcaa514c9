"""Align stage, each communicator's data path: transports per channel, GDR, PXN, channels, NICs, algorithms.

NCCL's channel, `Connected all rings, use ring PXN x GDR y`, `N coll channels …`, GRAPH `Pattern` and
TUNING `AllReduce: 4096 Bytes -> Algo RING proto LL …` lines carry no communicator. Each is given to the
communicator whose init or collective line its process printed last before it (`join_asof` on the line
within one file and pid): NCCL connects a communicator's rings during its init, or at its first
collective (runtime connect, 2.12+), and tunes each collective right after logging it. Communicators
initialised concurrently by threads of one process can be mixed up; the health section says
"per communicator, as attributed".

Knowledge (each with its reason):
- `ALGOS`, `PROTOS`: the indices NCCL 2.20-2.23 and RCCL print in `-> Algo %d proto %d` (NCCL_ALGO_* and
  NCCL_PROTO_* in nccl_common.h/device.h; 2.24+ print the names).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ncclscope.align.facts_bw import ring_plans
from ncclscope.align.rankmap import transport
from ncclscope.frames import LogFrames

ALGOS = {
    "0": "TREE",
    "1": "RING",
    "2": "COLLNET_DIRECT",
    "3": "COLLNET_CHAIN",
    "4": "NVLS",
    "5": "NVLS_TREE",
    "6": "PAT",
}
PROTOS = {"0": "LL", "1": "LL128", "2": "SIMPLE"}
TUNED = r"^(?:\w+: )?\d+ Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)"
_BY = ["path", "pid"]
MAX_ITEMS = 8


@dataclass(frozen=True)
class CommPath:
    """What one communicator's lines say about its data path (counts are lines, not ranks)."""

    comm: str
    transports: tuple[tuple[str, int], ...] = ()  # ("P2P/IPC", 16), ("NET/IB/GDRDMA", 8), …
    coll_channels: tuple[int, ...] = ()
    pxn: tuple[int, ...] = ()  # `use ring PXN x`
    gdr: tuple[int, ...] = ()  # `… GDR y`
    nics: tuple[str, ...] = ()  # NET devices its channels use, `IB/0`, `Socket/1`, …
    algorithms: tuple[tuple[str, int], ...] = ()  # ("RING/LL", 40), … from TUNING lines
    ring_plan: str | None = None  # NCCL's ring plan in the file of its first such line (align.facts_bw)


# COLL lines name a communicator too (a TUNING line follows its collective's), but reading them again
# (`LogFrames.collectives`) re-reads the whole input keeping every COLL and unknown line: a 1 GB log of 7 M
# COLL lines went past 2 GiB here (bench_memory.py `coll_desync`), the 524 MB `mixed` bench log (5 M
# application lines) held 1.9 GB. So the COLL lines are owners only when held already, or for a small input
# (every unknown line kept: the re-read holds what the first read did) with at most this many COLL lines
# or TUNING lines that need them; else the init lines are the owners (connection and channel lines follow
# their communicator's init or first collective; TUNING lines of a process interleaving communicators in
# a big input may then be counted under the one it initialised last).
OWNER_COLL_LINES = 250_000  # ~125 MB of rows at most


def _owners(logs: LogFrames, inits: pl.DataFrame, *, tuned: bool = True) -> pl.DataFrame:
    """(path, pid, line, comm_key): each init or collective line that names a communicator."""
    ptrs = (
        inits.filter(pl.col("comm_ptr").is_not_null()).select("path", "pid", "comm_ptr", "comm_key").unique()
    )
    own = [inits.select("path", "pid", "line", "comm_key")]
    small = logs.unknown_count is None and (logs.coll.lines <= OWNER_COLL_LINES or tuned)
    if (logs.coll.frame is not None or small) and ptrs.height and logs.coll.lines:
        c = logs.collectives.select("path", "pid", "line", "comm_ptr").join(
            ptrs, on=["path", "pid", "comm_ptr"]
        )
        own.append(c.select("path", "pid", "line", "comm_key"))
    out = pl.concat(own).drop_nulls(["pid", "comm_key"])
    return out.unique(["path", "pid", "line"], keep="first").sort("line")


def _attach(df: pl.DataFrame, owners: pl.DataFrame) -> pl.DataFrame:
    if df.is_empty() or owners.is_empty():
        return df.with_columns(comm_key=pl.lit(None, pl.Utf8))
    return df.sort("line").join_asof(owners, on="line", by=_BY, strategy="backward", check_sortedness=False)


def _counts(df: pl.DataFrame, col: str) -> dict[str, tuple[tuple[str, int], ...]]:
    g = df.drop_nulls(["comm_key", col]).group_by("comm_key", col).agg(pl.len().alias("n"))
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for key, part in (
        g.sort(["comm_key", "n", col], descending=[False, True, False])
        .partition_by("comm_key", as_dict=True)
        .items()
    ):
        out[str(key[0])] = tuple((str(v), int(n)) for v, n in part.select(col, "n").rows()[:MAX_ITEMS])
    return out


def _ints(df: pl.DataFrame, col: str) -> dict[str, tuple[int, ...]]:
    g = df.drop_nulls(["comm_key", col]).group_by("comm_key").agg(pl.col(col).unique().sort())
    return {str(k): tuple(int(v) for v in vs) for k, vs in g.rows()}


def transport_label() -> pl.Expr:
    """A connection row's transport as NCCL prints it: `NET/IB/GDRDMA`, `P2P/CUMEM`, `SHM` (`?` unknown)."""
    kind = transport().fill_null("?")
    sub = pl.col("detail").fill_null("").str.extract(r"^([A-Za-z]+)", 1).fill_null("")
    label = (
        pl.when(kind == "NET")
        .then(pl.concat_str([kind, pl.col("net").fill_null("?")], separator="/"))
        .when((kind == "P2P") & (sub != ""))
        .then(pl.concat_str([kind, sub], separator="/"))
        .otherwise(kind)
    )
    gdr = pl.when(pl.col("gdr").fill_null(False)).then(pl.lit("/GDRDMA")).otherwise(pl.lit(""))
    return pl.concat_str([label, gdr])


def comm_paths(logs: LogFrames, inits: pl.DataFrame) -> tuple[CommPath, ...]:
    """The data path of every communicator `inits` (`rankmap.init_rows`) names, in key order."""
    if inits.is_empty():
        return ()
    k = logs.known.filter(pl.col("message").fill_null("").str.contains(TUNED))
    owners = _owners(logs, inits, tuned=k.height > 0)
    kind = transport().fill_null("?")
    nic = pl.when(kind == "NET").then(
        pl.concat_str([pl.col("net").fill_null("?"), pl.col("net_dev").cast(pl.Utf8)], separator="/")
    )
    conn = _attach(logs.connections.select("path", "pid", "line", t=transport_label(), nic=nic), owners)
    ch = _attach(logs.channels.select("path", "pid", "line", "kind", "coll_channels", "pxn", "gdr"), owners)
    k = k.select("path", "pid", "line", m=pl.col("message").str.extract_groups(TUNED)).unnest("m")
    k = k.with_columns(
        a=pl.col("algo").replace(ALGOS).str.to_uppercase(),
        p=pl.col("proto").replace(PROTOS).str.to_uppercase(),
    )
    tuned = _attach(k.select("path", "pid", "line", ap=pl.concat_str(["a", "p"], separator="/")), owners)
    plans = ring_plans(logs)
    first_file = inits.sort("line").group_by("comm_key").agg(pl.col("path").first())
    trans, algos = _counts(conn, "t"), _counts(tuned, "ap")
    nics = _counts(conn, "nic")
    summary = ch.filter(pl.col("kind") == "summary")
    chans, pxn, gdr_flag = _ints(summary, "coll_channels"), _ints(ch, "pxn"), _ints(ch, "gdr")
    out = []
    for key, path in sorted(first_file.rows()):
        plan = plans.get(path)
        out.append(
            CommPath(
                comm=key,
                transports=trans.get(key, ()),
                coll_channels=chans.get(key, ()),
                pxn=pxn.get(key, ()),
                gdr=gdr_flag.get(key, ()),
                nics=tuple(sorted(n for n, _ in nics.get(key, ()))),
                algorithms=algos.get(key, ()),
                ring_plan=plan.describe() if plan is not None else None,
            )
        )
    return tuple(out)
