"""Parse stage, Flight Recorder dumps: every field of a dump checked and typed into the FLIGHT_* rows.

A value of the wrong type, beyond 64 bits or not finite becomes null (or empty text), and is counted
per field; `Checked.notes` gives one note per dump and field. Text is built only from scalars and
flat lists, so no printing of a huge integer or a deep structure can fail or take long.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ncclscope.parse.bounds import RANK_MAX, as_int64, int_in

_MAX_TEXT = 4096  # characters of one text field kept


class Checked:
    """The dump's path and a count of the values dropped, per field."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.dropped: Counter[str] = Counter()

    def bad(self, name: str, count: bool = True) -> bool:
        """Count one dropped value of `name`; False (so it can end a filter: `ok or chk.bad(...)`)."""
        if count:
            self.dropped[name] += 1
        return False

    def int(self, v: object, name: str) -> int | None:
        # JSON dumps print missing times as 0 and PG status numbers as strings.
        if v is None or v == "":
            return None
        out = as_int64(v)
        if out is None:
            self.bad(name)
        return out

    def text(self, v: object, name: str) -> str | None:
        if v is None:
            return None
        out = _scalar_text(v)
        if out is None:
            self.bad(name)
        return out

    def notes(self) -> list[str]:
        return [
            f"{self.path}: {n} value(s) of `{name}` of the wrong type or out of range, read as unknown"
            for name, n in sorted(self.dropped.items())
        ]


def _scalar_text(v: object) -> str | None:
    if isinstance(v, str):
        v = v[:_MAX_TEXT]
        # A pickled str may hold lone surrogates, which no UTF-8 column takes: written as U+FFFD.
        return v if v.isascii() else v.encode("utf-8", "replace").decode("utf-8")
    if type(v) is int:
        return str(v) if v.bit_length() <= 64 else None
    if isinstance(v, (float, bool)):
        return str(v)
    return None


def _shape_text(v: object, chk: Checked, name: str) -> tuple[str | None, int | None]:
    """(`[[8, 4], [3]]` as printed, total elements) of a list of tensor shapes; (None, None) otherwise."""
    if v is None:
        return None, None
    shapes = (
        [[int_in(d, 0) for d in s] for s in v if isinstance(s, (list, tuple))]
        if isinstance(v, (list, tuple))
        else []
    )
    if not isinstance(v, (list, tuple)) or len(shapes) != len(v) or any(d is None for s in shapes for d in s):
        chk.bad(name)
        return None, None
    numel = sum(math.prod(d or 0 for d in s) for s in shapes)
    text = "[" + ", ".join("[" + ", ".join(map(str, s)) + "]" for s in shapes) + "]"
    return text[:_MAX_TEXT], numel if numel <= (1 << 63) - 1 else None


def _dtypes(v: object, chk: Checked, name: str) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return _scalar_text(",".join(v)) or ""
    chk.bad(name)
    return ""


def _bool(v: object, chk: Checked, name: str) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    return chk.bad(name) or None


def _frame(frames: object, chk: Checked) -> str | None:
    """The first frame that is user code (not torch/distributed internals)."""
    if frames is None:
        return None
    if not isinstance(frames, list):
        chk.bad("frames")
        return None
    for f in frames:
        if isinstance(f, dict) and "torch/" not in str(_scalar_text(f.get("filename", "")) or ""):
            parts = (_scalar_text(f.get(k)) for k in ("name", "filename", "line"))
            name, filename, line = (p if p is not None else "?" for p in parts)
            return f"{name} at {filename}:{line}"
    return None


def _process_group(pg: object, chk: Checked) -> tuple[str | None, str | None]:
    if pg is None:
        return "", ""
    if isinstance(pg, (list, tuple)):
        name = _scalar_text(pg[0]) if len(pg) > 0 else None
        desc = _scalar_text(pg[1]) if len(pg) > 1 else None
        if (len(pg) > 0 and name is None) or (len(pg) > 1 and desc is None):
            chk.bad("process_group")
        return name, desc
    chk.bad("process_group")
    return None, None


def entry_row(e: dict[str, Any], path: str, rank: int, chk: Checked) -> dict[str, Any]:
    """One ring-buffer entry as a FLIGHT_ENTRIES row."""
    pg_name, pg_desc = _process_group(e.get("process_group"), chk)
    name = chk.text(e.get("profiling_name"), "profiling_name") or ""
    state = e.get("state")
    in_text, in_numel = _shape_text(e.get("input_sizes"), chk, "input_sizes")
    out_text, out_numel = _shape_text(e.get("output_sizes"), chk, "output_sizes")
    duration = e.get("duration_ms")
    if duration is not None and not (
        type(duration) in (int, float) and math.isfinite(duration) and abs(duration) < 1e300
    ):
        duration = chk.bad("duration_ms") or None
    ints = {
        k: chk.int(e.get(k), k)
        for k in (
            "record_id",
            "pg_id",
            "p2p_seq_id",
            "op_id",
            "time_created_ns",
            "time_discovered_started_ns",
            "time_discovered_completed_ns",
            "timeout_ms",
        )
    }
    return {
        "path": path,
        "rank": rank,
        "record_id": ints["record_id"],
        "pg_id": ints["pg_id"],
        "pg_name": pg_name,
        "pg_desc": pg_desc,
        "collective_seq_id": chk.int(e.get("collective_seq_id", e.get("seq_id")), "collective_seq_id"),
        "p2p_seq_id": ints["p2p_seq_id"],
        "op_id": ints["op_id"],
        "profiling_name": name,
        "op": name.split(":", 1)[-1].split(" ", 1)[0] or None,
        "is_p2p": bool(_bool(e.get("is_p2p", False), chk, "is_p2p")),
        "state": _scalar_text(state)
        if isinstance(state, str)
        else chk.bad("state", state is not None) or None,
        "input_sizes": in_text,
        "output_sizes": out_text,
        "input_numel": in_numel,
        "output_numel": out_numel,
        "input_dtypes": _dtypes(e.get("input_dtypes"), chk, "input_dtypes"),
        "output_dtypes": _dtypes(e.get("output_dtypes"), chk, "output_dtypes"),
        "time_created_ns": ints["time_created_ns"],
        "time_started_ns": ints["time_discovered_started_ns"] or None,
        "time_completed_ns": ints["time_discovered_completed_ns"] or None,
        "duration_ms": duration,
        "timeout_ms": ints["timeout_ms"],
        "retired": _bool(e.get("retired"), chk, "retired"),
        "frame": _frame(e.get("frames"), chk),
    }


def status_rows(pg_status: object, path: str, rank: int, chk: Checked) -> Iterator[dict[str, Any]]:
    if not isinstance(pg_status, dict):
        chk.bad("pg_status", pg_status is not None)
        return
    for pg_id, st in pg_status.items():
        if isinstance(st, dict):
            yield {
                "path": path,
                "rank": rank,
                "pg_id": chk.int(pg_id, "pg_status"),
                "last_enqueued": chk.int(st.get("last_enqueued_collective"), "last_enqueued_collective"),
                "last_started": chk.int(st.get("last_started_collective"), "last_started_collective"),
                "last_completed": chk.int(st.get("last_completed_collective"), "last_completed_collective"),
            }
        else:
            chk.bad("pg_status")


def group_rows(pg_config: object, path: str, rank: int, chk: Checked) -> Iterator[dict[str, Any]]:
    if not isinstance(pg_config, dict):
        chk.bad("pg_config", pg_config is not None)
        return
    for name, g in pg_config.items():
        if not isinstance(g, dict):
            continue  # a gloo PG in torch 2.13 records its ranks under an empty name; keep it
        raw = g.get("ranks", "")
        text = (
            _scalar_text(raw)
            if not isinstance(raw, (list, tuple))
            else ",".join(str(x) for x in raw if int_in(x, 0, RANK_MAX) is not None)
        )
        ranks = [int(x) for x in re.findall(r"\d+", text or "") if len(x) <= 10 and int(x) <= RANK_MAX]
        yield {
            "path": path,
            "rank": rank,
            "pg_name": chk.text(g.get("name", name), "pg_config"),
            "pg_desc": chk.text(g.get("desc"), "pg_config"),
            "ranks": ranks,
            "size": len(ranks),
        }
