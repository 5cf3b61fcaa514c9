"""Straggler and clock-skew recovery on fixtures derived from real traces (see trace_fixtures.py).

Both kernel-naming eras: the 8-rank DLRM set (`ncclKernel_*`, stream-order matching) and the B200
trace cloned to 8 ranks (`ncclDevKernel_*`, process-group order matching).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trace_fixtures as F

from ncclscope import schema as S
from ncclscope.align.traces import AlignedCollectives, align_traces
from ncclscope.findings import Context
from ncclscope.findings.rules_traces import clock_skew, straggler
from ncclscope.frames import LogFrames
from ncclscope.parse.traces.read import read_traces
from ncclscope.records import Finding

HOSTS = {r: ("node-a" if r < 4 else "node-b") for r in range(8)}


@pytest.fixture(scope="module")
def dlrm() -> dict[int, F.Trace]:
    return F.load_dlrm()


@pytest.fixture(scope="module")
def b200() -> dict[int, F.Trace]:
    return F.b200_set()


def _analyse(traces: dict[int, F.Trace], folder: Path) -> tuple[AlignedCollectives, list[Finding]]:
    t = read_traces([str(F.write_set(traces, folder))])
    a = align_traces(t)
    assert a is not None
    ctx = Context(
        logs=LogFrames(), ranks=S.empty(S.RANKS), comms=S.empty(S.COMMS), traces=t, aligned_traces=a
    )
    return a, list(straggler(ctx))


def _variant(base: dict[int, F.Trace], rank: int, d_us: float, clock: str, c_us: float) -> dict[int, F.Trace]:
    t = F.delay_rank(base, rank, d_us)
    if clock == "host":  # hosts named in the traces: one offset per host
        t = F.shift_clock(F.name_hosts(t, HOSTS), {4, 5, 6, 7}, c_us)
    elif clock == "rank":  # no host names: one offset per rank
        t = F.shift_clock(t, {4, 5, 6, 7}, c_us)
    return t


CASES = [
    ("dlrm", 3, 2000.0, "none", 0.0),
    ("dlrm", 3, 2000.0, "host", 50_000.0),
    ("dlrm", 6, 10_000.0, "rank", -30_000.0),
    ("b200", 5, 500.0, "none", 0.0),
    ("b200", 5, 500.0, "host", -20_000.0),
    ("b200", 2, 3000.0, "rank", 7_500.0),
]


@pytest.mark.parametrize("which, rank, d_us, clock, c_us", CASES)
def test_recovers_rank_delay_and_clock(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    which: str,
    rank: int,
    d_us: float,
    clock: str,
    c_us: float,
) -> None:
    base = request.getfixturevalue(which)
    a, found = _analyse(_variant(base, rank, d_us, clock, c_us), tmp_path)
    assert a.n_aligned == a.collectives.height
    stragglers = [f for f in found if f.metrics.get("pattern") == "persistent"]
    assert [f.ranks for f in stragglers] == [(rank,)]
    m = stragglers[0].metrics
    assert abs(float(m["median_lateness_us"]) - d_us) <= 0.10 * d_us  # type: ignore[arg-type]
    assert float(m["late_share"]) >= 0.8 and float(m["wait_caused_us"]) > 0  # type: ignore[arg-type]
    if clock != "none":
        shifted = (
            a.clock.filter(a.clock["host"] == "node-b")
            if clock == "host"
            else a.clock.filter(a.clock["rank"] >= 4)
        )
        assert a.clock["basis"][0] == clock
        for off in shifted["offset_us"]:
            assert abs(off - c_us) <= max(5.0, 0.01 * abs(c_us))


def test_clock_shift_alone_is_not_a_straggler(dlrm: dict[int, F.Trace], tmp_path: Path) -> None:
    """A host 40 ms ahead looks like 4 very late ranks until its clock is corrected."""
    a, found = _analyse(F.shift_clock(F.name_hosts(dlrm, HOSTS), {4, 5, 6, 7}, 40_000.0), tmp_path)
    assert a.clock.filter(a.clock["host"] == "node-b")["offset_us"][0] == pytest.approx(40_000, abs=5)
    assert all(f.ranks == (7,) for f in found)  # only DLRM's own rank 7 remains, as without the shift


def test_real_dlrm_flags_rank_7(dlrm: dict[int, F.Trace], tmp_path: Path) -> None:
    _, found = _analyse(dlrm, tmp_path)
    assert [f.ranks for f in found] == [(7,)]
    assert set(found[0].metrics) >= {"median_lateness_us", "late_share", "wait_caused_us"}


def test_clock_skew_is_reported(dlrm: dict[int, F.Trace], tmp_path: Path) -> None:
    t = read_traces(
        [str(F.write_set(F.shift_clock(F.name_hosts(dlrm, HOSTS), {4, 5, 6, 7}, 40_000.0), tmp_path))]
    )
    a = align_traces(t)
    ctx = Context(
        logs=LogFrames(), ranks=S.empty(S.RANKS), comms=S.empty(S.COMMS), traces=t, aligned_traces=a
    )
    (f,) = clock_skew(ctx)
    assert f.hosts == ("node-b",) and f.metrics["basis"] == "host"
    assert (
        list(
            clock_skew(
                Context(
                    logs=LogFrames(),
                    ranks=S.empty(S.RANKS),
                    comms=S.empty(S.COMMS),
                    traces=None,
                    aligned_traces=None,
                )
            )
        )
        == []
    )
