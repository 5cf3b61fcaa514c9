"""Seeded mutator over the real inputs in samples/: logs, torch.profiler traces, Flight Recorder dumps
and CLI argument lists. Every choice comes from one `random.Random`, so a (seed, index) pair rebuilds
the same input. Mutations are structure-aware where the format has structure (a JSON value or a
pickled field replaced by a hostile one) and byte-level everywhere (flips, cuts, control characters,
invalid UTF-8, compression wrappers with trailing junk).
"""

from __future__ import annotations

import gzip
import json
import pickle
import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .hostile import BIG, dump, trace

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MAX_LOG_LINES = 200  # a window of each seed log: the pipeline's cost is per call more than per line

HOSTILE_NUMBERS: list[Any] = [
    BIG,
    -BIG,
    1 << 63,
    -(1 << 63) - 1,
    1 << 64,
    (1 << 63) - 1,
    -1,
    0,
    10**400,
    1e308,
    -0.0,
    0.5,
    2**53 + 1,
]
HOSTILE_TEXT: list[str] = [
    "",
    "x" * 5000,
    "\x1b[2J\x1b]0;title\x07",
    "\x9b31m",
    "\u202e",
    "\x00\x01",
    "9" * 40,
    "\u00b2",
    "[0, 1, 2]",
    "nccl:all_reduce",
    "NaN",
    "-1",
    "\udcff",
    "{}",
    "é" * 100,
]
HOSTILE_LINES: list[str] = [
    f"node-00:1:1 [0] NCCL INFO Channel 00/02 :    0 {BIG}   2",
    f"node-00:1:1 [0] NCCL INFO Trees [0] {BIG}/-1/-1->0->-1 [1] -1/-1/-1->0->{BIG}",
    (
        f"[rank{BIG}]:[E1010 10:10:10.123456789 ProcessGroupNCCL.cpp:2168] [Rank {BIG}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={BIG}, OpType=ALLREDUCE, NumelIn={BIG}, NumelOut=1, Timeout(ms)={BIG}) "
        f"ran for {BIG} milliseconds before timing out."
    ),
    (
        f"node-00:1:1 [0] NCCL INFO ncclCommInitRank comm 0x55 rank {BIG} nranks {BIG} cudaDev {BIG} nvmlDev 0 "
        "busId 1000 commId 0xdead - Init COMPLETE"
    ),
    (
        f"node-00:1:1 [{BIG}] NCCL INFO AllReduce: opCount {'f' * 40} sendbuff 0x1 recvbuff 0x2 count {BIG} "
        f"datatype 7 op 0 root 0 comm 0x55 [nranks={BIG}] stream 0x3"
    ),
    "node-00:1:1 [0] NCCL WARN \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[2J \x9b31m",
    f"torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: {BIG}) local_rank: {BIG} (pid: {BIG})",
    (
        f"[rank0]:[E1010 10:10:10.123456789 ProcessGroupNCCL.cpp:1] [PG ID {BIG} PG GUID 0(default_pg) Rank 0] "
        f"Timeout at NCCL work: {BIG}, last enqueued NCCL work: {BIG}, last completed NCCL work: {BIG}."
    ),
    "x^" + "\x9c" * 10,
]


@dataclass
class Seeds:
    """The real inputs mutations start from (loaded once per process)."""

    logs: list[list[str]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)
    dumps: list[dict[str, Any]] = field(default_factory=list)


@cache
def seeds() -> Seeds:
    s = Seeds()
    for pattern in ("logs/*.log", "nccltests/*.log", "hang/torch26_class_a_8ranks/*.log"):
        for p in sorted(SAMPLES.glob(pattern)):
            s.logs.append(p.read_text(errors="replace").splitlines())
    for p in sorted(SAMPLES.glob("traces/**/*.json.gz")):
        doc = json.loads(gzip.decompress(p.read_bytes()))
        doc["traceEvents"] = _events_window(doc.get("traceEvents", []))
        s.traces.append(doc)
    s.traces.append(trace())
    for p in sorted(SAMPLES.glob("hang/flight_gloo_torch2.13/*/nccl_trace_rank_*")):
        s.dumps.append(pickle.loads(p.read_bytes()))
    s.dumps.append(dump())
    return s


def _events_window(events: list[Any], n: int = 300) -> list[Any]:
    """The metadata events and a window of `n` others around the first NCCL kernel or c10d op."""
    first = next((i for i, e in enumerate(events) if "ccl" in str(e.get("name", ""))[:12]), 0)
    meta = [e for e in events[:first] if e.get("ph") == "M"]
    return meta + events[max(0, first - n // 3) : first + n]


def _clone(x: Any) -> Any:
    return pickle.loads(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))


def hostile_value(r: random.Random) -> Any:
    kind = r.random()
    if kind < 0.35:
        return r.choice(HOSTILE_NUMBERS)
    if kind < 0.6:
        return r.choice(HOSTILE_TEXT)
    if kind < 0.75:
        deep: Any = r.choice([0, "x", {}])
        for _ in range(r.choice([2, 10, 70, 300])):  # deeper: `mutate_bytes` inserts 3,000 brackets
            deep = [deep] if r.random() < 0.7 else {"k": deep}
        return deep
    return r.choice(
        [
            None,
            True,
            False,
            [],
            {},
            [1, "a", None],
            {"a": 1},
            list(range(r.choice([3, 2000]))),
            (1, 2),
            [[BIG, 2]],
            ["Float", 5],
        ]
    )


def _mutate_tree(doc: Any, r: random.Random, n: int) -> Any:
    """`n` random values of a JSON-like tree replaced by hostile ones (or their keys deleted)."""
    for _ in range(n):
        parent, key = _random_slot(doc, r)
        if parent is None:
            return hostile_value(r)
        if isinstance(parent, dict) and r.random() < 0.15:
            parent.pop(key, None)
        else:
            parent[key] = hostile_value(r)
    return doc


def _random_slot(doc: Any, r: random.Random) -> tuple[Any, Any]:
    node, parent, key = doc, None, None
    for _ in range(r.randint(1, 6)):
        if isinstance(node, dict) and node:
            parent, key = node, r.choice(list(node))
        elif isinstance(node, list) and node:
            parent, key = node, r.randrange(len(node))
        else:
            break
        node = parent[key]
        if r.random() < 0.3:
            break
    return parent, key


def mutate_bytes(data: bytes, r: random.Random) -> bytes:
    """A few byte-level edits: flips, cuts, inserted control bytes or hostile text, duplicated runs."""
    b = bytearray(data)
    for _ in range(r.randint(1, 4)):
        op = r.random()
        pos = r.randrange(len(b) + 1)
        if op < 0.25 and b:
            b[min(pos, len(b) - 1)] ^= 1 << r.randrange(8)
        elif op < 0.4:
            del b[pos:]
        elif op < 0.6:
            b[pos:pos] = r.choice(
                [
                    b"\x00",
                    b"\x1b[2J",
                    b"\xff\xfe",
                    b"\xc2\x9b",
                    b"\n\n",
                    b"x^",
                    b"\x1f\x8b",
                    b"[" * 3000,
                    b"\r",
                    b"\x80\x02",
                    str(BIG).encode(),
                ]
            )
        elif op < 0.8 and b:
            end = min(len(b), pos + r.randint(1, 400))
            b[pos:pos] = b[pos:end] * r.randint(1, 5)
        else:
            b[pos:pos] = r.choice(HOSTILE_TEXT).encode("utf-8", "surrogatepass")
    return bytes(b)


def wrap(data: bytes, r: random.Random) -> tuple[bytes, str]:
    """Sometimes compress (gzip with trailing bytes, concatenated members, cut; zstd); the file suffix."""
    x = r.random()
    if x < 0.75:
        return data, ""
    gz = gzip.compress(data, mtime=0)
    if x < 0.85:
        return gz + r.choice([b"", b"\0" * 100, b"junk", gzip.compress(b"more\n", mtime=0)]), ".gz"
    if x < 0.92:
        return gz[: r.randrange(len(gz) + 1)], ".gz"
    try:
        import zstandard
    except ImportError:
        return gz, ".gz"
    z = zstandard.ZstdCompressor().compress(data)
    return z + r.choice([b"", z, b"junk"]), ".zst"


def log_input(r: random.Random) -> bytes:
    lines = list(r.choice(seeds().logs))
    start = r.randrange(max(1, len(lines) - MAX_LOG_LINES))
    lines = lines[start : start + MAX_LOG_LINES]
    for _ in range(r.randint(1, 5)):
        op = r.random()
        i = r.randrange(len(lines) + 1)
        if op < 0.35:
            lines.insert(i, r.choice(HOSTILE_LINES))
        elif op < 0.55 and lines:
            j = min(i, len(lines) - 1)
            lines[j] = _swap_number(lines[j], r)
        elif op < 0.7:
            lines.insert(i, r.choice(r.choice(seeds().logs) or [""]))
        elif op < 0.8 and lines:
            del lines[i : i + r.randint(1, 20)]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    return mutate_bytes(data, r) if r.random() < 0.5 else data


def _swap_number(line: str, r: random.Random) -> str:
    digits = [i for i, c in enumerate(line) if c.isdigit()]
    if not digits:
        return line + " " + str(r.choice(HOSTILE_NUMBERS))
    i = r.choice(digits)
    j = i
    while j < len(line) and line[j].isdigit():
        j += 1
    return line[:i] + str(r.choice(HOSTILE_NUMBERS)) + line[j:]


def trace_input(r: random.Random, rank: int) -> bytes:
    doc = _clone(r.choice(seeds().traces))
    dist = doc.get("distributedInfo")
    if isinstance(dist, dict):
        dist["rank"] = rank  # a set of distinct ranks, unless a mutation hits the rank itself
    else:
        doc["distributedInfo"] = {"rank": rank}
    doc = _mutate_tree(doc, r, r.randint(1, 4))
    data = _json(doc, r)
    return mutate_bytes(data, r) if r.random() < 0.3 else data


def dump_input(r: random.Random) -> bytes:
    d = _mutate_tree(_clone(r.choice(seeds().dumps)), r, r.randint(1, 4))
    x = r.random()
    if x < 0.2:
        return _json(d, r)
    try:
        data = pickle.dumps(d, protocol=r.choice([0, 2, 2, 2, 4, 5]))
    except (RecursionError, ValueError):
        data = pickle.dumps(dump(), protocol=2)
    return mutate_bytes(data, r) if x > 0.7 else data


def argv_input(r: random.Random, paths: list[str]) -> list[str]:
    """A command line: a command, some of the given paths, options with odd values, sometimes junk."""
    cmd = r.choice(["analyze", "analyze", "coverage", "report", "rules", "diff", "nope"])
    argv = [cmd, *r.sample(paths, k=min(len(paths), r.randint(0, 3)))]
    opts = [
        ["--format", r.choice(["json", "text", "md", "x"])],
        [
            "--rank-map",
            r.choice(["a=1", "f=99999999999999999999", "f=\u00b2", "=", "a", "a=1,b=-1", ",", "a=0x1"]),
        ],
        ["--strict"],
        ["-q"],
        ["--debug"],
        ["--no-color"],
        ["--max-expansion-ratio", r.choice(["0", "5", "x", "-1"])],
        ["--max-decompressed-bytes", r.choice(["1K", "16G", "x", "99999999999999999999T"])],
        ["--trace", r.choice(paths or ["nope.json"])],
        ["--show-unknown", r.choice(["3", "-1", "x"])],
        ["-o", r.choice(["-", "/nonexistent/dir/r.md", "r.txt"])],
        ["--version"],
        ["--", "-x"],
        ["\x1b[2J"],
    ]
    for _ in range(r.randint(0, 3)):
        argv += r.choice(opts)
    return argv


def _json(doc: Any, r: random.Random) -> bytes:
    try:
        text = json.dumps(doc, allow_nan=r.random() < 0.2, default=str)
    except (ValueError, RecursionError):
        text = json.dumps(trace())
    return text.encode("utf-8", "surrogatepass")
