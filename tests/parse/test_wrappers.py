"""Launcher wrappers and NCCL prefix variants are peeled: rank hints, hosts, devices and messages."""

from __future__ import annotations

import polars as pl
import pytest

from ncclscope.parse.logs.lines import peel

MSG = "Using network IB"


def _split(line: str) -> dict[str, object]:
    df = pl.DataFrame({"raw": [line], "_row": [0]})
    return peel.split(peel.clean(df)).row(0, named=True)


@pytest.mark.parametrize(
    ("line", "rank", "host", "dev", "level"),
    [
        (f"node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"[rank5]:node-00:12:34 [3] NCCL INFO {MSG}", 5, "node-00", 3, "INFO"),
        (f"[default7]:node-00:12:34 [3] NCCL INFO {MSG}", 7, "node-00", 3, "INFO"),
        # torchx: role prefix `[trainer0]:` (torch.distributed.elastic docs' example), `torchx log`'s
        # `role/replica ` (torchx/cli/cmd_log.py, green) before it, and the `[trainer0|5]:` rank form
        (f"[trainer0]:node-00:12:34 [3] NCCL INFO {MSG}", 0, "node-00", 3, "INFO"),
        (f"\x1b[32mtrainer/1\x1b[0m [trainer2]:node-00:12:34 [3] NCCL INFO {MSG}", 2, "node-00", 3, "INFO"),
        (f"trainer/1 node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"[trainer1|5]:node-00:12:34 [3] NCCL INFO {MSG}", 5, "node-00", 3, "INFO"),
        (f"[1,13]<stdout>:node-00:12:34 [3] NCCL INFO {MSG}", 13, "node-00", 3, "INFO"),
        (f"6: node-00:12:34 [3] NCCL INFO {MSG}", 6, "node-00", 3, "INFO"),
        (f"[2] node-00:12:34 [3] NCCL INFO {MSG}", 2, "node-00", 3, "INFO"),
        (f"[1784] [rank0]:node-00:12:34 [3] NCCL INFO {MSG}", 0, "node-00", 3, "INFO"),
        (f"10.1.2.3: node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"> node01: node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (
            f"(RayWorkerWrapper pid=99, ip=10.0.0.1) node-00:12:34 [3] NCCL INFO {MSG}",
            None,
            "node-00",
            3,
            "INFO",
        ),
        (f"\x1b[36m(RayWorker pid=99)\x1b[0m node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"[36m(RayWorker pid=99)[0m node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"│ node-00:12:34 [3] NCCL INFO {MSG}                 │", None, "node-00", 3, "INFO"),
        (
            f"  | 2025-05-16T16:39:51.208-07:00 | node-00:12:34 [3] NCCL INFO {MSG}",
            None,
            "node-00",
            3,
            "INFO",
        ),
        (f"2024-01-02T03:04:05.1234567Z node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"2025-11-12 20:41:43,851 - INFO - node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"451 node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"    node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
        (f"[2025-04-06 22:31:56] node-00:12:34 [3] init.cc:1 NCCL WARN {MSG}", None, "node-00", 3, "WARN"),
        (f"node-00:12:34 [3] init.cc:1 (ncclCommInitRank) NCCL WARN {MSG}", None, "node-00", 3, "WARN"),
        # NCCL 2.32.3 notice level (debug.h `ATTN(...)`, format `[%d] %s:%d (%s) NCCL ATTN %s`)
        (
            f"node-00:12:34 [3] plugin/net.cc:229 (ncclNetPluginInit) NCCL ATTN {MSG}",
            None,
            "node-00",
            3,
            "ATTN",
        ),
        (f"[rank2]:node-00:12:34 [3] net.cc:229 NCCL ATTN {MSG}", 2, "node-00", 3, "ATTN"),
        (f":12:34 [3] NCCL INFO {MSG}", None, None, 3, "INFO"),  # empty host
        (f"node-00:12:34 [3] INFO {MSG}", None, "node-00", 3, "INFO"),  # NCCL 2.2: no NCCL token
        (f"[3] NCCL INFO {MSG}", None, None, 3, "INFO"),  # prefix stripped by the user
        (f"*server name* [3] include/socket.h:185 WARN {MSG}", None, None, 3, "WARN"),  # NCCL 2.0
        (f"include/socket.h:344 WARN {MSG}", None, None, None, "WARN"),
        (f"NCCL INFO {MSG}", None, None, None, "INFO"),
        (
            f"  | 2025-05-16T16:39:51.208-07:node-01:12:34 [3] NCCL INFO x | ip-host-00:12:34 [3] NCCL INFO {MSG}",
            None,
            "ip-host-00",
            3,
            "INFO",
        ),  # CloudWatch duplicated columns: the last prefix wins
        (f"node-00:94554:94694 [6] NCCL INFO node-00:12:34 [3] NCCL INFO {MSG}", None, "node-00", 3, "INFO"),
    ],
)
def test_prefix_and_wrappers(
    line: str, rank: int | None, host: str | None, dev: int | None, level: str
) -> None:
    row = _split(line)
    assert row["prefixed"] is True
    assert (row["rank_hint"], row["host"], row["cuda_dev"], row["level"], row["msg"]) == (
        rank,
        host,
        dev,
        level,
        MSG,
    )


@pytest.mark.parametrize(
    ("line", "rank", "msg"),
    [
        (
            "[rank3]:[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed",
            3,
            "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed",
        ),
        ("[1,2]<stdout>:NCCL version 2.5.6+cuda10.2", 2, "NCCL version 2.5.6+cuda10.2"),
        (
            "[rank3]: NET/OFI Request 0x7f completed with error.",
            3,
            "NET/OFI Request 0x7f completed with error.",
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, y",
            None,
            "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, y",
        ),
        ("ncclRemoteError: A call failed", None, "ncclRemoteError: A call failed"),
        (
            "trainer/0 [trainer3]:[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed",
            3,
            "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed",
        ),
        ("[trainer1|6]:RuntimeError: boom", 6, "RuntimeError: boom"),
    ],
)
def test_unprefixed_lines_are_peeled_from_the_left(line: str, rank: int | None, msg: str) -> None:
    row = _split(line)
    assert (row["prefixed"], row["rank_hint"], row["msg"]) == (False, rank, msg)


def test_timestamps_become_epoch_microseconds() -> None:
    row = _split("[2025-04-06 22:31:56] node-00:12:34 [3] init.cc:1 NCCL WARN x")
    assert row["ts_us"] == 1743978716 * 1e6
    row = _split("2025-11-12 20:41:43,851 - INFO - node-00:12:34 [3] NCCL INFO x")
    assert row["ts_us"] == pytest.approx(1762980103.851 * 1e6)
