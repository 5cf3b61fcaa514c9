"""Hand-built sessions for the report tests: 8 ranks on two hosts, one slow and odd rank, traces,
and log text carrying HTML/script payloads and identifying values (hosts, addresses, a home path)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from ncclscope import schema as S
from ncclscope.frames import CollLines, Coverage, InputInfo, LogFrames
from ncclscope.hang import build_hang_view
from ncclscope.parse.traces.read import TraceFrames
from ncclscope.records import Evidence, Finding
from ncclscope.session import Session

XSS = '<script>window.__xss=1</script>"><img src=x onerror="window.__xss=2">'
HOSTS = ["gpu-node-a", "gpu-node-b"]
ADDRS = ["10.20.30.11", "10.20.30.12"]
USER = "alice"
LOG = f"/home/{USER}/jobs/run7/{HOSTS[0]}.log"


def _rows(schema: S.Schema, rows: list[dict[str, Any]]) -> pl.DataFrame:
    if not rows:
        return S.empty(schema)
    full = []
    for i, r in enumerate(rows, 1):
        row = dict(r)
        if "line" in schema:
            row.setdefault("path", LOG)
            row.setdefault("line", i)
            row.setdefault("text", f"{row.get('host', HOSTS[0])}:{row.get('pid', 1)}:9 [0] NCCL INFO row {i}")
        full.append(row)
    return S.conform(pl.DataFrame(full, infer_schema_length=None, strict=False), schema)


def _host(rank: int) -> str:
    return HOSTS[rank // 4]


def ranks_frame() -> pl.DataFrame:
    return _rows(
        S.RANKS,
        [
            {
                "rank": r,
                "host": _host(r),
                "pid": 1000 + r,
                "cuda_dev": r % 4,
                "path": LOG,
                "nccl_version": "2.19.3" if r != 7 else "2.14.3",
                "cuda_driver": "12.2",
                "comm_ids": ["0x7c6d1f2b9e3a4c55"],
                "iface": "eth0",
                "address": ADDRS[r // 4] if r != 6 else "10.99.1.5",
                "net": "IB",
                "gdr": True,
            }
            for r in range(8)
        ],
    )


def log_frames() -> LogFrames:
    conns = []
    for ch in (0, 1):
        for r in range(8):
            nxt = (r + 1) % 8
            cross = _host(r) != _host(nxt)
            conns.append(
                {
                    "host": _host(r),
                    "pid": 1000 + r,
                    "channel": ch,
                    "src_rank": r,
                    "dst_rank": nxt,
                    "transport": "NET" if cross else "P2P",
                    "net": "IB" if cross else None,
                    "gdr": cross,
                    "detail": "IB/0/GDRDMA" if cross else "IPC/read",
                    "kind": "channel",
                }
            )
    return LogFrames(
        inits=_rows(
            S.INITS,
            [
                {
                    "host": _host(r),
                    "pid": 1000 + r,
                    "phase": "complete",
                    "rank": r,
                    "nranks": 8,
                    "comm_ptr": f"0x55d1c2a3b4{r:02d}",
                }
                for r in range(8)
            ],
        ),
        versions=_rows(
            S.VERSIONS,
            [
                {"host": _host(r), "pid": 1000 + r, "kind": "nccl", "value": "2.19.3" if r != 7 else "2.14.3"}
                for r in range(8)
            ]
            + [{"host": HOSTS[0], "pid": 1000, "kind": "torch", "value": "2.3.1"}],
        ),
        env=_rows(
            S.ENV,
            [
                {
                    "host": _host(r),
                    "pid": 1000 + r,
                    "name": "NCCL_IB_HCA",
                    "value": "mlx5_0" if r < 4 else "mlx5_1",
                }
                for r in range(8)
            ],
        ),
        rings=_rows(
            S.RINGS,
            [
                {
                    "host": HOSTS[0],
                    "pid": 1000,
                    "kind": "ring_order",
                    "channel": ch,
                    "nchannels": 2,
                    "order": list(range(8)),
                }
                for ch in (0, 1)
            ]
            + [
                {
                    "host": _host(r),
                    "pid": 1000 + r,
                    "kind": "tree",
                    "channel": 0,
                    "tree_rank": r,
                    "tree_up": -1 if r == 0 else (r - 1) // 2,
                    "tree_down": [],
                }
                for r in range(8)
            ],
        ),
        connections=_rows(S.CONNECTIONS, conns),
        coll=CollLines.of(
            _rows(
                S.COLLECTIVES,
                [
                    {
                        "host": _host(r),
                        "pid": 1000 + r,
                        "op": "AllReduce",
                        "op_count": 41 if r == 5 else 42,
                        "nranks": 8,
                        "comm_ptr": f"0x55d1c2a3b4{r:02d}",
                    }
                    for r in range(8)
                ],
            )
        ),
        torch=_rows(
            S.TORCH,
            [
                {
                    "rank": r,
                    "kind": "watchdog_timeout",
                    "seq": 43,
                    "last_enqueued": 43,
                    "last_completed": 41 if r == 5 else 42,
                }
                for r in range(8)
            ],
        ),
        inputs=(InputInfo(LOG, 1200), InputInfo(f"/home/{USER}/jobs/run7/{HOSTS[1]}.log", 1100)),
        coverage=Coverage(lines=2300, nccl_lines=2000, recognized=1990, unknown=10),
        notes=(f"{LOG}: skipped 3 binary bytes",),
    )


def traces() -> TraceFrames:
    rows = []
    for k in range(6):
        for r in range(8):
            late = 900.0 if (r == 5 and k == 3) else 10.0 * r
            start = 1_700_000_000_000_000.0 + k * 5000 + late
            rows.append(
                {
                    "path": f"rank{r}.json",
                    "rank": r,
                    "op": "allreduce",
                    "pg_name": "0",
                    "index_in_pg": k,
                    "launch_us": start - 5,
                    "start_us": start,
                    "end_us": start + 1500,
                    "dur_us": 1500.0,
                    "msg_bytes": 1 << 20,
                    "source": "kernel",
                }
            )
    return TraceFrames(
        collectives=S.conform(pl.DataFrame(rows), S.TRACE_COLLECTIVES),
        steps=S.empty(S.TRACE_STEPS),
        kernels=S.empty(S.TRACE_KERNELS),
        ranks=S.empty(S.TRACE_RANKS),
        pgs=S.empty(S.TRACE_PGS),
    )


def findings() -> tuple[Finding, ...]:
    return (
        Finding(
            id="version-mismatch",
            severity="error",
            title="NCCL versions differ across ranks",
            why="Ranks with different NCCL versions can hang or corrupt data.",
            fix="Install one NCCL version on every node.",
            ranks=(7,),
            hosts=(HOSTS[1],),
            evidence=(
                Evidence(LOG, 3, f"{HOSTS[1]}:1007:1090 [3] NCCL INFO NCCL version 2.14.3+cuda11.8"),
                Evidence(LOG, 9, f"{HOSTS[1]}:1007:1090 [3] NCCL WARN {XSS} peer {ADDRS[0]}<4321>"),
            ),
        ),
        Finding(
            id="iface-mismatch",
            severity="warning",
            title=f"rank 6 bootstraps from {ADDRS[1]} `|` odd",
            why=f"Subnet differs on {HOSTS[1]}.",
            fix="Set NCCL_SOCKET_IFNAME.",
            ranks=(6,),
            hosts=(HOSTS[1],),
            evidence=(
                Evidence(
                    LOG,
                    12,
                    f"{HOSTS[1]}:1006:1091 [2] NCCL INFO Bootstrap : Using eth0:10.99.1.5<0>"
                    " comm 0x55d1c2a3b406 fe80::42:acff:fe11:2%eth0",
                ),
            ),
            metrics={"per_host": {HOSTS[1]: 1}},
        ),
        Finding(
            id="collective-hang",
            severity="error",
            title="rank 5 stopped at opCount 0x29",
            why="All other ranks wait in AllReduce opCount 0x2a.",
            fix="Look at what rank 5 was doing.",
            ranks=(5,),
            hosts=(HOSTS[1],),
            evidence=(
                Evidence(LOG, 20, f"[rank5]: {HOSTS[1]}:1005:1092 [1] NCCL INFO AllReduce: opCount 29"),
            ),
        ),
    )


def make_session(with_traces: bool = True, **over: Any) -> Session:
    ranks = over.pop("ranks", ranks_frame())
    comms = _rows(
        S.COMMS,
        [
            {
                "comm_key": "0x7c6d1f2b9e3a4c55",
                "comm_id": "0x7c6d1f2b9e3a4c55",
                "nranks": 8,
                "nnodes": 2,
                "ranks_seen": 8,
                "complete": 8,
            }
        ],
    )
    logs = over.pop("logs", log_frames())
    return Session(
        logs=logs,
        ranks=ranks,
        comms=comms,
        findings=over.pop("findings", findings()),
        traces=traces() if with_traces else None,
        hang=over.pop("hang", build_hang_view(logs)),
        notes=logs.notes,
        **over,
    )


@pytest.fixture(scope="session")
def session() -> Session:
    return make_session()


@pytest.fixture(scope="session")
def empty_session() -> Session:
    return Session(logs=LogFrames(), ranks=S.empty(S.RANKS), comms=S.empty(S.COMMS), findings=())
