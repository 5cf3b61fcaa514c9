"""Findings stage, the NCCL library itself: a build against NCCL 1.x, whatever else failed.

nccl-tests prints `# NCCL Tests compiled with NCCL %d.%d` (src/common.cu, NVIDIA/nccl-tests 925a705, Dec 2017,
until the 2.x-only rewrite); its nccl1_compat.h defines NCCL_MAJOR 1, NCCL_MINOR 0 when the headers define no
NCCL_MAJOR, so every NCCL 1.x build prints `1.0`. NCCL 1.x (NVIDIA/nccl up to v1.3.x) is the single-process,
single-node library that NCCL 2 replaced in 2017: no network transport, no current GPU or CUDA support, and
no fixes since. A failure under it is first of all that library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import make
from ncclscope.records import Finding, Severity

COMPILED_WITH = r"NCCL Tests compiled with NCCL (\d+)\.(\d+)"
OLDEST_SUPPORTED_MAJOR = 2  # NCCL 2.0 (2017) replaced the 1.x library; nothing older is maintained


def _old_builds(ctx: Context) -> pl.DataFrame:
    u = ctx.logs.unknown
    if u.is_empty():
        return u
    major = pl.col("text").fill_null("").str.extract(COMPILED_WITH, 1).cast(pl.Int64, strict=False)
    return u.filter(major.is_not_null() & (major < OLDEST_SUPPORTED_MAJOR))


@rule(
    "nccl-1x",
    "error",
    "Built against NCCL 1.x, the library NCCL 2 replaced in 2017",
    "config",
    post=True,
    searches=(COMPILED_WITH,),
)
def nccl_1x(ctx: Context) -> Iterable[Finding]:
    """nccl-tests says it was compiled with NCCL 1.x (`# NCCL Tests compiled with NCCL 1.0`; major below
    OLDEST_SUPPORTED_MAJOR). Error when another rule found an error (the failure is the old library's: upgrade
    first), else warning (the numbers measure a library nobody runs any more)."""
    rows = _old_builds(ctx)
    if rows.is_empty():
        return []
    failed = any(f.severity == "error" for f in ctx.prior)
    sev: Severity = "error" if failed else "warning"
    m = re.search(COMPILED_WITH, str(rows["text"][0]))
    version = f"{m.group(1)}.{m.group(2)}" if m else "1.x"
    return [
        make(
            "nccl-1x",
            sev,
            f"nccl-tests was built against NCCL {version} (the 1.x library)"
            + (": the failure is that library's" if failed else ""),
            "NCCL 1.x is the single-process library that NCCL 2 replaced in 2017: it has no network transport, "
            "does not know current GPUs, CUDA releases or drivers, and gets no fixes. nccl-tests prints `1.0` "
            "for any 1.x build (its nccl1_compat.h), so the headers found at build time were NCCL 1's.",
            "Install a current NCCL 2 (packages or NVIDIA/nccl), remove the old headers/libnccl.so.1 from the "
            "include and library paths, and rebuild nccl-tests with NCCL_HOME pointing at it.",
            rows.head(1),
            ctx,
            metrics={"nccl_version": version},
        )
    ]
