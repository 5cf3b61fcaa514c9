"""Generate an application-heavy training log as `srun -l` writes it: one file, every line rank-tagged.

Real training logs are mostly the application's own output. Each rank's lines carry Slurm's `N: ` tag
(right-aligned to the widest rank, as `srun -l` pads it); the body is MLPerf `:::MLLOG` JSON events,
Python warnings (with their `warnings.warn(` source line), tqdm progress bars (several `\\r` updates
on one line, as a terminal-less tqdm leaves them), throughput prints and the occasional handled
exception with its traceback. NCCL prints only its init sequence per rank (bench/gen_logs.py's
NCCL 2.21 shapes, ~0.1% of the lines) and, at a few random points, an InfiniBand completion error
WARN that the analysis must still find (`IB_WARN_RANKS`).

    python bench/gen_mixed.py --size 500M --out bench/out/mixed_500M/train.log
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import gen_logs as G  # bench/ is not a package; run from bench/ or with bench/ on sys.path

IB_WARN_RANKS = (5, 23, 41)  # ranks that print `NET/IB : Got completion from peer … with status=12`


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def _ib_warn(r: G.Rank, peer: G.Rank) -> str:
    return (
        f"{r.host}:{r.pid}:{r.pid + 203} [{r.dev}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
        f"from peer {peer.ip}<44312> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
        f"::ffff:{r.ip} remoteGids::ffff:{peer.ip} hca mlx5_0"
    )


class App:
    """Per-rank application output of one training step, with a little variation per line."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t_ms = 1_700_000_000_000

    def mllog(self, key: str, value: str, step: int) -> str:
        self.t_ms += self.rng.randrange(1, 40)
        return (
            f':::MLLOG {{"namespace": "", "time_ms": {self.t_ms}, "event_type": "POINT_IN_TIME", "key": "{key}", '
            f'"value": {value}, "metadata": {{"file": "/workspace/llama2/train.py", "lineno": {400 + step % 97}, '
            f'"epoch_num": {step // 1000}, "step": {step}}}}}'
        )

    def tqdm(self, step: int, total: int) -> str:
        parts = []
        for k in range(self.rng.randrange(2, 6)):
            i = min(total, step + k)
            pct = 100 * i // total
            bar = "█" * (pct // 10) + " " * (10 - pct // 10)
            parts.append(
                f"Epoch {step // total}: {pct:3d}%|{bar}| {i}/{total} [{i // 60:02d}:{i % 60:02d}<"
                f"{(total - i) // 60:02d}:{(total - i) % 60:02d}, {self.rng.uniform(4, 7):.2f}it/s, "
                f"loss={self.rng.uniform(1.5, 3):.3f}, lr={self.rng.uniform(1e-5, 1e-4):.2e}]"
            )
        return "\r".join(parts)

    def step_lines(self, step: int) -> list[str]:
        r = self.rng
        out = [
            self.mllog("train_loss", f"{r.uniform(1.5, 3.0):.6f}", step),
            self.mllog("throughput", f"{r.uniform(900, 1100):.2f}", step),
            (
                f"step {step}: loss {r.uniform(1.5, 3.0):.4f} grad_norm {r.uniform(0.1, 2):.4f} "
                f"tokens/s {r.randrange(90000, 110000)} mem_alloc {r.uniform(30, 70):.1f}GiB"
            ),
            self.tqdm(step % 1000, 1000),
        ]
        if step % 7 == 0:
            out += [
                (
                    "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: "
                    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 "
                    "we will raise an exception if use_reentrant is not passed."
                ),
                "  warnings.warn(",
            ]
        if step % 211 == 0:
            out += [
                "Traceback (most recent call last):",
                (
                    '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/worker.py", line 308, '
                    "in _worker_loop"
                ),
                "    data = fetcher.fetch(index)",
                '  File "/workspace/llama2/data.py", line 88, in __getitem__',
                "    raise ValueError(f'bad sample {idx}')",
                f"ValueError: bad sample {r.randrange(10**6)} (skipped, retrying with the next index)",
            ]
        return out


def generate(out: Path, size: int, ranks: int, seed: int = 0) -> tuple[int, int]:
    """Write the log; return (bytes, NCCL lines)."""
    rng = random.Random(seed)
    comm_id = f"0x{rng.getrandbits(64):016x}"
    rs = [G.Rank(i, ranks, 8, rng) for i in range(ranks)]
    width = len(str(ranks - 1))
    tags = [f"{i:>{width}}: " for i in range(ranks)]
    out.parent.mkdir(parents=True, exist_ok=True)
    app = App(rng)
    nccl = 0
    with out.open("w", encoding="utf-8") as fh:
        fh.write("+ srun -l --mpi=pmix --ntasks-per-node=8 ./run_and_time.sh\n")
        for r in rs:
            init = list(G.init_lines(r, 8, comm_id))
            fh.write("".join(tags[r.rank] + ln + "\n" for ln in init))
            nccl += len(init)
        # a few IB WARNs at random points in the body (found by the `ib-error` rule)
        warn_at = sorted(int(size * rng.uniform(0.05, 0.95)) for _ in IB_WARN_RANKS)  # byte offsets
        step, written = 0, fh.tell()
        while written < size:
            block = []
            for r in range(
                0, ranks, max(1, ranks // 8)
            ):  # a few ranks print per step, as rank-0-only logging leaves it
                block += [tags[r] + ln for ln in app.step_lines(step)]
            if warn_at and written >= warn_at[0]:
                warn_at.pop(0)
                rank = IB_WARN_RANKS[len(IB_WARN_RANKS) - len(warn_at) - 1]
                block.append(tags[rank] + _ib_warn(rs[rank], rs[(rank + 8) % ranks]))
                nccl += 1
            text = "\n".join(block) + "\n"
            fh.write(text)
            written += len(text.encode())
            step += 1
        fh.write(
            "".join(
                tags[r.rank] + r.p() + f"comm {r.comm} rank {r.rank} nranks {r.nranks} cudaDev {r.dev} "
                f"busId {0x1B000 + r.dev * 0x1000:x} - Destroy COMPLETE\n"
                for r in rs
            )
        )
        nccl += ranks
        return fh.tell(), nccl


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="500M", help="bytes to write at least (K/M/G suffixes)")
    ap.add_argument("--ranks", type=int, default=128)
    ap.add_argument("--out", default="bench/out/mixed/train.log")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    size, nccl = generate(Path(args.out), _size(args.size), args.ranks, args.seed)
    print(f"wrote {size / 1e6:.1f} MB to {args.out}, {nccl} NCCL lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
