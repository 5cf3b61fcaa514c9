"""Parse stage, COLL facts of a batch: the lines `collfast` took -> per process key facts, in a few passes.

Lines of one process and communicator come in runs (one file per rank: one run; interleaved output:
short runs). A run changes where the file, the head (wrappers and prefix) or the communicator
(pointer, size) changes from one line to the next, or the opCount enters another block of
`frames_coll.BLOCK`: comparisons with the line before, no hashing of every line. Per run, in one
group-by over the run number: the line count, the last opCount and the first line that printed it,
the span for the stream table, and two sums of a hash of each line's
(opCount, op, count, datatype) that name its multiset of pairs. The heads' prefix fields are joined to
the runs (a few rows), which are then merged per process key (`frames_coll.KEY`), the sets of a key's runs
in one block united. The pairs themselves are kept once per distinct multiset (one representative run
each), as COLL_SEQS.
"""

from __future__ import annotations

import polars as pl

from ncclscope import frames_coll as FC
from ncclscope import schema as S
from ncclscope.parse.logs.lines import collfast, streams

_RUN = ["path", "_head", "_comm"]
_SPLIT = pl.lit(1 << 32, pl.UInt64)  # a 64-bit hash summed as two 32-bit halves: no overflow


def facts(
    rows: pl.DataFrame, heads: pl.DataFrame, known: pl.Series | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(COLL_PROCS, COLL_SEQS, stream parts) of `collfast.take`'s rows (facts columns, in input order) and
    heads. `known`: sets the caller already holds (earlier batches of its piece); their pairs are not
    gathered again, but for runs united with others here (`union` needs their pairs)."""
    blk = pl.col("op_count") // FC.BLOCK  # a run also ends where the opCount enters another block
    new = pl.any_horizontal(
        [pl.col(c).ne_missing(pl.col(c).shift(1)) for c in _RUN] + [blk.ne_missing(blk.shift(1))]
    )
    live = pl.col("op_count").is_not_null()
    pair = live & ~pl.col("op").is_in(FC.P2P)
    h = pl.when(pair).then(pl.struct("op_count", "op", "_sig").hash(FC.SEED))
    # (a cumulative count of run starts never decreases: marked sorted, the group-by slices instead of hashing)
    df = rows.with_columns(new.cum_sum().set_sorted().alias("_run"), h.alias("_h"))
    at = pl.col("op_count").arg_max()
    runs = df.group_by("_run", maintain_order=True).agg(
        *[pl.col(c).first() for c in _RUN],
        blk.first().alias("_blk"),
        live.sum().cast(pl.Int64).alias("n_coll"),
        pl.col("op_count").max().alias("max_op_count"),
        *[pl.col(c).get(at) for c in ("line", "text", "op", "_sig")],
        (pl.col("_h") // _SPLIT).sum().alias("_s1"),
        (pl.col("_h") % _SPLIT).sum().alias("_s2"),
        pair.sum().cast(pl.Int64).alias("_np"),
        pl.col("line").min().alias("first_line"),
        pl.col("line").max().alias("last_line"),
        pl.len().cast(pl.Int64).alias("n_lines"),
        pl.col("text").last().alias("last_text"),
        *_stamped(df),
    )
    runs = runs.join(heads, on="_head", how="left")
    if collfast.STAMPED in df.columns:  # heads parsed without their timestamp wrapper: the lines' own
        runs = runs.with_columns(  # (a head with a timestamp of its own stamps every line of its run)
            pl.coalesce("_wts", "ts_us").alias("ts_us"),
            pl.when(pl.col("ts_us").is_not_null())
            .then(pl.col("last_line"))
            .otherwise("ts_line")
            .alias("ts_line"),
        )
    runs = runs.with_columns(
        *collfast.sig_fields(pl.col("_sig"), pl.col("_comm")),
        pl.when(pl.col("_np") > 0).then(pl.struct("_s1", "_s2", "_np").hash(FC.SEED)).alias("seq"),
    )
    want = pl.col("seq").is_not_null()
    if known is not None and known.len():
        alone = pl.len().over([*FC.KEY, "_blk"], mapping_strategy="group_to_rows") == 1
        want = want & ~(alone & pl.col("seq").is_in(known.implode()))
    reps = runs.filter(want).unique("seq", keep="first").select("_run", "seq")
    sets = (
        df.join(reps, on="_run", how="inner")
        .filter(pl.col("_h").is_not_null())
        .with_columns(collfast.sig_fields(pl.col("_sig"), pl.col("_comm"))[:2])
        .select("seq", "op_count", FC.sig())
        .unique()
    )
    procs, seqs = _per_key(runs.filter(pl.col("n_coll") > 0), S.conform(sets, S.COLL_SEQS))
    return procs, seqs, streams.from_runs(runs)


def _stamped(df: pl.DataFrame) -> list[pl.Expr]:
    """Per run, the last timestamp a line's own wrapper gave and its line (`collfast._split_stamps`)."""
    if collfast.STAMPED not in df.columns:
        return []
    ts = pl.col(collfast.STAMPED)
    return [
        ts.drop_nulls().last().alias("_wts"),
        pl.col("line").filter(ts.is_not_null()).last().alias("ts_line"),
    ]


def _per_key(runs: pl.DataFrame, sets: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Runs -> one row per process key; a key's runs in one opCount block get the union of their sets."""
    per = S.conform(runs, {**FC.ONE_SET, "_blk": pl.Int64})
    return FC.union(per, sets, within=["_blk"])
