"""Time `ncclscope analyze` end to end on the logs users have, against a per-line Python regex loop and a baseline.

Inputs (generated once under bench/out/, by child processes):
  rank, pool, line   64 ranks x 20,000 COLL lines (NCCL 2.21), buffers as real jobs use them: one buffer per
                     rank; a caching allocator's pool (64 buffers x 24 sizes per rank); a new buffer every line
  rccl               as `line`, each COLL line ending as RCCL prints it (` task 0 globalrank R` after the stream)
  stamped            as `line`, a timestamp in front of every line as `kubectl logs --timestamps` writes it
  mixed              one application-heavy training log as `srun -l` writes it (>= 500 MB, ~0.1% NCCL lines,
                     MLLOG JSON, warnings, tqdm bars, tracebacks) with three IB completion WARNs that must be found

Each tool runs as a user runs it, a fresh interpreter per run (imports paid; bytecode cached as for an installed
package; one untimed warm-up run each): this tree's CLI, the baseline tree's CLI (`--ab TREE`, e.g. a git worktree
of an older commit) and the loop (`for line in file: COLL.search(line)`: the grammar's prefix and COLL rule with
named fields, compiled once). Runs alternate tool by tool, round by round, so all see the same load: on a shared
box compare ratios from one run. Per input and tool: MB/s of the median wall time of `--repeat` runs, CPU
seconds (user+sys, children included), peak RSS of the process tree (sampled every 10 ms) and the largest single
process (ru_maxrss); RSS also without mapped file pages (RssAnon: a reader that maps a file counts its
pages). `--growth` runs this tree once on mixed logs of 250 MB to 2 GB for the memory curve.

    python bench/bench_analyze.py                                  # all four inputs, this tree vs the loop
    python bench/bench_analyze.py --ab /tmp/perf_base              # and against a baseline tree, interleaved
    python bench/bench_analyze.py --coll 5000 --mixed-size 125M    # a quicker run (~1/4 of the data)
    python bench/bench_analyze.py --only mixed --growth             # RSS from 250 MB to 2 GB
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
IB_WARNS = 3  # gen_mixed.IB_WARN_RANKS

LOOP = r"""
import re, sys, time
sys.path.insert(0, sys.argv[1])
from ncclscope import grammar as G
rx = re.compile(rf"(?:{G.rule_regex('prefix_std')})(?:{G.rule_regex('coll')})")
n = m = 0
for path in sys.argv[2:]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            n += 1
            if rx.search(line):
                m += 1
print(n, m)
"""


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def ensure(kind: str, ranks: int, coll: int, mixed: str) -> Path:
    """The input's folder, generated if missing."""
    if kind == "mixed":
        out = OUT / f"mixed_{mixed}"
        cmd = [sys.executable, str(HERE / "gen_mixed.py"), "--size", mixed, "--out", str(out / "train.log")]
    else:
        out = OUT / f"coll_{kind}_r{ranks}_c{coll}"
        cmd = [
            sys.executable,
            str(HERE / "gen_logs.py"),
            "--ranks",
            str(ranks),
            "--coll",
            str(coll),
            "--buffers",
            "line" if kind in ("rccl", "stamped") else kind,
            *(["--rccl"] if kind == "rccl" else []),
            *(["--stamps"] if kind == "stamped" else []),
            "--out",
            str(out),
        ]
    if not out.is_dir() or not any(out.iterdir()):
        subprocess.run(cmd, check=True, cwd=HERE)  # a child: its memory is not the bench's
    return out


def _tree(root: int) -> list[int]:
    """The process tree under `root` (itself included): the children every thread of each has started."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _rss_kb(pids: list[int]) -> tuple[int, int]:
    """Summed resident memory (kB) of `pids`: VmRSS, and RssAnon (without mapped file pages)."""
    rss = anon = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as fh:
                for x in fh:
                    if x.startswith("VmRSS:"):
                        rss += int(x.split()[1])
                    elif x.startswith("RssAnon:"):
                        anon += int(x.split()[1])
                        break  # RssAnon follows VmRSS
        except (OSError, ValueError):
            continue
    return rss, anon


# RSS is sampled every SAMPLE_S, the process tree walked again every TREE_EVERY samples. The sampler runs
# in this process: 2.8-3.2% of a core so (it took 11.3% walking the tree twice every 5 ms, which a tool busy
# on both cores of a 2-core machine pays in wall time and the one-core regex loop does not).
SAMPLE_S = 0.01
TREE_EVERY = 5


def run(cmd: list[str], env: dict[str, str]) -> dict[str, object]:
    """Wall and CPU seconds (children included), peak tree RSS and ru_maxrss (MiB), stdout."""
    errf = tempfile.TemporaryFile()  # noqa: SIM115 - read after the child ends, closed with the frame
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env, cwd=tempfile.gettempdir())
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:  # not p.poll(): that would reap the child before wait4 reads its rusage
        n, pids = 0, [p.pid]
        while not done.is_set():
            if n % TREE_EVERY == 0:
                pids = _tree(p.pid)
            rss, anon = _rss_kb(pids)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], anon)
            n += 1
            time.sleep(SAMPLE_S)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out = p.stdout.read() if p.stdout else b""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    code = os.waitstatus_to_exitcode(status)
    p.returncode = code
    if code not in (0, 1):  # ncclscope exits 1 when an error finding is reported
        errf.seek(0)
        raise SystemExit(f"{cmd[:4]} failed ({code}):\n{errf.read().decode(errors='replace')[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "tree_rss_mib": peak[0] / 1024,
        "tree_anon_mib": peak[1] / 1024,
        "maxrss_mib": usage.ru_maxrss / 1024,
        "stdout": out,
    }


def _env(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPYCACHEPREFIX"] = str(OUT / ("pycache" if tree is None else f"pycache-{tree.name}"))
    if tree is not None:  # that tree's package first on the path (cwd is outside every tree)
        env["PYTHONPATH"] = str(tree)
    return env


def tools(base: Path | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (argv without the input, env)."""
    # This tree's package by path: the shared venv's installed `ncclscope` may be another checkout's.
    out = {"this": ([sys.executable, "-m", "ncclscope", "analyze"], _env(HERE.parent))}
    if base is not None:
        out["base"] = ([sys.executable, "-m", "ncclscope", "analyze"], _env(base))
    out["loop"] = ([sys.executable, "-c", LOOP, str(HERE.parent)], _env(None))
    return out


def _files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.iterdir() if p.is_file())


def bench_input(kind: str, folder: Path, base: Path | None, repeat: int) -> dict[str, object]:
    files = _files(folder)
    size = sum(Path(f).stat().st_size for f in files)
    runs: dict[str, list[dict[str, object]]] = {}
    ts = tools(base)

    def argv(name: str) -> list[str]:
        cmd, _ = ts[name]
        return cmd + (files if name == "loop" else [str(folder), "--format", "json", "--quiet"])

    for name in ts:  # warm-up: bytecode and page caches
        run(argv(name), ts[name][1])
    for i in range(repeat):
        for name in ts:  # alternating, so that every tool sees the same load
            r = run(argv(name), ts[name][1])
            runs.setdefault(name, []).append(r)
            print(
                f"  {kind} run {i + 1} {name}: {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU, "
                f"tree RSS {r['tree_rss_mib']:.0f} MiB (anonymous {r['tree_anon_mib']:.0f}), "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    res: dict[str, object] = {"input": kind, "mb": size / 1e6, "files": len(files)}
    for name, rs in runs.items():
        wall = statistics.median(float(r["wall_s"]) for r in rs)  # type: ignore[arg-type]
        res[name] = {
            "mb_s": size / 1e6 / wall,
            "wall_s": wall,
            "cpu_s": statistics.median(float(r["cpu_s"]) for r in rs),  # type: ignore[arg-type]
            "tree_rss_mib": max(float(r["tree_rss_mib"]) for r in rs),  # type: ignore[arg-type]
            "tree_anon_mib": max(float(r["tree_anon_mib"]) for r in rs),  # type: ignore[arg-type]
            "maxrss_mib": max(float(r["maxrss_mib"]) for r in rs),
        }  # type: ignore[arg-type]
    if "base" in runs:
        res["same_output"] = runs["base"][-1]["stdout"] == runs["this"][-1]["stdout"]
    if kind == "mixed":
        res["ib_warns_found"] = _ib_cited(runs["this"][-1]["stdout"])  # type: ignore[arg-type]
        assert res["ib_warns_found"] == IB_WARNS, (
            f"the mixed log's IB WARNs were not all found: {res['ib_warns_found']}"
        )
    return res


def _ib_cited(stdout: bytes) -> int:
    doc = json.loads(stdout)
    ib = [f for f in doc["findings"] if f["id"] == "ib-error"]
    return len(
        {(e["path"], e["line"]) for f in ib for e in f["evidence"] if "Got completion from peer" in e["text"]}
    )


def growth(sizes: list[str]) -> list[dict[str, object]]:
    """This tree once on mixed logs of each size: the memory curve."""
    out = []
    cmd, env = tools(None)["this"]
    for s in sizes:
        folder = ensure("mixed", 0, 0, s)
        r = run(cmd + [str(folder), "--format", "json", "--quiet"], env)
        mb = sum(Path(f).stat().st_size for f in _files(folder)) / 1e6
        out.append(
            {
                "size": s,
                "mb": mb,
                "wall_s": r["wall_s"],
                "cpu_s": r["cpu_s"],
                "tree_rss_mib": r["tree_rss_mib"],
                "tree_anon_mib": r["tree_anon_mib"],
                "maxrss_mib": r["maxrss_mib"],
                "ib_warns_found": _ib_cited(r["stdout"]),
            }
        )  # type: ignore[arg-type]
        print(
            f"  growth {s}: {mb:.0f} MB, {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, tree RSS "
            f"{r['tree_rss_mib']:.0f} MiB (anonymous {r['tree_anon_mib']:.0f}), load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return out


def _report(results: list[dict[str, object]]) -> None:
    print("\ninput | MB | tool | MB/s (median wall) | CPU s | tree RSS MiB (anonymous) | maxrss MiB")
    for r in results:
        for name in ("base", "this", "loop"):
            m = r.get(name)
            if isinstance(m, dict):
                print(
                    f"{r['input']} | {r['mb']:.0f} | {name} | {m['mb_s']:.1f} | {m['cpu_s']:.2f} | "
                    f"{m['tree_rss_mib']:.0f} ({m['tree_anon_mib']:.0f}) | {m['maxrss_mib']:.0f}"
                )
        this, loop, base = r["this"], r["loop"], r.get("base")
        line = f"  {r['input']}: this / loop = {this['mb_s'] / loop['mb_s']:.2f}x"  # type: ignore[index]
        if isinstance(base, dict):
            line += (
                f", this / base = {this['mb_s'] / base['mb_s']:.2f}x speed, "  # type: ignore[index]
                f"{this['tree_rss_mib'] / base['tree_rss_mib']:.2f}x RSS, same output: {r['same_output']}"
            )  # type: ignore[index]
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ab", metavar="TREE", help="a baseline source tree (git worktree) run alternately")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--only",
        action="append",
        choices=("rank", "pool", "line", "rccl", "stamped", "mixed"),
        help="inputs (default: all)",
    )
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--coll", type=int, default=20000, help="COLL lines per rank")
    ap.add_argument("--mixed-size", default="500M")
    ap.add_argument(
        "--growth", action="store_true", help="also run mixed logs of 250 MB, 500 MB, 1 GB, 2 GB once"
    )
    args = ap.parse_args(argv)
    base = Path(args.ab).resolve() if args.ab else None
    kinds = args.only or ["rank", "pool", "line", "rccl", "stamped", "mixed"]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} core(s), load {os.getloadavg()[0]:.1f}, repeat {args.repeat}", flush=True)
    results = [
        bench_input(k, ensure(k, args.ranks, args.coll, args.mixed_size), base, args.repeat) for k in kinds
    ]
    _report(results)
    doc: dict[str, object] = {"cores": cores, "results": results}
    if args.growth:
        doc["growth"] = growth(["250M", "500M", "1G", "2G"])
    for r in results:
        for name in ("this", "base", "loop"):
            m = r.get(name)
            if isinstance(m, dict):
                m.pop("stdout", None)
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_analyze.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
