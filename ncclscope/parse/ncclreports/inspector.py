"""Parse stage, NCCL Inspector output (the `ext-profiler` plugin `plugins/profiler/inspector`, NCCL 2.28+).

The plugin writes `<hostname>-pid<pid>.log` files of JSON lines (`inspector_json.cc`), one per
completed operation of a communicator: `header` (`id` = commHash, `comm_name`, `rank`, `n_ranks`,
`nnodes`), `metadata` (`inspector_output_format_version`, `hostname`, `pid`, `dump_timestamp_us`) and
`coll_perf` (`coll`, `coll_sn`, `coll_msg_size_bytes`, `coll_exec_time_us`, `coll_timing_source`,
`coll_algobw_gbs`, `coll_busbw_gbs`) or `p2p_perf` (the same with `p2p_` and `p2p_peer`). v4.3 adds
`dump_stats` records (ring-buffer drops). Records are drained from a bounded ring at each dump, so a
rank's file can lack operations others have (NVIDIA/nccl#1945): a missing record is unknown, never a
sign that the rank did not run the operation. Doubles may be printed as the string "nan".

Memory is bounded: at most `max_records` operation rows are kept over all files; the rest are counted.
A row keeps the record's fields, not its text (a record is ~400 bytes; `path`/`line` cite it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

import polars as pl

INSPECTOR = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "comm": pl.Utf8,  # header.id, as printed (0x…)
    "comm_name": pl.Utf8,
    "rank": pl.Int64,
    "n_ranks": pl.Int64,
    "nnodes": pl.Int64,
    "host": pl.Utf8,
    "pid": pl.Int64,
    "kind": pl.Utf8,  # coll | p2p
    "op": pl.Utf8,  # AllReduce, Send, …
    "sn": pl.Int64,  # coll_sn / p2p_sn: the operation's sequence number on this communicator
    "peer": pl.Int64,
    "msg_bytes": pl.Int64,
    "exec_us": pl.Float64,
    "busbw_gbps": pl.Float64,
    "timing": pl.Utf8,  # kernel_gpu | kernel_cpu | collective_cpu
    "dump_us": pl.Int64,
}
_COLS = list(INSPECTOR)


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(v) or math.isinf(v) else float(v)  # NaN: unknown


def _int(v: object) -> int | None:
    f = _num(v)
    return int(f) if f is not None and abs(f) < 2**62 else None


def _row(path: str, n: int, doc: dict[str, object]) -> tuple[object, ...] | None:
    h, m = doc.get("header"), doc.get("metadata")
    perf, kind = (doc.get("coll_perf"), "coll") if "coll_perf" in doc else (doc.get("p2p_perf"), "p2p")
    if not isinstance(h, dict) or not isinstance(perf, dict):
        return None
    m = m if isinstance(m, dict) else {}
    p = kind + "_"
    op = perf.get("coll" if kind == "coll" else "p2p")
    host = m.get("hostname")
    return (
        path,
        n,
        str(h.get("id")) if h.get("id") is not None else None,
        str(h.get("comm_name")) if h.get("comm_name") is not None else None,
        _int(h.get("rank")),
        _int(h.get("n_ranks")),
        _int(h.get("nnodes")),
        str(host) if host is not None else None,
        _int(m.get("pid")),
        kind,
        str(op) if op is not None else None,
        _int(perf.get(p + "sn")),
        _int(perf.get("p2p_peer")),
        _int(perf.get(p + "msg_size_bytes")),
        _num(perf.get(p + "exec_time_us")),
        _num(perf.get(p + "busbw_gbs")),
        str(perf.get(p + "timing_source")) if perf.get(p + "timing_source") is not None else None,
        _int(m.get("dump_timestamp_us")),
    )


class InspectorReader:
    """Rows from any number of files, at most `max_records` kept; what was cut or unreadable is noted."""

    def __init__(self, max_records: int) -> None:
        self.max_records = max_records
        self.rows: list[tuple[object, ...]] = []
        self.dropped = 0
        self.bad: dict[str, int] = {}

    def add(self, path: str, lines: Iterable[tuple[int, str]]) -> None:
        for n, raw in lines:
            s = raw.strip()
            if not s.startswith("{"):
                continue
            if len(self.rows) >= self.max_records:
                self.dropped += 1  # counted, not decoded: the cap bounds time as well as memory
                continue
            try:
                doc = json.loads(s)
            except (ValueError, RecursionError):
                self.bad[path] = self.bad.get(path, 0) + 1
                continue
            row = _row(path, n, doc) if isinstance(doc, dict) else None
            if row is None:
                continue  # dump_stats and other records carry no operation
            self.rows.append(row)

    def frame(self) -> pl.DataFrame:
        if not self.rows:
            return pl.DataFrame(schema=INSPECTOR)
        return pl.DataFrame(self.rows, schema=INSPECTOR, orient="row")

    def notes(self) -> tuple[str, ...]:
        out = [
            f"{p}: {k} Inspector line(s) that are not JSON (a record cut by a crash?); skipped"
            for p, k in self.bad.items()
        ]
        if self.dropped:
            out.append(
                f"NCCL Inspector: kept the first {self.max_records} operation records, {self.dropped} more not read"
            )
        return tuple(out)
