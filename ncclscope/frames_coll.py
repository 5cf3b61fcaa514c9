"""Frames stage, COLL facts: what the analysis keeps of NCCL COLL lines, whatever their number.

A big log holds millions of COLL lines. The hang analysis needs, per process key (host, pid, comm_ptr,
rank_hint, nranks: everything a line's communicator and rank depend on), the last opCount, the first
line that printed it and the number of lines (schema.COLL_PROCS); and, for the check that ranks launched
the same collective at the same opCount, the (opCount, op signature) pairs each key printed. Those are
kept as sets, each named by a hash of its pairs and stored once (schema.COLL_SEQS): a key points at the
sets of the parts of the input that hold its lines (`seq`, a list). Within one part (a batch of lines)
a key's pairs of one opCount block (BLOCK opCounts) are one set (`union`); blocks and parts are not
united again (`merge` concatenates the lists), so the facts of a long run stay the size of its distinct
sets: ranks of a healthy communicator print the same pairs in the same blocks, one stored set for all of
them, wherever a batch happens to cut each rank's file (only the block a cut falls in is stored twice,
in two halves). Without the blocks, a file longer than a batch was cut at a different opCount on each
rank, and every rank's pairs were stored: as many rows as COLL lines.
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
BLOCK = 4096  # opCounts per stored set within a batch (`collfacts`): sets of ~4k pairs, ~1 per 4k collectives


def _pair_hash() -> pl.Expr:
    return pl.struct("op_count", "sig").hash(SEED)


def sig() -> pl.Expr:
    return pl.struct(SIG).hash(SEED).alias("sig")


def _seq_of(pairs: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """One hash per group of distinct (op_count, sig) pairs: equal sets, equal hashes."""
    return pairs.group_by(by).agg(
        pl.struct(pl.col("_h").bitwise_xor().alias("x"), pl.len().alias("n")).hash(SEED).alias("seq")
    )


def _listed(seq: pl.Expr) -> pl.Expr:
    """A set's hash (null: no pairs) as the list COLL_PROCS keeps."""
    return pl.concat_list([seq]).list.drop_nulls().cast(pl.List(pl.UInt64)).alias("seq")


# COLL_PROCS with one set per key (a part's facts before `union`)
ONE_SET: S.Schema = {**S.COLL_PROCS, "seq": pl.UInt64}


def part_facts(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(COLL_PROCS, COLL_SEQS) of COLL rows (`ROWS` columns, any order): one set per key."""
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
    procs = procs.join(seq, on=KEY, how="left", nulls_equal=True).with_columns(_listed(pl.col("seq")))
    seqs = pairs.join(seq, on=KEY, how="inner", nulls_equal=True).select("seq", "op_count", "sig").unique()
    out_p, out_s = pl.collect_all([procs, seqs])
    return S.conform(out_p, S.COLL_PROCS), S.conform(out_s, S.COLL_SEQS)


def _one_per_key(dup: pl.DataFrame, *extra: pl.Expr) -> pl.DataFrame:
    """Rows of keys seen several times -> one row per key: counts summed, the highest opCount's evidence."""
    best = pl.col("max_op_count").max()
    return (
        dup.sort("path", "line")
        .group_by(KEY)
        .agg(
            pl.col("n_coll").sum(),
            best.alias("max_op_count"),
            *[pl.col(c).filter(pl.col("max_op_count") == best).first() for c in EVIDENCE],
            *extra,
        )
    )


def _dups(p: pl.DataFrame, by: Sequence[str] = KEY) -> pl.DataFrame:
    """The rows of `p` whose `by` values another row shares."""
    return p.filter(pl.len().over(by, mapping_strategy="group_to_rows") > 1) if p.height else p


def union(
    procs: pl.DataFrame, seqs: pl.DataFrame, within: Sequence[str] = ()
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Facts of one part with a key on several rows (ONE_SET and the `within` columns: its runs of lines)
    -> one row per key (COLL_PROCS) and the sets it points at (COLL_SEQS). The pairs of a key's runs with
    the same `within` values (an opCount block) are united into one set, within a part (a batch at most);
    the key points at one set per such group."""
    by = [*KEY, *within]
    p = pl.concat(
        [S.empty({**ONE_SET, **{c: procs.schema[c] for c in within}}), procs], how="vertical_relaxed"
    )
    s = seqs.unique()
    multi = _dups(p, by)
    if not multi.is_empty():
        pairs = (
            multi.lazy()
            .select(*by, "seq")
            .filter(pl.col("seq").is_not_null())
            .join(s.lazy(), on="seq")
            .select(*by, "op_count", "sig")
            .unique()
            .with_columns(_pair_hash().alias("_h"))
        )
        seq = _seq_of(pairs, by).collect()
        new_sets = pairs.join(seq.lazy(), on=by, nulls_equal=True).select("seq", "op_count", "sig").collect()
        united = seq.rename({"seq": "_u"})
        p = (
            p.join(united, on=by, how="left", nulls_equal=True, maintain_order="left")
            .with_columns(pl.coalesce("_u", "seq").alias("seq"))
            .drop("_u")
        )
        s = pl.concat([s, S.conform(new_sets, S.COLL_SEQS)]).unique()
    dup = _dups(p)
    listed = _listed(pl.col("seq"))
    if dup.is_empty():
        out = p.with_columns(listed)
    else:
        one = _one_per_key(dup, pl.col("seq").drop_nulls().unique().sort().alias("seq"))
        rest = p.join(dup.select(KEY).unique(), on=KEY, how="anti", nulls_equal=True).with_columns(listed)
        out = pl.concat([S.conform(rest, S.COLL_PROCS), S.conform(one, S.COLL_PROCS)], how="vertical_relaxed")
    used = out["seq"].explode().drop_nulls().unique()
    sets = s.filter(pl.col("seq").is_in(used.implode()))
    return S.conform(out, S.COLL_PROCS).sort(KEY, nulls_last=True), sets


def merge(procs: Sequence[pl.DataFrame], seqs: Sequence[pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Facts of parts -> facts of the whole: a key seen in several parts points at each part's set (the
    sets are not united: their size stays that of the distinct sets, not of the key's lines)."""
    p = pl.concat([S.empty(S.COLL_PROCS), *procs], how="vertical_relaxed")
    s = pl.concat([S.empty(S.COLL_SEQS), *seqs], how="vertical_relaxed").unique()
    dup = _dups(p)
    if dup.is_empty():
        return p.sort(KEY, nulls_last=True), s
    one = _one_per_key(
        dup, pl.col("seq").list.explode(keep_nulls=False, empty_as_null=False).unique().sort().alias("seq")
    )
    rest = p.join(dup.select(KEY).unique(), on=KEY, how="anti", nulls_equal=True)
    merged = pl.concat([rest, S.conform(one, S.COLL_PROCS)], how="vertical_relaxed")
    return merged.sort(KEY, nulls_last=True), s


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
