"""Benchmark: ncclscope vs HolisticTraceAnalysis 0.5.0 on the same multi-rank trace set, in one run.

Each tool runs in its own fresh interpreter (imports included, as a user would pay them):
  ncclscope  `python -m ncclscope analyze --trace DIR --format json` (read, align, every rule, render)
  HTA        `TraceAnalysis(trace_dir=DIR)` + `get_comm_comp_overlap(visualize=False)`, from a separate
             venv (bench/.venv-hta: `python3.11 -m venv bench/.venv-hta && bench/.venv-hta/bin/pip install
             HolisticTraceAnalysis==0.5.0`).
Both run with bytecode caching on (PYTHONDONTWRITEBYTECODE dropped, caches under bench/out/pycache)
after one untimed warm-up run each, as an installed package would: otherwise an editable ncclscope
would recompile its ~60 modules on every run while HTA's site-packages already hold their .pyc.
Wall time is measured around the subprocess, CPU time (user+sys) from wait4; memory two ways: the peak of the summed RSS of the whole
process tree (sampled every 5 ms from /proc; HTA parses ranks in a multiprocessing pool) and the
kernel's ru_maxrss from wait4 (largest single process; the generated sets are written by a child
process, since a child's ru_maxrss starts from its parent's peak).

Usage: .venv/bin/python bench/bench_traces.py [--set dlrm|b200|DIR ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HTA_PY = REPO / "bench" / ".venv-hta" / "bin" / "python"
OUT = REPO / "bench" / "out"

HTA_CODE = """
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
df = a.get_comm_comp_overlap(visualize=False)
print(len(df), "ranks", file=sys.stderr)
"""


def _tree_rss_kb(root: int) -> int:
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/status") as fh:
                total += next((int(x.split()[1]) for x in fh if x.startswith("VmRSS:")), 0)
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def run(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall seconds, CPU seconds (user+sys, reaped children included), peak tree RSS and ru_maxrss (MiB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        # Not p.poll(): that would reap the child before wait4 can read its rusage.
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(p.pid))
            time.sleep(0.005)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    p.returncode = os.waitstatus_to_exitcode(status)
    th.join()
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if p.returncode not in (0, 1):  # ncclscope exits 1 when an error finding is reported
        raise SystemExit(f"{cmd[:3]} failed ({p.returncode}):\n{err[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "tree_rss_mib": peak[0] / 1024,
        "maxrss_mib": usage.ru_maxrss / 1024,
    }


def trace_set(name: str, tmp: Path) -> Path:
    """The set's folder; generated sets are written by a child process (see `_write_set`)."""
    if name == "dlrm":
        return REPO / "samples" / "traces" / "param_dlrm_8rank"
    if name in ("b200", "dfindex"):
        subprocess.run([sys.executable, __file__, "--write-set", name, str(tmp)], check=True)
        return tmp / f"{name}_8rank"
    return Path(name)


def _write_set(name: str, tmp: Path) -> None:
    # In a child process: a child's ru_maxrss starts from its parent's peak (Linux carries the
    # high-water mark across vfork + exec), so the bench process must never hold a 54 MB trace.
    if name == "b200":  # 8 × 14 MB: the B200 trace cloned per rank (tests/traces/trace_fixtures.py)
        sys.path.insert(0, str(REPO / "tests" / "traces"))
        import trace_fixtures

        trace_fixtures.write_set(trace_fixtures.b200_set(), tmp / "b200_8rank")
    elif name == "dfindex":  # 8 × 54 MB: a real 2022 trace (216k events) given ranks 0..7, Kineto layout kept
        src = (
            REPO.parent / "shared" / "traces" / "single_rank_nccl" / "hta_df_index_resolver_rank1_of2.json.gz"
        )
        data = gzip.decompress(src.read_bytes())
        folder = tmp / "dfindex_8rank"
        folder.mkdir()
        for r in range(8):
            out = data.replace(b'"rank": 1, "world_size": 2', f'"rank": {r}, "world_size": 8'.encode(), 1)
            (folder / f"rank{r}.json").write_bytes(out)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    return env


def bench(folder: Path, repeat: int) -> dict[str, object]:
    ours = [
        sys.executable,
        "-m",
        "ncclscope",
        "analyze",
        "--trace",
        str(folder),
        "--format",
        "json",
        "--quiet",
    ]
    hta = [str(HTA_PY), "-c", HTA_CODE, str(folder)]
    env = _env()
    run(ours, env)  # warm-up: bytecode caches and the page cache, for both alike
    run(hta, env)
    res: dict[str, list[dict[str, float]]] = {"ncclscope": [], "hta": []}
    for _ in range(repeat):
        res["ncclscope"].append(run(ours, env))
        res["hta"].append(run(hta, env))
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in res.items()}
    raw = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    return {
        "set": str(folder),
        "files": len(list(folder.iterdir())),
        "bytes_on_disk": raw,
        "repeat": repeat,
        "median": med,
        "speedup": med["hta"]["wall_s"] / med["ncclscope"]["wall_s"],
        "cpu_ratio": med["hta"]["cpu_s"] / med["ncclscope"]["cpu_s"],
        "load_avg": os.getloadavg()[0],
        "tree_rss_ratio": med["ncclscope"]["tree_rss_mib"] / med["hta"]["tree_rss_mib"],
        "maxrss_ratio": med["ncclscope"]["maxrss_mib"] / med["hta"]["maxrss_mib"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--set",
        action="append",
        default=None,
        help="dlrm, b200, dfindex (needs ../shared) or a trace directory (repeatable)",
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write-set", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_set:
        _write_set(args.write_set[0], Path(args.write_set[1]))
        return 0
    if not HTA_PY.exists():
        print(
            f"HTA venv missing: python3.11 -m venv bench/.venv-hta && {HTA_PY.parent}/pip install "
            "HolisticTraceAnalysis==0.5.0",
            file=sys.stderr,
        )
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.set or ["dlrm", "b200"]:
            r = bench(trace_set(name, Path(tmp)), args.repeat)
            results.append(r)
            m = r["median"]
            print(
                f"{name}: {r['files']} files, {r['bytes_on_disk'] / 2**20:.1f} MiB | "  # type: ignore[operator]
                f"ncclscope {m['ncclscope']['wall_s']:.2f} s, {m['ncclscope']['tree_rss_mib']:.0f} MiB | "  # type: ignore[index]
                f"HTA {m['hta']['wall_s']:.2f} s, {m['hta']['tree_rss_mib']:.0f} MiB | "  # type: ignore[index]
                f"{r['speedup']:.1f}x faster (CPU time {r['cpu_ratio']:.1f}x), RSS {r['tree_rss_ratio']:.2f}x "
                f"(maxrss {r['maxrss_ratio']:.2f}x), load avg {r['load_avg']:.1f}"
            )
    (OUT / "bench_traces.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
