"""Parse stage, torch.profiler traces: the header values (`distributedInfo`, `deviceProperties`,
`baseTimeNanoseconds`, `host_name`) checked where they enter. A value of the wrong type, out of range
or nested too deep is dropped (read as unknown) with a note naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ncclscope.parse.bounds import INT64_MAX, RANK_MAX, int_in


def depth(v: object, limit: int) -> int:
    """Nesting depth of a decoded JSON/pickle value, counted up to `limit` + 1 (iterative)."""
    deepest, stack = 0, [(v, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (list, tuple, dict, set, frozenset)):
            if d > limit:
                return d
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (o.values() if isinstance(o, dict) else o))
    return deepest


@dataclass
class Header:
    """A trace's header facts, each of the type later stages read."""

    distributed: dict[str, Any] = field(
        default_factory=dict
    )  # rank, world_size, backend, nccl_version, pg_config
    devices: list[dict[str, Any]] = field(default_factory=list)  # name
    base_ns: int | None = None
    host: str | None = None
    notes: list[str] = field(default_factory=list)


def _text(v: object) -> str | None:
    # Scalars print as themselves; a list (pg ranks) as its repr, once the nesting cap has been checked.
    return None if v is None else v if isinstance(v, str) else str(v)


def _pg(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "pg_name": _text(c.get("pg_name")),
        "pg_desc": _text(c.get("pg_desc", c.get("uid"))),
        "backend_config": _text(c.get("backend_config")),
        "pg_size": int_in(c.get("pg_size"), 0, RANK_MAX),
        "ranks": _text(c.get("ranks")),
    }


def header(path: str, dist: object, devices: object, base_ns: object, host: object, max_depth: int) -> Header:
    """The checked header of `path`, with a note for every value dropped."""
    h = Header()

    def drop(name: str, why: str) -> None:
        h.notes.append(f"{path}: {name} {why}; read as unknown")

    for name, v in (("distributedInfo", dist), ("deviceProperties", devices)):
        if depth(v, max_depth) > max_depth:
            drop(name, f"is nested more than {max_depth} levels deep (cap max_json_depth)")
            dist, devices = (None, devices) if name == "distributedInfo" else (dist, None)
    if isinstance(dist, dict):
        h.distributed = _distributed(dist, drop)
    elif dist is not None:
        drop("distributedInfo", f"is a {type(dist).__name__}, not an object")
    if isinstance(devices, list):
        h.devices = [
            {"name": d.get("name") if isinstance(d.get("name"), str) else None}
            for d in devices
            if isinstance(d, dict)
        ]
    elif devices is not None:
        drop("deviceProperties", f"is a {type(devices).__name__}, not a list")
    h.base_ns = int_in(base_ns, -INT64_MAX, INT64_MAX)
    if base_ns is not None and h.base_ns is None:
        drop("baseTimeNanoseconds", "is not a 64-bit integer")
    h.host = host if isinstance(host, str) else None
    if host is not None and h.host is None:
        drop("host_name", "is not a string")
    return h


def _distributed(dist: dict[str, Any], drop: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("rank", "world_size"):
        if key in dist:
            out[key] = int_in(dist[key], 0, RANK_MAX)
            if out[key] is None and dist[key] is not None:
                drop(f"distributedInfo.{key}", f"({_short(dist[key])}) is not an integer in [0, 2^31)")
    for key in ("backend", "nccl_version"):
        if dist.get(key) is not None:
            out[key] = _text(dist[key]) if isinstance(dist[key], (str, int, float)) else None
    cfg = dist.get("pg_config")
    if isinstance(cfg, list):
        out["pg_config"] = [_pg(c) for c in cfg if isinstance(c, dict)]
    elif cfg is not None:
        drop("distributedInfo.pg_config", f"is a {type(cfg).__name__}, not a list")
    return out


def _short(v: object) -> str:
    s = repr(v) if not isinstance(v, int) or abs(v) < 10**30 else f"an integer of {v.bit_length()} bits"
    return s if len(s) <= 40 else s[:37] + "..."
