"""Report stage, Perfetto export: a session as one Chrome JSON trace that ui.perfetto.dev opens.

`trace_document(s)` is pure (Session → JSON-able dict); `dumps(doc)` writes it, one event a line.
Every rank is a process (pid = rank + 1: Perfetto treats pid 0 as the kernel's swapper); threads hold
its profiler steps, collectives per process group or stream, send/recv and timed log lines.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import polars as pl

from ncclscope.report import perfetto_events as E
from ncclscope.report.perfetto_logs import evidence_times, log_events
from ncclscope.version import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ncclscope.records import Finding
    from ncclscope.session import Session

# pid = rank + PID_OFFSET; the job's own process (findings naming no rank, notes) and the log lines
# of no known rank get pids no rank below 999,997 can have. tid = pid * TIDS_PER_PID + thread number.
PID_OFFSET = 1
JOB_PID = 999_999
UNRANKED_PID = 999_998
TIDS_PER_PID = 1000
NOTHING_TIMED = (
    "nothing timed: no trace was given and no log line carries a timestamp, so the trace "
    "holds the processes and the findings only, all at time 0"
)
_PH_ORDER = {"X": 0, "s": 1, "f": 2, "i": 3}


def trace_document(s: Session, *, command: str | None = None) -> dict[str, Any]:
    """The Chrome JSON trace of `s`: {"traceEvents": [...], "metadata": {"ncclscope": {...}}}."""
    offsets = E.clock_offsets(s)
    hosts = E.rank_hosts(s)
    logs, log_notes = log_events(s, offsets)
    timed = pl.concat(
        [
            E.collective_events(s),
            E.raw_collective_events(s, offsets, hosts),
            E.step_events(s, offsets, hosts),
            logs,
        ]
    )
    # A finding may cite a timed line of a kind not drawn (a NET line): the origin covers it too.
    timed = pl.concat([timed, _finding_events(s.findings, evidence_times(s, offsets))])
    t0 = timed["ts_us"].min() if timed.height else None
    origin = float(t0) if isinstance(t0, (int, float)) else None
    notes = [*s.notes, *log_notes, *([NOTHING_TIMED] if origin is None else [])]
    ev = pl.concat([timed, _note_events(notes)])
    ev = _with_ids(ev)
    events = _metadata_events(ev, hosts) + _trace_events(ev, origin or 0.0)
    meta = _metadata(s, offsets, origin, notes, command, ev)
    return {"traceEvents": events, "metadata": {"ncclscope": meta}}


def dumps(doc: dict[str, Any]) -> str:
    """The trace as text: `traceEvents` first (Perfetto stops reading at an unknown top-level key)."""
    lines = ",\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in doc["traceEvents"])
    meta = json.dumps(doc["metadata"], ensure_ascii=False, indent=1)
    return '{"traceEvents":[\n' + lines + '\n],\n"metadata":' + meta + "}\n"


def render(s: Session, *, command: str | None = None) -> str:
    return dumps(trace_document(s, command=command))


# --- ids ---------------------------------------------------------------------------------------


def _with_ids(ev: pl.DataFrame) -> pl.DataFrame:
    pid = (
        pl.when(pl.col("proc") == "job")
        .then(pl.lit(JOB_PID))
        .when(pl.col("proc") == "unranked")
        .then(pl.lit(UNRANKED_PID))
        .otherwise(pl.col("rank") + PID_OFFSET)
    ).cast(pl.Int64)
    ev = ev.with_columns(pid.alias("pid"))
    threads = (
        ev.select("pid", "order", "thread")
        .unique()
        .sort("pid", "order", "thread")
        .with_columns((pl.col("pid") * TIDS_PER_PID + pl.int_range(1, pl.len() + 1).over("pid")).alias("tid"))
    )
    return ev.join(threads, on=["pid", "order", "thread"], how="left")


def _process_name(pid: int, host: dict[int, str]) -> str:
    if pid == JOB_PID:
        return "job · findings and notes"
    if pid == UNRANKED_PID:
        return "log lines of no known rank"
    rank = pid - PID_OFFSET
    return f"rank {rank} · {host[rank]}" if rank in host else f"rank {rank}"


def _metadata_events(ev: pl.DataFrame, hosts: pl.DataFrame) -> list[dict[str, Any]]:
    host = dict(zip(hosts["rank"].to_list(), hosts["host"].to_list(), strict=True))
    out: list[dict[str, Any]] = []
    threads = ev.select("pid", "tid", "thread").unique().sort("pid", "tid")
    for pid in threads["pid"].unique().sort().to_list():
        m = {"ph": "M", "ts": 0, "pid": pid, "tid": pid * TIDS_PER_PID}
        out.append({**m, "name": "process_name", "args": {"name": _process_name(pid, host)}})
        out.append({**m, "name": "process_sort_index", "args": {"sort_index": pid}})
    for pid, tid, name in threads.iter_rows():
        m = {"ph": "M", "ts": 0, "pid": pid, "tid": tid}
        out.append({**m, "name": "thread_name", "args": {"name": name}})
        out.append({**m, "name": "thread_sort_index", "args": {"sort_index": tid - pid * TIDS_PER_PID}})
    return out


def _trace_events(ev: pl.DataFrame, origin: float) -> list[dict[str, Any]]:
    # µs after the first event, to the ns: epoch µs as doubles keep only a quarter µs.
    ev = ev.with_columns(
        ((pl.col("ts_us") - origin).round(3).fill_null(0.0)).alias("ts"),
        pl.col("dur_us").round(3).alias("dur"),
        pl.col("ph").replace_strict(_PH_ORDER, default=9).alias("_ph"),
    )
    # Parents before children at one time (longer first); flows after the slices they bind to.
    ev = ev.sort(
        ["pid", "tid", "ts", "_ph", "dur", "name", "flow_id", "args"],
        descending=[False, False, False, False, True, False, False, False],
        nulls_last=True,
    )
    out: list[dict[str, Any]] = []
    for r in ev.select(
        "ph", "name", "cat", "ts", "dur", "pid", "tid", "scope", "flow_id", "args"
    ).iter_rows():
        ph, name, cat, ts, dur, pid, tid, scope, flow_id, args = r
        e: dict[str, Any] = {"ph": ph, "name": name, "cat": cat, "ts": ts}
        if ph == "X":
            e["dur"] = dur or 0.0
        e["pid"], e["tid"] = pid, tid
        if ph == "i":
            e["s"] = scope or "t"
        elif ph in ("s", "f"):
            e["id"] = flow_id
            if ph == "f":
                e["bp"] = "e"  # bind to the enclosing slice (the last rank's), not the next one
        if args:
            e["args"] = {k: v for k, v in json.loads(args).items() if v is not None}
        out.append(e)
    return out


# --- metadata ----------------------------------------------------------------------------------


def _metadata(
    s: Session,
    offsets: pl.DataFrame,
    origin: float | None,
    notes: list[str],
    command: str | None,
    ev: pl.DataFrame,
) -> dict[str, Any]:
    basis = str(offsets["basis"][0]) if offsets.height else None
    shown = offsets.sort("rank", "host", nulls_last=True).rename({"clock_offset_us": "offset_us"})
    applied = [{k: v for k, v in r.items() if v is not None and k != "basis"} for r in shown.to_dicts()]
    counts = ev.group_by("cat").len().sort("cat")
    return {
        "generator": f"ncclscope {__version__}",
        "command": command,
        "time_origin_epoch_us": origin,
        "time_unit": "ts and dur are µs after time_origin_epoch_us (the first event, after clock correction)",
        "pid": f"rank + {PID_OFFSET}; {JOB_PID}: the job (findings naming no rank, notes); "
        f"{UNRANKED_PID}: log lines of no known rank",
        "clock_offsets": {
            "basis": basis,
            "applied": applied,
            "how": _how(s, basis),
        },
        "flows": f"'{E.FLOW_NAME}': from each rank's slice of a lined-up collective to the slice of the rank "
        "that arrived last (the one the others waited for)",
        "events": dict(zip(counts["cat"].to_list(), counts["len"].to_list(), strict=True)),
        "notes": notes,
    }


def _how(s: Session, basis: str | None) -> str:
    if basis:
        return (
            f"offset_us was subtracted from every trace and log time of that {basis}'s clock; estimated "
            "from collective completions (ncclscope.align.clock)"
        )
    if s.traces is None:
        return "none: no trace was given, times are as the logs print them"
    return "none: no blocking collective had every rank of its group in the traces, times are as recorded"


# --- findings --------------------------------------------------------------------------------


def _finding_events(findings: Sequence[Finding], times: pl.DataFrame) -> pl.DataFrame:
    """One instant per finding and rank it names (process scope), or one global instant.

    Placed at the earliest timed line it cites (`times`: path, line, ts_us); else ts is null and the
    writer puts it at the trace's start.
    """
    at = {(p, ln): t for p, ln, t in times.select("path", "line", "ts_us").iter_rows()}
    rows: list[dict[str, Any]] = []
    for f in findings:
        cited = [at[(e.path, e.line)] for e in f.evidence if (e.path, e.line) in at]
        ts = min(cited) if cited else None
        args = json.dumps(
            {
                "id": f.id,
                "severity": f.severity,
                "title": f.title,
                "ranks": list(f.ranks)[:64],
                "hosts": list(f.hosts)[:64],
                "evidence": [f"{e.path}:{e.line}" if e.line > 0 else e.path for e in f.evidence[:10]],
                "placed_at": "its earliest timed evidence line"
                if cited
                else "the trace's start (no cited line has a timestamp)",
            },
            ensure_ascii=False,
        )
        base = {
            "proc": "rank",
            "thread": "findings",
            "order": E.ORDER_FINDINGS,
            "ph": "i",
            "name": f"{f.severity}: {f.id}",
            "cat": "finding",
            "ts_us": ts,
            "args": args,
        }
        if f.ranks:
            rows += [{**base, "rank": r, "scope": "p"} for r in sorted(set(f.ranks))]
        else:
            rows.append({**base, "rank": None, "proc": "job", "scope": "g"})
    return pl.DataFrame(rows, schema=E.EVENTS) if rows else E.empty()


def _note_events(notes: list[str]) -> pl.DataFrame:
    rows = [
        {
            "proc": "job",
            "thread": "notes",
            "order": 0,
            "ph": "i",
            "name": f"note: {n[:120]}",
            "cat": "note",
            "scope": "g",
            "args": json.dumps({"note": n}, ensure_ascii=False),
        }
        for n in notes
    ]
    return pl.DataFrame(rows, schema=E.EVENTS) if rows else E.empty()
