"""Large-job topologies for the report tests, grown from a real log.

No public NCCL_DEBUG=INFO log of a 512- or 1,024-rank job is at hand: the 128- and 512-node
MLPerf logs of ../shared/corpus/complete were run with NCCL_DEBUG=WARN (host:pid prefixes and
teardown WARNs, no ring, tree or connection line). So the connection lines of a real 2-node,
16-rank run (samples/complete/mlperf50dell_2x8_h200_bert.log.gz: P2P inside a node, NET/IBext
GDR between nodes, 24 channels) are repeated over N hosts: a line inside host `a` goes to the
same GPUs of each host; a line from host `a` to host `b` goes from each host `v` to host
`v + (b - a) mod 2`, i.e. the next one, which is how NCCL's rings cross nodes.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import polars as pl

from ncclscope import schema as S
from ncclscope.frames import LogFrames
from ncclscope.session import Session, analyze

SOURCE = Path(__file__).resolve().parents[2] / "samples" / "complete" / "mlperf50dell_2x8_h200_bert.log.gz"


@lru_cache(maxsize=1)
def source_session() -> Session:
    return analyze([str(SOURCE)])


def _host_index(ranks: pl.DataFrame) -> pl.DataFrame:
    """rank → (index of its host by lowest rank, position inside the host)."""
    r = ranks.filter(pl.col("rank").is_not_null()).unique("rank").sort("rank")
    hosts = r.group_by("host").agg(pl.col("rank").min().alias("_lo")).sort("_lo").with_row_index("idx")
    r = r.join(hosts, on="host").with_columns(
        (pl.col("rank").rank("ordinal").over("host") - 1).alias("local")
    )
    return r.select("rank", "host", pl.col("idx").cast(pl.Int64), pl.col("local").cast(pl.Int64))


def scaled_session(host_names: list[str], ranks: pl.DataFrame | None = None) -> Session:
    """The source run's connection lines repeated over `host_names` (a multiple of its host count).

    `ranks` (schema.RANKS) replaces the generated ranks table, e.g. the real ranks of a large run.
    """
    src = source_session()
    idx = _host_index(src.ranks)
    n_src, gpus = idx["idx"].n_unique(), idx.group_by("idx").len()["len"].max()
    assert isinstance(gpus, int)
    n = len(host_names)
    assert n % n_src == 0, f"{n} hosts is not a multiple of the source's {n_src}"
    names = pl.DataFrame({"v": range(n), "new_host": host_names}, schema={"v": pl.Int64, "new_host": pl.Utf8})
    c = src.logs.connections.filter(pl.col("src_rank").is_not_null() & pl.col("dst_rank").is_not_null())
    for end in ("src", "dst"):
        c = c.join(
            idx.select(
                pl.col("rank").alias(f"{end}_rank"),
                pl.col("idx").alias(f"{end}_idx"),
                pl.col("local").alias(f"{end}_local"),
            ),
            on=f"{end}_rank",
        )
    c = c.join(pl.DataFrame({"k": range(n // n_src)}, schema={"k": pl.Int64}), how="cross")
    v = pl.col("k") * n_src + pl.col("src_idx")
    hop = (pl.col("dst_idx") - pl.col("src_idx")) % n_src
    dv = pl.when(hop == 0).then(v).otherwise((v + hop) % n)
    c = c.with_columns(v.alias("v"), dv.alias("dv"))
    c = c.with_columns(
        (pl.col("v") * gpus + pl.col("src_local")).alias("src_rank"),
        (pl.col("dv") * gpus + pl.col("dst_local")).alias("dst_rank"),
    )
    c = c.join(names, on="v").with_columns(pl.col("new_host").alias("host"))
    conns = S.conform(c, S.CONNECTIONS)
    if ranks is None:
        r = src.ranks.join(idx.select("rank", "idx", "local"), on="rank")
        r = r.join(pl.DataFrame({"k": range(n // n_src)}, schema={"k": pl.Int64}), how="cross")
        r = r.with_columns((pl.col("k") * n_src + pl.col("idx")).alias("v")).join(names, on="v")
        r = r.with_columns(
            (pl.col("v") * gpus + pl.col("local")).alias("rank"),
            pl.col("new_host").alias("host"),
            (pl.col("pid") + pl.col("v") * 1000).alias("pid"),
        )
        ranks = S.conform(r, S.RANKS).sort("rank")
    logs = replace(LogFrames(), connections=conns, inputs=src.logs.inputs, coverage=src.logs.coverage)
    return Session(logs=logs, ranks=ranks, comms=S.empty(S.COMMS), findings=())


def synthetic_hosts(n: int) -> list[str]:
    """Host names in the corpus' anonymised style."""
    return [f"node-{i:03d}" for i in range(n)]
