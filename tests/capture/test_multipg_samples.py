"""Capture stage, the committed multi-process-group captures (samples/multipg): each holds the groups,
dumps and lines its SOURCE.md describes, and `ncclscope analyze` reads it. No torch needed: these are
files. What analyze must conclude from them is the diagnosis stage's to test (issue 27)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ncclscope.capture.mesh import parse_mesh
from ncclscope.cli import main
from ncclscope.parse.flight.read import load_plain_pickle

ROOT = Path(__file__).resolve().parents[2] / "samples" / "multipg"
# sample -> (layout or None, ranks, {fault kind: ranks}, ranks without a Flight Recorder dump)
SAMPLES: dict[str, tuple[str | None, int, dict[str, list[int]], set[int]]] = {
    "a_sleep_tp2dp2": ("tp=2,dp=2", 4, {"hang": [1]}, set()),
    "b_gil_sleep_tp2dp2ep2": ("tp=2,dp=2,ep=2,etp=yes", 8, {"gil": [3], "hang": [6]}, set()),
    "c_oom_desync_2ranks": (None, 2, {"oom": [0]}, {0}),
    "d_cuda_error_tp2dp2": ("tp=2,dp=2", 4, {"cuda-error": [2]}, set()),
    "e_oom_extra_tp2dp2": ("tp=2,dp=2", 4, {"oom": [0]}, set()),
    "f_killed_tp2cp2": ("tp=2,cp=2", 4, {"crash": [3]}, {3}),
}


def _log(name: str, rank: int) -> str:
    logs = ROOT / name / "logs"
    plain = logs / f"rank{rank}.log"
    if plain.exists():
        return plain.read_text(errors="replace")
    with gzip.open(logs / f"rank{rank}.log.gz", "rt", errors="replace") as fh:
        return fh.read()


def _flight(name: str, rank: int) -> dict[str, object]:
    path = ROOT / name / "flight" / f"nccl_trace_rank_{rank}"
    return load_plain_pickle(path.read_bytes(), str(path))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", list(SAMPLES))
def test_sample_holds_its_groups_and_dumps(name: str) -> None:
    layout, nranks, faults, no_dump = SAMPLES[name]
    root = ROOT / name
    run = json.loads((root / "capture.json").read_text())
    assert run["world_size"] == nranks and run["backend"] == "gloo" and run["returncode"] != 0
    assert {f["kind"]: f["ranks"] for f in run["faults"]} == faults
    assert run.get("layout") == layout
    mesh = parse_mesh(layout) if layout else None
    if mesh is not None:
        assert [g["ranks"] for g in run["groups"]] == [list(g.ranks) for g in mesh.groups()]
    for rank in range(nranks):
        m = json.loads((root / "manifest" / f"rank{rank}.json").read_text())
        assert m["rank"] == rank and m["versions"]["torch"].startswith("2.13.0")
        dump = root / "flight" / f"nccl_trace_rank_{rank}"
        assert dump.exists() == (rank not in no_dump)
        if mesh is None or rank in no_dump:
            continue
        mine = mesh.groups_of(rank)
        log = _log(name, rank)
        for g in mine:  # the rank log names each of its groups with their ranks
            assert (
                f"group {g.name} desc={g.desc} pg=" in log and f"ranks={','.join(map(str, g.ranks))}" in log
            )
        descs = {e["process_group"][1] for e in _flight(name, rank)["entries"]}  # type: ignore[attr-defined]
        assert descs == {"default_pg"} | {g.desc for g in mine}, rank
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 400_000


def test_samples_show_the_lines_source_md_quotes() -> None:
    slept = _log("a_sleep_tp2dp2", 1)  # faulthandler's stack at the SIGTERM: outside any collective
    assert "in _collective" in slept and "terminated by SIGTERM" in slept
    assert "Timed out waiting 10000ms for recv operation" in _log("a_sleep_tp2dp2", 0)
    gil = _log("b_gil_sleep_tp2dp2ep2", 3)
    assert "in hold_gil" in gil and "terminated by SIGTERM" in gil
    oom = _log("c_oom_desync_2ranks", 0)
    assert oom.index("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") < oom.index(
        "Received data size doesn't match expected size"
    )
    assert "Fatal Python error: Aborted" in oom
    assert "Connection reset by peer" in _log("c_oom_desync_2ranks", 1)
    assert "torch.AcceleratorError: CUDA error: an illegal memory access was encountered" in _log(
        "d_cuda_error_tp2dp2", 2
    )
    assert "Connection closed by peer" in _log("d_cuda_error_tp2dp2", 3)
    assert _log("f_killed_tp2cp2", 3).rstrip().endswith("rank=3 step=4 begin")
    assert "exitcode: -9" in (ROOT / "f_killed_tp2cp2" / "logs" / "torchrun.log").read_text()
    extra = _log("e_oom_extra_tp2dp2", 0)
    assert "During handling of the above exception, another exception occurred" in extra
    # The error path's collective: rank 0 alone has a 5th all_reduce on default_pg, of one element.
    entries = _flight("e_oom_extra_tp2dp2", 0)["entries"]
    last = [e for e in entries if e["process_group"][1] == "default_pg"][-1]  # type: ignore[attr-defined,index]
    assert last["collective_seq_id"] == 5 and last["input_sizes"] == [[1]]
    for rank in (1, 2, 3):
        peers = [
            e for e in _flight("e_oom_extra_tp2dp2", rank)["entries"] if e["process_group"][1] == "default_pg"
        ]  # type: ignore[attr-defined,index]
        assert peers[-1]["collective_seq_id"] == 4


@pytest.mark.parametrize("name", list(SAMPLES))
def test_analyze_reads_the_sample(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analyze", str(ROOT / name), "--format", "json", "--quiet"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert any(f["severity"] == "error" for f in out["findings"])
