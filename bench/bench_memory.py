"""Peak RSS of `ncclscope analyze` against bytes read and lines read, one input shape at a time (issue 30).

Each shape is built at growing sizes under --out and run in its own process (`python -m ncclscope analyze
--format json`); the summed RSS of the process tree is sampled every 20 ms and the run is killed past
--limit (so a regression never takes a shared box down: it reads as `killed`). Prints one table row per
(shape, size): exit code, wall time, peak tree RSS, bytes and lines read, RSS per MB and per million lines.

Shapes (what memory must not grow with):
- `gz_short`: a `.log.gz` of one NCCL line then `x` lines (3 bytes each): lines, not bytes; `.gz` counted
  by what it expands to.
- `stdin_short`: `y` lines (2 bytes each) piped on stdin.
- `one_line`: one line of N bytes.  `mb_lines`: lines of 1 MB (cut when read).  `wide_lines`: lines of 60 KB,
  just under `Tuning.max_line_chars` (kept whole: a batch must be bounded by bytes, not lines).
- `kept`: every line one the reader keeps as evidence (`Xid`, NCCL WARN, `Last error:`, elision markers).
- `long_path`: unknown application lines under a 3.7 KB path (the path must not be copied per row).
- `tiny_files`: N files of a few lines each (N = size / 4 KB).
- `coll_desync`: COLL lines of 8 ranks on one communicator, rank 7 launching another op from half way:
  the hang stage's second look at the lines.

    python bench/bench_memory.py --out /tmp/mem                       # every shape, 16 and 64 MB
    python bench/bench_memory.py --out /tmp/mem --shape kept --mb 16 --mb 256 --limit 4096
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

NCCL = b"node-00:4242:4250 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
KEPT = (
    b"[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n",
    b"node-01:4242:4250 [1] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12\n",
    b"Last error:\n",
    b"...\n",
)
ERR = f"/tmp/bench_memory.{os.getpid()}.err"
APP = b"epoch 3 step 1200 loss 0.4312 lr 0.0001 throughput 1234.5 samples/s\n"


def _coll(rank: int, op_count: int, op: str) -> bytes:
    return (
        f"node-0{rank // 4}:{4000 + rank}:{4100 + rank} [{rank % 4}] NCCL INFO {op}: opCount {op_count:x} "
        f"sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0 comm 0x55{rank} "
        f"[nranks=8] stream 0x5\n"
    ).encode()


def _fill(fh: object, unit: bytes, total: int) -> int:
    """Write `unit` repeated to about `total` bytes; lines written."""
    write = fh.write  # type: ignore[attr-defined]
    block = unit * max(1, (1 << 20) // len(unit))
    per = block.count(b"\n")
    n = 0
    for _ in range(max(1, total // len(block))):
        write(block)
        n += per
    return n


def build(shape: str, size: int, out: Path) -> tuple[list[str], bytes | None, int]:
    """(analyze arguments, stdin bytes or None, lines) of `shape` at `size` bytes (read, not on disk)."""
    d = out / f"{shape}_{size >> 20}M"
    d.mkdir(parents=True, exist_ok=True)
    done = d / ".done"
    lines = int(done.read_text()) if done.exists() else -1
    if shape == "gz_short":
        p = d / "short.log.gz"
        if lines < 0:
            with gzip.open(p, "wb", compresslevel=6) as fh:
                fh.write(NCCL)
                lines = 1 + _fill(fh, b"x\n", size)
        args = [str(p)]
    elif shape == "stdin_short":
        return ["-"], b"y\n" * (size // 2), size // 2
    elif shape in ("one_line", "mb_lines", "wide_lines", "kept", "coll_desync"):
        p = d / "input.log"
        if lines < 0:
            with p.open("wb") as fh:
                fh.write(NCCL)
                if shape == "one_line":
                    _fill(fh, b"a" * (1 << 20), size)  # no line end: one line
                    fh.write(b"\n")
                    lines = 2
                elif shape == "mb_lines":
                    lines = 1 + _fill(fh, b"b" * ((1 << 20) - 1) + b"\n", size)
                elif shape == "wide_lines":
                    lines = 1 + _fill(fh, b"w" * 59_999 + b"\n", size)
                elif shape == "kept":
                    lines = 1 + _fill(fh, b"".join(KEPT), size)
                else:
                    lines = 1 + _write_desync(fh, size)
        args = [str(p)]
    elif shape == "long_path":
        deep = d
        for i in range(14):  # 14 x 253 characters: a 3.7 KB path
            deep = deep / (f"{i:02d}" + "p" * 250)
        deep.mkdir(parents=True, exist_ok=True)
        p = deep / "rank_0.log"
        if lines < 0:
            with p.open("wb") as fh:
                fh.write(NCCL)
                lines = 1 + _fill(fh, APP, size)
        args = [str(p)]
    elif shape == "tiny_files":
        n = max(1, size // 4096)
        if lines < 0:
            body = NCCL + APP * 60  # ~4 KB
            for i in range(n):
                (d / f"rank_{i}.log").write_bytes(body)
            lines = n * 61
        args = [str(d)]
    else:
        raise SystemExit(f"unknown shape {shape}")
    done.write_text(str(lines))
    return args, None, lines


def _init(rank: int) -> bytes:
    return (
        f"node-0{rank // 4}:{4000 + rank}:{4100 + rank} [{rank % 4}] NCCL INFO ncclCommInitRank comm 0x55{rank} "
        f"rank {rank} nranks 8 cudaDev {rank % 4} nvmlDev {rank % 4} busId {rank % 4}f000 commId 0xe5509a - Init COMPLETE\n"
    ).encode()


def _write_desync(fh: object, size: int) -> int:
    """8 ranks' COLL lines interleaved; rank 7 prints ReduceScatter where the others print AllReduce
    from the middle on."""
    write = fh.write  # type: ignore[attr-defined]
    per = len(_coll(0, 0, "AllReduce")) * 8
    ops = max(1, size // per)
    buf: list[bytes] = [_init(r) for r in range(8)]
    n = len(buf)
    for k in range(ops):
        for r in range(8):
            buf.append(_coll(r, k, "ReduceScatter" if r == 7 and k >= ops // 2 else "AllReduce"))
        n += 8
        if len(buf) >= 8192:
            write(b"".join(buf))
            buf = []
    write(b"".join(buf))
    return n


def _tree_rss(pid: int) -> int:
    """Summed RSS (bytes) of `pid` and its descendants."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for ln in fh:
                    if ln.startswith("VmRSS:"):
                        total += int(ln.split()[1]) << 10
                        break
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run(
    args: list[str], stdin: bytes | None, limit: int, timeout: float
) -> tuple[int | str, float, int, str]:
    """(exit code or 'killed', wall s, peak tree RSS bytes, last stderr line)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    cmd = [sys.executable, "-m", "ncclscope", "analyze", "--format", "json", *args]
    t0 = time.perf_counter()
    err = open(ERR, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=err,
        env=env,
    )
    if stdin is not None:
        import threading

        def feed() -> None:
            try:
                assert proc.stdin is not None
                for i in range(0, len(stdin), 1 << 20):
                    proc.stdin.write(stdin[i : i + (1 << 20)])
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

        threading.Thread(target=feed, daemon=True).start()
    peak, killed = 0, False
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid))
        if peak > limit or time.perf_counter() - t0 > timeout:
            killed = True
            proc.kill()
            break
        time.sleep(0.02)
    rc = proc.wait()
    wall = time.perf_counter() - t0
    err.close()
    tail = Path(ERR).read_bytes().decode("utf-8", "replace").strip().splitlines()
    return ("killed" if killed else rc), wall, peak, (tail[-1][:100] if tail else "")


SHAPES: dict[str, Callable[..., object]] = dict.fromkeys(
    (
        "gz_short",
        "stdin_short",
        "one_line",
        "mb_lines",
        "wide_lines",
        "kept",
        "long_path",
        "tiny_files",
        "coll_desync",
    )
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shape", action="append", choices=list(SHAPES))
    ap.add_argument("--mb", action="append", type=int, help="sizes in MB read (default 16 and 64)")
    ap.add_argument("--limit", type=int, default=3072, help="MiB of tree RSS at which a run is killed")
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args()
    print(
        "| shape | MB read | lines | exit | wall s | peak RSS MiB | MiB per 100 MB | MiB per 1M lines | stderr |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for shape in a.shape or list(SHAPES):
        for mb in a.mb or [16, 64]:
            args, stdin, lines = build(shape, mb << 20, a.out)
            rc, wall, peak, tail = run(args, stdin, a.limit << 20, a.timeout)
            rss = peak / (1 << 20)
            print(
                f"| {shape} | {mb} | {lines:,} | {rc} | {wall:.1f} | {rss:.0f} | {rss / mb * 100:.0f} | "
                f"{rss / max(lines, 1) * 1e6:.0f} | {tail.replace('|', '/')} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
