"""Hang stage, verdicts from NCCL RAS reports (`parse.ncclreports`): who is missing, who lags.

Per communicator hash, across every report given (repeated queries of one job):
- ranks RAS has no data from are (d) culprits: their process stopped answering. `considered_dead`
  (JSON) or the job-level `DEAD` list naming the rank's process (text) makes it high confidence;
  unresponsive only, medium: RAS declares a process dead after 60 s without contact, and a process
  stopped in a debugger answers no better than a crashed one.
- ranks at a lower launched-operation count are (a) culprits, as in `sources.ras_verdicts`. One
  snapshot gives medium confidence (RAS's own guide: a mismatch that moves on at the next query is
  normal); the same counts in two or more snapshots give high; counts that moved between snapshots
  give no verdict (the job was progressing).
A verdict is keyed by the 16-digit hash, so it replaces the log grammar's reading of the same
communicator (`merge_ras`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from ncclscope.hang.classify import HangVerdict
from ncclscope.parse.ncclreports.ras_model import RasComm, RasCountGroup, RasReport, norm_hash

_UNRESPONSIVE = "RAS had not declared the process dead yet (it does after 60 s without contact)"
_ONE_SNAPSHOT = "one RAS snapshot: a count mismatch that moves on at the next query is normal"


def ras_report_verdicts(reports: Sequence[RasReport]) -> list[HangVerdict]:
    by_hash: dict[str, list[tuple[RasReport, RasComm]]] = {}
    for rep in reports:
        for c in rep.comms:
            by_hash.setdefault(c.hash, []).append((rep, c))
    out: list[HangVerdict] = []
    for h, seen in by_hash.items():
        v = _missing(h, seen) or _lagging(h, seen)
        if v is not None:
            out.append(v)
    return out


def _dead_pids(rep: RasReport) -> set[int]:
    return {p.pid for p in rep.processes if p.dead}


def pidless_dead(rep: RasReport) -> set[int]:
    """Missing ranks the 2.24/2.25 text names without their process (`The missing rank: 21`), taken as the
    job-level `DEAD` processes when the report lists exactly as many of those as such ranks and no process
    as merely missing: RAS lists one process per missing rank of a one-GPU-per-process job."""
    ranks = {m.rank for c in rep.comms for m in c.missing if m.pid is None and m.dead is None}
    dead = [p for p in rep.processes if p.dead]
    if ranks and len(dead) == len(ranks) and all(p.dead for p in rep.processes):
        return ranks
    return set()


def _missing(h: str, seen: list[tuple[RasReport, RasComm]]) -> HangVerdict | None:
    rep, c = seen[-1]  # the latest answer
    if not c.missing:
        return None
    inferred = pidless_dead(rep)
    dead = {m.rank for m in c.missing if m.dead or (m.pid is not None and m.pid in _dead_pids(rep))}
    dead |= {m.rank for m in c.missing if m.rank in inferred}
    ranks = tuple(sorted({m.rank for m in c.missing}))
    state = (
        "considered dead" if dead == set(ranks) else "unresponsive" if not dead else "unresponsive or dead"
    )
    return HangVerdict(
        klass="d",
        group=f"RAS comm {h}",
        source="ras",
        culprits=ranks,
        ranks_seen=c.reported,
        group_size=c.size,
        confidence="high" if dead else "medium",
        reason=f"NCCL RAS has no data from rank(s) {', '.join(map(str, ranks))} ({state})",
        missing=(
            (_UNRESPONSIVE,)
            if not dead
            else ("the report names no process per missing rank: its DEAD process list is taken as theirs",)
            if dead & inferred
            else ()
        ),
        evidence=(c.evidence, *(m.evidence for m in c.missing[:7])),
        key=h,
        hosts=tuple(sorted({m.host for m in c.missing if m.host})),
    )


def _lowest(groups: tuple[RasCountGroup, ...], size: int | None) -> tuple[str, int, tuple[int, ...]] | None:
    """(op, count, culprits) for the collective type whose lowest-count group is known by its members."""
    ops = sorted({g.op for g in groups})
    for op in ops:
        gs = [g for g in groups if g.op == op]
        if len(gs) < 2:
            continue
        low = min(gs, key=lambda g: g.count)
        if len(low.ranks) == low.n:
            return op, low.count, low.ranks
        total = size or sum(g.n for g in gs)
        listed = {r for g in gs if g is not low for r in g.ranks}
        if listed and sum(g.n for g in gs if g is not low) == len(listed):
            return op, low.count, tuple(sorted(set(range(total)) - listed))
    return None


def _lagging(h: str, seen: list[tuple[RasReport, RasComm]]) -> HangVerdict | None:
    c = seen[-1][1]
    if not c.counts:
        return None
    snaps = [tuple((g.op, g.count, g.n) for g in x.counts) for _r, x in seen]
    if len(snaps) > 1 and len(set(snaps)) > 1:
        return None  # the counts moved between queries: progressing, not stuck
    low = _lowest(c.counts, c.size)
    culprits = low[2] if low is not None else ()
    op = low[0] if low is not None else c.counts[0].op
    top = max(g.count for g in c.counts if g.op == op)
    parts = ", ".join(f"{g.n} rank(s) at {g.op} operation {g.count}" for g in c.counts if g.op == op)
    steady = len(snaps) > 1
    return HangVerdict(
        klass="a",
        group=f"RAS comm {h}",
        source="ras",
        op=op if op != "collective" else None,
        seq=top,
        culprits=culprits,
        ranks_seen=c.reported,
        group_size=c.size or sum(g.n for g in c.counts if g.op == op),
        confidence=("high" if steady else "medium") if culprits else "low",
        reason=f"NCCL RAS: {parts}" + (f", unchanged across {len(snaps)} queries" if steady else ""),
        missing=() if steady else (_ONE_SNAPSHOT,),
        evidence=(c.evidence, *(g.evidence for g in c.counts[:7])),
        key=h,
    )


def merge_ras(verdicts: list[HangVerdict], from_reports: list[HangVerdict]) -> list[HangVerdict]:
    """The log grammar's RAS verdicts, each replaced by a report's verdict on the same communicator."""
    keys = {v.key for v in from_reports}
    kept = [v for v in verdicts if not (v.source == "ras" and norm_hash(v.key) in keys)]
    return kept + from_reports


def globalize(verdicts: list[HangVerdict], inits: pl.DataFrame) -> list[HangVerdict]:
    """RAS names a communicator's own ranks. Where the logs hold that communicator's Init lines (NCCL
    prints the same commHash as `commId 0x…`), each rank becomes the global rank its process holds in
    the largest communicator the logs show; where they do not, the verdict says the numbers are local."""
    rows = inits.filter(pl.col("comm_id").is_not_null() & pl.col("rank").is_not_null())
    rows = rows.filter(pl.col("host").is_not_null() & pl.col("pid").is_not_null())
    if rows.is_empty():
        return verdicts
    rows = rows.with_columns(pl.col("comm_id").map_elements(norm_hash, return_dtype=pl.Utf8).alias("h"))
    world = rows.sort("nranks", descending=True, nulls_last=True)["h"][0]
    glob = {
        (h, p): int(r)
        for h, p, r in rows.filter(pl.col("h") == world).select("host", "pid", "rank").iter_rows()
    }
    out = []
    for v in verdicts:
        if v.source != "ras":
            out.append(v)
            continue
        local = {
            int(r): glob.get((h, p))
            for r, h, p in rows.filter(pl.col("h") == v.key).select("rank", "host", "pid").iter_rows()
        }
        if v.key == world:
            out.append(v)
        elif v.culprits and all(local.get(r) is not None for r in v.culprits):
            mapped = tuple(sorted(int(local[r]) for r in v.culprits))  # type: ignore[arg-type]
            note = f"RAS's rank(s) {', '.join(map(str, v.culprits))} of this communicator are global {mapped}"
            out.append(replace(v, culprits=mapped, ranks_seen=(), reason=f"{v.reason}; {note}"))
        else:
            why = "RAS numbers the communicator's own ranks; no Init line of it in the logs maps them to global ranks"
            out.append(replace(v, missing=(*v.missing, why)))
    return out
