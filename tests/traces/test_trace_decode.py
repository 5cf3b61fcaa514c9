"""Trace decoder: the fast path (the event array cut at `},{` in the file's bytes, chunks decoded in
place with events tagged on `ph`) gives exactly what the general path (every event a raw slice,
decoded untagged) gives, and falls back when it must."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trace_fixtures import B200, DLRM, load

from ncclscope.errors import TraceError
from ncclscope.parse.traces import decode as D
from ncclscope.parse.traces import events as E
from ncclscope.tuning import DEFAULT, Tuning

Cols = dict[str, dict[str, list[Any]]]


def _cols(d: D.DecodedTrace) -> Cols:
    return {k: getattr(d, k) for k in ("gpu", "nccl", "launches", "ops", "steps")}


def _general(path: str | Path) -> Cols:
    data, size, _ = D.Scratch().read(str(path))
    return _cols(D._decode_general(str(path), data, size, DEFAULT))


def _fast_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def no(*_: Any) -> None:
        raise AssertionError("fell back to the general path")

    monkeypatch.setattr(D, "_decode_general", no)


@pytest.mark.parametrize("chunk", [1, 200, 5000, 1 << 20])
@pytest.mark.parametrize("path", [B200, min(DLRM.glob("*.json.gz"))], ids=["b200", "dlrm"])
def test_fast_path_equals_general_path(monkeypatch: pytest.MonkeyPatch, path: Path, chunk: int) -> None:
    want = _general(path)
    _fast_only(monkeypatch)
    got = D.decode(str(path), tuning=Tuning(trace_chunk_bytes=chunk))
    assert _cols(got) == want and got.n_events > 0


def _events(n_dup: int, note: str = '"}, {"ph": "X"}, {}]') -> list[dict[str, Any]]:
    # `note`: a string holding what a cut or the array's end looks like
    k = {
        "ph": "X",
        "cat": "kernel",
        "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "pid": 0,
        "tid": 7,
        "ts": 10.0,
        "dur": 5.0,
        "args": {"External id": 3, "correlation": 9, "Seq": 1},
    }
    flow = {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 10.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}
    launch = {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 2,
        "ts": 9.0,
        "dur": 1.0,
        "args": {"External id": 3, "correlation": 9},
    }
    nested = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::add",
        "pid": 1,
        "tid": 2,
        "ts": 1.0,
        "dur": 1.0,
        "args": {"copy": [flow, k], "note": note, "Input Dims": [[1, 2]]},
    }
    return [nested, *([k] * n_dup), flow, flow, launch, nested, k]


@pytest.mark.parametrize(
    "indent, seps",
    [(None, (",", ":")), (None, (", ", ": ")), (2, (",", ": "))],
    ids=["compact", "spaced", "indented"],
)
@pytest.mark.parametrize("chunk", [1, 40, 150, 400])
def test_identical_and_nested_events_at_chunk_cuts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chunk: int, indent: int | None, seps: tuple[str, str]
) -> None:
    # `},{` and `}]` inside an event's args (nested objects, a string) may be where a chunk is cut or
    # the array looks closed: the result must not change (a wrong cut cannot decode, so it falls back).
    p = tmp_path / "rank0.json"
    p.write_text(
        json.dumps(
            {"traceEvents": _events(5), "distributedInfo": {"rank": 0}}, indent=indent, separators=seps
        )
    )
    got = D.decode(str(p), tuning=Tuning(trace_chunk_bytes=chunk))
    assert _cols(got) == _general(p)
    assert len(got.gpu["ts"]) == 6 and len(got.launches["ts"]) == 1 and got.n_events == 11


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    general = D._decode_general

    def spy(path: str, data: bytes | bytearray, size: int, tuning: Tuning) -> D.DecodedTrace:
        calls.append(path)
        return general(path, data, size, tuning)

    monkeypatch.setattr(D, "_decode_general", spy)
    return calls


@pytest.mark.parametrize(
    "doc, fast",
    [
        (
            {"traceEvents": _events(2, note=""), "INFO": ["log] line }]", "x"], "traceName": "t"},
            True,
        ),  # Kineto's trailing logs
        (
            {"traceEvents": _events(2, note=""), "extra": [{"a": 1}, {"b": [{"c": 2}]}]},
            None,
        ),  # fast unless cut there
        (
            {
                "distributedInfo": {"traceEvents": [_events(1, note="")[1]]},
                "traceEvents": _events(3, note=""),
            },
            False,
        ),  # nested key first
        ({"traceEvents": [_events(1, note="")[1]], "traceEvents ": 1}, True),
        ({"traceEvents": [], "baseTimeNanoseconds": 5}, False),
    ],
    ids=["trailing-logs", "trailing-objects", "nested-key-first", "lookalike-key", "empty"],
)
@pytest.mark.parametrize("chunk", [1, 1 << 20])
def test_odd_documents_decode_as_the_general_path_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, doc: dict[str, Any], fast: bool | None, chunk: int
) -> None:
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(doc, indent=1))
    try:
        want: Any = _general(p)
    except TraceError as e:
        want = str(e)
    calls = _spy(monkeypatch)
    try:
        got: Any = _cols(D.decode(str(p), tuning=Tuning(trace_chunk_bytes=chunk)))
    except TraceError as e:
        got = str(e)
    assert got == want
    assert fast is None or bool(calls) != fast


def test_duplicate_events_key_takes_the_last_like_msgspec(tmp_path: Path) -> None:
    p = tmp_path / "rank0.json"
    one, two = json.dumps(_events(1)), json.dumps(_events(3))
    p.write_text(f'{{"traceEvents": {one}, "traceEvents": {two}}}')
    assert _cols(D.decode(str(p))) == _general(p)
    assert D.decode(str(p)).n_events == 9


def test_fast_path_leaves_the_buffer_as_read(tmp_path: Path) -> None:
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": _events(40, note="")}, separators=(",", ":")))
    scratch = D.Scratch()
    data, size, _ = scratch.read(str(p))
    before = bytes(data[:size])
    assert D._decode_fast(str(p), data, size, DEFAULT) is not None
    assert bytes(data[:size]) == before


@pytest.mark.parametrize(
    "odd",
    [
        {"ph": "Q", "name": "a phase outside the format"},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "tid": [1], "ts": 1.0},
    ],
    ids=["unknown-phase", "odd-field-type"],
)
def test_odd_events_fall_back_to_the_general_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, odd: dict[str, Any]
) -> None:
    t = load(B200)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(t))  # the same spelling of args as the odd file
    t["traceEvents"].insert(len(t["traceEvents"]) // 2, odd)
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(t))
    calls = _spy(monkeypatch)
    if odd["ph"] == "Q":
        assert _cols(D.decode(str(p))) == _cols(D.decode(str(plain))) and calls
    else:  # the general path skips and counts the odd event (issue 30), the others read as before
        out = D.decode(str(p))
        assert _cols(out) == _cols(D.decode(str(plain))) and calls
        assert any("skipped 1 event(s) of an odd shape" in n for n in out.notes)


def test_one_scratch_buffer_for_files_of_any_size(tmp_path: Path) -> None:
    # Larger, then smaller (stale bytes past the end), then gzip, then the first again.
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"traceEvents": _events(50)}))
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"traceEvents": _events(1)}))
    scratch = D.Scratch()
    for p in (big, small, B200, big):
        assert _cols(D.decode(str(p), scratch)) == _cols(D.decode(str(p)))
    scratch.close()  # the last mapping, unmapped
    assert scratch._map is None


def test_comm_fields_are_args_fields() -> None:
    assert set(E.COMM_FIELDS) <= set(E._Args.__struct_fields__)


def test_odd_arg_types_keep_one_text_form() -> None:
    # Per column: all text or null stays as is; any list or number turns the column into text.
    args = E._MANY_ARGS.decode(
        b'[{"Seq": 3, "Group size": "8"}, {"Seq": "4", "Process Group Ranks": [0, 1]},'
        b' {"Seq": 5.0, "dtype": "Float"}]'
    )
    cols = dict(zip(E.COMM_FIELDS, E._comm(args), strict=True))
    assert cols["seq"] == ["3", "4", "5"] and cols["group_size"] == ["8", None, None]
    assert cols["pg_ranks"] == [None, "[0, 1]", None] and cols["dtype"] == [None, None, "Float"]
