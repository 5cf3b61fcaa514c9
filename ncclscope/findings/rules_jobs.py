"""Findings stage, job rules: inputs that hold several separate jobs.

Logs of different runs in one directory must not be compared rank against rank (a false version or
environment mismatch). `align.facts` tells the jobs apart; this rule says so, and the comparing rules
(version-mismatch, env-mismatch) compare within each job only.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import first_per, make
from ncclscope.records import Finding


@rule("several-jobs", "warning", "The inputs hold several separate jobs", "config")
def several_jobs(ctx: Context) -> Iterable[Finding]:
    """Groups of inputs that share no communicator (commId) and each hold every rank of their own largest
    communicator are separate jobs (`JobFacts.jobs`). Warning: findings compare ranks within each job only;
    analyze each job on its own for a report of it."""
    jobs = ctx.facts.jobs
    if len(jobs) < 2:
        return []
    inits = ctx.init_rows.filter(pl.col("comm_id").is_not_null())
    cited = first_per(inits, ["path"])
    sizes = []
    for paths in jobs:
        n = inits.filter(pl.col("path").is_in(list(paths)))["nranks"].max()
        sizes.append(f"{len(paths)} file(s), {n!s} ranks")
    return [
        make(
            "several-jobs",
            "warning",
            f"The inputs hold {len(jobs)} separate jobs ({'; '.join(sizes)}): ranks are compared within each job only",
            ctx.facts.several_jobs.how
            + ". Versions, drivers and NCCL_* settings of different runs differ by design; "
            "read together they would look like one broken job.",
            "Analyze each job's logs on their own (one directory or glob per job).",
            cited,
            ctx,
            metrics={"jobs": [list(p) for p in jobs]},
        )
    ]
