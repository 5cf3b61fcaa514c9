"""Application output (issue 10): tracebacks, spawn's report and torchrun's table linked to the rank they name.

Unit cases are built from the line shapes torch prints (torch/multiprocessing/spawn.py, the elastic agent's
ChildFailedError template); the sample files are whole console captures (samples/logs/*.meta.json).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines.app_output import exceptions

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"


def _exc(tmp_path: Path, lines: list[str]) -> pl.DataFrame:
    p = tmp_path / "out.log"
    p.write_text("\n".join(lines) + "\n")
    return exceptions(read_logs([str(p)]).torch)


def test_tagged_traceback_keeps_its_rank_and_block(tmp_path: Path) -> None:
    e = _exc(
        tmp_path,
        [
            "[rank1]: Traceback (most recent call last):",
            "[rank0]: step 7 loss 2.1",
            '[rank1]:   File "train.py", line 9, in <module>',
            "[rank1]:     loss.backward()",
            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB",
        ],
    )
    row = e.row(0, named=True)
    assert (row["rank"], row["via"], row["block_line"], row["line"]) == (1, "traceback", 1, 5)
    assert row["exc_type"] == "torch.OutOfMemoryError"
    assert row["message"].startswith("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_spawn_header_names_the_process(tmp_path: Path) -> None:
    e = _exc(
        tmp_path,
        [
            "Traceback (most recent call last):",
            '  File "train.py", line 40, in <module>',
            "torch.multiprocessing.spawn.ProcessRaisedException: ",
            "",
            "-- Process 3 terminated with the following error:",
            "Traceback (most recent call last):",
            '  File "/opt/torch/multiprocessing/spawn.py", line 90, in _wrap',
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 3; 15.78 GiB total capacity)",
        ],
    )
    child = e.filter(pl.col("via") == "spawn").row(0, named=True)
    assert (child["local_rank"], child["link_line"], child["line"]) == (3, 5, 8)
    assert child["exc_type"] == "torch.cuda.OutOfMemoryError"
    parent = e.filter(pl.col("via") == "traceback").row(0, named=True)
    assert parent["exc_type"].endswith("ProcessRaisedException") and parent["local_rank"] is None


def test_untagged_traceback_has_no_rank(tmp_path: Path) -> None:
    e = _exc(
        tmp_path,
        ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', "ValueError: bad"],
    )
    assert e["rank"].to_list() == [None] and e["via"].to_list() == ["traceback"]


def test_torchrun_table_record_names_the_rank() -> None:
    e = exceptions(read_logs([str(SAMPLES / "torchrun_tee_cpu_alloc_fail_gloo_4r.log")]).torch)
    table = e.filter(pl.col("via") == "torchrun_table").sort("rank")
    assert table["rank"].to_list() == [0, 1, 2, 3]
    r2 = table.filter(pl.col("rank") == 2).row(0, named=True)
    assert "can't allocate memory" in r2["message"] and r2["link_text"].strip().startswith("rank      : 2")
    tagged = e.filter((pl.col("via") == "traceback") & pl.col("rank").is_not_null())
    assert sorted(tagged["rank"].to_list()) == [0, 1, 2, 3]  # `[defaultN]:[rankN]:` tracebacks


def test_spawn_sample_links_process_2() -> None:
    e = exceptions(read_logs([str(SAMPLES / "spawn_cpu_alloc_fail_gloo_4r.log")]).torch)
    child = e.filter(pl.col("via") == "spawn")
    assert child["local_rank"].to_list() == [2]
    assert child["link_text"].to_list() == ["-- Process 2 terminated with the following error:"]


def test_no_exceptions_in_plain_output(tmp_path: Path) -> None:
    assert _exc(
        tmp_path, ["epoch 1 loss 2.0", "UserWarning: something", "    raise RuntimeError(x)"]
    ).is_empty()
