"""Time `ncclscope analyze` end to end on a hung job: 1,024 ranks × 5,000 COLL lines each (issue 3).

Each rank's file is bench/gen_logs.py's NCCL 2.21 init sequence and COLL lines, written as a real
hang looks: every rank launches opCount S except one stalled rank that stops at S-1; the waiting
ranks then print the PyTorch 2.6 watchdog, PG-status and dump-signal lines for SeqNum S+1 (SeqNum
counts from 1, opCount from 0), the stalled one only the dump signal it received. The run exercises
the whole hang path: COLL opCounts per rank and communicator, torch lines, the verdict. The CLI runs as a
subprocess, as a user runs it; the script prints wall and CPU time, MB/s, and the verdict it found,
and checks that the verdict names the stalled rank.

    python bench/bench_hang.py                       # 1024 × 5000, ~1 GB of logs under bench/out/
    python bench/bench_hang.py --ranks 64 --coll 500 # a quick run
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_logs as G  # bench/ is not a package


def _torch_lines(r: G.Rank, seq: int, stalled: int, detector: int) -> list[str]:
    head = f"[rank{r.rank}]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) Rank {r.rank}] "
    created = (
        f"[rank{r.rank}]:[I1218 19:00:01.100000000 ProcessGroupNCCL.cpp:2350] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank {r.rank}] ProcessGroupNCCL created ncclComm_ {r.comm} on CUDA device: {r.dev}"
    )
    src = "this local rank" if r.rank == detector else f" rank {detector}"
    enq, comp = (seq - 1, seq - 1) if r.rank == stalled else (seq, seq - 1)
    signal = (
        head
        + f"Received a dump signal due to a collective timeout from {src} and we will try our best to dump "
        f"the debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: {comp}."
    )
    if r.rank == stalled:
        return [created, signal]
    return [
        created,
        G.torch_timeout(r, seq),
        head
        + f" failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {enq}, "
        f"last completed work: {comp}",
        signal,
    ]


def ensure_logs(ranks: int, coll: int, stalled: int, root: Path | None = None) -> Path:
    """The hang set's directory (under `root`, default bench/out/), generated if absent. The rank after
    the stalled one is the one that detects the timeout."""
    out = (root or HERE / "out") / f"hang_r{ranks}_c{coll}_s{stalled}"
    if out.is_dir() and any(out.iterdir()):
        return out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = random.Random(0)
    comm_id = f"0x{rng.getrandbits(64):016x}"
    for i in range(ranks):
        r = G.Rank(i, ranks, 8, rng)
        last = coll - 1 if i == stalled else coll  # opCounts 0 .. last-1
        lines = list(G.init_lines(r, 8, comm_id))
        lines += [G.coll_line(r, k, rng) for k in range(last)]
        lines += _torch_lines(r, coll, stalled, detector=(stalled + 1) % ranks)
        (out / f"nccl.{r.host}.{r.pid}.log").write_text("\n".join(lines) + "\n")
    print(f"generated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def run(target: Path) -> tuple[float, float, dict[str, object]]:
    exe = Path(sys.executable).with_name("ncclscope")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ncclscope"]
    cmd += ["analyze", str(target), "--format", "json", "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"ncclscope analyze failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--coll", type=int, default=5000, help="COLL lines per rank")
    ap.add_argument("--stalled", type=int, default=517, help="the rank that stops early")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    args.stalled = min(args.stalled, args.ranks - 1)
    target = ensure_logs(args.ranks, args.coll, args.stalled)
    size = sum(p.stat().st_size for p in target.iterdir() if p.is_file())
    runs = [run(target) for _ in range(args.repeat)]
    wall, cpu, doc = min(runs, key=lambda r: r[0])
    hang = [f for f in doc["findings"] if isinstance(f, dict) and f.get("id") == "collective-hang"]  # type: ignore[union-attr]
    verdict = hang[0] if hang else None
    print(
        f"{args.ranks} ranks x {args.coll} COLL lines: {size / 1e6:.0f} MB in {wall:.1f} s wall "
        f"({cpu:.1f} s CPU), {size / 1e6 / wall:.0f} MB/s"
    )
    if verdict is None:
        print("no collective-hang verdict found", file=sys.stderr)
        return 1
    print(f"verdict: {verdict['title']}")
    ok = verdict.get("ranks") == [args.stalled]
    print(
        "culprit is the stalled rank"
        if ok
        else f"culprit {verdict.get('ranks')} != stalled rank {args.stalled}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
