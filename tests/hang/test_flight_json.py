"""Flight Recorder JSON dumps are read exactly like pickles: real torch 2.13 JSON (`_dump_fr_trace_json`,
written at the same moment as its pickle), real pickles converted to torch's JSON layout, torchcomms'
layout (`nccl2:` / `ncclx:` record names, the backend as the group's description) and files named
`<prefix><rank>` with no suffix, all found by their bytes and given the same verdict."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ncclscope.hang import build_hang_view
from ncclscope.parse import read_flight, read_logs
from ncclscope.parse.inputs import classify_inputs

from .fixtures import fr_scenario, write_dumps

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "hang"
JSON_SAMPLES = SAMPLES / "flight_json_torch2.13"
EXPECTED = {"a_rank_skips": ("a", (2,)), "c_mismatch": ("c", (1,))}


def _verdict(paths: list[str]) -> tuple[str, tuple[int, ...], str | None]:
    v = build_hang_view(read_logs([]), read_flight(paths)).verdicts[0]
    return v.klass, v.culprits, v.op


def _same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    cols = [c for c in a.columns if c != "path"]
    return a.select(cols).sort(cols).equals(b.select(cols).sort(cols))


def torch_json(dump: dict[str, Any]) -> dict[str, Any]:
    """A dump as `FlightRecorder::dump_json` writes it (torch 2.13 FlightRecorderDetail.hpp): no stack
    frames, missing times as 0, PG status numbers as strings, `entries` left out when empty."""
    out = {k: v for k, v in dump.items() if k != "entries"}
    out["pg_status"] = {
        pg: {k: str(v) for k, v in st.items()} for pg, st in (dump.get("pg_status") or {}).items()
    }
    entries = []
    for e in dump.get("entries", []):
        e = {k: v for k, v in e.items() if k != "frames"}
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            e[k] = e.get(k) or 0
        e["process_group"] = list(e["process_group"])
        entries.append(e)
    if entries:
        out["entries"] = entries
    return out


def torchcomms_json(dump: dict[str, Any], backend: str, comm: str = "default_comm") -> dict[str, Any]:
    """The same dump as torchcomms' FlightRecorderHook records it (hooks/fr/FlightRecorder.cpp): the group
    is (communicator name, backend), the record name `<backend>:<op>`, p2p_seq_id 0."""
    out = torch_json(dump)
    ranks = next(iter(out["pg_config"].values()))["ranks"]
    out["pg_config"] = {comm: {"name": comm, "desc": backend, "ranks": ranks}}
    for e in out.get("entries", []):
        e["process_group"] = [comm, backend]
        e["profiling_name"] = f"{backend}:{e['profiling_name'].split(':', 1)[-1]}"
        e["p2p_seq_id"] = 0
    return out


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_real_json_reads_like_its_pickle(scenario: str) -> None:
    """torch 2.13 wrote both at the same moment on each rank: the same rows, and the same verdict."""
    js = sorted(str(p) for p in (JSON_SAMPLES / scenario / "json").glob("nccl_trace_rank_*.json"))
    pk = sorted(str(p) for p in (JSON_SAMPLES / scenario / "pickle").glob("nccl_trace_rank_*"))
    assert len(js) == len(pk) == 4
    a, b = read_flight(js), read_flight(pk)
    assert set(a.dumps["format"].to_list()) == {"json"} and set(b.dumps["format"].to_list()) == {"pickle"}
    assert a.notes == b.notes == ()
    for name in ("entries", "status", "groups"):
        assert _same(getattr(a, name), getattr(b, name)), name
    assert _verdict(js)[:2] == _verdict(pk)[:2] == EXPECTED[scenario]


@pytest.mark.parametrize("scenario", ["a_rank_skips", "c_mismatch", "e_all_done"])
def test_real_pickles_converted_to_json(tmp_path: Path, scenario: str) -> None:
    """The bundled real pickles, rewritten in torch's JSON layout (converted here, not written by torch)."""
    src = sorted((SAMPLES / "flight_gloo_torch2.13" / scenario).glob("nccl_trace_rank_*"))
    paths = []
    for p in src:
        out = tmp_path / f"{p.name}.json"
        out.write_text(json.dumps(torch_json(pickle.loads(p.read_bytes()))))
        paths.append(str(out))
    a, b = read_flight(paths), read_flight([str(p) for p in src])
    assert _same(a.entries, b.entries) and _same(a.status, b.status)
    assert _verdict(paths) == _verdict([str(p) for p in src])


def test_a_json_dump_with_no_suffix_is_found_by_its_bytes(tmp_path: Path) -> None:
    """torchcomms and the nccl2 example name a rank's dump `<prefix><rank>`: a JSON one is a dump, not a log."""
    for p in sorted((JSON_SAMPLES / "a_rank_skips" / "json").glob("*.json")):
        shutil.copy(p, tmp_path / p.name.replace("nccl_trace_rank_", "rank_").removesuffix(".json"))
    found = classify_inputs([str(tmp_path)])
    assert len(found.dumps) == 4 and found.logs == ()
    assert _verdict(list(found.dumps))[:2] == EXPECTED["a_rank_skips"]


def test_a_json_log_line_is_not_a_dump(tmp_path: Path) -> None:
    """A JSON-lines log that mentions `entries` is still a log: a dump needs `pg_config`, or `entries`
    holding a `profiling_name`."""
    p = tmp_path / "train.log"
    p.write_text('{"entries": 3, "msg": "NCCL INFO Init COMPLETE"}\n')
    assert classify_inputs([str(p)]).logs == (str(p),)


@pytest.mark.parametrize("backend", ["nccl2", "ncclx"])
@pytest.mark.parametrize("klass", ["a", "c"])
def test_torchcomms_layout_gives_the_pickle_verdict(tmp_path: Path, backend: str, klass: str) -> None:
    """Record names `nccl2:all_reduce` (torch nightly's nccl2 backend) and `ncclx:all_reduce` (torchcomms)
    are read like `nccl:`; the group is matched by its communicator name."""
    dumps = fr_scenario(klass, 4, culprit=3)
    pk = write_dumps(tmp_path / "p", dumps)
    d = tmp_path / "j"
    d.mkdir()
    for r, dump in dumps.items():
        (d / f"rank_{r}").write_text(json.dumps(torchcomms_json(dump, backend)))
    found = classify_inputs([str(d)])
    assert len(found.dumps) == 4
    f = read_flight(list(found.dumps))
    assert set(f.entries["op"].unique().to_list()) <= {"all_reduce", "broadcast"}
    assert f.entries["pg_name"].unique().to_list() == ["default_comm"]
    assert _verdict(list(found.dumps)) == _verdict(pk)
