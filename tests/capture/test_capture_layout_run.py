"""Capture stage with torch: the stopping faults' errors and the held GIL, and one short end-to-end
gloo capture with `--layout tp=2,dp=2` and a CUDA-style error on rank 1 (it fails fast: the peers see
the closed connection, no process-group timeout to wait for)."""

from __future__ import annotations

import gzip
import json
import pickle
import threading
import time
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from ncclscope.capture import CaptureOptions, CaptureResult, parse_faults, run_capture
from ncclscope.capture.failures import CUDA_ILLEGAL_ADDRESS, cuda_error, hold_gil, oom_error
from ncclscope.capture.mesh import parse_mesh
from ncclscope.cli import main

pytestmark = pytest.mark.torch


def test_oom_on_cpu_is_torchs_oom_error_with_the_allocator_text() -> None:
    err = oom_error(torch, torch.device("cpu"))
    assert isinstance(err, torch.OutOfMemoryError)
    text = str(err)
    assert text.startswith(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"
    )
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in text


def test_cuda_error_carries_the_cuda_text() -> None:
    err = cuda_error(torch)
    assert isinstance(err, RuntimeError)  # torch.AcceleratorError is a RuntimeError
    assert str(err).startswith("CUDA error: an illegal memory access was encountered")
    assert "CUDA_LAUNCH_BLOCKING=1" in CUDA_ILLEGAL_ADDRESS


def test_hold_gil_stops_every_python_thread() -> None:
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    how = hold_gil(0.5)
    t1 = time.monotonic()
    stop.set()
    t.join()
    assert how.startswith("pthread_mutex_timedlock")
    assert t1 - t0 >= 0.45
    # A thread that runs Python every 5 ms got no turn while the GIL was held.
    assert [x for x in ticks if t0 + 0.05 < x < t1 - 0.05] == []


@pytest.fixture(scope="module")
def layout_run(tmp_path_factory: pytest.TempPathFactory) -> CaptureResult:
    return run_capture(
        CaptureOptions(
            out_dir=tmp_path_factory.mktemp("layout") / "run",
            nproc_per_node=4,
            backend="gloo",
            faults=parse_faults(["cuda-error:rank=1"]),
            timeout_s=5.0,
            mesh=parse_mesh("tp=2,dp=2"),
            snapshot=False,
        )
    )


def _flight(res: CaptureResult, rank: int) -> dict[str, Any]:
    # Our own dump from a run made in this test: plain pickle is fine here.
    return pickle.loads((res.out_dir / "flight" / f"nccl_trace_rank_{rank}").read_bytes())  # type: ignore[no-any-return]


@pytest.mark.slow
def test_layout_run_records_every_group(layout_run: CaptureResult) -> None:
    res = layout_run
    assert res.returncode != 0 and not res.timed_out
    run = json.loads((res.out_dir / "capture.json").read_text())
    assert run["layout"] == "tp=2,dp=2"
    assert [g["ranks"] for g in run["groups"]] == [[0, 1], [2, 3], [0, 2], [1, 3]]
    bad = json.loads((res.out_dir / "manifest" / "rank1.json").read_text())
    assert "illegal memory access" in bad["error"]
    assert bad["groups"] == {
        "tp": {"name": "tp0", "desc": "TENSOR_MODEL_PARALLEL_GROUP", "ranks": [0, 1]},
        "dp": {"name": "dp1", "desc": "DATA_PARALLEL_GROUP", "ranks": [1, 3]},
    }
    assert (
        "group tp0 desc=TENSOR_MODEL_PARALLEL_GROUP pg=1 ranks=0,1"
        in (res.out_dir / "logs" / "rank1.log").read_text()
    )
    for rank in range(4):
        dump = _flight(res, rank)
        descs = {e["process_group"][1] for e in dump["entries"]}
        # DDP's gradient all_reduce runs on the DP group; the TP collectives and the default
        # group's report all_reduce run every step: every group this rank belongs to is there.
        assert {"default_pg", "TENSOR_MODEL_PARALLEL_GROUP", "DATA_PARALLEL_GROUP"} <= descs, rank
        timeouts = {e["timeout_ms"] for e in dump["entries"]}
        assert timeouts == {5000}, "the layout's groups must use the job's timeout, not 30 minutes"
    # The groups' ranks are in the profiler trace (gloo's dump leaves pg_config empty). Rank 1's trace
    # is whole for sure: it wrote it at the end of step 3, before its fault; a peer may still have been
    # writing its own when torchrun stopped it.
    with gzip.open(res.out_dir / "traces" / "rank1.pt.trace.json.gz") as fh:
        info = json.load(fh)["distributedInfo"]
    ranks = {c["pg_desc"]: c["ranks"] for c in info["pg_config"]}
    assert ranks == {
        "default_pg": [0, 1, 2, 3],
        "TENSOR_MODEL_PARALLEL_GROUP": [0, 1],
        "DATA_PARALLEL_GROUP": [1, 3],
    }


@pytest.mark.slow
def test_analyze_names_the_rank_with_the_cuda_error(
    layout_run: CaptureResult, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["analyze", "-q", "-f", "json", str(layout_run.out_dir)])
    findings = json.loads(capsys.readouterr().out)["findings"]
    exited = [f for f in findings if f["id"] == "rank-exited"]
    assert exited and exited[0]["ranks"] == [1] and "AcceleratorError" in exited[0]["title"]
