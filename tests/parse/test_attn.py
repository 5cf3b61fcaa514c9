"""NCCL 2.32.3's `NCCL ATTN` level: its lines are NCCL lines, matched to the catalog, never WARNs.

The sample line is real: samples/gpu/nccl232/hang (NCCL 2.32.3 from the `nvidia-nccl-cu13==2.32.3`
wheel, see samples/gpu/nccl232/SOURCE.md). NCCL's debug.h defines `ATTN(...)` as a level "logically
between WARN and INFO": noteworthy, not an error, so rules that read `level == "WARN"` must not see it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ncclscope.parse.logs.keep.inert import PREFIX_POSSIBLE
from ncclscope.parse.logs.read import read_logs

REAL = (
    "[2026-11-23 08:08:51.438559] vm:957:957 [0] plugin/net.cc:229 (ncclNetPluginInit) "
    "NCCL ATTN Failed to initialize NET plugin IB"
)
SAMPLE = Path(__file__).parents[2] / "samples/gpu/nccl232/hang/logs/nccl_rank1.log"


def test_the_real_line_is_in_the_bundled_sample() -> None:
    assert REAL in SAMPLE.read_text().splitlines()


def test_attn_may_carry_a_prefix() -> None:
    assert pl.Series([REAL]).str.contains(PREFIX_POSSIBLE).item()


def test_attn_line_is_an_nccl_line_in_the_catalog(tmp_path: Path) -> None:
    log = tmp_path / "attn.log"
    log.write_text(REAL + "\n")
    f = read_logs([str(log)])
    assert f.unknown.height == 0
    row = f.known.row(0, named=True)
    assert (row["level"], row["host"], row["pid"], row["cuda_dev"]) == ("ATTN", "vm", 957, 0)
    assert row["message"] == "Failed to initialize NET plugin IB"
    assert row["catalog_id"] is not None
    assert f.warnings.filter(pl.col("level") == "WARN").height == 0
