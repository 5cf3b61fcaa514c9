"""Rules over NCCL's own reports (`parse.ncclreports`): RAS dead processes, Inspector stragglers.

RAS communicator-level missing ranks and count mismatches are hang verdicts (`hang.ras_report`) and
reach `collective-hang`; what is left here is a job-level `DEAD`/`INCOMPLETE` process that no
communicator block names (RAS has already dropped the communicators, or prints only the process), and
the NCCL Inspector's per-rank, per-operation kernel times.

Inspector straggler reasoning: a collective's kernel runs on each rank from its own launch until the
data has moved, so the ranks that launched early wait inside their kernel for the last one. For one
operation (communicator, collective, `coll_sn`) the rank with the shortest kernel time is therefore
the one that arrived last. A rank that is the last arriver of most comparable operations is a
straggler: the others' extra time is spent waiting for it. A rank with no record of an operation is
left out of that operation (the plugin's ring buffer drops records; NVIDIA/nccl#1945): unknown, never
counted as late or absent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.hang.ras_report import pidless_dead
from ncclscope.records import Evidence, Finding


@dataclass(frozen=True)
class Threshold:
    value: float
    reason: str


INSPECTOR_THRESHOLDS = {
    "ratio": Threshold(
        2.0,
        "the slowest rank's kernel took at least twice the fastest's: below that, launch jitter and "
        "per-rank algorithm steps make kernel times differ without anyone waiting",
    ),
    "gap_us": Threshold(
        1000.0,
        "and at least 1 ms more: a few microseconds of skew is normal launch noise even on small messages",
    ),
    "min_ops": Threshold(5, "a rank is called a straggler only after being last on 5 operations, not on one"),
    "share": Threshold(
        0.5,
        "and last on at least half of the operations compared: a rank late on a few is noise; one late on "
        "most holds the group up",
    ),
}


@rule("ras-dead-process", "error", "NCCL RAS lists a job process as dead or unreachable", "hang")
def ras_dead_process(ctx: Context) -> Iterable[Finding]:
    """A process in a RAS report's job-level `DEAD` list (unreachable for 60 s: error) or `INCOMPLETE`
    list (no answer to this query: warning), when no communicator block of that report names its rank
    (then `collective-hang` has it). The rank comes from the logs' (host, pid) when they hold it."""
    named = {(m.host, m.pid) for rep in ctx.reports.ras for c in rep.comms for m in c.missing}
    by_pid = {
        (str(h), int(p)): int(r)
        for h, p, r in ctx.ranks.select("host", "pid", "rank").drop_nulls().iter_rows()
    }
    seen: set[tuple[str, int]] = set()
    for rep in ctx.reports.ras:
        if pidless_dead(rep):
            continue  # its dead processes are the missing ranks `collective-hang` names
        for p in sorted(rep.processes, key=lambda p: not p.dead):
            if (p.host, p.pid) in named or (p.host, p.pid) in seen:
                continue
            seen.add((p.host, p.pid))
            rank = by_pid.get((p.host, p.pid))
            who = (
                f"rank {rank} (process {p.pid} on {p.host}, GPU {p.gpus})"
                if rank is not None
                else (f"process {p.pid} on {p.host} (GPU {p.gpus})")
            )
            state = "considered dead" if p.dead else "not answering"
            yield Finding(
                id="ras-dead-process",
                severity="error" if p.dead else "warning",
                title=f"NCCL RAS: {who} is {state}",
                why=(
                    "RAS declares a process dead after 60 s without contact over its own TCP network: the "
                    "process crashed, was killed, or its host is unreachable. Every communicator it belongs "
                    "to can no longer complete a collective."
                    if p.dead
                    else "RAS got no answer from this process to this query: it is stopped, crashed or busy "
                    "outside NCCL. RAS declares it dead if this lasts 60 s."
                ),
                fix="Read that process's own log and the host's kernel log (OOM killer, Xid, segfault) around "
                "the time of the report; query RAS again to see whether the state persists.",
                ranks=(rank,) if rank is not None else (),
                hosts=(p.host,),
                evidence=(p.evidence,),
                metrics={"pid": p.pid, "host": p.host, "dead": p.dead, "rank": rank},
            )


@rule("ras-comm-error", "warning", "NCCL RAS: ranks of a communicator report an NCCL error", "hang")
def ras_comm_error(ctx: Context) -> Iterable[Finding]:
    """A communicator whose ranks RAS found in an error state: the text report's `#G-C (hash) ERROR` block
    (`Initialization/Asynchronous error(s) on N rank(s)`, `Rank R reported E`) or the JSON's non-zero
    `init_state` (other than 7, still initialising) / `async_error`. A warning: the ranks that report
    `Remote process error` are usually the survivors of another rank's failure; the error names which."""
    for rep in ctx.reports.ras:
        for c in rep.comms:
            if not c.errors:
                continue
            by: dict[str, list[int]] = {}
            for r, err in c.errors:
                by.setdefault(err, []).append(r)
            parts = "; ".join(
                f"{e} on rank(s) {', '.join(map(str, sorted(set(rs))))}" for e, rs in sorted(by.items())
            )
            yield Finding(
                id="ras-comm-error",
                severity="warning",
                title=f"NCCL RAS: communicator {c.hash}: {parts}"[:300],
                why="RAS collects each rank's ncclCommGetAsyncError and initialisation result: these ranks hold an "
                "error, so the communicator cannot run collectives. A remote-process error on a rank points at a "
                "peer that failed first.",
                fix="Read the cited ranks' logs for the NCCL WARN that set the error; if they report a remote "
                "error, look for the rank that failed first (a crash, a missing rank in the same report).",
                ranks=tuple(sorted({r for r, _e in c.errors})),
                evidence=(c.evidence,),
                metrics={"communicator": c.hash, "errors": {e: sorted(set(rs)) for e, rs in by.items()}},
            )


def _last_arrivers(insp: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per communicator and rank: operations where it was the last arriver; per communicator: operations
    compared)."""
    t = INSPECTOR_THRESHOLDS
    coll = insp.filter(
        (pl.col("kind") == "coll") & pl.col("exec_us").is_not_null() & pl.col("rank").is_not_null()
    ).filter(pl.col("sn").is_not_null() & pl.col("comm").is_not_null())
    ops = coll.group_by("comm", "op", "sn").agg(
        pl.len().alias("n"),
        pl.col("exec_us").min().alias("lo"),
        pl.col("exec_us").max().alias("hi"),
        pl.col("rank").sort_by("exec_us", "rank").first().alias("last"),
        pl.col("host").sort_by("exec_us", "rank").first().alias("host"),
        pl.col("path").sort_by("exec_us", "rank").first().alias("path"),
        pl.col("line").sort_by("exec_us", "rank").first().alias("line"),
        pl.col("pid").sort_by("exec_us", "rank").first().alias("pid"),
        pl.col("exec_us").sort_by("exec_us", "rank").first().alias("own_us"),
    )
    compared = ops.filter(pl.col("n") >= 2)
    total = compared.group_by("comm").agg(pl.len().alias("compared"), pl.col("n").max().alias("ranks_seen"))
    late = compared.filter(
        (pl.col("hi") >= t["ratio"].value * pl.col("lo")) & (pl.col("hi") - pl.col("lo") >= t["gap_us"].value)
    )
    per = (
        late.sort("comm", "sn", "op")
        .group_by("comm", "last", maintain_order=True)
        .agg(
            pl.len().alias("times"),
            (pl.col("hi") - pl.col("lo")).median().alias("gap_us"),
            pl.col("host").first(),
            pl.col("path").first(),
            pl.col("line").first(),
            pl.col("pid").first(),
            pl.col("own_us").first(),
            pl.col("sn").first(),
            pl.col("op").first().alias("first_op"),
            pl.col("hi").first(),
            pl.col("op").unique().sort().alias("ops"),
        )
    )
    return per.join(total, on="comm").sort("comm", "last"), total


def _gaps(insp: pl.DataFrame, comm: str) -> dict[int, int]:
    """Per rank of one communicator that has records: how many of the operations others recorded it lacks."""
    c = insp.filter((pl.col("comm") == comm) & (pl.col("kind") == "coll")).drop_nulls(["rank", "sn"])
    ops = c.select("op", "sn").unique().height
    per = c.group_by("rank").agg(pl.struct("op", "sn").n_unique().alias("k")).sort("rank")
    return {int(r): ops - int(k) for r, k in per.iter_rows() if ops - int(k) > 0}


@rule("inspector-straggler", "warning", "NCCL Inspector: one rank arrives last at most collectives", "traces")
def inspector_straggler(ctx: Context) -> Iterable[Finding]:
    """From NCCL Inspector records: per communicator, a rank that is the last to launch (its kernel is
    the shortest, the others wait in theirs) on at least `min_ops` (5) operations and at least `share`
    (half) of the operations compared, counting an operation when the slowest kernel took `ratio` (2×)
    the fastest and `gap_us` (1 ms) more (`INSPECTOR_THRESHOLDS`, each with its reason). Ranks without a
    record of an operation are left out of it (unknown)."""
    insp = ctx.reports.inspector
    if insp.is_empty():
        return
    t = INSPECTOR_THRESHOLDS
    per, _total = _last_arrivers(insp)
    sizes = insp.group_by("comm").agg(pl.col("n_ranks").max(), pl.col("rank").unique().sort().alias("have"))
    by_pid = {
        (str(h), int(p)): int(r)
        for h, p, r in ctx.ranks.select("host", "pid", "rank").drop_nulls().iter_rows()
    }
    for row in per.join(sizes, on="comm", how="left").iter_rows(named=True):
        if row["times"] < t["min_ops"].value or row["times"] < t["share"].value * row["compared"]:
            continue
        n, have = row["n_ranks"], row["have"] or []
        absent = sorted(set(range(n)) - set(have)) if n else []
        gaps = _gaps(insp, str(row["comm"]))
        unknown = f" Ranks with no Inspector record at all (unknown, not absent): {absent}." if absent else ""
        unknown += (
            " Operations some ranks have no record of (left out of the comparison for those ranks, not "
            "counted as late): " + ", ".join(f"rank {r}: {k}" for r, k in gaps.items()) + "."
            if gaps
            else ""
        )
        yield Finding(
            id="inspector-straggler",
            severity="warning",
            title=(
                f"Rank {row['last']} of communicator {row['comm']} arrived last at {row['times']} of "
                f"{row['compared']} collectives (others waited a median {row['gap_us'] / 1000:.1f} ms)"
            ),
            why="The rank with the shortest kernel time of an operation launched it last: the others' kernels "
            "started earlier and waited for it. One rank last on most operations holds its group up "
            f"(rank numbers are the communicator's own).{unknown}",
            fix="Look at what that rank does between collectives (data loading, host-side work, a slower GPU "
            "or CPU, contention on its host); compare its step time with the others' in a profiler trace. "
            "Where the logs print the same host:pid, the finding names its global rank.",
            ranks=tuple(r for r in [by_pid.get((row["host"], row["pid"]))] if r is not None),
            hosts=(row["host"],) if row["host"] else (),
            evidence=(
                Evidence(
                    str(row["path"]),
                    int(row["line"]),
                    f"Inspector record: {row['first_op']} coll_sn {row['sn']} rank {row['last']} "
                    f"coll_exec_time_us {row['own_us']:g} (others up to {row['hi']:g})",
                ),
            ),
            metrics={
                "communicator": row["comm"],
                "rank": row["last"],
                "last_arrivals": row["times"],
                "compared": row["compared"],
                "median_wait_us": row["gap_us"],
                "ops": row["ops"],
                "ranks_without_records": absent,
                "operations_without_record": {str(r): k for r, k in gaps.items()},
            },
        )
