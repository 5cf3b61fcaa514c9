"""Frames stage, COLL facts: what the analysis keeps of NCCL COLL lines, whatever their number.

A big log holds millions of COLL lines. The hang analysis needs, per process key (host, pid, comm_ptr,
rank_hint, nranks: everything a line's communicator and rank depend on), the last opCount, the first
line that printed it and the number of lines (schema.COLL_PROCS); and, for the check that ranks launched
the same collective at the same opCount, each key's set of (opCount, op signature) pairs. Ranks of a
healthy communicator print the same sequence, so each distinct set is stored once (schema.COLL_SEQS),
named by a hash of its pairs; a key points at its set. Facts of parts of the input (pieces of files,
read by different processes) merge into the facts of the whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from ncclscope import schema as S

KEY = ["host", "pid", "comm_ptr", "rank_hint", "nranks"]
SIG = ["op", "count", "datatype"]
EVIDENCE = ["path", "line", "text", "op", "count", "datatype"]
# The columns of a COLL line the facts are made of (a subset of schema.COLLECTIVES).
ROWS: S.Schema = {
    c: S.COLLECTIVES[c] for c in ("path", "line", "text", *KEY, "op", "op_count", "count", "datatype")
}
P2P = ["Send", "Recv"]  # no signature check for point-to-point lines
SEED = 0x5EEDC011  # hashes must agree across processes: a fixed seed


def _pair_hash() -> pl.Expr:
    return pl.struct("op_count", "sig").hash(SEED)


def sig() -> pl.Expr:
    return pl.struct(SIG).hash(SEED).alias("sig")


def _seq_of(pairs: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """One hash per group of distinct (op_count, sig) pairs: equal sets, equal hashes."""
    return pairs.group_by(by).agg(
        pl.struct(pl.col("_h").bitwise_xor().alias("x"), pl.len().alias("n")).hash(SEED).alias("seq")
    )


def part_facts(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(COLL_PROCS, COLL_SEQS) of COLL rows (`ROWS` columns, any order)."""
    live = rows.lazy().filter(pl.col("op_count").is_not_null()).sort("path", "line")
    at_max = pl.col("op_count") == pl.col("op_count").max()
    procs = live.group_by(KEY).agg(
        pl.len().cast(pl.Int64).alias("n_coll"),
        pl.col("op_count").max().alias("max_op_count"),
        *[pl.col(c).filter(at_max).first() for c in EVIDENCE],
    )
    pairs = (
        live.filter(~pl.col("op").is_in(P2P))
        .select(*KEY, "op_count", sig())
        .unique()
        .with_columns(_pair_hash().alias("_h"))
    )
    seq = _seq_of(pairs, KEY)
    procs = procs.join(seq, on=KEY, how="left", nulls_equal=True)
    seqs = pairs.join(seq, on=KEY, how="inner", nulls_equal=True).select("seq", "op_count", "sig").unique()
    out_p, out_s = pl.collect_all([procs, seqs])
    return S.conform(out_p, S.COLL_PROCS), S.conform(out_s, S.COLL_SEQS)


def merge(procs: Sequence[pl.DataFrame], seqs: Sequence[pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Facts of parts -> facts of the whole: a key seen in several parts gets the union of its sets."""
    p = pl.concat([S.empty(S.COLL_PROCS), *procs], how="vertical_relaxed")
    s = pl.concat([S.empty(S.COLL_SEQS), *seqs], how="vertical_relaxed").unique()
    dup = p.filter(pl.len().over(KEY, mapping_strategy="group_to_rows") > 1) if p.height else p
    if dup.is_empty():
        return p.sort(KEY, nulls_last=True), s
    best = pl.col("max_op_count").max()
    one = (
        dup.sort("path", "line")
        .group_by(KEY)
        .agg(
            pl.col("n_coll").sum(),
            best.alias("max_op_count"),
            *[pl.col(c).filter(pl.col("max_op_count") == best).first() for c in EVIDENCE],
        )
    )
    pairs = (
        dup.lazy()
        .select(*KEY, "seq")
        .filter(pl.col("seq").is_not_null())
        .join(s.lazy(), on="seq")
        .select(*KEY, "op_count", "sig")
        .unique()
        .with_columns(_pair_hash().alias("_h"))
    )
    seq = _seq_of(pairs, KEY).collect()
    one = one.join(seq, on=KEY, how="left", nulls_equal=True)
    new_sets = pairs.join(seq.lazy(), on=KEY, nulls_equal=True).select("seq", "op_count", "sig").collect()
    rest = p.join(dup.select(KEY).unique(), on=KEY, how="anti", nulls_equal=True)
    merged = pl.concat([rest, S.conform(one, S.COLL_PROCS)], how="vertical_relaxed")
    used = merged["seq"].drop_nulls().unique()
    sets = (
        pl.concat([s, S.conform(new_sets, S.COLL_SEQS)]).unique().filter(pl.col("seq").is_in(used.implode()))
    )
    return merged.sort(KEY, nulls_last=True), sets


@dataclass(frozen=True)
class CollFacts:
    """COLL facts of one analysis (see the module docstring); `frame` is the full COLLECTIVES frame when
    it was kept (small inputs, tests), else `LogFrames.collectives` reads it again on demand."""

    procs: pl.DataFrame = field(default_factory=lambda: S.empty(S.COLL_PROCS))
    seqs: pl.DataFrame = field(default_factory=lambda: S.empty(S.COLL_SEQS))
    lines: int = 0  # COLL lines read: the rows of the full frame
    frame: pl.DataFrame | None = None

    @property
    def height(self) -> int:
        return self.lines

    @staticmethod
    def of(df: pl.DataFrame) -> CollFacts:
        """Facts (and the frame) of a COLLECTIVES frame."""
        full = S.conform(df, S.COLLECTIVES)
        procs, seqs = part_facts(full.select(list(ROWS)))
        return CollFacts(procs=procs, seqs=seqs, lines=full.height, frame=full)
