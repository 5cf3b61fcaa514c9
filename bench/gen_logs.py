"""Generate realistic multi-rank NCCL_DEBUG=INFO logs (NCCL 2.21 shapes) for benchmarks and hang tests.

Each rank prints its init sequence (banner, bootstrap, IB devices, ring order on rank 0, trees,
connections, Init COMPLETE) and then COLL lines in the real format
`host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a sendbuff 0x… recvbuff 0x… count N datatype 7 op 0 root 0
comm 0x… [nranks=64] stream 0x…`. One file per rank (`nccl.<host>.<pid>.log`, as NCCL_DEBUG_FILE=%h.%p
would name it) or one interleaved file (`--combined`). `--stall RANK:OPCOUNT` makes a rank stop after
that op count (a hang); `--torch` appends PyTorch watchdog lines for stalled jobs.

`--buffers` picks how send/recv buffers vary, as real jobs use them (the size and op of opCount k are the
same on every rank, so no collective mismatches): `rank` one buffer per rank; `pool` a caching allocator's
pool (FSDP/ZeRO): each line takes one of 64 buffers per rank and one of 24 sizes; `line` a new buffer on
every line. `--rccl` ends each COLL line as RCCL prints it (` task 0 globalrank R` after the stream);
`--stamps` puts a timestamp in front of every line, as `kubectl logs --timestamps` does.

    python bench/gen_logs.py --ranks 64 --coll 20000 --out bench/out/r64
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Iterator
from pathlib import Path

OPS = ("AllReduce", "AllReduce", "AllReduce", "AllGather", "ReduceScatter", "Broadcast")


class Rank:
    def __init__(self, rank: int, nranks: int, gpn: int, rng: random.Random) -> None:
        self.rank, self.nranks = rank, nranks
        self.node, self.dev = divmod(rank, gpn)
        self.host = f"node-{self.node:03d}"
        self.pid = 100000 + rank * 17
        self.tid_main = self.pid
        self.tid_init = self.pid + 160
        self.comm = f"0x55{rng.getrandbits(40):010x}"
        self.stream = f"0x55{rng.getrandbits(40):010x}"
        self.buf = f"0x7f{rng.getrandbits(40):010x}"
        self.pool = [f"0x7f{rng.getrandbits(40):010x}" for _ in range(64)]
        self.rng = random.Random(rng.getrandbits(32))  # per rank: buffers differ across ranks
        self.ip = f"10.1.{self.node // 250}.{self.node % 250 + 1}"

    def p(self, tid: int | None = None) -> str:
        return f"{self.host}:{self.pid}:{tid or self.tid_main} [{self.dev}] NCCL INFO "


def init_lines(r: Rank, gpn: int, comm_id: str, nchannels: int = 2) -> Iterator[str]:
    p, pi = r.p(), r.p(r.tid_init)
    if r.rank == 0:
        yield "NCCL version 2.21.5+cuda12.4"
    yield p + "cudaDriverVersion 12040"
    yield p + f"Bootstrap : Using ib0:{r.ip}<0>"
    yield p + "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."
    yield pi + f"NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:{r.ip}<0>"
    yield pi + "Using network IB"
    yield pi + (
        f"ncclCommInitRank comm {r.comm} rank {r.rank} nranks {r.nranks} cudaDev {r.dev} "
        f"nvmlDev {r.dev} busId {0x1B000 + r.dev * 0x1000:x} commId {comm_id} - Init START"
    )
    yield pi + f"Setting affinity for GPU {r.dev} to ffff,ffffffff"
    nnodes = max(1, r.nranks // gpn)
    yield pi + (
        f"comm {r.comm} rank {r.rank} nRanks {r.nranks} nNodes {nnodes} localRanks {min(gpn, r.nranks)} "
        f"localRank {r.dev} MNNVL 0"
    )
    if r.rank == 0:
        width = len(str(r.nranks - 1))
        shown = " ".join(f"{i:>{width}}" for i in range(min(r.nranks, 20)))
        for c in range(nchannels):
            yield pi + f"Channel {c:02d}/{nchannels:02d} : {shown}" + (" ..." if r.nranks > 20 else "")
    prev, nxt = (r.rank - 1) % r.nranks, (r.rank + 1) % r.nranks
    for c in range(nchannels):
        yield pi + f"Ring {c:02d} : {prev} -> {r.rank} -> {nxt}"
    yield pi + "Trees" + "".join(f" [{c}] {nxt}/-1/-1->{r.rank}->{prev}" for c in range(nchannels))
    yield pi + "P2P Chunksize set to 131072"
    # NET only between nodes: a rank receives over IB only from a previous rank on another node.
    for c in range(nchannels):
        if prev // gpn != r.node:
            yield (
                pi
                + f"Channel {c:02d}/0 : {prev}[{prev % gpn}] -> {r.rank}[{r.dev}] [receive] via NET/IB/{c % 2}/GDRDMA"
            )
        if nxt // gpn == r.node:
            yield pi + f"Channel {c:02d}/0 : {r.rank}[{r.dev}] -> {nxt}[{nxt % gpn}] via P2P/CUMEM/read"
        else:
            yield (
                pi
                + f"Channel {c:02d}/0 : {r.rank}[{r.dev}] -> {nxt}[{nxt % gpn}] [send] via NET/IB/{c % 2}/GDRDMA"
            )
    yield pi + "Connected all rings, use ring PXN 0 GDR 1"
    yield pi + "Connected all trees"
    yield pi + "threadThresholds 8/8/64 | 512/8/64 | 512 | 512"
    yield (
        pi
        + f"{nchannels} coll channels, 0 collnet channels, 0 nvls channels, {nchannels} p2p channels, 2 p2p channels per peer"
    )
    yield pi + (
        f"ncclCommInitRank comm {r.comm} rank {r.rank} nranks {r.nranks} cudaDev {r.dev} nvmlDev {r.dev} "
        f"busId {0x1B000 + r.dev * 0x1000:x} commId {comm_id} - Init COMPLETE"
    )


BUFFERS = ("rank", "pool", "line")
SIZES = tuple(
    (1 << (8 + i // 2)) * (3 if i % 2 else 2) for i in range(24)
)  # 24 sizes, 512 B .. 12 MiB elements


def _size(op_count: int, buffers: str) -> int:
    if buffers == "pool":  # the k-th collective has the same size on every rank
        return SIZES[(op_count * 2654435761) % 4294967296 % len(SIZES)]
    return 1 << (10 + op_count % 12)


def _buffers(r: Rank, buffers: str) -> tuple[str, str]:
    if buffers == "pool":
        return r.pool[r.rng.randrange(64)], r.pool[r.rng.randrange(64)]
    if buffers == "line":
        return f"0x7f{r.rng.getrandbits(40):010x}", f"0x7f{r.rng.getrandbits(40):010x}"
    return r.buf, r.buf


def coll_line(r: Rank, op_count: int, rng: random.Random, buffers: str = "rank", rccl: bool = False) -> str:
    op = OPS[op_count % len(OPS)]
    send, recv = _buffers(r, buffers)
    return (
        r.p()
        + f"{op}: opCount {op_count:x} sendbuff {send} recvbuff {recv} count {_size(op_count, buffers)} "
        f"datatype 7 op 0 root 0 comm {r.comm} [nranks={r.nranks}] stream {r.stream}"
        + (f" task 0 globalrank {r.rank}" if rccl else "")
    )


def torch_timeout(r: Rank, seq: int) -> str:
    return (
        f"[rank{r.rank}]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:632] [Rank {r.rank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, "
        f"NumelOut=1048576, Timeout(ms)=600000) ran for 600065 milliseconds before timing out."
    )


def rank_lines(
    r: Rank, args: argparse.Namespace, comm_id: str, stalls: dict[int, int], rng: random.Random
) -> Iterator[str]:
    lines = _rank_lines(r, args, comm_id, stalls, rng)
    if not getattr(args, "stamps", False):
        yield from lines
        return
    t0 = 1_795_000_000_000_000 + r.rank  # µs: a stamp per line, ~250 µs apart, as a log collector adds
    for k, line in enumerate(lines):
        yield time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((t0 + 250 * k) // 10**6)) + (
            f".{(t0 + 250 * k) % 10**6:06}{rng.randrange(1000):03}Z {line}"
        )


def _rank_lines(
    r: Rank, args: argparse.Namespace, comm_id: str, stalls: dict[int, int], rng: random.Random
) -> Iterator[str]:
    yield from init_lines(r, args.gpus_per_node, comm_id)
    last = stalls.get(r.rank, args.coll)
    for k in range(min(last, args.coll)):
        yield coll_line(r, k, rng, args.buffers, getattr(args, "rccl", False))
    if stalls and args.torch:
        yield torch_timeout(r, min(stalls.values()) + 1)


def generate(args: argparse.Namespace) -> list[Path]:
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stalls = {int(a): int(b) for a, b in (s.split(":") for s in args.stall)}
    comm_id = f"0x{rng.getrandbits(64):016x}"
    ranks = [Rank(i, args.ranks, args.gpus_per_node, rng) for i in range(args.ranks)]
    if args.combined:
        path = out / "combined.log"
        gens = [rank_lines(r, args, comm_id, stalls, rng) for r in ranks]
        with path.open("w") as fh:
            while gens:
                alive = []
                for g in gens:  # round-robin in blocks, like interleaved stdout of many processes
                    block = [ln for _, ln in zip(range(8), g, strict=False)]
                    if block:
                        fh.write("\n".join(block) + "\n")
                        alive.append(g)
                gens = alive
        return [path]
    paths = []
    for r in ranks:
        path = out / f"nccl.{r.host}.{r.pid}.log"
        with path.open("w") as fh:
            fh.write("\n".join(rank_lines(r, args, comm_id, stalls, rng)) + "\n")
        paths.append(path)
    return paths


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--coll", type=int, default=20000, help="COLL lines per rank")
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--out", default="bench/out/logs")
    ap.add_argument("--combined", action="store_true", help="one interleaved file instead of one per rank")
    ap.add_argument(
        "--stall",
        action="append",
        default=[],
        metavar="RANK:OPCOUNT",
        help="rank stops after OPCOUNT collectives (repeatable)",
    )
    ap.add_argument("--torch", action="store_true", help="append watchdog timeout lines when stalled")
    ap.add_argument(
        "--buffers", choices=BUFFERS, default="rank", help="how send/recv buffers vary (see above)"
    )
    ap.add_argument(
        "--rccl",
        action="store_true",
        help="COLL lines as RCCL prints them: ` task 0 globalrank R` after the stream pointer (RCCL docs)",
    )
    ap.add_argument(
        "--stamps",
        action="store_true",
        help="a timestamp in front of every line, as `kubectl logs --timestamps` writes it (RFC 3339, ns)",
    )
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    paths = generate(args)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} file(s), {size / 1e6:.1f} MB to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
