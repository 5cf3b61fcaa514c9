"""Parse stage, torch.profiler traces: the process group of each gloo collective, from its thread.

Gloo traces (torch 2.13) name no group in any arg, but each `ProcessGroupGloo` runs its work on
threads of its own (`pt_gloo_runloop`; `Options.threads`, 2 unless set, and `new_group` does not
set it), started one after the other by its constructor, and a process builds its groups in the
order of their names ("0", the default group, then each `new_group`). So on one rank the threads
that run `gloo:<op>` spans come in groups of thread ids, in the order of the groups that
`distributedInfo.pg_config` lists for that rank (only the groups it belongs to). Two readings:
- runs of consecutive ids, when there are exactly as many as groups;
- else, when the rank shows exactly 2 threads per group (every group ran work on both), pairs
  in id order: other processes starting threads at the same moment can split a group's two ids
  (samples/multipg/b: the default group's threads 3866 and 3869 on rank 0 of 8).
Seen on every real gloo capture here (samples/traces/gloo_subgroup, samples/multipg a-f).

A rank in one group needs no thread at all. A rank in several is told apart only by one of those
readings, and only when every all-gather / reduce-scatter then agrees with its group's size;
otherwise no rank keeps a group (the caller lines them up by their order as one sequence), with a
note saying why. A group whose threads did not show up in the window makes the counts differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

# Columns this stage fills (the TRACE_COLLECTIVES names) from the rank's pg_config row.
_PG_COLS = ("pg_name", "pg_desc", "group_size", "pg_ranks")
LANE = "_gtid"
MAX_NOTES = 3  # ranks named in the note when groups cannot be told apart (then a count)
_LEAD = "gloo collectives lined up as one sequence per rank, process groups not told apart"  # the CPU thread of the collective's `gloo:<op>` span (null: no span paired)


@dataclass(frozen=True)
class _Plan:
    lanes: pl.DataFrame  # rank, _gtid, pg_name (rows of ranks in several groups)
    single: pl.DataFrame  # rank, pg_name (ranks in one group)
    notes: tuple[str, ...]


def assign_groups(rows: pl.DataFrame, pgs: pl.DataFrame) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """`rows` (gloo collectives with `LANE`) with pg_name, pg_desc, group_size and pg_ranks filled
    where every rank's groups can be told apart; else as given, with a note."""
    if rows.is_empty() or pgs.is_empty() or LANE not in rows.columns:
        return rows, ()
    rows = rows.drop([c for c in _PG_COLS if c in rows.columns])
    cfg = _config(pgs)
    plan = _plan(rows, cfg)
    if plan.notes:
        return rows, plan.notes
    by_lane = rows.join(plan.lanes, on=["rank", LANE], how="left")
    by_rank = by_lane.join(plan.single, on="rank", how="left", suffix="_one")
    named = by_rank.with_columns(pl.coalesce("pg_name", "pg_name_one").alias("pg_name")).drop("pg_name_one")
    out = named.join(cfg.select("rank", "pg_name", *_PG_COLS[1:]), on=["rank", "pg_name"], how="left")
    bad = _size_disagreements(out)
    if bad:
        return rows, bad
    return out, ()


def _config(pgs: pl.DataFrame) -> pl.DataFrame:
    """The pg_config rows, one per (rank, group), with each rank's groups in creation order."""
    return (
        pgs.unique(["rank", "pg_name"], keep="first", maintain_order=True)
        .with_columns(
            pl.col("pg_name").cast(pl.Int64, strict=False).alias("_order"),
            pl.col("pg_size").alias("group_size"),
        )
        .sort("rank", "_order", "pg_name", nulls_last=True)
    )


def _plan(rows: pl.DataFrame, cfg: pl.DataFrame) -> _Plan:
    per = cfg.group_by("rank", maintain_order=True).agg(
        pl.col("pg_name"), pl.col("_order").null_count().alias("_unnamed")
    )
    groups = {r["rank"]: (r["pg_name"], r["_unnamed"]) for r in per.iter_rows(named=True)}
    coll = rows.filter(~pl.col("op").is_in(["send", "recv"]))
    per_rank = coll.group_by("rank").agg(
        pl.col(LANE).drop_nulls().unique().sort().alias("_tids"), pl.col(LANE).null_count().alias("_unpaired")
    )
    lanes: list[dict[str, object]] = []
    single: list[dict[str, object]] = []
    notes: list[str] = []
    for rank, tids, unpaired in per_rank.sort("rank").iter_rows():
        names, unnamed = groups.get(rank, ([], 0))
        if len(names) == 1:
            single.append({"rank": rank, "pg_name": names[0]})
            continue
        why = _why_not(names, unnamed, tids, unpaired)
        if why:
            notes.append(f"rank {rank}: {why}")
            continue
        for name, run in zip(names, _split(tids, len(names)), strict=True):
            lanes.extend({"rank": rank, LANE: tid, "pg_name": name} for tid in run)
    if notes:
        more = [f"and {len(notes) - MAX_NOTES} more rank(s)"] if len(notes) > MAX_NOTES else []
        return _Plan(pl.DataFrame(), pl.DataFrame(), (f"{_LEAD}: " + "; ".join(notes[:MAX_NOTES] + more),))
    schema = {"rank": pl.Int64, LANE: pl.Int64, "pg_name": pl.Utf8}
    return _Plan(
        pl.DataFrame(lanes, schema=schema),
        pl.DataFrame(single, schema={"rank": pl.Int64, "pg_name": pl.Utf8}),
        (),
    )


def _why_not(names: list[str], unnamed: int, tids: list[int], unpaired: int) -> str | None:
    if not names:
        return "its trace lists no process group (distributedInfo.pg_config)"
    if unnamed:
        return "its groups' names do not give their creation order"
    if unpaired:
        return f"{unpaired} collective(s) have no gloo:* span to say which thread ran them"
    if not _split(tids, len(names)):
        return (
            f"its gloo:* spans run on {len(tids)} thread(s) in {len(_runs(tids))} run(s) of consecutive "
            f"ids: neither one run per group nor 2 threads per group ({len(names)} groups)"
        )
    return None


THREADS_PER_GROUP = 2  # ProcessGroupGloo's Options.threads unless set (new_group does not set it)


def _split(tids: list[int], k: int) -> list[list[int]]:
    """The sorted thread ids of a rank in `k` groups, one list per group in creation order; [] when
    neither reading applies."""
    runs = _runs(tids)
    if len(runs) == k:
        return runs
    if len(tids) == THREADS_PER_GROUP * k:
        return [tids[i : i + THREADS_PER_GROUP] for i in range(0, len(tids), THREADS_PER_GROUP)]
    return []


def _runs(tids: list[int]) -> list[list[int]]:
    """Sorted thread ids split where they stop being consecutive."""
    out: list[list[int]] = []
    for t in tids:
        if out and t == out[-1][-1] + 1:
            out[-1].append(t)
        else:
            out.append([t])
    return out


def _size_disagreements(rows: pl.DataFrame) -> tuple[str, ...]:
    """An all-gather gathers, and a reduce-scatter scatters, over its group's size: a ratio that is
    not the size means a thread run was matched to the wrong group."""
    ratio = (
        pl.when(pl.col("op") == "allgather")
        .then(pl.col("out_nelems") / pl.col("in_nelems"))
        .when(pl.col("op") == "reduce_scatter")
        .then(pl.col("in_nelems") / pl.col("out_nelems"))
    )
    sized = (pl.col("in_nelems") > 0) & (pl.col("out_nelems") > 0) & pl.col("group_size").is_not_null()
    bad = rows.filter(sized & (ratio != pl.col("group_size")))
    if bad.is_empty():
        return ()
    r = bad.sort("rank", "start_us").row(0, named=True)
    why = (
        f"rank {r['rank']}'s {r['op']} of {r['in_nelems']} → {r['out_nelems']} elements does not fit "
        f"the size {r['group_size']} of the group its thread was matched to (pg {r['pg_name']})"
    )
    return (f"{_LEAD}: {why}",)
