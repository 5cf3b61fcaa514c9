"""Fuzz runner: mutated logs, traces, dumps and command lines through the library and the CLI.

    python -m tests.fuzz.run --n 100000 --workers 2        # the long run (README.md here)
    python -m tests.fuzz.run --n 2000 --seed 7             # a quick one

An input fails when an exception other than `NcclscopeError` leaves `session.analyze`, when the CLI
exits with a code outside 0/1/2 (3 is a bug, by definition) or prints a traceback, or when a raw ESC
or C1 byte reaches its stdout/stderr. The differential check reads a valid log alone and with junk
lines around it: every line of the valid log recognised alone must still be recognised.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import mutate as M

_RAW_CONTROL = re.compile("[\x1b\x80-\x9f]")
KINDS = ("logs", "traces", "dumps", "mixed", "cli", "differential")


@dataclass
class Result:
    inputs: Counter[str] = field(default_factory=Counter)
    exit_codes: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # one line each: kind, seed, what escaped

    def merge(self, other: Result) -> None:
        self.inputs.update(other.inputs)
        self.exit_codes.update(other.exit_codes)
        self.failures += other.failures


def _write(d: Path, name: str, data: bytes) -> str:
    p = d / name
    p.write_bytes(data)
    return str(p)


def _analyze(paths: list[str], res: Result, what: str, trace_paths: tuple[str, ...] = ()) -> None:
    """The library on these inputs; an escape is retried per input to name the culprit."""
    from ncclscope.errors import NcclscopeError
    from ncclscope.session import analyze

    try:
        analyze(paths, trace_paths=trace_paths)
    except NcclscopeError:
        pass
    except Exception as e:  # noqa: BLE001 - what the fuzzer is looking for
        frame = traceback.extract_tb(e.__traceback__)[-1]
        res.failures.append(
            f"{what}: {type(e).__name__}: {str(e)[:160]!r} at {frame.filename}:{frame.lineno}"
        )


def _cli(argv: list[str], res: Result, what: str, stdin: bytes = b"") -> None:
    from ncclscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    fake_stdin = io.TextIOWrapper(io.BytesIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        real, sys.stdin = sys.stdin, fake_stdin
        try:
            rc = main(argv)
        except BaseException as e:  # noqa: BLE001 - main() must never raise
            rc = -1
            err.write(f"Traceback: {type(e).__name__}: {e}")
        finally:
            sys.stdin = real
    res.exit_codes[rc] += 1
    text = out.getvalue() + err.getvalue()
    # (log evidence may quote a Python traceback: only one of ours starts a line of stderr)
    if rc not in (0, 1, 2) or re.search(
        r"^Traceback \(most recent call last\)", err.getvalue(), re.MULTILINE
    ):
        res.failures.append(f"{what}: exit {rc}: {err.getvalue().strip()[-300:]!r} argv={argv!r}")
    elif _RAW_CONTROL.search(text):
        res.failures.append(f"{what}: raw ESC/C1 on stdout/stderr argv={argv!r}")


def _batch(kind: str, r: random.Random, d: Path, res: Result, what: str, scale: int = 1) -> None:
    """One batch of `kind`; `scale` multiplies the files of a library batch (its cost is mostly per call)."""
    if kind == "logs":
        paths = []
        for i in range(8 * scale):
            data, suffix = M.wrap(M.log_input(r), r)
            paths.append(_write(d, f"rank{i}.log{suffix}", data))
        res.inputs["logs"] += len(paths)
        _analyze(paths, res, what)
        if r.random() < 0.1:
            _cli(["analyze", *paths, "-q"], res, what + " (cli)")
    elif kind == "traces":
        paths = []
        for i in range(3 * scale):
            data, suffix = M.wrap(M.trace_input(r, i), r)
            paths.append(_write(d, f"rank{i}.json{suffix}", data))
        res.inputs["traces"] += len(paths)
        _analyze([], res, what, trace_paths=tuple(paths))
    elif kind == "dumps":
        paths = [_write(d, f"nccl_trace_rank_{i}", M.dump_input(r)) for i in range(4 * scale)]
        res.inputs["dumps"] += len(paths)
        _analyze(paths, res, what)
    elif kind == "mixed":  # logs, a trace and dumps of one job together: cross-input stages
        paths = [
            _write(d, "rank0.log", M.log_input(r)),
            _write(d, "nccl_trace_rank_0", M.dump_input(r)),
            _write(d, "nccl_trace_rank_1", M.dump_input(r)),
            _write(d, "rank0.json", M.trace_input(r, 0)),
        ]
        res.inputs["mixed"] += len(paths)
        _cli(["analyze", *paths, "-q", "--format", r.choice(["json", "text"])], res, what)
    elif kind == "cli":
        pool = [
            _write(d, "rank0.log", M.log_input(r)),
            _write(d, "rank1.json", M.trace_input(r, 1)),
            _write(d, "nccl_trace_rank_2", M.dump_input(r)),
            "-",
            str(d / "missing.log"),
        ]
        res.inputs["cli"] += 1
        _cli(M.argv_input(r, pool), res, what, stdin=M.log_input(r))
    else:
        _differential(r, d, res, what)


def _differential(r: random.Random, d: Path, res: Result, what: str) -> None:
    """Junk before and after a valid log must not make any of its recognised lines unknown."""
    from ncclscope.errors import NcclscopeError
    from ncclscope.parse import read_logs

    valid = M.seeds().logs[r.randrange(len(M.seeds().logs))]
    start = r.randrange(max(1, len(valid) - M.MAX_LOG_LINES))
    lines = valid[start : start + M.MAX_LOG_LINES]
    junk_lines = [
        M.mutate_bytes(r.choice(M.HOSTILE_LINES).encode(), r).replace(b"\n", b" ") for _ in range(3)
    ]
    junk = b"\n".join(j for j in junk_lines if j.strip()) + b"\n\n"
    body = ("\n".join(lines) + "\n").encode()
    before = junk if r.random() < 0.5 else b""
    res.inputs["differential"] += 1
    try:
        alone = read_logs([_write(d, "alone.log", body)])
        mixed = read_logs([_write(d, "mixed.log", before + body + b"\n" + junk)])
    except NcclscopeError:
        return
    except Exception as e:  # noqa: BLE001
        res.failures.append(f"{what}: {type(e).__name__}: {str(e)[:160]!r}")
        return
    shift = before.count(b"\n")
    known_alone = set(range(1, len(lines) + 1)) - set(alone.unknown["line"].to_list())
    unknown_mixed = {n - shift for n in mixed.unknown["line"].to_list()}
    lost = sorted(known_alone & unknown_mixed)
    if lost:
        res.failures.append(
            f"{what}: differential: line(s) {lost[:5]} of the valid log recognised alone, "
            "unknown with junk around it"
        )


def run(
    n: int,
    seed: int,
    kinds: tuple[str, ...] = KINDS,
    progress: Callable[[str], None] | None = None,
    deadline: float | None = None,
    scale: int = 1,
) -> Result:
    """About `n` inputs, batch after batch (each batch's random generator seeded by (seed, index))."""
    import warnings

    warnings.simplefilter("ignore")  # Polars' UserWarnings on odd values are not what is tested here
    res = Result()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="ncclscope-fuzz-") as tmp:
        os.chdir(tmp)  # `report -o r.txt` and other relative paths land here
        try:
            i = 0
            while sum(res.inputs.values()) < n and (deadline is None or time.monotonic() < deadline):
                r = random.Random(f"{seed}:{i}")
                kind = kinds[i % len(kinds)]
                d = Path(tmp) / f"b{i % 4}"
                d.mkdir(exist_ok=True)
                for f in d.iterdir():
                    f.unlink()
                if os.environ.get("NCCLSCOPE_FUZZ_LOG"):  # which batch was running when a process died
                    print(f"batch {kind} seed={seed}:{i}", file=sys.stderr, flush=True)
                _batch(kind, r, d, res, f"{kind} seed={seed}:{i}", scale)
                i += 1
                if progress and i % 200 == 0:
                    progress(f"{sum(res.inputs.values())} inputs, {len(res.failures)} failures")
        finally:
            os.chdir(cwd)
    return res


def _worker(args: tuple[int, int, tuple[str, ...], int]) -> Result:
    n, seed, kinds, scale = args
    return run(n, seed, kinds, scale=scale)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="inputs in all (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, help="processes, each with its own seeds")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, cycled batch by batch")
    ap.add_argument(
        "--scale", type=int, default=1, help="files per library batch times this (8 logs, 3 traces, 4 dumps)"
    )
    ap.add_argument(
        "--max-memory-gb",
        type=float,
        default=6.0,
        help="address-space cap per process: an input that asks for more is a MemoryError (a failure)",
    )
    ap.add_argument(
        "--minutes", type=float, default=None, help="stop after this long (and report) even before --n"
    )
    a = ap.parse_args(argv)
    deadline = time.monotonic() + a.minutes * 60 if a.minutes else None
    import resource

    cap = int(a.max_memory_gb * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    kinds = tuple(a.kinds.split(","))
    t0 = time.monotonic()
    if a.workers > 1:
        from multiprocessing import Pool

        with Pool(a.workers) as pool:
            parts = pool.map(
                _worker, [(a.n // a.workers, a.seed * 1000 + w, kinds, a.scale) for w in range(a.workers)]
            )
        res = Result()
        for p in parts:
            res.merge(p)
    else:
        res = run(
            a.n,
            a.seed,
            kinds,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
            scale=a.scale,
            deadline=deadline,
        )
    total = sum(res.inputs.values())
    outside = sum(v for k, v in res.exit_codes.items() if k not in (0, 1, 2))
    print(
        f"inputs: {total} ({', '.join(f'{k} {v}' for k, v in sorted(res.inputs.items()))}) "
        f"in {time.monotonic() - t0:.0f} s"
    )
    print(f"CLI exit codes: {dict(sorted(res.exit_codes.items()))}; outside 0/1/2: {outside}")
    print(f"failures (tracebacks, bad exit codes, raw control bytes, differential): {len(res.failures)}")
    kinds_of = Counter(re.sub(r"seed=\S+|/tmp/\S+|\d{6,}", "_", f)[:120] for f in res.failures)
    for sig, count in kinds_of.most_common(20):  # one line per kind of failure
        print(f"  {count} x {sig}")
    for f in res.failures[:20]:
        print("  " + f[:600])
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
