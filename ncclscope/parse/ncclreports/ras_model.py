"""Parse stage, NCCL RAS reports (`ncclras`, NCCL 2.24+): the typed records both readers build.

A report is one answer of the RAS client: per communicator, the ranks it heard from, the ranks it is
missing (unresponsive, or declared dead after 60 s without contact), and the ranks whose collective
operation counts differ. The text reader (`ras_text`) and the JSON reader (`ras_json`, 2.28.7+) give
the same records, so the hang stage reads one kind. Read from NCCL `src/ras/client_support.cc`
(v2.24.3 → v2.30.7) and `docs/userguide/source/troubleshooting/ras.rst`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ncclscope.records import Evidence


@dataclass(frozen=True)
class RasMissing:
    """A rank of a communicator RAS has no data from. `dead`: None where the report does not say."""

    rank: int
    host: str | None
    pid: int | None
    unresponsive: bool | None
    dead: bool | None
    evidence: Evidence


@dataclass(frozen=True)
class RasCountGroup:
    """Ranks of one communicator at one launched-operation count of one collective type. `ranks` lists the
    members RAS printed, which may be fewer than `n` (it prints only an outlier group's members)."""

    op: str  # AllReduce, AllGather, … (2.24/2.25: "collective", one count for every type)
    count: int  # 0: "have not launched any operations"
    n: int
    ranks: tuple[int, ...]
    evidence: Evidence


@dataclass(frozen=True)
class RasComm:
    """One communicator as RAS reports it. `size` is None where the text report does not print it."""

    hash: str  # 16 lower-case hex digits, as NCCL's own logs print the commHash
    label: str  # "#0-0" (text) or "" (JSON)
    size: int | None
    reported: tuple[int, ...]  # ranks RAS has data from (JSON only; the text names only outliers)
    missing: tuple[RasMissing, ...]
    counts: tuple[RasCountGroup, ...]  # only where the ranks' counts differ
    errors: tuple[tuple[int, str], ...]  # (rank, "init_state 3" / "async_error 6" / the text's words)
    evidence: Evidence


@dataclass(frozen=True)
class RasProcess:
    """A job process RAS lists as missing (INCOMPLETE) or dead (DEAD) at the job level."""

    pid: int
    host: str
    gpus: str
    dead: bool
    evidence: Evidence


@dataclass(frozen=True)
class RasReport:
    path: str
    fmt: str  # "text" | "json"
    version: str | None
    timestamp: str | None  # JSON only ("%F %T", local time of the answering process)
    comms: tuple[RasComm, ...]
    processes: tuple[RasProcess, ...]
    timeouts: int  # communication timeouts while gathering the data
    repaired: str | None = None  # what the JSON reader mended (the 2.28.7/2.28.9 missing comma)


def norm_hash(text: str) -> str:
    """`0xae94423cfbb2ef4a` (JSON, unpadded) and `cf264af53edbe986` (text, %016lx) as one spelling."""
    t = text.strip().lower().removeprefix("0x")
    try:
        return f"{int(t, 16):016x}"
    except ValueError:
        return t


RAS_ROWS = {
    "path": "Utf8",
    "line": "Int64",
    "fmt": "Utf8",  # text | json
    "version": "Utf8",
    "comm": "Utf8",  # 16-digit hash
    "rank": "Int64",  # null for a job-level process line
    "state": "Utf8",  # missing | dead | count | process_missing | process_dead
    "op": "Utf8",
    "count": "Int64",  # launched-operation count (state count)
    "host": "Utf8",
    "pid": "Int64",
}


def ras_rows(reports: tuple[RasReport, ...]) -> list[tuple[object, ...]]:
    """One row per fact a RAS report states (a missing rank, a rank at a count, a listed process), for the
    notebook's `ras` frame."""
    out: list[tuple[object, ...]] = []
    for r in reports:
        for c in r.comms:
            for m in c.missing:
                state = "dead" if m.dead else "missing"
                out.append(
                    (
                        r.path,
                        m.evidence.line,
                        r.fmt,
                        r.version,
                        c.hash,
                        m.rank,
                        state,
                        None,
                        None,
                        m.host,
                        m.pid,
                    )
                )
            for g in c.counts:
                out += [
                    (r.path, g.evidence.line, r.fmt, r.version, c.hash, k, "count", g.op, g.count, None, None)
                    for k in g.ranks
                ]
        for p in r.processes:
            state = "process_dead" if p.dead else "process_missing"
            out.append(
                (r.path, p.evidence.line, r.fmt, r.version, None, None, state, None, None, p.host, p.pid)
            )
    return out
