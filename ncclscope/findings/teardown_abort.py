"""Findings stage, errors raised by NCCL's abort: the communicator's teardown reporting an older failure.

PyTorch calls ncclCommAbort from ProcessGroupNCCL's destructor and from the watchdog after an error; its
C10D_NCCL_CHECK raises `NCCL error in: …NCCLUtils.hpp:N, <result>` with `Exception raised from ncclCommAbort
at …` (torch/csrc/distributed/c10d/NCCLUtils.hpp). ncclCommAbort only sets the abort flag and destroys the
communicator (nccl src/init.cc commDestroy: cudaStreamSynchronize, ncclProxyDestroy, commFree); a CUDA error
there is the sticky error of a CUDA context an earlier fault already broke (an illegal access, an Xid, a GPU
that fell off the bus). So the error is that earlier failure seen again at teardown, not a failure of its own.
"""

from __future__ import annotations

import polars as pl

from ncclscope.findings.registry import Context

RAISED_BY_ABORT = r"raised from (?:ncclCommAbort|\S*~ProcessGroupNCCL)"
ABORT_ECHO_TITLE = (
    "NCCL's abort at teardown returned 'unhandled cuda error': an earlier CUDA failure seen again, "
)
ABORT_ECHO_WHY = (
    "PyTorch raised it out of ncclCommAbort (ProcessGroupNCCL's destructor or its watchdog's abort), which only "
    "synchronises and frees the communicator: a CUDA error there is the sticky error of a context an earlier "
    "fault broke (an illegal memory access, an Xid, a lost GPU). The failure itself came before this line."
)
ABORT_ECHO_FIX = (
    "Find the first error of this process before the teardown (CUDA_LAUNCH_BLOCKING=1 names the kernel; dmesg "
    "shows Xid errors); the abort's error goes away with it."
)
WITHIN = 4  # lines between the `NCCL error in:` line and its `Exception raised from` line (what(), banner)


def raised_by_abort(ctx: Context, rows: pl.DataFrame) -> bool:
    """Every cited row is an error PyTorch raised out of ncclCommAbort (its `Exception raised from
    ncclCommAbort` line follows within WITHIN lines of the same input)."""
    t = ctx.logs.torch
    if rows.is_empty() or t.is_empty() or "detail" not in t.columns:
        return False
    abort = t.filter(pl.col("detail").fill_null("").str.contains(RAISED_BY_ABORT)).select(
        "path", pl.col("line").alias("_a")
    )
    if abort.is_empty():
        return False
    near = (
        rows.select("path", "line")
        .join(abort, on="path")
        .filter((pl.col("_a") > pl.col("line")) & (pl.col("_a") <= pl.col("line") + WITHIN))
    )
    return near.select("path", "line").unique().height == rows.select("path", "line").unique().height
