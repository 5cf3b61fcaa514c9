"""Hang stage: per-communicator facts from NCCL COLL lines (last opCount per rank, mismatches).

The COLL lines are kept as facts per process key (`frames_coll.CollFacts`): a line's communicator and
rank depend only on (host, pid, comm_ptr, rank_hint, nranks) — the Init line of that process and
pointer gives commId, rank and size, the line's own rank hint and size are the fallbacks — so the
few keys are resolved against the Init lines (`_PRE`) and aggregated per communicator and rank.
Mismatches are looked for on each key's set of (opCount, signature) pairs, stored once per distinct
set; only when one is found are lines read again, and only those of the communicator's keys at its
first `MISMATCH_OPS` mismatched opCounts (`LogFrames.coll_lines_at`), never every COLL line.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.align.facts_inputs import opcount_of
from ncclscope.frames import LogFrames

COLL_PROGRESS: S.Schema = {
    "comm": pl.Utf8,  # commId, else `nranks=N` when no Init line maps the pointer
    "rank": pl.Int64,
    "nranks": pl.Int64,
    "last_op_count": pl.Int64,
    "last_op": pl.Utf8,
    "last_count": pl.Int64,
    "last_datatype": pl.Int64,
    "n_coll": pl.Int64,
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}

MISMATCHES: S.Schema = {
    "comm": pl.Utf8,
    "op_count": pl.Int64,
    "ranks": pl.List(pl.Int64),  # ranks of the communicator at that opCount, in line order
    "sigs": pl.List(pl.Utf8),  # `<op> count <n> datatype <d>` of each of those lines
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}

# Mismatched opCounts per communicator whose lines are read again for the evidence: the verdict cites the
# first (`sources.coll_verdicts`); a few more show whether it goes on. A desync of 10 M COLL lines read
# every line back (~5 GB) when all were fetched.
MISMATCH_OPS = 16

# Everything a COLL row's communicator and rank depend on.
_PRE = ["host", "pid", "comm_ptr", "rank_hint", "nranks"]
# A communicator: commId plus size (a commId seen with two sizes stays two groups).
_COMM = ["comm_id", "cnranks"]


def _inits(logs: LogFrames) -> pl.LazyFrame:
    """Per (host, pid, comm_ptr): commId, rank and size from the Init lines; `_cid` numbers the
    commIds (1, 2, …; 0 for none) so that big frames can group by an integer."""
    ini = (
        logs.inits.lazy()
        .filter(pl.col("comm_ptr").is_not_null() & pl.col("rank").is_not_null())
        .group_by("host", "pid", "comm_ptr")
        .agg(
            pl.col("comm_id").drop_nulls().first(),
            pl.col("rank").first().alias("_crank"),
            pl.col("nranks").drop_nulls().first().alias("_cn"),
        )
    )
    return ini.with_columns(pl.col("comm_id").rank("dense").fill_null(0).alias("_cid"))


def _resolve(pre: pl.LazyFrame, logs: LogFrames, *, numbered: bool = False) -> pl.LazyFrame:
    """Rows keyed by `_PRE` with their communicator and rank: `comm_id` (null when no Init line maps
    the pointer), `crank`, `cnranks`; rows whose rank is unknown are dropped."""
    ini = _inits(logs) if numbered else _inits(logs).drop("_cid")
    c = pre.join(ini, on=["host", "pid", "comm_ptr"], how="left")
    c = c.with_columns(pl.col("_cid").fill_null(0)) if numbered else c
    return c.with_columns(
        pl.coalesce("_crank", "rank_hint").alias("crank"), pl.coalesce("_cn", "nranks").alias("cnranks")
    ).filter(pl.col("crank").is_not_null())


def _comm_key() -> pl.Expr:
    # Without an Init line the communicator is only known by its size (one comm per size assumed).
    return pl.coalesce("comm_id", pl.format("nranks={}", "cnranks")).alias("comm")


def coll_progress(logs: LogFrames) -> pl.DataFrame:
    """Per (communicator, rank): last opCount seen in COLL lines and the op it launched (the first
    line carrying that opCount), with the number of COLL lines."""
    procs = logs.coll.procs
    if procs.is_empty():
        return S.empty(COLL_PROGRESS)
    best = pl.col("max_op_count").max()
    first = [
        pl.col(c).filter(pl.col("max_op_count") == best).first()
        for c in ("op", "count", "datatype", "path", "line", "text")
    ]
    out = (
        _resolve(procs.lazy().sort("path", "line"), logs)
        .group_by(*_COMM, "crank")
        .agg(best.alias("last_op_count"), *first, pl.col("n_coll").sum())
        .rename({"op": "last_op", "count": "last_count", "datatype": "last_datatype"})
        .with_columns(_comm_key(), pl.col("cnranks").alias("nranks"), pl.col("crank").alias("rank"))
        .sort("comm", "rank")
        .collect()
    )
    return S.conform(out, COLL_PROGRESS)


def coll_mismatches(logs: LogFrames) -> pl.DataFrame:
    """(comm, op_count) where ranks launched different collectives (op, count or datatype differ).
    Send/Recv lines and lines without an opCount take no part, and none at all when opCount is no
    sequence (`align.facts_inputs.opcount_of`: every process printing `opCount 0` on every line, as
    nccl-tests runs do): one opCount then holds every collective of the run, on every rank alike."""
    procs = logs.coll.procs.explode("seq").filter(pl.col("seq").is_not_null())
    if procs.is_empty() or opcount_of(logs).value is False:
        return S.empty(MISMATCHES)
    # Ranks printing the same set of pairs agree with each other: each set is looked at once per communicator.
    # A one-rank communicator cannot disagree with itself; NCCL also leaves its opCount at 0.
    keyed = (
        _resolve(procs.lazy(), logs, numbered=True)
        .filter(pl.col("cnranks").fill_null(2) > 1)
        .select("_cid", "cnranks", "seq")
        .unique()
    )
    bad = (
        keyed.join(logs.coll.seqs.lazy(), on="seq")
        .group_by("_cid", "cnranks", "op_count")
        .agg(pl.col("sig").n_unique().alias("_n"))
        .filter(pl.col("_n") > 1)
        .sort("_cid", "cnranks", "op_count")
        .group_by("_cid", "cnranks", maintain_order=True)
        .head(MISMATCH_OPS)
        .collect()
    )
    if bad.is_empty():  # the usual case: no line is read again
        return S.empty(MISMATCHES)
    keys = (
        _resolve(logs.coll.procs.lazy(), logs, numbered=True)
        .join(bad.lazy().select("_cid", "cnranks").unique(), on=["_cid", "cnranks"], how="semi")
        .select(_PRE)
        .unique()
        .collect()
    )
    rows = logs.coll_lines_at(keys, bad["op_count"].unique().sort().to_list())
    return _mismatches_in(rows, logs)


def _mismatches_in(coll: pl.DataFrame, logs: LogFrames) -> pl.DataFrame:
    """MISMATCHES from the full COLLECTIVES frame (every line with its communicator and rank)."""
    sig_cols = ["op", "count", "datatype"]
    rows = (
        coll.lazy()
        .with_row_index("_i")
        .filter(pl.col("op_count").is_not_null() & ~pl.col("op").is_in(["Send", "Recv"]))
        .with_columns(pl.struct(sig_cols).rank("dense").alias("_sig"))
    )
    keys = ["_cid", "cnranks", "op_count"]
    rows = _resolve(rows, logs, numbered=True).filter(pl.col("cnranks").fill_null(2) > 1)
    bad = (
        rows.group_by(keys)
        .agg((pl.col("_sig").min() != pl.col("_sig").max()).alias("_bad"))
        .filter(pl.col("_bad"))
        .select(keys)
    )
    hit = rows.join(bad, on=keys, how="semi").collect()
    sig = pl.format("{} count {} datatype {}", *sig_cols).alias("sig")
    g = (
        hit.with_columns(sig)
        .sort("line", "_i")
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("crank").alias("ranks"),
            pl.col("sig").alias("sigs"),
            pl.col("path").first(),
            pl.col("line").first(),
            pl.col("text").first(),
            pl.col("comm_id").first(),
        )
        .with_columns(_comm_key())
    )
    return S.conform(g, MISMATCHES).sort("comm", "op_count")
