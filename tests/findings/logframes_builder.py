"""Hand-built log frames for rule and identity tests: rows in, schema-conformant tables out.

Every row gets the ORIGIN columns filled (path, a running line number, text) unless given.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import count
from typing import Any

import polars as pl

from ncclscope import schema as S
from ncclscope.frames import CollLines, LogFrames

_SCHEMAS = {
    "inits": S.INITS,
    "versions": S.VERSIONS,
    "env": S.ENV,
    "network": S.NETWORK,
    "rings": S.RINGS,
    "connections": S.CONNECTIONS,
    "channels": S.CHANNELS,
    "warnings": S.WARNINGS,
    "trail": S.TRAIL,
    "collectives": S.COLLECTIVES,
    "torch": S.TORCH,
    "unknown": S.UNKNOWN,
    "streams": S.STREAMS,
}
_lines = count(1)


def table(name: str, rows: Iterable[dict[str, Any]], path: str = "job.log") -> pl.DataFrame:
    """A typed table `name` from partial rows; missing ORIGIN fields get defaults."""
    schema = _SCHEMAS[name]
    full = []
    for r in rows:
        row = dict(r)
        if "line" in schema:
            row.setdefault("path", path)
            row.setdefault("line", next(_lines))
            row.setdefault("text", " ".join(f"{k}={v}" for k, v in r.items()))
        full.append(row)
    if not full:
        return S.empty(schema)
    df = pl.DataFrame(full, infer_schema_length=None, strict=False)
    return S.conform(df, schema)


def logs(**tables: Iterable[dict[str, Any]]) -> LogFrames:
    """LogFrames from `name=[rows…]` keyword arguments (other tables stay empty)."""
    frames = {name: table(name, rows) for name, rows in tables.items()}
    coll = frames.pop("collectives", None)
    return LogFrames(**frames, coll=CollLines.of(coll) if coll is not None else CollLines())


def proc(host: str, pid: int, dev: int | None = None, **extra: Any) -> dict[str, Any]:
    """Prefix fields of one process (`host:pid:tid [dev]`)."""
    return {"host": host, "pid": pid, "tid": pid + 1, "cuda_dev": dev, **extra}


def run(rule_id: str, lf: LogFrames) -> list[Any]:
    """Findings of one rule over hand-built frames (identity computed as in a real analysis)."""
    from ncclscope.align import identify, job_phase
    from ncclscope.findings import Context, run_rules

    ranks, comms = identify(lf)
    return run_rules(Context(logs=lf, ranks=ranks, comms=comms, phase=job_phase(lf)), only=[rule_id])


def warn(p: dict[str, Any], family: str, message: str, **kw: Any) -> dict[str, Any]:
    """A WARN row of `family` printed by process `p`."""
    return {**p, "level": "WARN", "family": family, "message": message, "text": message, **kw}


def init(p: dict[str, Any], rank: int, nranks: int, **kw: Any) -> dict[str, Any]:
    """An `Init COMPLETE` row of communicator 0xw (override with comm_id=…, phase=…)."""
    row = {
        **p,
        "phase": "complete",
        "rank": rank,
        "nranks": nranks,
        "comm_id": "0xw",
        "comm_ptr": f"0x{p['pid']:x}{rank}",
        "init_cuda_dev": p.get("cuda_dev"),
    }
    return {**row, **kw}
