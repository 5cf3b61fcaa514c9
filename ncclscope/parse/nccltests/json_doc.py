"""Parse stage, nccl-tests `-J` JSON reports (nccl-tests 2.17.3+) → the same frames as the text reader.

Layout as `src/util.cu` writes it: `{"version": N, "start_time", "args", "env", "nccl_version",
"config": {…, "devices": [...]}, "results": [{"size", "count", "type", "redop", "root", "out_of_place":
{"time"|"cpu_time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {…}}], "out_of_bounds": {"count"},
"average_bus_bandwidth": {"bandwidth"}}`; version 1 spelled the last one `average_bus_bandwidith` /
`bandwidith`. NaN is written as the string "nan". Rows read from JSON have line 0; `text` names the entry.
"""

from __future__ import annotations

import math
import re
from typing import Any

import polars as pl

from ncclscope import schema as S
from ncclscope.parse.nccltests.text import TextFrames

_HEAD = 4096
_OP = re.compile(
    r"(all_reduce|all_gather|alltoallv|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather"
    r"|hypercube)_perf"
)


def looks_like_json_report(path: str) -> bool:
    """A `-J` report starts `{"version":N,"start_time":…,"args":[…` (the writer adds no whitespace)."""
    if not path.endswith(".json"):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
    except OSError:
        return False
    return head.lstrip().startswith(b'{"version":') and b'"start_time"' in head


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(x) or math.isinf(x) else x


def _int(v: Any) -> int | None:
    """An integer that fits Int64 (nccl-tests prints size_t and doubles; a hostile report may not)."""
    x = _num(v.strip() if isinstance(v, str) else v)
    if x is None or not -(2.0**63) <= x < 2.0**63:
        return None
    return int(x)


def _get(d: Any, *keys: str) -> Any:
    """The first of `keys` present in dict `d` (None otherwise)."""
    if not isinstance(d, dict):
        return None
    return next((d[k] for k in keys if k in d), None)


def _op(doc: dict[str, Any]) -> str | None:
    args = doc.get("args") or []
    hit = _OP.search(str(args[0])) if args else None
    return hit.group(1) if hit else None


def _results(path: str, doc: dict[str, Any], op: str | None) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(doc.get("results") or []):
        for side, key in (("out", "out_of_place"), ("in", "in_place")):
            m = _get(r, key)
            if not isinstance(m, dict):
                continue
            rows.append(
                {
                    "line": 0,
                    "run": 0,
                    "op": op,
                    "size_bytes": _int(_get(r, "size")),
                    "count": _int(_get(r, "count")),
                    "dtype": _get(r, "type"),
                    "redop": _get(r, "redop"),
                    "root": _int(_get(r, "root")),
                    "placement": side,
                    "time_us": _num(_get(m, "time", "cpu_time")),
                    "algbw_gbps": _num(_get(m, "alg_bw")),
                    "busbw_gbps": _num(_get(m, "bus_bw")),
                    "wrong": _int(_get(m, "nwrong")),
                    "text": f"results[{i}].{key}",
                }
            )
    if not rows:
        return S.empty(S.NCCLTESTS_RESULTS)
    return S.conform(
        pl.DataFrame(rows, infer_schema_length=None).with_columns(path=pl.lit(path)), S.NCCLTESTS_RESULTS
    )


def _devices(path: str, config: dict[str, Any]) -> pl.DataFrame:
    devs = [d for d in (config.get("devices") or []) if isinstance(d, dict)]
    rows = [
        {
            "line": 0,
            "run": 0,
            "rank": _int(d.get("rank")),
            "group": _int(d.get("group")),
            "pid": _int(d.get("pid")),
            "host": d.get("hostname"),
            "device": _int(d.get("device")),
            "busid": d.get("device_hex"),
            "gpu_name": d.get("device_info"),
            "text": f"config.devices[{i}]",
        }
        for i, d in enumerate(devs)
    ]
    if not rows:
        return S.empty(S.NCCLTESTS_DEVICES)
    return S.conform(
        pl.DataFrame(rows, infer_schema_length=None).with_columns(path=pl.lit(path)), S.NCCLTESTS_DEVICES
    )


def frames_from_json(path: str, doc: Any) -> TextFrames:
    """The nccl-tests frames of one decoded `-J` report; a document of another shape is a ValueError."""
    if not isinstance(doc, dict) or "results" not in doc:
        raise ValueError("not an nccl-tests JSON report (no 'results')")
    config: dict[str, Any] = doc["config"] if isinstance(doc.get("config"), dict) else {}
    op = _op(doc)
    avg = _get(doc, "average_bus_bandwidth", "average_bus_bandwidith")
    summary = S.conform(
        pl.DataFrame(
            [
                {
                    "path": path,
                    "line": 0,
                    "run": 0,
                    "avg_busbw_gbps": _num(_get(avg, "bandwidth", "bandwidith")),
                    "oob_values": _int(_get(doc.get("out_of_bounds"), "count")),
                    "oob_line": 0,
                    "text": "average_bus_bandwidth",
                    "oob_text": "out_of_bounds",
                }
            ]
        ),
        S.NCCLTESTS_SUMMARY,
    )
    runs = S.conform(
        pl.DataFrame(
            [
                {
                    "path": path,
                    "line": 0,
                    "run": 0,
                    "op": op,
                    "nccl_library": _int(doc.get("nccl_version")),
                    "nthreads": _int(config.get("nthreads")),
                    "ngpus": _int(config.get("ngpus")),
                    "min_bytes": _int(config.get("minimum_bytes")),
                    "max_bytes": _int(config.get("maximum_bytes")),
                    "warmup_iters": _int(config.get("warmup_iters")),
                    "iters": _int(config.get("iterations")),
                    "text": "config",
                }
            ],
            infer_schema_length=None,
        ),
        S.NCCLTESTS_RUNS,
    )
    return TextFrames(
        results=_results(path, doc, op), devices=_devices(path, config), summary=summary, runs=runs
    )
