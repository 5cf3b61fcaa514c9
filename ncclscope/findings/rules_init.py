"""Findings stage, init rules: communicators whose init started and did not complete.

Whether an init is stuck depends on what the job's facts (`align.facts`) say about the input: later lines
can prove init finished, and the end of an excerpt is no job state. Reference: real-logs.md §5 R4.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import first_per, make, norm_host
from ncclscope.records import Finding, Severity

ELISION = r"^\s*(?:\.{3,}|。{2,}|…+|\[\.\.\.\]|\(\.\.\.\)|<snip>|\[snip\]|-- ?snip ?--)\s*$"


@rule(
    "init-incomplete",
    "error",
    "Communicator init started but did not complete",
    "config",
    searches=(ELISION,),
)
def init_incomplete(ctx: Context) -> Iterable[Finding]:
    """Ranks with `Init START` but no `Init COMPLETE` for the same communicator. Ranks whose later lines prove
    init finished (COLL lines on that communicator's pointer, or PyTorch watchdog/status lines naming a
    collective sequence number for that rank of a world-sized communicator) are not stuck. Error when other
    ranks of that communicator completed (those ranks are stuck or failed in init); warning when none did
    (the excerpt may simply end before COMPLETE); info when the input is one pasted excerpt (one file holding
    an elision marker such as `...` or `。。。`) and the stuck ranks print nothing after START. When the job
    facts do not show the input whole (start and end) and the stuck ranks are silent after START, an excerpt's
    end is no job state: the error becomes a warning and the warning info, each saying so."""
    if ctx.logs.inits.filter(pl.col("phase") == "start").is_empty():
        return []
    inits = ctx.init_rows
    start = inits.filter(pl.col("phase") == "start")
    done = inits.filter(pl.col("phase") == "complete").select("comm_key", "rank").unique()
    stuck = _not_proven_done(ctx, start.join(done, on=["comm_key", "rank"], how="anti"))
    if stuck.is_empty():
        return []
    out: list[Finding] = []
    cut = _excerpt_cut(ctx, stuck)
    silent = _silent_after(ctx, stuck) and not all(i.whole for i in ctx.facts.inputs)
    for key, rows in stuck.group_by("comm_key", maintain_order=True):
        completed = done.filter(pl.col("comm_key") == key[0]).height
        sev: Severity = (
            ("warning" if silent else "error") if completed else "info" if (cut or silent) else "warning"
        )
        n = rows["rank"].n_unique()
        title = (
            f"{n} rank(s) started init but never completed while {completed} did"
            if completed and not silent
            else f"If this log is whole, {n} rank(s) never completed init while {completed} did (they print "
            "nothing after Init START: the excerpt may end there)"
            if completed
            else "Init START without Init COMPLETE before the excerpt ends (if the log is whole, init hung there)"
            if silent and not cut
            else "Init START without Init COMPLETE in the evidence"
        )
        out.append(
            make(
                "init-incomplete",
                sev,
                title,
                "A rank that never reaches Init COMPLETE is stuck in bootstrap, topology search or "
                "connection setup; every collective on that communicator will hang.",
                "Look at the last lines those ranks printed (bootstrap, NET, channel setup) and at WARNs "
                "on them; check that every rank of the communicator was launched and can reach the others.",
                first_per(rows, ["host", "pid", "rank"]),
                ctx,
                metrics={"comm": key[0]},
            )
        )
    return out


def _not_proven_done(ctx: Context, stuck: pl.DataFrame) -> pl.DataFrame:
    """`stuck` less the START rows whose communicator later ran collectives: COLL lines on the same comm
    pointer, or (world-sized communicators) a PyTorch line giving a sequence number for that rank."""
    if stuck.is_empty():
        return stuck
    colls = ctx.logs.coll.procs.filter(pl.col("n_coll") > 0).select(
        pl.col("host").fill_null(""), "pid", "comm_ptr"
    )
    stuck = norm_host(stuck).join(colls.unique(), on=["host", "pid", "comm_ptr"], how="anti")
    world = {c.key for c in ctx.facts.communicators if c.global_ranks}
    ran = ctx.logs.torch.filter(
        pl.col("seq").is_not_null() & (pl.col("seq") > 0) & pl.col("rank").is_not_null()
    )
    ran_ranks = ran.select(pl.col("rank").unique())
    proven = stuck.filter(pl.col("comm_key").is_in(list(world))).join(ran_ranks, on="rank", how="semi")
    return stuck.join(proven.select("path", "line"), on=["path", "line"], how="anti")


def _silent_after(ctx: Context, stuck: pl.DataFrame) -> bool:
    """No stuck process prints anything after its START line."""
    last = norm_host(ctx.logs.streams).group_by("path", "host", "pid").agg(pl.col("last_line").max())
    ends = norm_host(stuck).group_by("path", "host", "pid").agg(pl.col("line").max().alias("start_line"))
    later = ends.join(last, on=["path", "host", "pid"], how="left")
    return bool((later["last_line"].fill_null(0) <= later["start_line"]).all())


def _excerpt_cut(ctx: Context, stuck: pl.DataFrame) -> bool:
    """One input with a user's elision marker, and either every stuck rank's START has a marker after it
    (the user cut the log somewhere after START: COMPLETE may be in the cut part) or no stuck rank prints
    anything after its START."""
    marks = ctx.logs.unknown.filter(pl.col("text").fill_null("").str.contains(ELISION))
    if len(ctx.logs.inputs) != 1 or marks.is_empty():
        return False
    after = stuck.group_by("path").agg(pl.col("line").max().alias("start_line"))
    after = after.join(
        marks.group_by("path").agg(pl.col("line").max().alias("mark_line")), on="path", how="left"
    )
    if bool((after["mark_line"].fill_null(0) > after["start_line"]).all()):
        return True
    last = norm_host(ctx.logs.streams).group_by("path", "host", "pid").agg(pl.col("last_line").max())
    ends = norm_host(stuck).group_by("path", "host", "pid").agg(pl.col("line").max().alias("start_line"))
    later = ends.join(last, on=["path", "host", "pid"], how="left")
    return bool((later["last_line"].fill_null(0) <= later["start_line"]).all())
