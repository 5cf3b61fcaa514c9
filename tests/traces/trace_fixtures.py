"""Trace fixtures derived from the real traces in samples/traces (see samples/traces/SOURCE.md).

Each helper takes {rank: trace dict} and returns a rewritten copy; `write_set` puts a set on disk.
"""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path
from typing import Any

import msgspec

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "traces"
DLRM = SAMPLES / "param_dlrm_8rank"
B200 = SAMPLES / "single_rank" / "tracelens_b200_eager_rank0_of8.json.gz"
_NCCL = re.compile(r"^nccl(Dev)?Kernel_")

Trace = dict[str, Any]


def clone(x: Any) -> Any:
    """Deep copy through msgspec (much faster than copy.deepcopy on 25k-event traces)."""
    return msgspec.json.decode(msgspec.json.encode(x))


def _copy(t: Trace, touch: Any) -> Trace:
    """Copy of a trace whose events matching `touch(e)` are copied (the rest shared, never written)."""
    out = dict(t)
    out["traceEvents"] = [clone(e) if touch(e) else e for e in t["traceEvents"]]
    return out


def _is_nccl(e: dict[str, Any]) -> bool:
    return e.get("cat") == "kernel" and bool(_NCCL.match(e.get("name", "")))


def load(path: Path) -> Trace:
    data = path.read_bytes()
    out: Trace = msgspec.json.decode(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return out


def load_dlrm() -> dict[int, Trace]:
    traces = [load(p) for p in sorted(DLRM.glob("*.json.gz"))]
    return {t["distributedInfo"]["rank"]: t for t in traces}


def write_set(traces: dict[int, Trace], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank, t in traces.items():
        # Kineto's layout (one item per line, a space after ':'); HTA finds the rank with r'"rank":\s+(\d+)'.
        (folder / f"rank{rank}.json").write_bytes(msgspec.json.format(msgspec.json.encode(t), indent=1))
    return folder


def nccl_kernels(t: Trace) -> list[dict[str, Any]]:
    """This rank's NCCL kernel events in start order (the k-th is the k-th collective)."""
    ks = [e for e in t["traceEvents"] if e.get("cat") == "kernel" and _NCCL.match(e.get("name", ""))]
    return sorted(ks, key=lambda e: e["ts"])


def delay_rank(traces: dict[int, Trace], rank: int, d_us: float) -> dict[int, Trace]:
    """`rank` arrives d µs late at every collective; the others wait, so all ends move together."""
    out = {r: _copy(t, _is_nccl) for r, t in traces.items()}
    per = {r: nccl_kernels(t) for r, t in out.items()}
    for k in range(len(per[rank])):
        events = [per[r][k] for r in per]
        last_before = max(e["ts"] for e in events)
        late = per[rank][k]["ts"] + d_us
        shift = max(0.0, late - last_before)
        for e in events:
            end = e["ts"] + e["dur"] + shift
            if e is per[rank][k]:
                e["ts"] = late
            e["dur"] = end - e["ts"]
    return out


def shift_clock(traces: dict[int, Trace], ranks: set[int], c_us: float) -> dict[int, Trace]:
    """Every timestamp of `ranks` moves by c µs (their host's clock is off by c)."""
    out = dict(traces)
    for r in ranks:
        out[r] = dict(traces[r])
        out[r]["traceEvents"] = [
            {**e, "ts": e["ts"] + c_us} if "ts" in e else e for e in traces[r]["traceEvents"]
        ]
    return out


def name_hosts(traces: dict[int, Trace], hosts: dict[int, str]) -> dict[int, Trace]:
    out = {r: dict(t) for r, t in traces.items()}
    for r, h in hosts.items():
        out[r]["host_name"] = h
    return out


def b200_set(n_ranks: int = 8, n_colls: int = 12, seed: int = 4) -> dict[int, Trace]:
    """8 ranks of `ncclDevKernel_*` collectives cloned from the single-rank 2026 B200 trace."""
    base = load(B200)
    ev = base["traceEvents"]
    kernel = next(e for e in ev if e.get("cat") == "kernel" and _NCCL.match(e.get("name", "")))
    ext, corr = kernel["args"]["External id"], kernel["args"]["correlation"]
    related = [
        e
        for e in ev
        if e.get("ph") == "X"
        and e is not kernel
        and e.get("cat") != "gpu_user_annotation"
        and (
            e.get("args", {}).get("External id") == ext
            or e.get("args", {}).get("correlation") == corr
            or (e.get("name", "").startswith("nccl:") and e["ts"] <= kernel["ts"] <= e["ts"] + e["dur"] + 1e3)
        )
    ]
    group = [kernel, *related]
    for j in range(1, n_colls):
        for e in group:
            c = clone(e)
            c["ts"] = e["ts"] + j * 1000.0
            a = c.setdefault("args", {})
            for key, bump in (
                ("External id", 10_000_000),
                ("correlation", 10_000_000),
                ("Ev Idx", 10_000_000),
            ):
                if key in a:
                    a[key] = a[key] + j * bump
            ev.append(c)
    rng = random.Random(seed)
    out: dict[int, Trace] = {}
    for r in range(n_ranks):
        t = _copy(base, lambda e: _is_nccl(e) or e.get("name") == "record_param_comms")
        t["distributedInfo"] = {**base["distributedInfo"], "rank": r}
        for e in t["traceEvents"]:
            if e.get("name") == "record_param_comms" and "Rank" in e.get("args", {}):
                e["args"]["Rank"] = r
        out[r] = t
    per = {r: nccl_kernels(t) for r, t in out.items()}
    for k in range(n_colls):
        events = [per[r][k] for r in per]
        for e in events:
            e["ts"] = e["ts"] + rng.uniform(0.0, 30.0)
        end = max(e["ts"] for e in events) + kernel["dur"]
        for e in events:
            e["dur"] = end - e["ts"]
    return out
