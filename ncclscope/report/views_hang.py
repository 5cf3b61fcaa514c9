"""Report stage, hang view: how far each rank got, one row per rank, for tables and the hang figure.

The per-rank facts come from the hang stage's view (`Session.hang`, built by `ncclscope.hang`: PyTorch watchdog / PG
status lines, Flight Recorder dumps, NCCL COLL opCounts); this module only picks the group to
show (the one the hang verdict names, else the largest) and marks who is behind. `hang` gives the
frame (the notebook's `hang_view`, the figure); `HangRank` is one of its rows typed, as the report's
hang section holds them (`ranks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

if TYPE_CHECKING:
    from ncclscope.hang import HangView
    from ncclscope.session import Session

HANG_SCHEMA: dict[str, Any] = {
    "rank": pl.Int64,
    "host": pl.Utf8,
    "group": pl.Utf8,  # process group (PyTorch) shown
    "last_op": pl.Utf8,
    "last_op_count": pl.Int64,  # NCCL opCount of the last COLL line (world communicator)
    "timed_out_seq": pl.Int64,
    "last_enqueued": pl.Int64,
    "last_completed": pl.Int64,
    "detector": pl.Boolean,  # first to detect the timeout (dump signal)
    "culprit": pl.Boolean,  # named by the hang verdict
    "behind": pl.Boolean,  # below the most advanced rank, or a culprit
    "silent": pl.Boolean,  # a rank of the group that printed nothing about its progress
    "path": pl.Utf8,
    "line": pl.Int64,
}


class HangRank(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One rank of the hang view (a row of `HANG_SCHEMA`, same fields in the same order).

    NCCL's opCount is kept as a number (the layouts print it in hex, as the log does); PyTorch's
    sequence numbers are decimal counters of their own. `path`/`line`: the line that says so.
    """

    rank: int | None
    host: str | None
    group: str | None  # the PyTorch process group shown
    last_op: str | None
    last_op_count: int | None  # NCCL opCount of the last COLL line (world communicator)
    timed_out_seq: int | None
    last_enqueued: int | None
    last_completed: int | None
    detector: bool  # first to detect the timeout (dump signal)
    culprit: bool  # named by the hang verdict
    behind: bool  # below the most advanced rank, or a culprit
    silent: bool  # a rank of the group that printed nothing about its progress
    path: str | None
    line: int | None

    @property
    def flag(self) -> str:
        """What the hang table says about the rank, in words (the first that holds, in this order)."""
        if self.culprit:
            return "culprit"
        if self.behind:
            return "behind"
        if self.silent:
            return "no lines"
        return "detected the timeout" if self.detector else ""


def ranks(df: pl.DataFrame) -> tuple[HangRank, ...]:
    """The rows of a `hang` frame, typed (rank order kept)."""
    return msgspec.convert(df.select(list(HANG_SCHEMA)).to_dicts(), tuple[HangRank, ...])


def _verdict_group(view: HangView) -> tuple[str | None, set[int], int | None]:
    """(group the hang verdict names, culprit ranks, group size), read from the hang stage's view.

    The group is that of the first verdict the hang rules report, in their order: verdicts with
    hang evidence, then the other warnings, then opCount disagreements alone. Culprits are every
    verdict's, the ranks that died, and (in a hang) ranks whose log ends mid-line.
    """
    vs = view.verdicts
    ordered = (
        [v for v in vs if v.hang_evidence]
        + [v for v in vs if not v.hang_evidence and v.klass != "c"]
        + [v for v in vs if not v.hang_evidence and v.klass == "c"]
    )
    group = next((v.group for v in ordered if v.group), None)
    size = next((v.group_size for v in ordered if v.group_size), None)
    culprits = {r for v in vs for r in v.culprits} | {r for r, _e in view.exited}
    if vs and view.ends is not None and view.ends.height:
        culprits |= set(view.ends.filter(pl.col("mid_line"))["rank"].drop_nulls().to_list())
    return group, culprits, size


def _torch_part(progress: pl.DataFrame, group: str | None) -> pl.DataFrame:
    if progress.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "group": pl.Utf8})
    groups = (
        progress.group_by("group")
        .agg(pl.col("rank").n_unique().alias("n"))
        .sort(["n", "group"], descending=True)
    )
    pick = group if group in set(groups["group"].to_list()) else groups["group"][0]
    rows = progress.filter((pl.col("group") == pick) & pl.col("rank").is_not_null()).sort(
        "line", nulls_last=True
    )
    return rows.group_by("rank").agg(
        pl.col("group").first(),
        pl.col("op").drop_nulls().first().alias("_op"),
        pl.col("timed_out_seq").min(),
        pl.col("enqueued").max().alias("last_enqueued"),
        pl.col("completed").max().alias("last_completed"),
        pl.col("detector").any(),
        pl.col("path").first().alias("_tpath"),
        pl.col("line").first().alias("_tline"),
    )


def _coll_part(coll: pl.DataFrame) -> pl.DataFrame:
    if coll.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64})
    # The world communicator (most ranks) is the one whose opCounts line up across all ranks.
    world = coll.sort(["nranks", "n_coll"], descending=True, nulls_last=True)["comm"][0]
    rows = coll.filter((pl.col("comm") == world) & pl.col("rank").is_not_null())
    return rows.group_by("rank").agg(
        pl.col("last_op").last(),
        pl.col("last_op_count").max(),
        pl.col("path").first(),
        pl.col("line").first(),
    )


def hang(s: Session) -> pl.DataFrame:
    """Per rank: the last collective (NCCL opCount) and PyTorch work sequence numbers it reached.

    `behind` marks ranks below the most advanced rank (or named by the hang verdict); `silent`
    marks ranks of the group that printed nothing of the kind.
    """
    rep = s.hang
    group, culprits, size = _verdict_group(rep)
    torch, coll = _torch_part(rep.progress, group), _coll_part(rep.coll)
    if torch.is_empty() and coll.is_empty():
        return pl.DataFrame(schema=HANG_SCHEMA)
    df = coll.join(torch, on="rank", how="full", coalesce=True) if coll.height else torch
    size = size or _world_size(s, rep.coll)
    if size and size <= 4096:
        df = pl.DataFrame({"rank": range(size)}, schema={"rank": pl.Int64}).join(
            df, on="rank", how="full", coalesce=True
        )
    df = df.join(_hosts(s.ranks), on="rank", how="left")
    return _flags(df, culprits)


def _world_size(s: Session, coll: pl.DataFrame) -> int | None:
    sizes = [x for x in (coll["nranks"].max() if coll.height else None,) if isinstance(x, int)]
    return max(sizes) if sizes else None


def _hosts(ranks: pl.DataFrame) -> pl.DataFrame:
    return (
        ranks.filter(pl.col("rank").is_not_null()).group_by("rank").agg(pl.col("host").drop_nulls().first())
    )


def _flags(df: pl.DataFrame, culprits: set[int]) -> pl.DataFrame:
    for c, t in HANG_SCHEMA.items():
        if c not in df.columns and not c.startswith("_"):
            df = df.with_columns(pl.lit(None, dtype=t).alias(c))
    behind = pl.col("rank").is_in(sorted(culprits))
    for c in ("last_op_count", "last_enqueued", "last_completed"):
        behind = behind | (pl.col(c) < pl.col(c).max()).fill_null(False)
    progress = ["last_op_count", "timed_out_seq", "last_enqueued", "last_completed"]
    df = df.with_columns(
        last_op=pl.coalesce("last_op", *(["_op"] if "_op" in df.columns else [])),
        path=pl.coalesce("path", *(["_tpath"] if "_tpath" in df.columns else [])),
        line=pl.coalesce("line", *(["_tline"] if "_tline" in df.columns else [])),
        culprit=pl.col("rank").is_in(sorted(culprits)).fill_null(False),
        behind=behind.fill_null(False),
        silent=pl.all_horizontal(pl.col(c).is_null() for c in progress),
        detector=pl.col("detector").fill_null(False),
    )
    return df.select(list(HANG_SCHEMA)).cast(HANG_SCHEMA).sort("rank")  # type: ignore[arg-type]
