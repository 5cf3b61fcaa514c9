"""Parse stage, Flight Recorder dumps: one pickle (or JSON) per rank → FLIGHT_* frames.

PyTorch writes each rank's ring buffer with `torch::jit::Pickler` (tag_aggregates off), so a real
dump holds only dicts, lists, tuples, strings, numbers, booleans and None. The unpickler below
admits exactly that: every opcode that would import or call something goes through `find_class`
(or `persistent_load`), and both refuse. Nothing in a dump is ever executed.
"""

from __future__ import annotations

import io
import json
import math
import pickle
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ncclscope import schema as S
from ncclscope.errors import UnsafePickleError

_PLAIN = (dict, list, tuple, set, frozenset, str, bytes, bytearray, int, float, bool, type(None))
_RANK_SUFFIX = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle))?$")


@dataclass(frozen=True)
class FlightFrames:
    """Every dump read: entries per (rank, process group, collective_seq_id), PG status, groups."""

    entries: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_ENTRIES))
    status: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_STATUS))
    groups: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_GROUPS))
    dumps: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_DUMPS))
    notes: tuple[str, ...] = ()  # dumps skipped as unreadable, ranks without a number


class _PlainUnpickler(pickle.Unpickler):
    """Refuses GLOBAL/STACK_GLOBAL/INST/OBJ/EXT*/REDUCE targets and persistent ids."""

    def __init__(self, data: bytes, path: str) -> None:
        super().__init__(io.BytesIO(data))
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(
            f"{self._path}: refused to load a Flight Recorder dump that references {module}.{name} "
            "(only plain containers and scalars are accepted; nothing was executed)"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(f"{self._path}: refused a pickle with persistent ids (nothing was executed)")


def load_plain_pickle(data: bytes, path: str) -> Any:
    """Unpickle `data` admitting only plain containers and scalars; raise UnsafePickleError otherwise."""
    try:
        obj = _PlainUnpickler(data, path).load()
    except UnsafePickleError:
        raise
    except Exception as e:  # noqa: BLE001 - any other failure is an unreadable dump, reported by caller
        raise ValueError(f"{type(e).__name__}: {e}") from None
    _check_plain(obj, path)
    return obj


def _check_plain(obj: Any, path: str) -> None:
    # Belt and braces: walk the loaded graph (iteratively; memo references may share nodes).
    stack, seen = [obj], set()
    while stack:
        o = stack.pop()
        if type(o) not in _PLAIN:
            raise UnsafePickleError(f"{path}: refused a Flight Recorder dump holding a {type(o).__name__}")
        if id(o) in seen or not isinstance(o, (dict, list, tuple, set, frozenset)):
            continue
        seen.add(id(o))
        stack.extend(o.items() if isinstance(o, dict) else o)


def _decode(data: bytes, path: str) -> tuple[dict[str, Any], str]:
    if data[:1] == b"\x80":
        obj, fmt = load_plain_pickle(data, path), "pickle"
    elif data.lstrip()[:1] == b"{":
        obj, fmt = json.loads(data.decode("utf-8")), "json"
    else:
        raise ValueError("neither a pickle nor a JSON Flight Recorder dump")
    if not isinstance(obj, dict) or "version" not in obj:
        raise ValueError("not a Flight Recorder dump (no version key)")
    return obj, fmt


def rank_from_name(path: str) -> int | None:
    """Global rank from the trailing number of the file name (`nccl_trace_rank_12` → 12)."""
    m = _RANK_SUFFIX.search(Path(path).name)
    return int(m.group(1)) if m else None


def _opt_int(v: Any) -> int | None:
    # JSON dumps print missing times as 0 and PG status numbers as strings.
    if v is None or v == "" or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _numel(sizes: Any) -> int | None:
    if not isinstance(sizes, list):
        return None
    total = 0
    for shape in sizes:
        if isinstance(shape, (list, tuple)) and all(isinstance(d, int) for d in shape):
            total += math.prod(shape)
    return total


def _frame(frames: Any) -> str | None:
    """The first frame that is user code (not torch/distributed internals)."""
    if not isinstance(frames, list):
        return None
    for f in frames:
        if isinstance(f, dict) and "torch/" not in str(f.get("filename", "")):
            return f"{f.get('name')} at {f.get('filename')}:{f.get('line')}"
    return None


def _entry_row(e: dict[str, Any], path: str, rank: int | None) -> dict[str, Any]:
    pg = e.get("process_group") or ("", "")
    name = str(e.get("profiling_name") or "")
    started, completed = _opt_int(e.get("time_discovered_started_ns")), _opt_int(e.get("time_discovered_completed_ns"))
    return {
        "path": path, "rank": rank, "record_id": _opt_int(e.get("record_id")), "pg_id": _opt_int(e.get("pg_id")),
        "pg_name": str(pg[0]) if len(pg) > 0 else None, "pg_desc": str(pg[1]) if len(pg) > 1 else None,
        "collective_seq_id": _opt_int(e.get("collective_seq_id", e.get("seq_id"))),
        "p2p_seq_id": _opt_int(e.get("p2p_seq_id")), "op_id": _opt_int(e.get("op_id")),
        "profiling_name": name, "op": name.split(":", 1)[-1].split(" ", 1)[0] or None,
        "is_p2p": bool(e.get("is_p2p", False)), "state": e.get("state"),
        "input_sizes": str(e.get("input_sizes")), "output_sizes": str(e.get("output_sizes")),
        "input_numel": _numel(e.get("input_sizes")), "output_numel": _numel(e.get("output_sizes")),
        "input_dtypes": ",".join(map(str, e.get("input_dtypes") or [])),
        "output_dtypes": ",".join(map(str, e.get("output_dtypes") or [])),
        "time_created_ns": _opt_int(e.get("time_created_ns")), "time_started_ns": started or None,
        "time_completed_ns": completed or None, "duration_ms": e.get("duration_ms"),
        "timeout_ms": _opt_int(e.get("timeout_ms")), "retired": e.get("retired"), "frame": _frame(e.get("frames")),
    }


def _status_rows(d: dict[str, Any], path: str, rank: int | None) -> Iterator[dict[str, Any]]:
    for pg_id, st in (d.get("pg_status") or {}).items():
        if isinstance(st, dict):
            yield {"path": path, "rank": rank, "pg_id": _opt_int(pg_id),
                   "last_enqueued": _opt_int(st.get("last_enqueued_collective")),
                   "last_started": _opt_int(st.get("last_started_collective")),
                   "last_completed": _opt_int(st.get("last_completed_collective"))}


def _group_rows(d: dict[str, Any], path: str, rank: int | None) -> Iterator[dict[str, Any]]:
    for name, g in (d.get("pg_config") or {}).items():
        if not isinstance(g, dict):
            continue  # a gloo PG in torch 2.13 records its ranks under an empty name; keep it
        ranks = [int(x) for x in re.findall(r"\d+", str(g.get("ranks", "")))]
        yield {"path": path, "rank": rank, "pg_name": str(g.get("name", name)), "pg_desc": g.get("desc"),
               "ranks": ranks, "size": len(ranks)}


def _frame_of(rows: list[dict[str, Any]], schema: S.Schema) -> pl.DataFrame:
    if not rows:
        return S.empty(schema)
    return S.conform(pl.DataFrame(rows, schema_overrides=schema, strict=False, infer_schema_length=None), schema)


def read_flight(paths: Sequence[str]) -> FlightFrames:
    """Read every dump; unreadable ones are skipped with a note, unsafe ones raise UnsafePickleError."""
    entries: list[dict[str, Any]] = []
    status: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    dumps: list[dict[str, Any]] = []
    notes: list[str] = []
    for path in paths:
        try:
            d, fmt = _decode(Path(path).read_bytes(), path)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            notes.append(f"{path}: Flight Recorder dump skipped ({e})")
            continue
        rank = rank_from_name(path)
        if rank is None:
            notes.append(f"{path}: no rank number at the end of the file name; its entries have no rank")
        raw = d.get("entries") or []
        entries.extend(_entry_row(e, path, rank) for e in raw if isinstance(e, dict))
        status.extend(_status_rows(d, path, rank))
        groups.extend(_group_rows(d, path, rank))
        dumps.append({"path": path, "rank": rank, "format": fmt, "version": str(d.get("version")),
                      "comm_lib_version": d.get("comm_lib_version", d.get("nccl_version")), "entries": len(raw)})
    return FlightFrames(entries=_frame_of(entries, S.FLIGHT_ENTRIES), status=_frame_of(status, S.FLIGHT_STATUS),
                        groups=_frame_of(groups, S.FLIGHT_GROUPS), dumps=_frame_of(dumps, S.FLIGHT_DUMPS),
                        notes=tuple(notes))
