"""Cutting inputs into pieces and reducing them apart, on worker processes or not, gives the one-pass frames."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ncclscope.errors import InputError
from ncclscope.frames import LogFrames
from ncclscope.parse import read_logs
from ncclscope.parse.logs import read
from ncclscope.parse.logs.engine import pieces, spawn
from ncclscope.tuning import Tuning

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"
WHOLE = Tuning(piece_bytes=1 << 30, log_workers=0)


def _inputs(tmp: Path) -> list[str]:
    """Real samples, one of them gzipped, one cut into many pieces by a small piece size."""
    paths = sorted(str(p) for p in SAMPLES.glob("*.log"))[:6]
    gz = tmp / "sample.log.gz"
    gz.write_bytes(gzip.compress(Path(paths[0]).read_bytes()))
    return [*paths, str(gz)]


def _same(a: LogFrames, b: LogFrames) -> None:
    assert a.coverage == b.coverage and a.inputs == b.inputs and a.notes == b.notes
    for name in (*a.table_names(), "streams"):
        assert_frame_equal(getattr(a, name), getattr(b, name))
    assert_frame_equal(a.coll.procs.drop("seq"), b.coll.procs.drop("seq"))


def test_plan_cuts_big_files_at_line_ends_and_groups_small_ones(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text("".join(f"line {i}\n" for i in range(5000)))
    small = [tmp_path / f"s{i}.log" for i in range(3)]
    for p in small:
        p.write_text("x\n")
    plan = pieces.plan([str(small[0]), str(big), str(small[1]), str(small[2])], Tuning(piece_bytes=10_000))
    cuts = [s for p in plan for s in p.segments if s.path == str(big)]
    assert len(cuts) > 3 and all(len(p.segments) == 1 for p in plan if p.segments[0].path == str(big))
    data = big.read_bytes()
    assert cuts[0].start == 0 and cuts[-1].end == len(data)
    assert all(data[s.start - 1 : s.start] == b"\n" for s in cuts[1:])
    assert [s.part for s in cuts] == list(range(len(cuts)))
    assert [s.path for s in plan[-1].segments] == [str(small[1]), str(small[2])]  # small files together


def test_a_step_schedule_shrinks_the_pieces_in_turn(tmp_path: Path) -> None:
    """Steps in turn (the last repeats); equal small files split where a file ends nearest the step."""
    files = []
    for i in range(12):
        files.append(tmp_path / f"r{i:02}.log")
        files[-1].write_bytes(b"x" * 99 + b"\n")  # 100 bytes each
    plan = pieces.plan([str(p) for p in files], Tuning(), [400, 400, 200])
    assert [len(p.segments) for p in plan] == [4, 4, 2, 2]
    big = tmp_path / "big.log"
    big.write_bytes(b"".join(b"y" * 9 + b"\n" for _ in range(100)))  # 1,000 bytes, lines of 10
    plan = pieces.plan([str(big)], Tuning(), [400, 300, 100])
    assert [p.size for p in plan] == [410, 310, 110, 110, 60]  # each cut after the line end past its step
    assert [p.index for p in plan] == list(range(5))


def test_a_round_of_small_pieces_joins_the_round_before() -> None:
    """With workers, one piece per process per round; a later round whose pieces would be smaller than
    `round_min_bytes` (a piece's fixed cost outweighs the balance it buys) is folded into the one before."""
    mib = 1 << 20
    t = Tuning()
    assert read._steps(254 * mib, 1, t) == [127 * mib + 1] * 2  # 2 x 31.75 MiB would be below 64 MiB
    assert read._steps(1024 * mib, 1, t) == [256 * mib] * 2 + [128 * mib + 1] * 2
    assert (
        read._steps(254 * mib, 1, Tuning(round_min_bytes=0))
        == [95 * mib + 1 + mib // 4] * 2 + [31 * mib + 1 + 3 * mib // 4] * 2
    )
    assert read._steps(254 * mib, 0, t) == [t.piece_bytes]


@pytest.mark.parametrize("workers", [0, 1])
def test_pieces_and_workers_give_the_one_pass_frames(tmp_path: Path, workers: int) -> None:
    paths = _inputs(tmp_path)
    cut = Tuning(piece_bytes=2000, log_workers=workers, log_pool_min_bytes=0)
    _same(read_logs(paths, tuning=cut), read_logs(paths, tuning=WHOLE))


def test_a_worker_that_dies_leaves_its_pieces_to_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _inputs(tmp_path)
    monkeypatch.setattr(spawn, "_BOOT", "import sys; sys.stdin.buffer.read(10); sys.exit(3)")
    cut = Tuning(piece_bytes=2000, log_workers=2, log_pool_min_bytes=0)
    _same(read_logs(paths, tuning=cut), read_logs(paths, tuning=WHOLE))


def test_prestarted_workers_are_taken_by_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI starts the workers before its own imports (`spawn.prestart`); the pool takes them first."""
    monkeypatch.setattr(spawn, "_SPARE", [])
    paths = _inputs(tmp_path)
    cut = Tuning(piece_bytes=2000, log_workers=1, log_pool_min_bytes=0)
    assert spawn.prestart(cut, 1) == 1 and spawn.prestart(cut, 1) == 0  # one is enough
    early = spawn._SPARE[0]
    started: list[int] = []
    real = spawn.start
    monkeypatch.setattr(spawn, "start", lambda *a: started.append(1) or real(*a))
    got = read_logs(paths, tuning=cut)
    assert not spawn._SPARE and not started  # the prestarted worker was taken, none other started
    assert early.wait(timeout=10) == 0  # and its stdin closed when the run ended
    _same(got, read_logs(paths, tuning=WHOLE))
    assert spawn.prestart(Tuning(), 10) == 0  # a small input set starts none


def test_workers_share_the_cores_among_their_polars_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each process of a pool gets its share of the cores as Polars threads; a user's setting wins."""
    monkeypatch.setattr(spawn, "_cores", lambda: 16)
    assert [spawn.polars_threads(w) for w in (0, 1, 3, 7, 20)] == [None, 8, 4, 2, 1]
    monkeypatch.setattr(spawn, "_cores", lambda: 2)
    assert spawn.polars_threads(1) == 1
    seen: list[str | None] = []

    class Fake:
        def __init__(self, *a: object, env: dict[str, str], **k: object) -> None:
            seen.append(env.get("POLARS_MAX_THREADS"))

    monkeypatch.setattr(spawn.subprocess, "Popen", Fake)
    monkeypatch.delenv("POLARS_MAX_THREADS", raising=False)
    spawn.start(3)
    spawn.start(None)
    monkeypatch.setenv("POLARS_MAX_THREADS", "5")
    spawn.start(3)
    assert seen == ["3", None, "5"]


def test_an_unreadable_input_is_reported(tmp_path: Path) -> None:
    paths = _inputs(tmp_path)
    paths.insert(2, str(tmp_path / "missing.log"))
    with pytest.raises(InputError, match="missing.log"):
        read_logs(paths, tuning=Tuning(piece_bytes=2000, log_workers=1, log_pool_min_bytes=0))


def test_line_numbers_of_later_cuts_are_shifted(tmp_path: Path) -> None:
    p = tmp_path / "r.log"
    p.write_text("".join(f"node-1:1:1 [0] NCCL INFO cudaDriverVersion {i}\n" for i in range(3000)))
    lf = read_logs([str(p)], tuning=Tuning(piece_bytes=5000, log_workers=0))
    assert lf.versions["line"].to_list() == list(range(1, 3001))
    assert lf.versions.filter(pl.col("line") == 2500)["value"].to_list() == ["2499"]
    assert lf.inputs[0].lines == 3000


def test_configure_process_sets_polars_defaults_and_a_user_value_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ncclscope

    monkeypatch.delenv("POLARS_ENGINE_AFFINITY", raising=False)
    monkeypatch.setenv("_RJEM_MALLOC_CONF", "mine")
    ncclscope.configure_process()
    assert os.environ["POLARS_ENGINE_AFFINITY"] == "in-memory" and os.environ["_RJEM_MALLOC_CONF"] == "mine"


def test_the_cli_gives_itself_its_share_of_the_cores_before_importing_polars(tmp_path: Path) -> None:
    """With a worker, the calling process too runs Polars on its share of the cores (a fresh interpreter:
    this one has imported Polars already); a user's POLARS_MAX_THREADS wins."""
    log = tmp_path / "a.log"
    log.write_text("node-1:1:1 [0] NCCL INFO cudaDriverVersion 12040\n")
    code = (
        "import os, sys; from ncclscope.cli.options import start_log_workers; from ncclscope.tuning import Tuning;"
        f"start_log_workers([{str(log)!r}], [], Tuning(log_pool_min_bytes=0, log_workers=1));"
        "from ncclscope.parse.logs.engine import spawn; print(os.environ.get('POLARS_MAX_THREADS'), spawn._cores() // 2,"
        " 'polars' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    got, share, imported = out.stdout.split()
    assert got == str(max(1, int(share))) and imported == "False"
    env["POLARS_MAX_THREADS"] = "7"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "7"


_PIN_CHECK = """
import json, os, sys, time
from ncclscope.cli.options import start_log_workers
from ncclscope.tuning import Tuning
pin = sys.argv[2] == "1"
t = Tuning(log_pool_min_bytes=0, log_workers=1, piece_bytes=2000, pin_log_processes=pin)
before = sorted(os.sched_getaffinity(0))
start_log_workers(sys.argv[1:2], [], t)
from ncclscope.parse.logs.engine import spawn
worker = spawn._SPARE[0].pid
deadline = time.monotonic() + 20  # the worker keeps to its CPU once its interpreter has started
while pin and sorted(os.sched_getaffinity(worker)) == before and time.monotonic() < deadline:
    time.sleep(0.01)
during = {"caller": sorted(os.sched_getaffinity(0)), "worker": sorted(os.sched_getaffinity(worker))}
from ncclscope.parse import read_logs
lf = read_logs(sys.argv[1:2], tuning=t)
def cpus_of(tid):
    try:
        return tuple(sorted(os.sched_getaffinity(tid)))
    except ProcessLookupError:  # a thread that ended meanwhile
        return None
after = sorted({c for tid in os.listdir("/proc/self/task") if (c := cpus_of(int(tid))) is not None})
print(json.dumps({"before": before, "during": during, "after": after, "versions": lf.versions.height}))
"""


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs Linux, 2 CPUs"
)
def test_the_cli_keeps_each_process_to_a_cpu_while_reading(tmp_path: Path) -> None:
    """With workers, the CLI's caller and its worker each keep to a CPU of their own (the caller from before
    Polars starts its thread, which follows it) until the pieces are read; then every thread of the caller
    has the CPUs it had. Off (`pin_log_processes=False`): nothing is pinned. The same frames either way."""
    import json

    log = tmp_path / "a.log"
    log.write_text("".join(f"node-1:1:1 [0] NCCL INFO cudaDriverVersion {i}\n" for i in range(400)))
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    runs = {}
    for pin in ("1", "0"):
        out = subprocess.run(
            [sys.executable, "-c", _PIN_CHECK, str(log), pin],
            check=False,
            env=env,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        runs[pin] = json.loads(out.stdout)
    on, off = runs["1"], runs["0"]
    assert len(on["during"]["caller"]) == len(on["during"]["worker"]) == 1
    assert on["during"]["caller"] != on["during"]["worker"]  # one CPU each, not the same one
    assert on["after"] == off["after"] == [on["before"]]  # then every thread has the CPUs it had
    assert off["during"] == {"caller": off["before"], "worker": off["before"]}  # off: nothing kept to one
    assert on["versions"] == off["versions"] == 400


def test_pinning_is_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    from ncclscope.cli.options import GLOBALS, tuning

    GLOBALS.reset(debug=False, color=False)
    monkeypatch.delenv("NCCLSCOPE_PIN_CPUS", raising=False)
    assert not tuning().pin_log_processes  # issue 30: no process-wide affinity change unless asked
    monkeypatch.setenv("NCCLSCOPE_PIN_CPUS", "1")
    assert tuning().pin_log_processes
    monkeypatch.setenv("NCCLSCOPE_PIN_CPUS", "0")
    assert not tuning().pin_log_processes
