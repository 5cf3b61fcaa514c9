"""Diff stage, facts: what one analysed run says about itself, one row per (fact, scope), with evidence.

A scope is a global rank, a host role (`node i`: the i-th host in rank order, so two runs on different
machines still line up) or the whole job. Every fact comes from a log frame row and keeps its line.
"""

from __future__ import annotations

import polars as pl

from ncclscope.align.facts_bw import ring_plans
from ncclscope.align.facts_inputs import RCCL_BANNER
from ncclscope.align.rankmap import transport
from ncclscope.findings.rules_common import with_rank
from ncclscope.schema import Schema
from ncclscope.session import Session

FACTS: Schema = {
    "category": pl.Utf8,
    "key": pl.Utf8,
    "scope_kind": pl.Utf8,  # "rank" | "node" | "job"
    "scope": pl.Int64,  # the rank, the node index, or 0
    "value": pl.Utf8,
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}
_VERSION_LABEL = {
    "nccl": "NCCL",
    "cuda_driver": "CUDA driver",
    "cuda": "CUDA (NCCL build)",
    "torch": "torch",
    "plugin": "net plugin",
    "rccl": "RCCL",
}
_IFACE_LABEL = {
    "bootstrap": "interface (bootstrap)",
    "socket_iface": "interface (NET/Socket)",
    "ib_oob": "interface (IB out-of-band)",
}
_CHANNELS = {
    "coll_channels": "coll channels",
    "nvls_channels": "NVLS channels",
    "collnet_channels": "CollNet channels",
    "p2p_channels": "p2p channels",
}
_TUNING = r"^(?:(?P<op>\w+): )?(?P<nbytes>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)"
_SPEED = r"^NET/IB ?: ?(?:\[\d+\] (?P<dev>[^:\s]+)\S* .*|Made virtual device \[\d+\] name=(?P<vdev>\S+) .*)speed=(?P<mbps>\d+)"


def node_roles(s: Session) -> pl.DataFrame:
    """host → node index: hosts in the order of the lowest rank they hold, then hosts without a rank."""
    r = s.ranks.filter(pl.col("host").is_not_null())
    ranked = r.group_by("host").agg(pl.col("rank").min().alias("_r")).sort("_r", "host", nulls_last=True)
    extra = sorted(set(s.logs.network["host"].drop_nulls().to_list()) - set(ranked["host"].to_list()))
    hosts = [*ranked["host"].to_list(), *extra]
    return pl.DataFrame(
        {"host": hosts, "node": list(range(len(hosts)))}, schema={"host": pl.Utf8, "node": pl.Int64}
    )


def _emit(
    df: pl.DataFrame, s: Session, category: str, key: pl.Expr | str, value: pl.Expr, per: str
) -> pl.DataFrame:
    """Rows of a log frame → facts, scoped per rank (falling back to node, then job) or per node."""
    if df.is_empty():
        return pl.DataFrame(schema=FACTS)
    roles = node_roles(s)
    d = (
        df.join(roles, on="host", how="left")
        if "host" in df.columns
        else df.with_columns(node=pl.lit(None, pl.Int64))
    )
    by_rank = per == "rank"
    d = with_rank(d, s.ranks) if by_rank else d.with_columns(grank=pl.lit(None, pl.Int64))
    kind = (
        pl.when(pl.col("grank").is_not_null())
        .then(pl.lit("rank"))
        .when(pl.col("node").is_not_null())
        .then(pl.lit("node"))
        .otherwise(pl.lit("job"))
    )
    scope = pl.coalesce("grank", "node", pl.lit(0))
    key_e = pl.lit(key) if isinstance(key, str) else key
    out = d.select(
        category=pl.lit(category),
        key=key_e,
        scope_kind=kind,
        scope=scope.cast(pl.Int64),
        value=value.cast(pl.Utf8),
        path="path",
        line="line",
        text="text",
    )
    return out.filter(pl.col("value").is_not_null() & pl.col("key").is_not_null())


def _versions(s: Session) -> list[pl.DataFrame]:
    v = s.logs.versions
    key = pl.col("kind").replace_strict(_VERSION_LABEL, default=pl.col("kind"))
    out = [_emit(v, s, "versions", key, pl.col("value"), "rank")]
    runs = s.nccltests.runs.with_columns(host=pl.lit(None, pl.Utf8))
    out.append(_emit(runs, s, "versions", "nccl-tests", pl.col("tests_version"), "job"))
    # RCCL's banner (`RCCL version : 2.22.3-HEAD:271856d`) has no NCCL prefix: it is the same fact as NCCL's
    # version line, so an AMD run and an NVIDIA run differ in it instead of each printing its own.
    rccl = s.logs.unknown.with_columns(v=pl.col("text").str.extract(RCCL_BANNER, 1))  # align declares it
    out.append(
        _emit(
            rccl.filter(pl.col("v").is_not_null()),
            s,
            "versions",
            "NCCL",
            pl.lit("RCCL ") + pl.col("v"),
            "rank",
        )
    )
    return out


def _environment(s: Session) -> list[pl.DataFrame]:
    out = [_emit(s.logs.env, s, "environment", pl.col("name"), pl.col("value"), "rank")]
    t = (
        s.logs.torch.filter(pl.col("kind") == "init_options")
        .with_columns(kv=pl.col("text").str.extract_all(r"\b(?:TORCH_NCCL|NCCL)_[A-Z0-9_]+: ?[^,]*"))
        .explode("kv")
    )
    t = t.filter(pl.col("kv").is_not_null()).with_columns(
        name=pl.col("kv").str.extract(r"^([A-Z0-9_]+):", 1), val=pl.col("kv").str.extract(r":\s*(.*?)\s*$", 1)
    )
    out.append(_emit(t, s, "environment", pl.col("name"), pl.col("val"), "rank"))
    return out


def _network(s: Session) -> list[pl.DataFrame]:
    n, c = s.logs.network, s.logs.connections.with_columns(fam=transport())
    label = (
        pl.when(pl.col("fam") == "NET")
        .then(pl.lit("NET/") + pl.col("net").fill_null("?"))
        .otherwise(pl.col("fam"))
    )
    net_rows = c.filter(pl.col("fam") == "NET")
    gdr = pl.when(pl.col("gdr").fill_null(False)).then(pl.lit("on")).otherwise(pl.lit("off"))
    ifaces = n.filter(pl.col("kind").is_in(list(_IFACE_LABEL)) & pl.col("iface").is_not_null())
    subnet = pl.col("address").str.extract(r"^(\d+\.\d+\.\d+)\.\d+$", 1) + ".0/24"
    ib = n.filter(pl.col("kind") == "ib_dev")
    speed = s.logs.known.with_columns(m=pl.col("message").str.extract_groups(_SPEED)).unnest("m")
    return [
        _emit(n.filter(pl.col("kind") == "using_network"), s, "network", "network", pl.col("net"), "rank"),
        _emit(c, s, "network", "transport", label, "rank"),
        _emit(net_rows, s, "network", "GPUDirect RDMA", gdr, "rank"),
        _emit(
            ifaces,
            s,
            "network",
            pl.col("kind").replace_strict(_IFACE_LABEL, default=None),
            pl.col("iface"),
            "node",
        ),
        _emit(ifaces.filter(subnet.is_not_null()), s, "network", "subnet", subnet, "node"),
        _emit(ib, s, "network", "IB devices", pl.format("{}:{}/{}", "hca", "hca_port", "link_layer"), "node"),
        _emit(
            speed.filter(pl.col("mbps").is_not_null()),
            s,
            "network",
            "NIC speed",
            pl.format("{} {} Gb/s", pl.coalesce("dev", "vdev"), pl.col("mbps").cast(pl.Int64) // 1000),
            "node",
        ),
    ]


def _topology(s: Session) -> list[pl.DataFrame]:
    ch = s.logs.channels.filter(pl.col("kind") == "summary")
    out = [_emit(ch, s, "topology", label, pl.col(col), "rank") for col, label in _CHANNELS.items()]
    rings = s.logs.rings
    out.append(
        _emit(
            rings.filter(pl.col("kind") == "ring_order"), s, "topology", "rings", pl.col("nchannels"), "rank"
        )
    )
    trees = rings.filter(pl.col("kind") == "tree").with_columns(
        n=pl.col("channel").n_unique().over("path", "host", "pid", "cuda_dev")
    )
    out.append(_emit(trees, s, "topology", "tree channels", pl.col("n"), "rank"))
    inits = s.logs.inits.filter(pl.col("nranks").is_not_null()).with_columns(host=pl.lit(None, pl.Utf8))
    world = (
        inits.filter(pl.col("nranks") == pl.col("nranks").max())
        .sort("nnodes", "line", descending=[True, False], nulls_last=True)
        .head(1)
    )
    out.append(_emit(world, s, "topology", "world", pl.format("{} ranks", "nranks"), "job"))
    out.append(_emit(world, s, "topology", "nodes", pl.col("nnodes"), "job"))
    comms = s.comms.group_by("nranks").len().sort("nranks")
    if comms.height:
        desc = ", ".join(f"{n} × {k} ranks" for k, n in comms.iter_rows())
        first = inits.sort("line").head(1).with_columns(value=pl.lit(desc))
        out.append(_emit(first, s, "topology", "communicators", pl.col("value"), "job"))
    tuning = (
        s.logs.known.with_columns(m=pl.col("message").str.extract_groups(_TUNING))
        .unnest("m")
        .filter(pl.col("algo").is_not_null())
        .with_columns(host=pl.lit(None, pl.Utf8))
    )
    key = pl.format("algorithm {} {} B", pl.col("op").fill_null("collective"), "nbytes")
    out.append(_emit(tuning, s, "topology", key, pl.format("{}/{}", "algo", "proto"), "job"))
    dev = s.nccltests.devices.select(
        "path",
        "line",
        "text",
        "host",
        pid=pl.col("pid"),
        cuda_dev=pl.col("device"),
        rank_hint=pl.col("rank"),
        gpu=pl.col("gpu_name"),
    )
    out.append(_emit(dev, s, "topology", "GPU", pl.col("gpu"), "rank"))
    out.append(_plan(s))
    return out


def _plan(s: Session) -> pl.DataFrame:
    """NCCL's ring plan per file (align.facts_bw: nChannels × bw, the busbw its model expects), job-wide."""
    plans = ring_plans(s.logs).values()
    rows = [
        {
            "path": p.path,
            "line": p.line,
            "text": p.text,
            "host": None,
            "v": f"{p.busbw:g} GB/s ({p.nchannels} ch × {p.per_channel:g} GB/s, {p.link})",
        }
        for p in plans
    ]
    schema = {"path": pl.Utf8, "line": pl.Int64, "text": pl.Utf8, "host": pl.Utf8, "v": pl.Utf8}
    return _emit(
        pl.DataFrame(rows, schema=schema), s, "topology", "NCCL ring plan (busbw)", pl.col("v"), "job"
    )


def session_facts(s: Session) -> pl.DataFrame:
    """Every fact of one run, one row per (category, key, scope): distinct values joined by ` | `,
    the first line (by path and line) as evidence."""
    parts = [f for build in (_versions, _environment, _network, _topology) for f in build(s)]
    df = pl.concat([p for p in parts if p.height] or [pl.DataFrame(schema=FACTS)], how="vertical_relaxed")
    keys = ["category", "key", "scope_kind", "scope"]
    df = df.sort([*keys, "path", "line"], nulls_last=True)
    return (
        df.group_by(keys, maintain_order=True)
        .agg(
            pl.col("value").unique().sort().str.join(" | "),
            pl.col("path").first(),
            pl.col("line").first(),
            pl.col("text").first(),
        )
        .select(list(FACTS))
    )
