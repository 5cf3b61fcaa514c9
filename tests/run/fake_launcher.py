"""A stand-in for a launcher in tests/run: starts `--ranks` child processes (itself, with --child R);
each writes NCCL-like INFO lines into $NCCL_DEBUG_FILE (expanding %h and %p as NCCL does), prints a few
lines, then exits with --exit CODE or kills itself with --signal NAME. `--wait` makes the launcher wait
for a signal first (it prints `ready`), and exit 130 on SIGINT / 143 on SIGTERM after saying so.
`--env-json FILE` writes the environment the launcher saw."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time


def nccl_file() -> str | None:
    path = os.environ.get("NCCL_DEBUG_FILE")
    if not path:
        return None
    return path.replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))


def child(rank: int, ranks: int) -> None:
    host, pid = socket.gethostname(), os.getpid()
    init = (
        f"ncclCommInitRankConfig comm 0x42ad50{rank}0 rank {rank} nranks {ranks} cudaDev {rank} "
        f"nvmlDev {rank} busId {rank + 1}0 commId 0x8160a221b68cb64"
    )
    lines = [
        "NCCL INFO cudaDriverVersion 13000",
        "NCCL INFO NCCL version 2.28.9+cuda13.0",
        f"NCCL INFO {init} - Init START",
        f"NCCL INFO {init} - Init COMPLETE",
    ]
    target = nccl_file()
    if target:
        with open(target, "w") as fh:
            fh.writelines(f"{host}:{pid}:{pid} [{rank}] {ln}\n" for ln in lines)
    print(f"rank {rank} says hello", flush=True)
    print(f"rank {rank} warns on stderr", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", type=int)
    ap.add_argument("--ranks", type=int, default=2, help="processes this launcher starts")
    ap.add_argument("--first-rank", type=int, default=0, help="global rank of the first (several nodes)")
    ap.add_argument("--world", type=int, default=None, help="ranks in the whole job [default: --ranks]")
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--signal", default=None)
    ap.add_argument("--wait", action="store_true")
    ap.add_argument("--env-json", default=None)
    a = ap.parse_args()
    if a.child is not None:
        child(a.child, a.world or a.ranks)
        return 0
    if a.env_json:
        with open(a.env_json, "w") as fh:
            json.dump(dict(os.environ), fh)
    world = str(a.world or a.ranks)
    for r in range(a.first_rank, a.first_rank + a.ranks):
        subprocess.run([sys.executable, __file__, "--child", str(r), "--world", world], check=True)
    if a.wait:
        got: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda s, _f: got.append(s))
        print("ready", flush=True)
        deadline = time.monotonic() + 60
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
        if got:
            print(f"launcher got {signal.Signals(got[0]).name}", flush=True)
            return 128 + got[0]
        return 99
    if a.signal:
        sys.stdout.flush()
        os.kill(os.getpid(), getattr(signal, a.signal))
        time.sleep(5)
    return a.exit


if __name__ == "__main__":
    sys.exit(main())
