"""Parse stage, traces: the loader on every real trace era, and its one-line errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from trace_fixtures import B200, DLRM, SAMPLES, load

from ncclscope.errors import TraceError
from ncclscope.parse.traces.read import read_traces

SINGLE = SAMPLES / "single_rank"
# 2023-01-01 … 2027-01-01 in epoch µs: every real trace here falls inside once its base is applied.
EPOCH_2023, EPOCH_2027 = 1.672531200e15, 1.798761600e15


def test_dlrm_old_era_eight_ranks() -> None:
    t = read_traces([str(DLRM)])
    assert t.ranks["rank"].to_list() == list(range(8))
    assert t.ranks["kernel_era"].unique().to_list() == ["ncclKernel"]
    assert t.ranks["rank_from"].unique().to_list() == ["distributedInfo"]
    per_rank = t.collectives.group_by("rank").agg(pl.col("op"))
    for ops in per_rank["op"]:
        assert ops.to_list().count("alltoall") == 5 and ops.to_list().count("allreduce") == 3
    # old era: size and dtype come from the enclosing nccl:<op> annotation
    first_ar = t.collectives.filter((pl.col("rank") == 0) & (pl.col("op") == "allreduce")).row(0, named=True)
    assert (first_ar["in_nelems"], first_ar["dtype"], first_ar["msg_bytes"]) == (
        394241,
        "float32",
        394241 * 4,
    )
    assert t.collectives["step"].unique().to_list() == [10]
    assert t.steps.height == 8 and t.kernels["is_comm"].sum() == 64


def test_middle_era_relative_timestamps() -> None:
    t = read_traces([str(SINGLE / "hta_nccl_data_rank0_of2.json.gz")])
    c = t.collectives
    assert c.height == 21 and set(c["op"]) == {"allreduce", "broadcast"}
    assert c["pg_name"].unique().to_list() == ["0"] and c["group_size"].unique().to_list() == [2]
    # ts relative to baseTimeNanoseconds (2024-03-31) → absolute 2024 epoch µs
    assert EPOCH_2023 < c["start_us"].min() < EPOCH_2027
    assert t.pgs.row(0, named=True)["pg_ranks"] == "[0, 1]"
    assert t.ranks["nccl_version"][0] == "2.17.1"


def test_new_era_b200() -> None:
    t = read_traces([str(B200)])
    row = t.collectives.row(0, named=True)
    assert t.ranks["kernel_era"][0] == "ncclDevKernel"
    assert row["kernel"] == "ncclDevKernel_AllGather_RING_LL"
    assert (row["op"], row["pg_name"], row["dtype"], row["group_size"]) == ("allgather", "3", "bfloat16", 8)
    assert row["msg_bytes"] == 201088 * 2  # nccl-tests S for all-gather: the gathered output
    assert row["launch_us"] < row["start_us"] < row["end_us"]
    assert EPOCH_2023 < row["start_us"] < EPOCH_2027


def test_gloo_cpu_run() -> None:
    t = read_traces([str(SINGLE / "hta_cpu_only_gloo_rank34_of300.json.gz")])
    assert t.collectives.height == 10
    assert set(t.collectives["source"]) == {"gloo"} and set(t.collectives["op"]) == {"allreduce"}
    assert t.ranks["rank"][0] == 34 and t.kernels.is_empty()


@pytest.mark.corpus
def test_every_shared_trace_loads(traces_dir: Path) -> None:
    for f in sorted(traces_dir.rglob("*.json.gz")):
        t = read_traces([str(f)])
        assert t.ranks.height == 1, f


def _write(path: Path, obj: object) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


@pytest.mark.parametrize(
    "content, words",
    [
        (b"not json at all", "not valid JSON"),
        (b'{"schemaVersion": 1}', "traceEvents"),
        (b'{"traceEvents": []}', "no events"),
        (b'{"traceEvents": 5}', "not a torch.profiler Chrome trace"),
        (b"", "not valid JSON"),
        (b"{}", "traceEvents"),
        (b'{"traceEvents": [{"ph": "X"}', "not valid JSON"),  # cut off: the fast path finds no end either
    ],
)
def test_bad_files_are_one_line_errors(tmp_path: Path, content: bytes, words: str) -> None:
    p = tmp_path / "rank0.json"
    p.write_bytes(content)
    with pytest.raises(TraceError, match=words) as e:
        read_traces([str(p)])
    assert "\n" not in str(e.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    p = tmp_path / "rank0.json.gz"
    data = B200.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="gzip"):
        read_traces([str(p)])


def test_rank_resolution(tmp_path: Path) -> None:
    t = load(B200)
    del t["distributedInfo"]
    anon = _write(tmp_path / "trace_a.json", t)
    with pytest.raises(TraceError, match="--rank-map"):
        read_traces([anon])
    assert read_traces([anon], rank_map={"trace_a.json": 5}).ranks["rank"][0] == 5
    named = _write(tmp_path / "job_rank-3.json", t)
    got = read_traces([named]).ranks
    assert (got["rank"][0], got["rank_from"][0]) == (3, "file name")


def test_duplicate_rank_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="rank 0 appears in two traces"):
        read_traces([str(B200), str(SINGLE / "hta_nccl_data_rank0_of2.json.gz")])


def test_missing_path_and_empty_dir(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        read_traces([str(tmp_path / "nope.json")])
    with pytest.raises(TraceError, match="no trace files"):
        read_traces([str(tmp_path)])


def test_int_and_float_ts_agree(tmp_path: Path) -> None:
    t = load(min(DLRM.glob("*.json.gz")))
    for e in t["traceEvents"]:
        if "ts" in e:
            e["ts"] = float(e["ts"]) + 0.25
    f = read_traces([_write(tmp_path / "rank0.json", t)]).collectives
    i = read_traces([str(min(DLRM.glob("*.json.gz")))]).collectives
    assert (f["start_us"] - i["start_us"]).abs().max() == pytest.approx(0.25, abs=0.01)


# --- hostile traces (issue 12): checked where they enter, skipped with a note while another reads -------


def _tiny(rank: object = 0, **top: object) -> dict[str, object]:
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
        "ts": 3.0,
        "dur": 10.0,
        "tid": 7,
        "args": {"External id": 3, "correlation": 9, "Seq": 1},
    }
    return {"traceEvents": [kernel], "distributedInfo": {"rank": rank, "world_size": 2}, **top}


def test_header_values_of_the_wrong_type_are_unknown_with_a_note(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "rank0.json",
        _tiny(
            world_size=1,
            baseTimeNanoseconds=1 << 70,
            deviceProperties=[1, "x"],
            host_name=5,
            distributedInfo={"rank": 0, "world_size": "2", "pg_config": {"a": 1}},
        ),
    )
    t = read_traces([p])
    row = t.ranks.row(0, named=True)
    assert row["base_ns"] is None and row["host"] is None and row["world_size"] is None and row["n_gpus"] == 0
    notes = " ".join(t.notes)
    for field in (
        "baseTimeNanoseconds",
        "host_name",
        "distributedInfo.world_size",
        "distributedInfo.pg_config",
    ):
        assert field in notes


def test_an_unusable_trace_is_skipped_while_another_reads(tmp_path: Path) -> None:
    good = _write(tmp_path / "rank0.json", _tiny(0))
    bad = tmp_path / "rank1.json"
    bad.write_bytes(b'{"traceEvents": [' + b"[" * 5000)
    t = read_traces([good, str(bad)])
    assert t.ranks["rank"].to_list() == [0]
    assert any(n.startswith("trace skipped:") and "rank1.json" in n for n in t.notes)


def test_zstd_and_capped_gzip_traces(tmp_path: Path) -> None:
    from ncclscope.tuning import Tuning

    zstd = pytest.importorskip("zstandard")
    body = json.dumps(_tiny(0)).encode()
    z = tmp_path / "rank0.json.zst"
    z.write_bytes(zstd.ZstdCompressor().compress(body))
    assert read_traces([str(z)]).collectives.height == 1
    g = tmp_path / "rank1.json.gz"
    g.write_bytes(gzip.compress(body))
    with pytest.raises(TraceError, match="max_decompressed_bytes"):
        read_traces([str(g)], tuning=Tuning(max_decompressed_bytes=100))
