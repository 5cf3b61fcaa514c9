"""Peak memory of `ncclscope analyze` on hostile and huge inputs (issue 12), each run in its own process.

Builds, under --out: a 4 MB `.log.gz` that expands to 4 GiB, a 3 MB `.json.gz` trace that expands to
3 GiB, the 9-byte pickle that asks for a memo of 2^28 slots, and (with --big-log) a 2 GB plain log of
real NCCL line shapes. Runs `python -m ncclscope analyze` on each under /usr/bin/time -v (peak RSS
from getrusage otherwise) and prints exit code, wall time, peak RSS and the first message. The bombs
must stay under 1 GiB and say which cap stopped them.

    python bench/bench_hostile.py --out /tmp/hostile            # the three bombs
    python bench/bench_hostile.py --out /tmp/hostile --big-log  # and the 2 GB log (~2 GB of disk)
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

LINE = (
    b"node-00:4242:4250 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f00 recvbuff 0x7f00 count 1 datatype 7 "
    b"op 0 root 0 comm 0x55 [nranks=8] stream 0x5\n"
)
EVENT = b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0},'


def _gzip_repeated(path: Path, head: bytes, unit: bytes, total: int, tail: bytes) -> None:
    """`head`, then `unit` repeated up to `total` bytes, then `tail`, gzipped at level 9, streamed."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = unit * max(1, (1 << 20) // len(unit))
    with path.open("wb") as fh:
        fh.write(z.compress(head))
        for _ in range(total // len(block)):
            fh.write(z.compress(block))
        fh.write(z.compress(tail))
        fh.write(z.flush())


def build(out: Path, big_log: bool) -> list[tuple[str, Path]]:
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    bomb = out / "bomb.log.gz"
    if not bomb.exists():
        _gzip_repeated(bomb, b"", LINE, 4 << 30, b"")
    cases.append(("4 GiB log bomb (.log.gz)", bomb))
    tbomb = out / "bomb_rank0.json.gz"
    if not tbomb.exists():
        _gzip_repeated(
            tbomb, b'{"traceEvents": [', EVENT, 3 << 30, EVENT[:-1] + b'], "distributedInfo": {"rank": 0}}'
        )
    cases.append(("3 GiB trace bomb (.json.gz)", tbomb))
    memo = out / "memo" / "nccl_trace_rank_0"
    memo.parent.mkdir(exist_ok=True)
    memo.write_bytes(b"\x80\x02Nr\xff\xff\xff\x0f.")  # LONG_BINPUT 268435455: a memo of 2^28 slots (4 GiB)
    cases.append(("9-byte memo pickle", memo.parent))
    if big_log:
        big = out / "big.log"
        if not big.exists() or big.stat().st_size < 2_000_000_000:
            _real_lines_log(big, 2_000_000_000)
        cases.append(("2 GB plain log", big))
    return cases


def _real_lines_log(path: Path, size: int) -> None:
    """A log of 8 ranks' init lines and then COLL lines with growing opCounts, `size` bytes."""
    samples = Path(__file__).resolve().parents[1] / "samples" / "logs"
    init = (samples / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log").read_bytes()
    with path.open("wb") as fh:
        fh.write(init)
        written, op = len(init), 0
        while written < size:
            chunk = b"".join(
                b"node-%02d:%d:%d [%d] NCCL INFO AllReduce: opCount %x sendbuff 0x7f%06x recvbuff "
                b"0x7f%06x count %d datatype 7 op 0 root 0 comm 0x55%04x [nranks=16] stream 0x5\n"
                % (r // 8, 4000 + r, 4100 + r, r % 8, op + k, k, k, 1 << (k % 20), r)
                for k in range(256)
                for r in range(16)
            )
            fh.write(chunk)
            written += len(chunk)
            op += 256


def measure(path: Path) -> tuple[int, float, float, str]:
    """(exit code, wall s, peak RSS MiB, first line of stderr) of `analyze path` in a fresh process."""
    cmd = [sys.executable, "-m", "ncclscope", "analyze", str(path), "-q", "--format", "json"]
    timer = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
    t0 = time.monotonic()
    p = subprocess.run(timer + cmd, check=False, capture_output=True, text=True, errors="replace")
    wall = time.monotonic() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    rss = int(m.group(1)) / 1024 if m else resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    said = next((ln for ln in p.stderr.splitlines() if ln.startswith(("warning:", "ncclscope"))), "")
    return p.returncode, wall, rss, said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("bench/out/hostile"))
    ap.add_argument("--big-log", action="store_true", help="also the 2 GB plain log")
    a = ap.parse_args()
    worst = 0.0
    for name, path in build(a.out, a.big_log):
        size = sum(f.stat().st_size for f in ([path] if path.is_file() else path.iterdir()))
        rc, wall, rss, said = measure(path)
        print(
            f"{name}: {size:,} bytes on disk -> exit {rc}, {wall:.1f} s, peak RSS {rss:.0f} MiB\n    {said[:300]}"
        )
        if "bomb" in name or "memo" in name:
            worst = max(worst, rss)
    print(f"largest peak RSS among the bombs: {worst:.0f} MiB (limit 1024)")
    return 0 if worst < 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
