"""Builds the source-format NCCL Inspector samples in straggler/ and healthy/ (deterministic).

The record layout is the one `plugins/profiler/inspector/inspector_json.cc` (NVIDIA/nccl master,
5067397c) writes: one compact JSON object per line, `header` / `metadata` / `coll_perf`, in files named
`<hostname>-pid<pid>.log`. No multi-rank real dump was found in public threads or repositories; one
real record (DataDog/datadog-agent, see SOURCE.md) has the same keys.

straggler/: 4 ranks of one 4-rank communicator, 12 AllReduce operations of 64 MiB; rank 2 launches
late on 10 of them (its kernel is short: the other ranks' kernels wait for it). Rank 3's file lacks
operations 5-8 (drained ring lost them, as NVIDIA/nccl#1945 reports): unknown, not absent.
healthy/: the same without the late rank and with every record.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def record(rank: int, sn: int, exec_us: int, host: str, pid: int) -> str:
    size = 64 << 20
    algbw = size / exec_us / 1e3
    doc = {
        "header": {"id": "0x5d2e8f1a77c04b", "comm_name": "DP Group 0", "rank": rank, "n_ranks": 4, "nnodes": 2},
        "metadata": {
            "inspector_output_format_version": "v4.0",
            "git_rev": "",
            "rec_mechanism": "nccl_profiler_interface",
            "dump_timestamp_us": 1764000000000000 + sn * 250000 + rank * 17,
            "hostname": host,
            "pid": pid,
        },
        "coll_perf": {
            "coll": "AllReduce",
            "coll_sn": sn,
            "coll_msg_size_bytes": size,
            "coll_exec_time_us": exec_us,
            "coll_timing_source": "kernel_gpu",
            "coll_algobw_gbs": round(algbw, 6),
            "coll_busbw_gbs": round(algbw * 1.5, 6),
        },
    }
    return json.dumps(doc, separators=(",", ":"))


def build(out: Path, late: int | None, lost: set[int]) -> None:
    out.mkdir(exist_ok=True)
    procs = [("node-a", 41001), ("node-a", 41002), ("node-b", 52011), ("node-b", 52012)]
    for rank, (host, pid) in enumerate(procs):
        lines = []
        for sn in range(1, 13):
            if rank == 3 and sn in lost:
                continue
            base = 1800 + (sn * 37 + rank * 11) % 90  # µs: the data movement itself, with jitter
            delayed = late is not None and sn not in (3, 9)
            if delayed and rank != late:
                base += 6000 + (sn * 53) % 900  # waited inside the kernel for the late rank
            lines.append(record(rank, sn, base, host, pid))
        (out / f"{host}-pid{pid}.log").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    build(HERE / "straggler", late=2, lost={5, 6, 7, 8})
    build(HERE / "healthy", late=None, lost=set())
    sys.exit(0)
