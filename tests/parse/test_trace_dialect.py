"""Traces as profilers really write them (issue 30, item 5): a BOM, UTF-16, bare NaN/Infinity, and events of
an odd shape are read (odd events skipped and counted), never the whole trace refused."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from ncclscope.errors import TraceError
from ncclscope.parse.traces import decode as D

B200 = (
    Path(__file__).resolve().parents[2]
    / "samples"
    / "traces"
    / "single_rank"
    / "tracelens_b200_eager_rank0_of8.json.gz"
)


def _trace() -> dict[str, Any]:
    out: dict[str, Any] = json.loads(gzip.decompress(B200.read_bytes()))
    return out


def _cols(d: D.DecodedTrace) -> dict[str, Any]:
    return {k: getattr(d, k) for k in ("gpu", "nccl", "launches", "ops", "steps")}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    p = tmp_path_factory.mktemp("t") / "rank0.json"
    p.write_text(json.dumps(_trace()))
    return p, _cols(D.decode(str(p)))


@pytest.mark.parametrize(
    "encode",
    [
        lambda s: b"\xef\xbb\xbf" + s.encode(),
        lambda s: s.encode("utf-16"),
        lambda s: gzip.compress(b"\xef\xbb\xbf" + s.encode()),
    ],
    ids=["utf8-bom", "utf16", "gzip-bom"],
)
def test_bom_and_utf16(encode: Any, plain: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    p = tmp_path / "rank0.json"
    p.write_bytes(encode(json.dumps(_trace())))
    assert _cols(D.decode(str(p))) == plain[1]


def test_nan_and_infinity_are_read(plain: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    t = _trace()
    t["traceEvents"].append({"ph": "C", "name": "loss", "ts": 1.0, "args": {"v": float("nan")}})
    t["traceEvents"].append({"ph": "C", "name": "NaN Infinity", "ts": 2.0, "args": {"v": float("inf")}})
    t["traceEvents"].append({"ph": "C", "name": "grad", "ts": 3.0, "args": {"v": float("-inf")}})
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(t))  # Python writes bare NaN / Infinity tokens
    out = D.decode(str(p))
    assert _cols(out) == plain[1]
    assert any("3 NaN/Infinity value(s) read as null" in n for n in out.notes)


ODD: dict[str, Any] = {
    "string-ts": {"ph": "X", "cat": "kernel", "name": "k", "ts": "12.5", "dur": 1.0, "tid": 7},
    "string-dur": {"ph": "X", "cat": "kernel", "name": "k", "ts": 12.5, "dur": "1", "tid": 7},
    "bool-tid": {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.0, "dur": 1.0, "tid": True},
    "numeric-name": {"ph": "X", "cat": "cpu_op", "name": 42, "ts": 1.0, "dur": 1.0, "tid": 1},
    "non-object": 17,
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_event_is_skipped_and_counted(
    name: str, plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    t = _trace()
    t["traceEvents"].insert(len(t["traceEvents"]) // 3, ODD[name])
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(t))
    out = D.decode(str(p))
    assert _cols(out) == plain[1]
    assert any("skipped 1 event(s) of an odd shape" in n for n in out.notes)


def test_a_trace_of_nothing_but_odd_events_is_still_refused(tmp_path: Path) -> None:
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": [1, 2, "x"]}))
    with pytest.raises(TraceError, match="not a torch.profiler Chrome trace"):
        D.decode(str(p))
