"""Time `ncclscope analyze` end to end (a subprocess, as a user runs it) and print MB/s.

Generates the logs first if they are missing (bench/gen_logs.py), then runs the CLI `--repeat` times
and reports the best wall time, plus CPU seconds (user+sys of the child) so that a busy machine can
be told apart from a slow program. Pin to two cores with `taskset -c 0,1` to match the target.
Bytecode caching is on (PYTHONDONTWRITEBYTECODE dropped, caches under bench/out/pycache) and one
untimed warm-up run comes first, as for an installed package: otherwise the editable install
recompiles its modules on every run (~0.15 s here), which no user pays.

    python bench/bench_analyze.py --ranks 64 --coll 20000          # ~250 MB, the issue's benchmark
    taskset -c 0,1 python bench/bench_analyze.py --repeat 3
    git worktree add /tmp/base <commit>                             # an A/B against an older tree:
    taskset -c 0,1 python bench/bench_analyze.py --repeat 3 --baseline /tmp/base   # runs alternate
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ensure_logs(ranks: int, coll: int, combined: bool) -> Path:
    out = HERE / "out" / f"r{ranks}_c{coll}{'_combined' if combined else ''}"
    if not out.is_dir() or not any(out.iterdir()):
        cmd = [sys.executable, str(HERE / "gen_logs.py"), "--ranks", str(ranks), "--coll", str(coll),
               "--out", str(out)] + (["--combined"] if combined else [])
        subprocess.run(cmd, check=True)
    return out


def _env(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(HERE / "out" / ("pycache" if tree is None else "pycache-baseline"))
    if tree is not None:  # that tree's package first on the path, run from outside this checkout
        env["PYTHONPATH"] = str(tree)
    return env


def run_once(target: Path, fmt: str, tree: Path | None = None) -> tuple[float, float, int, bytes]:
    cmd = [sys.executable, "-m", "ncclscope", "analyze", str(target.resolve()), "--format", fmt, "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, env=_env(tree), cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        print(proc.stderr.decode(errors="replace"), file=sys.stderr)
    return wall, cpu, proc.returncode, proc.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--coll", type=int, default=20000)
    ap.add_argument("--combined", action="store_true", help="one interleaved file instead of one per rank")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--format", default="json", choices=("json", "text"))
    ap.add_argument("--baseline", help="another source tree (e.g. a git worktree) to run alternately for an A/B")
    args = ap.parse_args(argv)
    target = ensure_logs(args.ranks, args.coll, args.combined)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline:
        trees.insert(0, (f"baseline {args.baseline}", Path(args.baseline).resolve()))
    mb = size / 1e6
    walls: dict[str, list[float]] = {name: [] for name, _ in trees}
    outputs: dict[str, bytes] = {}
    for _, tree in trees:
        run_once(target, args.format, tree)  # warm-up: bytecode and page caches
    for i in range(args.repeat):
        for name, tree in trees:  # alternating, so that both see the same load
            wall, cpu, rc, out = run_once(target, args.format, tree)
            walls[name].append(wall)
            outputs[name] = out
            print(f"run {i + 1} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, exit {rc}, "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    for name, w in walls.items():
        best, med = min(w), statistics.median(w)
        print(f"{name}: {mb:.1f} MB ({args.ranks} ranks x {args.coll} COLL lines) on {cores} core(s): "
              f"{mb / best:.1f} MB/s (best wall {best:.2f} s), median {mb / med:.1f} MB/s ({med:.2f} s)")
    print(f"peak RSS of a run {rss:.0f} MiB")
    if args.baseline:
        print("same output:", len(set(outputs.values())) == 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
