"""Trace decoder: the fast path (chunks cut from the file's bytes, events tagged on `ph`) gives exactly
what the general path (raw event slices, every event decoded) gives, and falls back when it must."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from trace_fixtures import B200, DLRM, load

from ncclscope.errors import TraceError
from ncclscope.parse import trace_decode as D

Cols = dict[str, dict[str, list[Any]]]


def _cols(d: D.DecodedTrace) -> Cols:
    return {k: getattr(d, k) for k in ("gpu", "nccl", "launches", "ops", "steps")}


def _general(path: str) -> Cols:
    data, size = D.Scratch().read(path)
    top = D._DECODER.decode(memoryview(data)[:size])
    raw = top if isinstance(top, list) else top.traceEvents
    assert raw
    out = D.DecodedTrace(path=path, distributed={}, devices=[], base_ns=None, host=None, n_events=len(raw))
    D._decode_general(path, raw, out)
    return _cols(out)


def _fast_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def no(*_: Any) -> None:
        raise AssertionError("fell back to the general path")
    monkeypatch.setattr(D, "_decode_general", no)


@pytest.mark.parametrize("chunk", [1, 3, 7, 16384])
@pytest.mark.parametrize("path", [B200, min(DLRM.glob("*.json.gz"))], ids=["b200", "dlrm"])
def test_fast_path_equals_general_path(monkeypatch: pytest.MonkeyPatch, path: Path, chunk: int) -> None:
    monkeypatch.setattr(D, "_CHUNK", chunk)
    want = _general(str(path))
    _fast_only(monkeypatch)
    got = D.decode(str(path))
    assert _cols(got) == want and got.n_events > 0


def _events(n_dup: int) -> list[dict[str, Any]]:
    k = {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "pid": 0, "tid": 7, "ts": 10.0, "dur": 5.0, "args": {"External id": 3, "correlation": 9, "Seq": 1}}
    flow = {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 10.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 9.0, "dur": 1.0,
              "args": {"External id": 3, "correlation": 9}}
    nested = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 1.0, "dur": 1.0,
              "args": {"copy": [flow, k], "Input Dims": [[1, 2]]}}
    return [nested, *([k] * n_dup), flow, flow, launch, nested, k]


@pytest.mark.parametrize("indent, seps", [(None, (",", ":")), (None, (", ", ": ")), (2, (",", ": "))],
                         ids=["compact", "spaced", "indented"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 4])
def test_identical_and_nested_events_at_chunk_cuts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunk: int,
                                                    indent: int | None, seps: tuple[str, str]) -> None:
    # Byte-identical neighbours and an event's bytes nested in another's args may be where a chunk
    # is cut: the result must not change (a wrong cut falls back, a cut at an identical twin is fine).
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": _events(5), "distributedInfo": {"rank": 0}}, indent=indent,
                            separators=seps))
    monkeypatch.setattr(D, "_CHUNK", chunk)
    got = D.decode(str(p))
    assert _cols(got) == _general(str(p))
    assert len(got.gpu["ts"]) == 6 and len(got.launches["ts"]) == 1 and got.n_events == 11


@pytest.mark.parametrize("odd", [
    {"ph": "Q", "name": "a phase outside the format"},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "tid": [1], "ts": 1.0},
], ids=["unknown-phase", "odd-field-type"])
def test_odd_events_fall_back_to_the_general_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  odd: dict[str, Any]) -> None:
    t = load(B200)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(t))  # the same spelling of args as the odd file
    t["traceEvents"].insert(len(t["traceEvents"]) // 2, odd)
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(t))
    calls: list[str] = []
    general = D._decode_general

    def spy(path: str, raw: list[msgspec.Raw], out: D.DecodedTrace) -> None:
        calls.append(path)
        general(path, raw, out)
    monkeypatch.setattr(D, "_decode_general", spy)
    if odd["ph"] == "Q":
        assert _cols(D.decode(str(p))) == _cols(D.decode(str(plain))) and calls
    else:  # the general path reads `tid` of every complete event too: the file is refused, as before
        with pytest.raises(TraceError, match="not a torch.profiler Chrome trace"):
            D.decode(str(p))
        assert calls


def test_one_scratch_buffer_for_files_of_any_size(tmp_path: Path) -> None:
    # Larger, then smaller (stale bytes past the end), then gzip, then the first again.
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"traceEvents": _events(50)}))
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"traceEvents": _events(1)}))
    scratch = D.Scratch()
    for p in (big, small, B200, big):
        assert _cols(D.decode(str(p), scratch)) == _cols(D.decode(str(p)))


def test_comm_fields_slice_of_args() -> None:
    assert D._Args.__struct_fields__[D._COMM_AT] == D._COMM_FIELDS
