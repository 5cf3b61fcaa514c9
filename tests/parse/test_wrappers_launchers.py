"""Launcher prefixes of managed platforms are peeled: SageMaker's mpirun tag `[1,mpirank:R,algo-1]<stdout>:`
(real lines, samples/logs/sagemaker_accelerate_mpirank_prefix.meta.json) gives rank R; `kubectl logs
--prefix` `[pod/NAME/CONTAINER] ` (built from kubectl's `[%s/%s/%s] ` format) gives no rank; Ray and
SageMaker's `algo-1: ` host tag were already peeled (tests/parse/test_wrappers.py) and are checked here too.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines import peel

MSG = "Launch mode Parallel"
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "logs" / "sagemaker_accelerate_mpirank_prefix.log"


def _split(line: str) -> dict[str, object]:
    df = pl.DataFrame({"raw": [line], "_row": [0]})
    return peel.split(peel.clean(df)).row(0, named=True)


@pytest.mark.parametrize(
    ("line", "rank", "host"),
    [
        (f"[1,mpirank:0,algo-1]<stdout>:algo-1:79:1300 [0] NCCL INFO {MSG}", 0, "algo-1"),
        (f"[1,mpirank:13,algo-2]<stderr>:algo-2:80:1301 [5] NCCL INFO {MSG}", 13, "algo-2"),
        (
            f"[pod/trainer-worker-0/pytorch] trainer-worker-0:79:1300 [0] NCCL INFO {MSG}",
            None,
            "trainer-worker-0",
        ),
        (
            f"[pod/job-1-master-0/pytorch] [rank3]:job-1-master-0:79:1300 [3] NCCL INFO {MSG}",
            3,
            "job-1-master-0",
        ),
        (f"algo-1: algo-1:79:1300 [0] NCCL INFO {MSG}", None, "algo-1"),
        (f"(RayWorkerWrapper pid=123, ip=10.0.0.1) node-3:79:1300 [0] NCCL INFO {MSG}", None, "node-3"),
    ],
)
def test_prefix(line: str, rank: int | None, host: str) -> None:
    row = _split(line)
    assert (row["rank_hint"], row["host"], row["msg"]) == (rank, host, MSG)


def test_a_torch_line_behind_a_kubectl_prefix_is_read(tmp_path: Path) -> None:
    p = tmp_path / "pod.log"
    p.write_text(
        "[pod/trainer-worker-1/pytorch] [rank1]:[E1127 23:30:00.123456789 ProcessGroupNCCL.cpp:632] [Rank 1] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, "
        "NumelOut=8, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    )
    t = read_logs([str(p)]).torch
    assert t.select("kind", "seq", "op_type").rows() == [("watchdog_timeout", 7, "ALLREDUCE")]


def test_the_sagemaker_sample_names_each_rank() -> None:
    s = read_logs([str(SAMPLE)]).streams
    assert s.filter(pl.col("host") == "algo-1")["rank_hint"].to_list() == [0]
