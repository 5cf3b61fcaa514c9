"""Parse stage, Flight Recorder dumps: one pickle (or JSON) per rank → FLIGHT_* frames.

Pickles go through the restricted unpickler (`flight.plain`); JSON through `json` with its nesting
capped. Every value is checked where it enters (`flight.fields`): one of the wrong type, out of
range or not finite becomes null, counted in one note per dump and field. A dump whose file name
holds no rank is listed in `dumps` but its entries are left out: a cross-rank comparison needs ranks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ncclscope import schema as S
from ncclscope.errors import InputError, LimitError
from ncclscope.parse.archive import open_input
from ncclscope.parse.bounds import RANK_MAX
from ncclscope.parse.flight.fields import Checked, entry_row, group_rows, status_rows
from ncclscope.parse.flight.plain import check_plain, load_plain_pickle
from ncclscope.parse.unpack import read_all
from ncclscope.tuning import DEFAULT, Tuning

__all__ = ["FlightFrames", "load_plain_pickle", "rank_from_name", "read_flight"]

_RANK_SUFFIX = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle))?$")


@dataclass(frozen=True)
class FlightFrames:
    """Every dump read: entries per (rank, process group, collective_seq_id), PG status, groups."""

    entries: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_ENTRIES))
    status: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_STATUS))
    groups: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_GROUPS))
    dumps: pl.DataFrame = field(default_factory=lambda: S.empty(S.FLIGHT_DUMPS))
    notes: tuple[str, ...] = ()  # dumps skipped as unreadable, ranks without a number, values dropped


def _decode(data: bytes, path: str, tuning: Tuning) -> tuple[dict[str, Any], str]:
    if data[:1] == b"\x80":
        obj, fmt = load_plain_pickle(data, path, tuning), "pickle"
    elif data.lstrip()[:1] == b"{":
        try:
            obj = json.loads(data.decode("utf-8", errors="replace"))
        except RecursionError:
            raise LimitError(
                f"{path}: JSON nested deeper than the decoder allows (cap max_json_depth "
                f"{tuning.max_json_depth})"
            ) from None
        check_plain(obj, path, tuning)  # the depth cap (JSON has no shared references or cycles)
        fmt = "json"
    else:
        raise ValueError("neither a pickle nor a JSON Flight Recorder dump")
    if not isinstance(obj, dict) or "version" not in obj:
        raise ValueError("not a Flight Recorder dump (no version key)")
    return obj, fmt


def rank_from_name(path: str) -> int | None:
    """Global rank from the trailing number of the file name (`nccl_trace_rank_12` → 12); None when
    there is none or it is no rank (beyond 2^31)."""
    m = _RANK_SUFFIX.search(Path(path).name)
    if not m or len(m.group(1)) > 10:
        return None
    rank = int(m.group(1))
    return rank if rank <= RANK_MAX else None


def _frame_of(rows: list[dict[str, Any]], schema: S.Schema) -> pl.DataFrame:
    if not rows:
        return S.empty(schema)
    return S.conform(pl.DataFrame(rows, schema=schema, strict=False, infer_schema_length=None), schema)


def _read(path: str, tuning: Tuning) -> tuple[dict[str, Any], str, list[str]]:
    with open_input(path) as fh:  # (a member of an archive too)
        data, notes = read_all(path, fh, tuning)
    return (*_decode(data, path, tuning), notes)


def read_flight(paths: Sequence[str], *, tuning: Tuning = DEFAULT) -> FlightFrames:
    """Read every dump; unreadable ones are skipped with a note, unsafe ones raise UnsafePickleError."""
    entries: list[dict[str, Any]] = []
    status: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    dumps: list[dict[str, Any]] = []
    notes: list[str] = []
    for path in paths:
        try:
            d, fmt, read_notes = _read(path, tuning)
        except LimitError as e:
            notes.append(f"Flight Recorder dump skipped: {e}")
            continue
        except InputError:
            raise  # UnsafePickleError: refused, never skipped quietly
        except (OSError, ValueError, EOFError) as e:
            notes.append(f"{path}: Flight Recorder dump skipped ({e})")
            continue
        notes += read_notes
        rank, chk = rank_from_name(path), Checked(path)
        raw = d.get("entries")
        if not isinstance(raw, list):
            chk.bad("entries", raw is not None)
            raw = []
        if rank is None:
            notes.append(
                f"{path}: no rank number at the end of the file name; its {len(raw)} entries are left "
                "out of the cross-rank comparison"
            )
        else:
            entries.extend(
                entry_row(e, path, rank, chk) for e in raw if isinstance(e, dict) or chk.bad("entry")
            )
            status.extend(status_rows(d.get("pg_status"), path, rank, chk))
            groups.extend(group_rows(d.get("pg_config"), path, rank, chk))
        dumps.append(
            {
                "path": path,
                "rank": rank,
                "format": fmt,
                "version": chk.text(d.get("version"), "version"),
                "comm_lib_version": chk.text(
                    d.get("comm_lib_version", d.get("nccl_version")), "comm_lib_version"
                ),
                "entries": len(raw),
            }
        )
        notes += chk.notes()
    return FlightFrames(
        entries=_frame_of(entries, S.FLIGHT_ENTRIES),
        status=_frame_of(status, S.FLIGHT_STATUS),
        groups=_frame_of(groups, S.FLIGHT_GROUPS),
        dumps=_frame_of(dumps, S.FLIGHT_DUMPS),
        notes=tuple(notes),
    )
