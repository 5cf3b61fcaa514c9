"""Frame semantics the later stages rely on: coverage counts, unknown lines, WARN rows, torch lines."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ncclscope import schema as S
from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines import runtime_lines

LOG = """\
NCCL version 2.19.3+cuda12.3
node-00:100:100 [0] NCCL INFO cudaDriverVersion 12020
node-00:100:100 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
node-00:100:100 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
node-00:100:100 [0] NCCL INFO something NCCL has not printed before
node-00:100:100 [0] init.cc:1 NCCL WARN a warning nobody has seen
node-00:100:120 [0] NCCL INFO AllReduce: opCount 2a sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root 0 comm 0x5 [nranks=2] stream 0x6

application output line
[rank0]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600065 milliseconds before timing out.
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000
"""


def test_frames_and_coverage(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_text(LOG)
    lf = read_logs([str(path)])
    torch_hit = runtime_lines.match(LOG.splitlines()[9].split(":", 1)[1]) is not None
    for name in lf.table_names():  # every table follows its declared schema
        assert getattr(lf, name).schema == pl.Schema(getattr(S, name.upper())), name
    cov = lf.coverage
    assert cov.lines == 11
    assert cov.unknown == 2  # the two NCCL-prefixed lines no family knows
    assert cov.nccl_lines == 6 + 2 + int(torch_hit)  # prefixed + bare banner + bare WARN text (+ torch)
    assert cov.recognized == cov.nccl_lines - cov.unknown
    assert lf.collectives["op_count"].to_list() == [42]
    assert lf.versions.sort("kind")["value"].to_list() == ["12.3", "12020", "2.19.3"]
    unk = lf.unknown.sort("line")
    assert unk["line"].to_list() == [5, 6, 9] and unk["is_nccl"].to_list() == [True, True, False]
    warn = lf.warnings.sort("line").select("line", "level", "family", "benign", "src_file")
    assert warn.rows() == [
        (4, "WARN", "plugin", True, "misc/ibvwrap.cc"),  # a WARN of a network family is also a warning row
        (6, "WARN", "other", False, "init.cc"),  # a WARN no family knows is still a warning row
        (11, None, "duplicate_gpu", False, None),  # `Last error:` text without a prefix
    ]
    assert lf.network.filter(pl.col("kind") == "ibverbs_missing").height == 1
    assert lf.torch.height == int(torch_hit)
    if torch_hit:
        assert lf.torch["rank"].to_list() == [0]
    streams = lf.streams.sort("first_line")
    assert streams.select("pid", "first_line", "last_line", "n_lines").rows()[0] == (100, 2, 7, 6)
