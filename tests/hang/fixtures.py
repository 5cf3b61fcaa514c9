"""Per-rank logs and Flight Recorder dumps for each hang class, built from real line shapes.

Line shapes: NCCL 2.19+ Init/COLL lines and WARNs as in ../shared/corpus/issues (nccl1027, the IB
completion errors of ib_error logs), PyTorch 2.6-era ProcessGroupNCCL lines as in arctic219,
deepspeed7533 and llamafactory8261 (`[rankN]:[E… ProcessGroupNCCL.cpp:N] [PG ID … Rank N] …`).
Dumps follow the layout torch's FlightRecorder::dump_dict writes (checked against a real gloo
dump from torch 2.13, see samples/hang/README.md). Numbers, hosts and pointers are invented.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TS = "E1010 10:10:10.123456789"
GPUS_PER_HOST = 8


@dataclass
class Job:
    """A job of `n` ranks with `pgs` process groups (PG 0 = world; PG 1 = world again, as a second comm)."""

    n: int
    pgs: int = 1
    stuck_pg: int = 0
    seq: int = 40  # the stuck SeqNum / opCount on the stuck group
    lines: dict[int, list[str]] = field(default_factory=dict)

    def host(self, r: int) -> str:
        return f"node-{r // GPUS_PER_HOST:02d}"

    def pid(self, r: int) -> int:
        return 41000 + r

    def prefix(self, r: int) -> str:
        return f"{self.host(r)}:{self.pid(r)}:{self.pid(r) + 7} [{r % GPUS_PER_HOST}]"

    def comm_ptr(self, r: int, pg: int) -> str:
        return f"0x55{pg:02x}{r:04x}a0c0"

    def comm_id(self, pg: int) -> str:
        return f"0x{0xE5509A3353CF0000 + pg:x}"

    def add(self, r: int, line: str) -> None:
        self.lines.setdefault(r, []).append(line)

    def torch(self, r: int, msg: str, pg: int | None = None, sev: str = "E") -> None:
        tag = (
            f"[PG ID {pg} PG GUID {pg}({'default_pg' if pg == 0 else 'tp'}) Rank {r}] "
            if pg is not None
            else ""
        )
        self.add(r, f"[rank{r}]:[{sev}{TS[1:]} ProcessGroupNCCL.cpp:2168] {tag}{msg}")

    # --- building blocks ------------------------------------------------------------------------
    def init(self) -> None:
        for r in range(self.n):
            self.add(r, f"{self.prefix(r)} NCCL INFO cudaDriverVersion 12040")
            for pg in range(self.pgs):
                self.add(
                    r,
                    f"{self.prefix(r)} NCCL INFO ncclCommInitRank comm {self.comm_ptr(r, pg)} rank {r} "
                    f"nranks {self.n} cudaDev {r % 8} nvmlDev {r % 8} busId {r % 8}f000 "
                    f"commId {self.comm_id(pg)} - Init START",
                )
                self.add(
                    r,
                    f"{self.prefix(r)} NCCL INFO ncclCommInitRank comm {self.comm_ptr(r, pg)} rank {r} "
                    f"nranks {self.n} cudaDev {r % 8} nvmlDev {r % 8} busId {r % 8}f000 "
                    f"commId {self.comm_id(pg)} - Init COMPLETE",
                )
                self.torch(
                    r,
                    f"ProcessGroupNCCL created ncclComm_ {self.comm_ptr(r, pg)} on CUDA device: {r % 8}",
                    pg=pg,
                    sev="I",
                )

    def coll(
        self,
        r: int,
        pg: int,
        upto: int,
        op: str = "AllReduce",
        count: int = 1048576,
        last: tuple[str, int] | None = None,
    ) -> None:
        for k in range(max(1, upto - 3), upto + 1):
            o, c = last if (last and k == upto) else (op, count)
            self.add(
                r,
                f"{self.prefix(r)} NCCL INFO {o}: opCount {k:x} sendbuff 0x7f1a2c000000 recvbuff "
                f"0x7f1a2c000000 count {c} datatype 7 op 0 root 0 comm {self.comm_ptr(r, pg)} "
                f"[nranks={self.n}] stream 0x55d0c2a1b2c0",
            )

    def timeout(
        self,
        r: int,
        seq: int,
        op: str = "ALLREDUCE",
        numel: int = 1048576,
        pg: int | None = None,
        enqueued: int | None = None,
        completed: int | None = None,
    ) -> None:
        self.torch(
            r,
            f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600031 milliseconds before "
            f"timing out.",
        )
        if enqueued is not None:
            self.torch(
                r,
                f" failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: "
                f"{enqueued}, last completed work: {completed}",
                pg=self.stuck_pg if pg is None else pg,
            )
        self.torch(r, f"[Rank {r}] To avoid data inconsistency, we are taking the entire process down.")

    def dump_signal(self, r: int, detector: int, enqueued: int, completed: int) -> None:
        src = "this local rank" if r == detector else f" rank {detector}"
        self.torch(
            r,
            f"Received a dump signal due to a collective timeout from {src} and we will try our best to dump "
            f"the debug info. Last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.This "
            f"is most likely caused by incorrect usages of collectives",
            pg=self.stuck_pg,
        )

    def write(self, d: Path, ranks: list[int] | None = None, mid_line: int | None = None) -> list[str]:
        d.mkdir(parents=True, exist_ok=True)
        paths = []
        for r in ranks if ranks is not None else range(self.n):
            p = d / f"rank{r}.log"
            body = "\n".join(self.lines.get(r, []))
            p.write_text(body if r == mid_line else body + "\n")
            paths.append(str(p))
        return paths


def scenario(
    klass: str,
    n: int,
    pgs: int = 1,
    culprit: int | None = None,
    detector: int | None = None,
    torch_status: bool = True,
) -> Job:
    """A job hung in class `klass` on its last process group; `culprit` defaults to the middle rank."""
    job = Job(n=n, pgs=pgs, stuck_pg=pgs - 1)
    k = n // 2 if culprit is None else culprit
    det = (k + 1) % n if detector is None else detector
    s, pg = job.seq, job.stuck_pg
    job.init()
    op = s - 1  # NCCL's opCount counts from 0, torch's SeqNum from 1
    for r in range(n):
        for other in range(pgs - 1):
            job.coll(r, other, 100)
        enq, comp = (s, s - 1)
        if klass == "a" and r == k:
            job.coll(r, pg, op - 1)
            job.torch(r, "Observed flight recorder dump signal from another rank via TCPStore.", pg=pg)
            job.dump_signal(r, det, s - 1, s - 1)  # alive, nothing outstanding: it never called #s
            continue
        if klass == "d" and r == k:
            job.coll(r, pg, op - 1)
            job.add(
                r,
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
                "capacity of 79.10 GiB of which 1.02 GiB is free.",
            )
            continue
        if klass == "e":
            job.coll(r, pg, op - 1)
            job.dump_signal(r, det, s - 1, s - 1)
            continue
        if klass == "c" and r == k:
            job.coll(r, pg, op, last=("Broadcast", 4096))
            job.timeout(
                r, s, op="BROADCAST", numel=4096, enqueued=enq if torch_status else None, completed=comp
            )
        else:
            job.coll(r, pg, op)
            job.timeout(r, s, enqueued=enq if torch_status else None, completed=comp)
        if klass == "b" and r % GPUS_PER_HOST == 0:
            job.add(
                r,
                f"{job.prefix(r)} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
                f"10.16.43.{(r + 8) % 250}<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
            )
        if r == det:
            job.torch(r, "First PG on this rank to signal dumping.", pg=pg)
        job.dump_signal(r, det, enq, comp)
    return job


# --- Flight Recorder dumps -----------------------------------------------------------------------


def fr_entry(
    record_id: int,
    seq: int,
    op: str = "all_reduce",
    state: str = "completed",
    numel: int = 1024,
    pg: tuple[str, str] = ("0", "default_pg"),
    pg_id: int = 0,
    dtype: str = "Float",
) -> dict[str, Any]:
    """One entry as FlightRecorder::getCollectiveTrace writes it (stack traces left out)."""
    return {
        "record_id": record_id,
        "pg_id": pg_id,
        "process_group": pg,
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": f"nccl:{op}",
        "time_created_ns": 1_700_000_000_000_000_000 + seq,
        "input_sizes": [[numel]],
        "input_dtypes": [dtype],
        "output_sizes": [[numel]],
        "output_dtypes": [dtype],
        "state": state,
        "time_discovered_started_ns": 1 if state != "scheduled" else None,
        "time_discovered_completed_ns": 2 if state == "completed" else None,
        "retired": state == "completed",
        "timeout_ms": 600000,
        "is_p2p": False,
        "thread_id": "140463529311104",
        "thread_name": "pt_nccl_watchdg",
        "frames": [
            {
                "name": "all_reduce",
                "filename": "/usr/lib/python3/torch/distributed/distributed_c10d.py",
                "line": 2501,
            },
            {"name": "train_step", "filename": "/work/train.py", "line": 88},
        ],
    }


def fr_dump(entries: list[dict[str, Any]], enqueued: int, completed: int, n: int) -> dict[str, Any]:
    """A whole dump: version, pg_config (ranks as a string, as torch writes it), pg_status, entries."""
    return {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(n)))}},
        "pg_status": {
            "0": {
                "last_enqueued_collective": enqueued,
                "last_started_collective": enqueued,
                "last_completed_collective": completed,
            }
        },
        "entries": entries,
    }


def fr_scenario(klass: str, n: int, culprit: int, s: int = 12) -> dict[int, dict[str, Any]]:
    """Per-rank dump dicts of a job stuck at collective_seq_id `s` in class a, b, c or e."""
    dumps = {}
    for r in range(n):
        ents = [fr_entry(i, i + 1) for i in range(s - 1)]
        enq, comp = s, s - 1
        if klass == "a" and r == culprit:
            enq = s - 1
        elif klass == "e":
            enq = comp = s - 1
        elif klass == "c" and r == culprit:
            ents.append(fr_entry(s - 1, s, op="broadcast", state="started", numel=16))
        else:
            ents.append(fr_entry(s - 1, s, state="started"))
        dumps[r] = fr_dump(ents, enq, comp, n)
    return dumps


def write_dumps(d: Path, dumps: dict[int, dict[str, Any]], fmt: str = "pickle") -> list[str]:
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, dump in dumps.items():
        p = d / f"nccl_trace_rank_{r}"
        if fmt == "json":
            import json

            p = p.with_suffix(".json")
            p.write_text(json.dumps(dump))
        else:
            p.write_bytes(pickle.dumps(dump, protocol=2))  # torch's jit Pickler writes protocol 2
        paths.append(str(p))
    return paths
