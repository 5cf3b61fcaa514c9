"""Hostile inputs, each a few bytes: the 24 escapes of issue 12 (tracebacks found by mutating real
inputs) rebuilt by hand, plus the builders the fuzz runner shares (a minimal trace, a minimal dump).

Each case writes its files under a directory and returns (argv after `ncclscope`, stdin bytes or None,
words that stdout or stderr must hold).
"""

from __future__ import annotations

import gzip
import json
import pickle
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

BIG = 99999999999999999999999  # beyond 64 bits
TS = "E1010 10:10:10.123456789"
GOOD = "node-00:100:100 [0] NCCL INFO Using network Socket\n"


def trace(rank: object = 0, seq: object = 1, **top: Any) -> dict[str, Any]:
    """A one-collective Chrome trace as Kineto writes it (record_param_comms, its launch, its kernel)."""
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "record_param_comms",
            "ts": 1.0,
            "dur": 5.0,
            "tid": 1,
            "args": {
                "External id": 3,
                "Collective name": "allreduce",
                "Seq": seq,
                "In msg nelems": 10,
                "dtype": "Float",
                "Process Group Name": "0",
                "Group size": 2,
            },
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 2.0,
            "dur": 1.0,
            "tid": 1,
            "args": {"correlation": 9, "External id": 3},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
            "ts": 3.0,
            "dur": 10.0,
            "tid": 7,
            "args": {"External id": 3, "correlation": 9},
        },
    ]
    doc: dict[str, Any] = {
        "traceEvents": events,
        "distributedInfo": {"rank": rank, "world_size": 2, "backend": "nccl"},
    }
    doc.update(top)
    return doc


def entry(seq: int = 1, **kw: Any) -> dict[str, Any]:
    """One Flight Recorder entry as FlightRecorder::getCollectiveTrace writes it."""
    e = {
        "record_id": seq - 1,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": "nccl:all_reduce",
        "time_created_ns": 1_700_000_000 + seq,
        "input_sizes": [[1024]],
        "input_dtypes": ["Float"],
        "output_sizes": [[1024]],
        "output_dtypes": ["Float"],
        "state": "completed",
        "time_discovered_started_ns": 1,
        "time_discovered_completed_ns": 2,
        "retired": True,
        "timeout_ms": 600000,
        "is_p2p": False,
        "frames": [{"name": "train_step", "filename": "/work/train.py", "line": 88}],
    }
    e.update(kw)
    return e


def dump(entries: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
        "pg_status": {
            "0": {"last_enqueued_collective": 2, "last_started_collective": 2, "last_completed_collective": 1}
        },
        "entries": entries if entries is not None else [entry(1), entry(2, state="started")],
    }
    d.update(kw)
    return d


Case = Callable[[Path], tuple[list[str], bytes | None, tuple[str, ...]]]


def _log(d: Path, text: str, name: str = "rank0.log") -> str:
    p = d / name
    p.write_text(GOOD + text)
    return str(p)


def _trace(d: Path, doc: dict[str, Any] | bytes, name: str = "rank0.json") -> str:
    p = d / name
    p.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return str(p)


def _dumps(d: Path, *dumps: dict[str, Any] | bytes, names: tuple[str, ...] = ()) -> str:
    for i, x in enumerate(dumps):
        name = names[i] if names else f"nccl_trace_rank_{i}"
        (d / name).write_bytes(x if isinstance(x, bytes) else pickle.dumps(x, protocol=2))
    return str(d)


def _json_dump(d: Path, text: str) -> str:
    p = d / "nccl_trace_rank_0.json"
    p.write_text(text)
    return str(d)


def _deep_list(n: int) -> bytes:
    """A pickle of a list nested `n` deep, built without recursion (EMPTY_LIST, then APPEND each into the last)."""
    return b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b"."


CASES: dict[str, Case] = {
    # --- integers beyond 64 bits ------------------------------------------------------------------
    "log-ring-order": lambda d: (
        ["analyze", _log(d, f"node-00:100:100 [0] NCCL INFO Channel 00/02 :    0 {BIG}   2\n")],
        None,
        ("1 value(s) of field order beyond 64 bits",),
    ),
    "log-trees": lambda d: (
        [
            "analyze",
            _log(d, f"node-00:100:100 [0] NCCL INFO Trees [0] {BIG}/-1/-1->0->-1 [1] -1/-1/-1->0->1\n"),
        ],
        None,
        ("1 value(s) of field tree_down beyond 64 bits",),
    ),
    "log-watchdog-seqnum": lambda d: (
        [
            "analyze",
            _log(
                d,
                f"[rank7]:[{TS} ProcessGroupNCCL.cpp:2168] [Rank 7] Watchdog "
                f"caught collective operation timeout: WorkNCCL(SeqNum={BIG}, "
                "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                "ran for 600031 milliseconds before timing out.\n",
            ),
        ],
        None,
        ("1 value(s) of field seq beyond 64 bits",),
    ),
    "trace-base-time": lambda d: (
        ["analyze", "--trace", _trace(d, trace(baseTimeNanoseconds=BIG))],
        None,
        ("baseTimeNanoseconds",),
    ),
    "trace-seq": lambda d: (
        ["analyze", "--trace", _trace(d, trace(seq=BIG))],
        None,
        ("`seq` beyond 64 bits",),
    ),
    "trace-rank": lambda d: (
        ["analyze", "--trace", _trace(d, trace(rank=BIG))],
        None,
        ("distributedInfo.rank",),
    ),
    "dump-entry-fields": lambda d: (
        ["analyze", _dumps(d, dump([entry(1, collective_seq_id=BIG, record_id=BIG, time_created_ns=-BIG)]))],
        None,
        ("record_id",),
    ),
    "dump-rank-in-name": lambda d: (
        ["analyze", _dumps(d, dump(), names=(f"nccl_trace_rank_{BIG}",))],
        None,
        ("no rank number",),
    ),
    "rank-map-huge": lambda d: (
        [
            "analyze",
            "--trace",
            _trace(d, trace(rank=None), "t.json"),
            "--rank-map",
            "t.json=99999999999999999999",
        ],
        None,
        ("--rank-map",),
    ),
    "rank-map-superscript": lambda d: (
        ["analyze", "--trace", _trace(d, trace(rank=None), "t.json"), "--rank-map", "t.json=\u00b2"],
        None,
        ("--rank-map",),
    ),
    # --- deep nesting ---------------------------------------------------------------------------
    "trace-deep-5000": lambda d: (
        [
            "analyze",
            "--trace",
            _trace(
                d, b'{"traceEvents": [{"ph": "X", "name": "x", "args": ' + b"[" * 5000 + b"]" * 5000 + b"}]}"
            ),
        ],
        None,
        ("nested deeper",),
    ),
    "dump-json-deep-100k": lambda d: (
        ["analyze", _json_dump(d, '{"version": "2.1", "entries": ' + "[" * 100_000 + "]" * 100_000 + "}")],
        None,
        ("nested deeper",),
    ),
    "dump-pickle-deep-list": lambda d: (
        ["analyze", _dumps(d, _deep_list(100_000))],
        None,
        ("nested more than",),
    ),
    "dump-state-deep-list": lambda d: (
        [
            "analyze",
            _json_dump(d, '{"version": "2.1", "entries": [{"state": ' + "[" * 3000 + "]" * 3000 + "}]}"),
        ],
        None,
        ("nested deeper",),
    ),
    # --- wrong types ----------------------------------------------------------------------------
    "dump-entries-type": lambda d: (["analyze", _dumps(d, dump(entries=5))], None, ("`entries`",)),  # type: ignore[arg-type]
    "dump-pg-status-type": lambda d: (["analyze", _dumps(d, dump(pg_status=[1, 2]))], None, ("`pg_status`",)),
    "dump-pg-config-type": lambda d: (["analyze", _dumps(d, dump(pg_config=[1]))], None, ("`pg_config`",)),
    "dump-process-group-type": lambda d: (
        ["analyze", _dumps(d, dump([entry(1, process_group=5)]))],
        None,
        ("`process_group`",),
    ),
    "dump-input-dtypes-type": lambda d: (
        ["analyze", _dumps(d, dump([entry(1, input_dtypes=5)]))],
        None,
        ("`input_dtypes`",),
    ),
    "dump-frames-type": lambda d: (
        ["analyze", _dumps(d, dump([entry(1, frames="abc")]))],
        None,
        ("`frames`",),
    ),
    "dump-state-type": lambda d: (["analyze", _dumps(d, dump([entry(1, state=[1, 2])]))], None, ("`state`",)),
    "dump-infinity": lambda d: (
        [
            "analyze",
            _json_dump(
                d, json.dumps(dump([entry(1, time_created_ns=float("inf"), duration_ms=float("inf"))]))
            ),
        ],
        None,
        ("`time_created_ns`",),
    ),
    "trace-pg-config-type": lambda d: (
        ["analyze", "--trace", _trace(d, trace(distributedInfo={"rank": 0, "pg_config": 5}))],
        None,
        ("pg_config",),
    ),
    "trace-invalid-utf8": lambda d: (
        [
            "analyze",
            "--trace",
            _trace(
                d,
                json.dumps(trace())
                .encode()
                .replace(b"ncclDevKernel_AllReduce", b"nccl\xffDevKernel_AllReduce"),
            ),
        ],
        None,
        ("invalid UTF-8",),
    ),
    "trace-lone-surrogate": lambda d: (  # `\\ud800` is valid JSON to Python; msgspec refuses it
        [
            "analyze",
            "--trace",
            _trace(
                d,
                json.dumps(trace())
                .encode()
                .replace(b'"record_param_comms"', b'"record_\\\\ud800param_\\ud800comms\\udc00"'),
            ),
        ],
        None,
        ("2 lone UTF-16 surrogate escape(s)", "1 collectives lined up"),
    ),
    "dumps-without-rank": lambda d: (
        ["analyze", _dumps(d, dump(), dump(), dump(), names=("dump_a", "dump_b", "nccl_trace_rank_0"))],
        None,
        ("no rank number",),
    ),
    # --- readers ----------------------------------------------------------------------------------
    "log-starting-x^": lambda d: (["analyze", _raw(d, b"x^ not zlib\n" + GOOD.encode())], None, ()),
    "gz-on-stdin": lambda d: (["analyze", "-"], _gz_with_newline_bytes(), ("21 lines",)),
    "gz-zero-padding": lambda d: (
        ["analyze", _raw(d, gzip.compress(GOOD.encode()) + b"\0" * 512, "r.log.gz")],
        None,
        ("zero padding",),
    ),
}


def _raw(d: Path, data: bytes, name: str = "rank0.log") -> str:
    p = d / name
    p.write_bytes(data)
    return str(p)


def _gz_with_newline_bytes() -> bytes:
    """A gzipped log whose compressed bytes hold 0x0a: a line splitter cuts the stream there."""
    rnd = random.Random(0)
    text = (
        "".join(
            f"node-00:100:100 [0] NCCL INFO comm 0x{rnd.getrandbits(48):x} rank 0 nranks 8\n"
            for _ in range(20)
        )
        + GOOD
    )
    data = gzip.compress(text.encode(), mtime=0)
    assert b"\n" in data[2:]
    return data
