"""Findings stage, quoted NCCL errors: NCCL's words that reach the log through another program's output.

PyTorch's DistBackendError prints NCCL's last WARN after `Last error:` (on that line or, without an NCCL
prefix, on the next); nccl-tests prints `host: Test CUDA failure file:line '<cudaGetErrorString>'` and
`host: Test NCCL failure file:line '<ncclGetErrorString>[ / <ncclGetLastError>]'` (src/common.h of
NVIDIA/nccl-tests, BSD-3-Clause). Each becomes a row with the ORIGIN columns and `message`: the NCCL text
to give a meaning to (findings.meanings). Registers no rule; rules_warn reads them.
"""

from __future__ import annotations

import polars as pl

from ncclscope.findings.registry import Context
from ncclscope.parse.logs.keep.policy import Search
from ncclscope.schema import ORIGIN

WRAPPER = r"^(?:\[[^\]]*\]:?\s*)+"  # launcher tags before a quoted line (`[rank1]: `, `[default0]:`)
NCCLTESTS = r"Test (CUDA|NCCL) failure \S+:\d+ '(.*)'"
# Searched for every rule that reads quoted errors (`quoted`): kept for them in big inputs (`keep.policy`).
SEARCHES = (Search("findings/quoted.py NCCLTESTS", NCCLTESTS),)
SCHEMA = {**ORIGIN, "message": pl.Utf8}


def last_errors(ctx: Context) -> pl.DataFrame:
    """`Last error:` lines of PyTorch's DistBackendError with the NCCL text after them (same line, or the
    next line when the reader kept it as an unknown or prefix-less warnings row)."""
    torch = ctx.logs.torch
    if torch.is_empty() or "kind" not in torch.columns:
        return pl.DataFrame(schema=SCHEMA)
    le = torch.filter(pl.col("kind") == "last_error").select(*ORIGIN, "detail")
    if le.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    bare = ctx.logs.warnings.filter(pl.col("level").is_null() | (pl.col("level") != "WARN"))
    nxt = pl.concat(
        [
            ctx.logs.unknown.select("path", "line", _next=pl.col("text").str.replace(WRAPPER, "")),
            bare.select("path", "line", _next=pl.col("message")),
        ],
        how="vertical_relaxed",
    )
    nxt = nxt.with_columns(pl.col("line") - 1).unique(["path", "line"], keep="first", maintain_order=True)
    le = le.join(nxt, on=["path", "line"], how="left")
    detail = pl.col("detail").fill_null("").str.strip_chars()
    body = pl.when(detail != "").then(detail).otherwise(pl.col("_next").fill_null("").str.strip_chars())
    return le.with_columns(message=body).filter(pl.col("message") != "").select(list(SCHEMA))


def nccltests_failures(ctx: Context) -> pl.DataFrame:
    """nccl-tests' `Test CUDA|NCCL failure` lines: the message is NCCL's last error when the line quotes one
    (`'<result> / <last error>'`), else `Cuda failure '<error>'` or the NCCL result string."""
    rows = ctx.logs.unknown.filter(pl.col("text").fill_null("").str.contains(NCCLTESTS))
    if rows.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    kind = pl.col("text").str.extract(NCCLTESTS, 1)
    quoted = pl.col("text").str.extract(NCCLTESTS, 2).str.strip_chars()
    parts = quoted.str.split_exact(" / ", 1)
    result, last = parts.struct.field("field_0"), parts.struct.field("field_1")
    message = (
        pl.when(kind == "CUDA")
        .then(pl.format("Cuda failure '{}'", quoted))
        .when(last.fill_null("").str.strip_chars() != "")
        .then(last.str.strip_chars())
        .otherwise(result)
    )
    return rows.with_columns(message=message).select(list(SCHEMA))


def quoted(ctx: Context) -> pl.DataFrame:
    """Every quoted NCCL error of the inputs (Last error texts, nccl-tests failures)."""
    return pl.concat([last_errors(ctx), nccltests_failures(ctx)], how="vertical_relaxed")
