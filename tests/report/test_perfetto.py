"""Perfetto export (`-o run.perfetto.json`): a Chrome JSON trace with every rank a process, clock-corrected
times, flows from each rank's arrival to the last arrival, findings as instants.

Checked two ways: by schema on real traces and logs (always), and by Perfetto's own trace processor
when the `perfetto` package can start one (it downloads its binary, so it skips offline).
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ncclscope import schema as S
from ncclscope.cli import main
from ncclscope.errors import InputError
from ncclscope.frames import LogFrames
from ncclscope.records import Evidence, Finding
from ncclscope.report import perfetto, renderer_for, write_report
from ncclscope.report.perfetto_events import FLOW_NAME
from ncclscope.session import Session, analyze

from .conftest import HOSTS, make_session

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TRACES = SAMPLES / "traces"
SHARED = Path(__file__).resolve().parents[2].parent / "shared"


# --- the schema check -------------------------------------------------------------------------


def chrome_trace_problems(text: str) -> list[str]:
    """What in `text` breaks the Chrome JSON trace format as Perfetto's importer reads it."""
    bad: list[str] = []
    if not text.startswith('{"traceEvents":['):
        bad.append("traceEvents is not the first key (Perfetto stops at an unknown top-level key)")
    doc = json.loads(text)
    if set(doc) - {"traceEvents", "metadata"}:
        bad.append(
            f"top-level keys Perfetto ignores the rest after: {sorted(set(doc) - {'traceEvents', 'metadata'})}"
        )
    events = doc["traceEvents"]
    last_ts: dict[tuple[int, int], float] = {}
    flows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    slices: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    named_procs = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    named_threads = {
        (e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    for i, e in enumerate(events):
        missing = {"ph", "ts", "pid", "tid", "name"} - set(e)
        if missing:
            bad.append(f"event {i} lacks {sorted(missing)}")
            continue
        keys = list(e)
        if any(isinstance(e[k], list) for k in keys[: keys.index("ts")]):
            bad.append(f"event {i}: an array before ts (old Perfetto tokenizers refuse it)")
        if not (isinstance(e["ts"], (int, float)) and e["ts"] >= 0):
            bad.append(f"event {i}: ts {e['ts']!r}")
        if not (0 < e["pid"] < 2**32 and 0 < e["tid"] < 2**32):
            bad.append(f"event {i}: pid/tid {e['pid']}/{e['tid']} (0 is the swapper; ids are uint32)")
        track = (e["pid"], e["tid"])
        if e["ts"] < last_ts.get(track, 0):
            bad.append(f"event {i}: ts goes back on track {track}")
        last_ts[track] = e["ts"]
        ph = e["ph"]
        if ph != "M" and (e["pid"] not in named_procs or track not in named_threads):
            bad.append(f"event {i}: process or thread {track} has no name")
        if ph == "X":
            if not e.get("dur", -1) >= 0:
                bad.append(f"event {i}: X without dur")
            slices[track].append((e["ts"], e["ts"] + e["dur"]))
        elif ph == "i" and e.get("s") not in ("t", "p", "g"):
            bad.append(f"event {i}: instant scope {e.get('s')!r}")
        elif ph in ("s", "f"):
            flows[e.get("id", -1)].append(e)
        elif ph not in ("M", "i"):
            bad.append(f"event {i}: phase {ph!r}")
    for track, spans in slices.items():
        open_ends: list[float] = []  # slices of one thread must nest (Perfetto cuts one that ends late)
        for a, b in spans:
            while open_ends and open_ends[-1] <= a:
                open_ends.pop()
            if open_ends and b > open_ends[-1]:
                bad.append(f"track {track}: a slice at {a} overlaps its parent without nesting")
            open_ends.append(b)
    for fid, pair in flows.items():
        phases = sorted(x["ph"] for x in pair)
        if phases != ["f", "s"] or len({(x["cat"], x["name"]) for x in pair}) != 1:
            bad.append(f"flow {fid}: {phases} (one s and one f, same cat and name)")
            continue
        for x in pair:
            # v1 flows bind to the slice open at their time on their thread: it must exist.
            if not any(a < x["ts"] < b for a, b in slices[(x["pid"], x["tid"])]):
                bad.append(f"flow {fid}: its {x['ph']} event encloses no slice on {(x['pid'], x['tid'])}")
            if x["ph"] == "f" and x.get("bp") != "e":
                bad.append(f"flow {fid}: f without bp=e binds to the next slice, not the last rank's")
    return bad


def _aligned(s: Session) -> Any:
    assert s.aligned_traces is not None
    return s.aligned_traces


def _traces(s: Session) -> Any:
    assert s.traces is not None
    return s.traces


def _events(text: str, ph: str, cat: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in json.loads(text)["traceEvents"] if e["ph"] == ph and (cat is None or e.get("cat") == cat)
    ]


def test_the_schema_check_can_fail() -> None:
    good = perfetto.render(analyze([], trace_paths=[str(TRACES / "hta_sampled_2rank")]))
    assert chrome_trace_problems(good) == []
    doc = json.loads(good)
    ev = doc["traceEvents"]
    flow = next(e for e in ev if e["ph"] == "s")
    ev.remove(flow)  # an unpaired flow end
    first_x = next(i for i, e in enumerate(ev) if e["ph"] == "X" and e["ts"] > 0)
    ev.insert(first_x + 1, {**ev[first_x], "ts": 0.0, "dur": 1.0})  # time goes back on a track
    ev.append({"ph": "i", "name": "x", "ts": 1, "pid": 0, "tid": 1})  # pid 0, no scope, unnamed
    last_x = max(i for i, e in enumerate(ev) if e["ph"] == "X" and e["ts"] > 0)
    x = ev[last_x]
    ev.insert(last_x + 1, {**x, "ts": x["ts"] + x["dur"] / 2, "dur": x["dur"]})  # overlaps, not nested
    broken = perfetto.dumps(doc)
    problems = "\n".join(chrome_trace_problems(broken))
    for expected in ("flow", "ts goes back", "pid/tid", "instant scope", "has no name", "without nesting"):
        assert expected in problems


# --- real traces ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dlrm() -> tuple[Session, str]:
    s = analyze([], trace_paths=[str(TRACES / "param_dlrm_8rank")])
    return s, perfetto.render(s)


def test_real_8_rank_traces(dlrm: tuple[Session, str]) -> None:
    s, text = dlrm
    assert chrome_trace_problems(text) == []
    names = {e["pid"]: e["args"]["name"] for e in _events(text, "M") if e["name"] == "process_name"}
    assert names == {r + 1: f"rank {r}" for r in range(8)}
    # Every lined-up collective is a slice on every rank, on its stream's thread.
    per = _aligned(s).per_rank
    assert len(_events(text, "X", "collective")) == per.height
    threads = {e["args"]["name"] for e in _events(text, "M") if e["name"] == "thread_name"}
    assert "collectives · stream 84" in threads and "profiler steps" in threads


def test_flows_end_on_the_rank_that_arrived_last(dlrm: tuple[Session, str]) -> None:
    s, text = dlrm
    colls = _aligned(s).collectives.filter(pl.col("n_ranks") >= 2)
    ends = {e["id"]: e for e in _events(text, "f")}
    starts = _events(text, "s")
    assert len(starts) == len(ends) == int((colls["n_ranks"] - 1).sum())
    by_coll: dict[int, set[int]] = defaultdict(set)
    for st in starts:
        by_coll[st["args"]["coll_id"]].add(ends[st["id"]]["pid"] - 1)
    last = dict(zip(colls["coll_id"].to_list(), colls["last_rank"].to_list(), strict=True))
    assert {c: r.pop() for c, r in by_coll.items() if len(r) == 1} == last
    assert all(st["name"] == FLOW_NAME and st["pid"] != ends[st["id"]]["pid"] for st in starts)


def test_times_are_corrected_by_the_clock_offsets(dlrm: tuple[Session, str]) -> None:
    s, text = dlrm
    meta = json.loads(text)["metadata"]["ncclscope"]
    applied = {o["rank"]: o["offset_us"] for o in meta["clock_offsets"]["applied"]}
    clock = _aligned(s).clock
    assert meta["clock_offsets"]["basis"] == "rank"
    assert applied == dict(zip(clock["rank"].to_list(), clock["offset_us"].to_list(), strict=True))
    assert any(v != 0 for v in applied.values())
    origin = meta["time_origin_epoch_us"]
    raw = _traces(s).collectives.filter(~pl.col("is_p2p").fill_null(False) & (pl.col("op") != "wait"))
    for rank, off in applied.items():
        want = sorted(
            round(t - off - origin, 3) for t in raw.filter(pl.col("rank") == rank)["start_us"].to_list()
        )
        got = sorted(e["ts"] for e in _events(text, "X", "collective") if e["pid"] == rank + 1)
        assert got == pytest.approx(want, abs=2e-3)
    steps = _traces(s).steps.filter(pl.col("rank") == 3)
    shown = [e["ts"] for e in _events(text, "X", "step") if e["pid"] == 4]
    assert shown == pytest.approx([t - applied[3] - origin for t in steps["start_us"].to_list()], abs=2e-3)


def test_findings_are_instants(dlrm: tuple[Session, str]) -> None:
    s, text = dlrm
    inst = _events(text, "i", "finding")
    for f in s.findings:
        mine = [e for e in inst if e["args"]["id"] == f.id]
        assert {e["pid"] - 1 for e in mine} == set(f.ranks) and {e["s"] for e in mine} == {"p"}
        assert all(e["args"]["severity"] == f.severity and e["args"]["title"] == f.title for e in mine)


@pytest.mark.parametrize(
    "sample", ["hta_sampled_2rank", "gloo_cpu_straggler/delayed", "gloo_cpu_straggler/clean"]
)
def test_other_real_traces(sample: str) -> None:
    s = analyze([], trace_paths=[str(TRACES / sample)])
    text = perfetto.render(s)
    assert chrome_trace_problems(text) == []
    assert _events(text, "X", "collective") and _events(text, "s")
    if sample.startswith("gloo"):  # async gloo ops overlap: the later ones go to a second lane
        lanes = [e["args"]["name"] for e in _events(text, "M") if e["name"] == "thread_name"]
        assert any(" · lane 2" in n for n in lanes)


def test_the_straggler_is_where_the_flows_end() -> None:
    """Real gloo capture: one rank sleeps before every collective, the others wait for it."""
    s = analyze([], trace_paths=[str(TRACES / "gloo_cpu_straggler" / "delayed")])
    text = perfetto.render(s)
    late = Counter(e["pid"] - 1 for e in _events(text, "f"))
    straggler = next(f for f in s.findings if f.id == "straggler").ranks
    assert late.most_common(1)[0][0] in straggler


def test_shared_traces(traces_dir: Path) -> None:
    jobs = [[d] for d in sorted(traces_dir.iterdir()) if d.is_dir() and not d.name.startswith("single_rank")]
    # single_rank*: one rank each of unrelated jobs, so one trace per analysis.
    jobs += [[f] for d in sorted(traces_dir.glob("single_rank*")) for f in sorted(d.glob("*.json*"))]
    assert jobs
    for job in jobs:
        text = perfetto.render(analyze([], trace_paths=[str(p) for p in job]))
        assert chrome_trace_problems(text) == [], job
        assert _events(text, "X"), job


# --- logs -------------------------------------------------------------------------------------


def test_log_only_without_timestamps_says_nothing_is_timed() -> None:
    logs = [str(p) for p in sorted((SAMPLES / "logs").glob("nccl1267_*.log"))]
    s = analyze(logs)
    text = perfetto.render(s)
    assert chrome_trace_problems(text) == []
    meta = json.loads(text)["metadata"]["ncclscope"]
    assert perfetto.NOTHING_TIMED in meta["notes"] and meta["time_origin_epoch_us"] is None
    assert {e["args"]["id"] for e in _events(text, "i", "finding")} == {f.id for f in s.findings}
    assert not _events(text, "i", "log")


def test_timed_log_lines(shared_dir: Path) -> None:
    """Real logs whose lines carry timestamps: WARN lines become instants at their time, and the
    finding that cites one sits at that line's time."""
    issues = shared_dir / "corpus" / "issues"
    for name in (
        "nccl1672_nvls_invalid_argument_ts_prefix_2_26_2",
        "awsofi1020_ofi_getinfo_failed_ts_prefix",
    ):
        s = analyze([str(issues / f"{name}.log")])
        text = perfetto.render(s)
        assert chrome_trace_problems(text) == []
        warns = [e for e in _events(text, "i", "log") if e["name"].startswith("WARN")]
        assert warns, name
        meta = json.loads(text)["metadata"]["ncclscope"]
        first = s.logs.warnings["ts_us"].drop_nulls().min()
        assert meta["time_origin_epoch_us"] <= first
        assert perfetto.NOTHING_TIMED not in meta["notes"]
        cited = [
            e for e in _events(text, "i", "finding") if e["args"]["placed_at"].startswith("its earliest")
        ]
        assert cited, name


def test_timed_lines_on_their_rank_and_findings_at_their_evidence() -> None:
    """Timed WARN and init lines go to the rank whose process printed them; a finding citing a timed
    line of a kind not drawn (a NET line) sits at that line's time, which may come first."""
    t = 1_700_000_000_000_000.0
    origin = {"path": "job.log", "host": "gpu-a", "pid": 11, "text": "gpu-a:11:12 [0] NCCL INFO …"}
    ranks = S.conform(pl.DataFrame([{"rank": 3, "host": "gpu-a", "pid": 11, "path": "job.log"}]), S.RANKS)
    logs = LogFrames(
        warnings=S.conform(
            pl.DataFrame(
                [
                    {
                        **origin,
                        "line": 7,
                        "ts_us": t + 500.0,
                        "level": "WARN",
                        "family": "net",
                        "message": "NET/IB : no device",
                    }
                ]
            ),
            S.WARNINGS,
        ),
        inits=S.conform(pl.DataFrame([{**origin, "line": 2, "ts_us": t + 100.0, "phase": "start"}]), S.INITS),
        network=S.conform(
            pl.DataFrame([{**origin, "line": 1, "ts_us": t, "kind": "using_network"}]), S.NETWORK
        ),
    )
    finding = Finding(
        id="net-socket-fallback",
        severity="warning",
        title="socket",
        why="",
        fix="",
        ranks=(3,),
        evidence=(Evidence("job.log", 1, "…"),),
    )
    s = Session(logs=logs, ranks=ranks, comms=S.empty(S.COMMS), findings=(finding,))
    text = perfetto.render(s)
    assert chrome_trace_problems(text) == []
    logs_ev = {e["name"]: e for e in _events(text, "i", "log")}
    assert logs_ev["WARN net"]["ts"] == 500.0 and logs_ev["init start"]["ts"] == 100.0
    assert {e["pid"] for e in logs_ev.values()} == {4}
    (inst,) = _events(text, "i", "finding")
    assert (inst["ts"], inst["pid"], inst["s"]) == (0.0, 4, "p")
    assert json.loads(text)["metadata"]["ncclscope"]["time_origin_epoch_us"] == t


def test_hand_built_session_logs_and_ranks() -> None:
    s = make_session()
    text = perfetto.render(s)
    assert chrome_trace_problems(text) == []
    # Findings naming rank 5 are process instants of pid 6; the per-rank collectives (not lined up
    # here: no alignment in this session) are still slices.
    hang = [e for e in _events(text, "i", "finding") if e["args"]["id"] == "collective-hang"]
    assert [(e["pid"], e["s"]) for e in hang] == [(6, "p")]
    assert len(_events(text, "X", "collective")) == _traces(s).collectives.height


# --- the renderer -----------------------------------------------------------------------------


def test_picked_by_extension_and_deterministic(tmp_path: Path) -> None:
    assert renderer_for(None, "out/run.perfetto.json").name == "perfetto"
    assert renderer_for(None, "run.json").name == "json"
    assert renderer_for("perfetto").name == "perfetto"
    with pytest.raises(InputError, match=r"\.perfetto\.json"):
        renderer_for(None, "run.pftrace")
    out = tmp_path / "run.perfetto.json"
    trace_dir = str(TRACES / "param_dlrm_8rank")
    assert main(["report", trace_dir, "-o", str(out), "-q"]) == 0
    first = out.read_bytes()
    assert main(["report", trace_dir, "-o", str(out), "-q"]) == 0
    assert out.read_bytes() == first
    meta = json.loads(out.read_text(encoding="utf-8"))["metadata"]["ncclscope"]
    assert meta["command"].startswith("ncclscope report ") and "perfetto.json" in meta["command"]


def test_redacted(tmp_path: Path) -> None:
    out = write_report(make_session(), tmp_path / "r.perfetto.json", redact=True)
    text = out.read_text(encoding="utf-8")
    assert chrome_trace_problems(text) == []
    assert not any(h in text for h in HOSTS) and "host-1" in text


# --- Perfetto's trace processor ----------------------------------------------------------------


def _trace_processor(path: Path) -> Any:
    tp_mod = pytest.importorskip("perfetto.trace_processor")
    binary = os.environ.get("PERFETTO_TRACE_PROCESSOR") or shutil.which("trace_processor_shell")
    config = tp_mod.TraceProcessorConfig(bin_path=binary, load_timeout=30) if binary else None
    try:
        return (
            tp_mod.TraceProcessor(trace=str(path), config=config)
            if config
            else tp_mod.TraceProcessor(trace=str(path))
        )
    except Exception as e:  # noqa: BLE001 - the package downloads its binary; offline it cannot
        pytest.skip(f"Perfetto's trace processor cannot start here ({type(e).__name__}): {e}"[:300])


def test_opens_in_perfettos_trace_processor(tmp_path: Path, dlrm: tuple[Session, str]) -> None:
    s, text = dlrm
    path = tmp_path / "dlrm.perfetto.json"
    path.write_text(text, encoding="utf-8")
    tp = _trace_processor(path)
    try:
        procs = {r.pid: r.name for r in tp.query("select pid, name from process where name like 'rank %'")}
        assert procs == {r + 1: f"rank {r}" for r in range(8)}
        n_slices = next(iter(tp.query("select count(*) as n from slice where category = 'collective'"))).n
        assert n_slices == _aligned(s).per_rank.height
        n_flows = next(iter(tp.query("select count(*) as n from flow"))).n
        assert n_flows == len(_events(text, "s"))
        n_inst = next(iter(tp.query("select count(*) as n from slice where category = 'finding'"))).n
        assert n_inst == len(_events(text, "i", "finding"))
    finally:
        tp.close()
