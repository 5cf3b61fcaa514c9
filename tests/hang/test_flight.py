"""Flight Recorder reader: the real dump layout loads; anything but plain data is refused, never run."""

from __future__ import annotations

import os
import pickle
import pickletools
from pathlib import Path

import polars as pl
import pytest

from ncclscope.errors import InputError, UnsafePickleError
from ncclscope.parse.flight.read import load_plain_pickle, rank_from_name, read_flight

from .fixtures import fr_dump, fr_entry, fr_scenario, write_dumps

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "hang" / "flight_gloo_torch2.13"


def test_built_dump_layout(tmp_path: Path) -> None:
    paths = write_dumps(tmp_path, fr_scenario("c", 4, culprit=1))
    f = read_flight(paths)
    assert f.dumps.height == 4 and f.notes == ()
    assert sorted(f.entries["rank"].unique().to_list()) == [0, 1, 2, 3]
    bad = f.entries.filter((pl.col("rank") == 1) & (pl.col("collective_seq_id") == 12)).row(0, named=True)
    assert bad["op"] == "broadcast" and bad["input_numel"] == 16 and bad["state"] == "started"
    assert bad["frame"] == "train_step at /work/train.py:88"
    assert f.status.filter(pl.col("rank") == 0).row(0, named=True)["last_enqueued"] == 12
    assert f.groups["size"].to_list() == [4, 4, 4, 4]


def test_json_dump_is_read_like_the_pickle(tmp_path: Path) -> None:
    dumps = fr_scenario("a", 3, culprit=2)
    a = read_flight(write_dumps(tmp_path / "p", dumps))
    b = read_flight(write_dumps(tmp_path / "j", dumps, fmt="json"))
    cols = ["rank", "collective_seq_id", "op", "state", "input_numel"]
    assert a.entries.select(cols).sort(cols).equals(b.entries.select(cols).sort(cols))
    assert set(b.dumps["format"].to_list()) == {"json"}


@pytest.mark.parametrize("scenario", ["a_rank_skips", "c_mismatch", "e_all_done"])
def test_real_gloo_dumps_use_only_plain_opcodes(scenario: str) -> None:
    """Dumps written by torch 2.13's own FlightRecorder (gloo, CPU) hold no GLOBAL/REDUCE opcode."""
    paths = sorted(str(p) for p in (SAMPLES / scenario).glob("nccl_trace_rank_*"))
    assert len(paths) == 4
    for p in paths:
        ops = {op.name for op, _, _ in pickletools.genops(Path(p).read_bytes())}
        assert not ops & {"GLOBAL", "STACK_GLOBAL", "REDUCE", "INST", "OBJ", "NEWOBJ", "BUILD"}
    f = read_flight(paths)
    assert f.entries.height >= 16 and f.dumps["version"].unique().to_list() == ["2.10"]


class _RunsShell:
    def __init__(self, sentinel: Path) -> None:
        self.sentinel = sentinel

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.sentinel}",))


def _malicious(tmp_path: Path, where: str) -> tuple[Path, Path]:
    sentinel = tmp_path / "PWNED"
    dump = fr_dump([fr_entry(0, 1)], 1, 1, 2)
    if where == "top":
        payload: object = _RunsShell(sentinel)
    elif where == "entry":
        dump["entries"][0]["frames"] = [_RunsShell(sentinel)]
        payload = dump
    else:
        dump["pg_status"] = {"0": _RunsShell(sentinel)}
        payload = dump
    p = tmp_path / "nccl_trace_rank_0"
    p.write_bytes(pickle.dumps(payload, protocol=2))
    return p, sentinel


@pytest.mark.parametrize("where", ["top", "entry", "pg_status"])
def test_code_in_a_dump_is_refused_not_run(tmp_path: Path, where: str) -> None:
    p, sentinel = _malicious(tmp_path, where)
    with pytest.raises(UnsafePickleError) as e:
        read_flight([str(p)])
    assert not sentinel.exists()
    msg = str(e.value)
    assert "\n" not in msg and ("posix.system" in msg or "os.system" in msg)
    assert isinstance(e.value, InputError)  # the CLI turns it into exit code 2, one line


def test_other_unsafe_opcodes_are_refused(tmp_path: Path) -> None:
    # GLOBAL builtins.eval + REDUCE, hand-assembled (protocol 0), and a persistent id.
    evil = b"cbuiltins\neval\n(S'1+1'\ntR."
    with pytest.raises(UnsafePickleError):
        load_plain_pickle(evil, "x")
    with pytest.raises(UnsafePickleError):
        load_plain_pickle(b"\x80\x02Pabc\n.", "x")


def test_unreadable_dumps_are_skipped_with_a_note(tmp_path: Path) -> None:
    good = write_dumps(tmp_path, {0: fr_dump([fr_entry(0, 1)], 1, 1, 2)})
    trunc = tmp_path / "nccl_trace_rank_1"
    trunc.write_bytes(Path(good[0]).read_bytes()[:40])
    junk = tmp_path / "nccl_trace_rank_2"
    junk.write_bytes(b"\x00\x01garbage")
    f = read_flight([*good, str(trunc), str(junk)])
    assert f.dumps.height == 1 and len(f.notes) == 2


def test_rank_from_file_name() -> None:
    assert rank_from_name("/tmp/nccl_trace_rank_12") == 12
    assert rank_from_name("fr_dump_rank_3.json") == 3
    assert rank_from_name("trace") is None
