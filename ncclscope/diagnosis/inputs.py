"""Diagnosis stage, inputs: what the diagnosis reads of the earlier stages besides the findings.

The time of each cited line (from the log tables that keep `ts_us`) and the member ranks of each
process group a hang verdict names (Flight Recorder's group records, the ranks the verdict saw).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from ncclscope.diagnosis.events import DiagnosisInput
from ncclscope.frames import LogFrames
from ncclscope.hang.verdict import HangView
from ncclscope.parse.flight.read import FlightFrames
from ncclscope.records import Finding

_STAMPED = ("warnings", "torch", "trail", "inits", "known", "unknown", "network", "versions")


def gather(
    findings: Sequence[Finding],
    *,
    rule_groups: Mapping[str, str],
    logs: LogFrames,
    hang: HangView,
    flight: FlightFrames | None,
) -> DiagnosisInput:
    return DiagnosisInput(
        rule_groups=dict(rule_groups),
        stamps=_stamps(findings, logs),
        group_members=_members(hang, flight),
    )


def _stamps(findings: Sequence[Finding], logs: LogFrames) -> dict[tuple[str, int], float]:
    """ts_us of every cited log line that had a timestamp."""
    cited = {(e.path, e.line) for f in findings for e in f.evidence if e.line > 0}
    if not cited:
        return {}
    want = pl.DataFrame(
        [(p, ln) for p, ln in sorted(cited)], schema={"path": pl.Utf8, "line": pl.Int64}, orient="row"
    )
    frames = []
    for name in _STAMPED:  # each table cut to the cited lines first: no copy of a big table is made
        t = getattr(logs, name)
        if {"path", "line", "ts_us"} <= set(t.columns) and t.height:
            cols = t.lazy().select("path", pl.col("line").cast(pl.Int64), pl.col("ts_us").cast(pl.Float64))
            frames.append(
                cols.filter(pl.col("ts_us").is_not_null()).join(want.lazy(), on=["path", "line"], how="semi")
            )
    if not frames:
        return {}
    got = pl.concat(frames).unique(["path", "line"], keep="first").sort("path", "line").collect()
    return {(p, int(ln)): float(ts) for p, ln, ts in got.iter_rows()}


def _members(hang: HangView, flight: FlightFrames | None) -> dict[str, tuple[int, ...]]:
    """Hang group label -> member ranks: Flight Recorder's record of the group's ranks when there is
    one, else the ranks the verdict saw plus its culprits."""
    fr: dict[str, set[int]] = {}
    if flight is not None and not flight.groups.is_empty():
        for name, ranks in flight.groups.select("pg_name", "ranks").iter_rows():
            fr.setdefault(str(name), set()).update(int(r) for r in (ranks or []))
    out: dict[str, set[int]] = {}
    for v in hang.verdicts:
        ranks = fr.get(v.key) or {*v.ranks_seen, *v.culprits}
        out.setdefault(v.group, set()).update(ranks)
    return {g: tuple(sorted(r)) for g, r in sorted(out.items())}
