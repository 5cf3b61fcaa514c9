"""Report stage, views: the small derived frames that reports and figures show.

Pure functions of a session's frames (no plotting here): the topology edges and nodes, per-rank
arrivals at each collective, a per-rank timeline, how far each rank got before a hang, and the
odd values of the ranks × configuration table.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ncclscope.frames import LogFrames
    from ncclscope.records import Finding
    from ncclscope.session import Session

# Columns of the ranks × configuration table; `OUTLIER_COLUMNS` should agree across ranks.
CONFIG_COLUMNS = [
    "rank",
    "host",
    "pid",
    "cuda_dev",
    "nccl_version",
    "cuda_driver",
    "iface",
    "address",
    "net",
    "gdr",
]
OUTLIER_COLUMNS = ["nccl_version", "cuda_driver", "iface", "address", "net", "gdr"]

EDGES_SCHEMA: dict[str, Any] = {
    "channel": pl.Int64,
    "src_rank": pl.Int64,
    "dst_rank": pl.Int64,
    "kind": pl.Utf8,
    "label": pl.Utf8,
    "detail": pl.Utf8,
}


# --- ranks × configuration -----------------------------------------------------------------


def _subnet(addr: str) -> str:
    # Ranks on one network share a /24 (IPv4) or a /64 (IPv6); the host part always differs.
    if ":" in addr:
        return ":".join(addr.split("%")[0].split(":")[:4])
    return addr.rsplit(".", 1)[0]


def outliers(ranks: pl.DataFrame) -> dict[str, set[str]]:
    """Per column that is not uniform, the values held by a minority of ranks (all of them on a tie)."""
    out: dict[str, set[str]] = {}
    for c in OUTLIER_COLUMNS:
        if c not in ranks.columns:
            continue
        vals = [str(v) for v in ranks[c].to_list() if v is not None]
        keys = [_subnet(v) for v in vals] if c == "address" else vals
        counts = Counter(keys)
        if len(counts) <= 1:
            continue
        top = counts.most_common(1)[0][1]
        # A tie (two nodes, two versions) has no majority: every value is then marked.
        odd = {k for k, n in counts.items() if n < top} or set(counts)
        out[c] = {v for v, k in zip(vals, keys) if k in odd}
    return out


def rank_findings(findings: Iterable[Finding]) -> dict[int, list[str]]:
    """rank → ids of the error/warning findings that name it."""
    out: dict[int, list[str]] = {}
    for f in findings:
        if f.severity == "info":
            continue
        for r in f.ranks:
            if f.id not in out.setdefault(r, []):
                out[r].append(f.id)
    return out


# --- topology --------------------------------------------------------------------------------


def transport_label(transport: str | None, net: str | None, gdr: bool | None, detail: str | None) -> str:
    """A short transport class for colouring: P2P, SHM, NET/IB GDR, NET/IB, NET/Socket, …"""
    t = (transport or "").upper()
    if t == "NET":
        name = net or (detail or "").split("/")[0] or "?"
        return f"NET/{name}" + (" GDR" if gdr else "")
    if t in ("P2P", "SHM", "COLLNET"):
        return t
    return t or "unknown"


def topology_edges(logs: LogFrames) -> pl.DataFrame:
    """Directed edges per channel: connection lines (with transport), ring orders and trees."""
    conns = logs.connections.filter(pl.col("src_rank").is_not_null() & pl.col("dst_rank").is_not_null())
    rows: list[dict[str, Any]] = [
        {
            "channel": r["channel"],
            "src_rank": r["src_rank"],
            "dst_rank": r["dst_rank"],
            "kind": "connection",
            "label": transport_label(r["transport"], r["net"], r["gdr"], r["detail"]),
            "detail": r["detail"],
        }
        for r in conns.select(
            "channel", "src_rank", "dst_rank", "transport", "net", "gdr", "detail"
        ).to_dicts()
    ]
    rows += _ring_rows(logs.rings)
    rows += _tree_rows(logs.rings)
    if not rows:
        return pl.DataFrame(schema=EDGES_SCHEMA)
    df = pl.DataFrame(rows, schema=EDGES_SCHEMA)
    known = df.filter(pl.col("kind") == "connection").select("channel", "src_rank", "dst_rank").unique()
    rings = df.filter(pl.col("kind") == "ring").join(
        known, on=["channel", "src_rank", "dst_rank"], how="anti"
    )
    out = pl.concat([df.filter(pl.col("kind") != "ring"), rings])
    return out.unique(["channel", "src_rank", "dst_rank", "kind", "label"]).sort(
        "channel", "kind", "src_rank", "dst_rank", "label", nulls_last=True
    )


def _ring_rows(rings: pl.DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    orders = rings.filter((pl.col("kind") == "ring_order") & pl.col("order").is_not_null())
    for r in orders.unique(["channel"], keep="first", maintain_order=True).to_dicts():
        order = [x for x in r["order"] if x is not None]
        closed = len(order) > 1 and not r.get("truncated")
        pairs = list(pairwise(order + order[:1] if closed else order))
        rows += [
            {
                "channel": r["channel"],
                "src_rank": a,
                "dst_rank": b,
                "kind": "ring",
                "label": "ring order (no connection line)",
                "detail": None,
            }
            for a, b in pairs
            if a != b
        ]
    return rows


def _tree_rows(rings: pl.DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for r in rings.filter(pl.col("kind") == "tree").to_dicts():
        me, up = r.get("tree_rank"), r.get("tree_up")
        if me is not None and up is not None and up >= 0:
            rows.append(
                {
                    "channel": r["channel"],
                    "src_rank": me,
                    "dst_rank": up,
                    "kind": "tree",
                    "label": "tree (child → parent)",
                    "detail": None,
                }
            )
    return rows


def topology_nodes(ranks: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Every rank seen in the ranks table or an edge, with its host, ordered by (host, rank)."""
    known = (
        ranks.filter(pl.col("rank").is_not_null())
        .group_by("rank")
        .agg(pl.col("host").drop_nulls().first(), pl.col("cuda_dev").drop_nulls().first())
    )
    seen = pl.concat([edges["src_rank"], edges["dst_rank"], known["rank"]]).drop_nulls().unique()
    nodes = pl.DataFrame({"rank": seen}).join(known, on="rank", how="left")
    return nodes.with_columns(pl.col("host").fill_null("(host unknown)")).sort("host", "rank")


# --- traces -----------------------------------------------------------------------------------


def arrivals(s: Session) -> pl.DataFrame:
    """One row per (collective, rank): `coll` ordinal, op, group, `skew_us` after the first arrival.

    Uses the trace alignment (clock-corrected) when present; otherwise lines collectives up by
    process group and per-group index, measuring the kernel start of each rank.
    """
    cols = ["coll", "rank", "op", "group", "msg_bytes", "skew_us", "wait_us", "arrival_us"]
    aligned = s.aligned_traces.per_rank if s.aligned_traces is not None else None
    if aligned is not None and aligned.height:
        df = aligned.with_columns(pl.col("coll_id").alias("key"))
    else:
        tc = s.traces.collectives if s.traces is not None else None
        if tc is None or tc.is_empty():
            return pl.DataFrame(
                schema={
                    c: pl.Float64 if c.endswith("_us") else pl.Utf8 if c in ("op", "group") else pl.Int64
                    for c in cols
                }
            )
        df = _align_by_index(tc)
    first = pl.col("arrival_us").min().over("key")
    order = (
        df.group_by("key")
        .agg(pl.col("arrival_us").min().alias("_t"))
        .sort("_t", "key")
        .with_row_index("coll")
    )
    df = df.join(order.select("key", pl.col("coll").cast(pl.Int64)), on="key")
    df = df.with_columns(
        skew_us=pl.coalesce(
            pl.col("skew_us") if "skew_us" in df.columns else None, pl.col("arrival_us") - first
        ),
        wait_us=pl.coalesce(
            pl.col("wait_us") if "wait_us" in df.columns else None,
            pl.col("arrival_us").max().over("key") - pl.col("arrival_us"),
        ),
    )
    return df.select([pl.col(c) for c in cols]).sort("coll", "rank")


def _align_by_index(tc: pl.DataFrame) -> pl.DataFrame:
    group = (
        pl.coalesce("pg_name", "pg_desc", pl.lit("?"))
        if "pg_desc" in tc.columns
        else pl.coalesce("pg_name", pl.lit("?"))
    )
    df = tc.with_columns(group=group, arrival_us=pl.coalesce("start_us", "launch_us"))
    df = df.with_columns(
        idx=pl.coalesce("seq", "index_in_pg", pl.int_range(pl.len()).over("rank", "group").cast(pl.Int64))
    )
    return df.with_columns(key=pl.concat_str([pl.col("group"), pl.lit("#"), pl.col("idx").cast(pl.Utf8)]))


def timeline(s: Session) -> pl.DataFrame:
    """Per-rank collective intervals in ms after the first one (clock-corrected when aligned)."""
    schema = {
        "rank": pl.Int64,
        "op": pl.Utf8,
        "start_ms": pl.Float64,
        "end_ms": pl.Float64,
        "dur_us": pl.Float64,
        "msg_bytes": pl.Int64,
        "group": pl.Utf8,
    }
    aligned = s.aligned_traces.per_rank if s.aligned_traces is not None else None
    if aligned is not None and aligned.height:
        df = aligned.select(
            "rank", "op", pl.col("arrival_us").alias("start_us"), "end_us", "msg_bytes", "group"
        )
    else:
        tc = s.traces.collectives if s.traces is not None else None
        if tc is None or tc.is_empty():
            return pl.DataFrame(schema=schema)
        df = tc.select(
            "rank",
            "op",
            "start_us",
            "end_us",
            "msg_bytes",
            pl.coalesce("pg_name", pl.lit("?")).alias("group"),
        )
    df = df.filter(pl.col("start_us").is_not_null())
    t0 = df["start_us"].min()
    t0f = float(t0) if isinstance(t0, (int, float)) else 0.0
    end = pl.col("end_us").fill_null(pl.col("start_us"))
    return (
        df.select(
            "rank",
            "op",
            ((pl.col("start_us") - t0f) / 1000).alias("start_ms"),
            ((end - t0f) / 1000).alias("end_ms"),
            (end - pl.col("start_us")).alias("dur_us"),
            "msg_bytes",
            "group",
        )
        .cast(schema)  # type: ignore[arg-type]
        .sort("rank", "start_ms")
    )
