"""Findings stage, nccl-tests launched as many 1-rank jobs: a build without MPI, or several processes
started without mpirun, each testing its own GPU alone.

nccl-tests prints the whole job's device list on its first rank (`#  Rank  0 Group  0 Pid … on host device
…`, one line per rank; nccl-tests src/common.cu). A job of N ranks lists N. Several processes whose lists
each hold one rank 0 (`nThread 1 nGpus 1`), on several hosts or pids, ran N separate 1-rank tests: busbw
is 0 (a 1-rank collective moves nothing between GPUs) and no link was measured. One such process alone is a
legitimate single-GPU run and is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.records import Evidence, Finding

MIN_PROCESSES = 2  # 1-rank runs from this many distinct processes make the pattern (one alone is legitimate)


@rule("nccltests-no-mpi", "error", "nccl-tests ran as separate 1-rank jobs (no MPI)", group="config")
def nccltests_no_mpi(ctx: Context) -> Iterable[Finding]:
    """Error when at least MIN_PROCESSES distinct processes (host, pid) each print an nccl-tests run whose
    device list holds exactly one rank, rank 0, with `nThread 1 nGpus 1`: the processes did not form one job
    (nccl-tests built without MPI=1, or not started with mpirun/srun --mpi), so every busbw is 0."""
    nt = ctx.nccltests
    if nt.devices.is_empty() or nt.runs.is_empty():
        return []
    per_run = nt.devices.group_by("path", "run").agg(
        pl.len().alias("n"),
        pl.col("rank").max().alias("top"),
        pl.col("host").first(),
        pl.col("pid").first(),
        pl.col("line").first(),
        pl.col("text").first(),
    )
    lone = per_run.filter((pl.col("n") == 1) & (pl.col("top") == 0)).join(
        nt.runs.filter((pl.col("nthreads") == 1) & (pl.col("ngpus") == 1)).select("path", "run"),
        on=["path", "run"],
        how="semi",
    )
    procs = lone.select("host", "pid").unique()
    if procs.height < MIN_PROCESSES:
        return []
    hosts = tuple(sorted({h for h in lone["host"].drop_nulls().to_list() if h}))
    evidence = tuple(
        Evidence(path=p, line=ln, text=str(tx).strip())
        for p, ln, tx in lone.sort("path", "line").select("path", "line", "text").head(6).iter_rows()
    )
    return [
        Finding(
            id="nccltests-no-mpi",
            severity="error",
            title=f"{procs.height} processes each ran nccl-tests as its own 1-rank job "
            f"(on {', '.join(hosts) or 'unnamed hosts'}): they never formed one job",
            why="Each process lists only itself as rank 0 of a 1-rank job, so every collective stays on one "
            "GPU: busbw is 0 and no link between GPUs or nodes was measured. nccl-tests forms a multi-process "
            "job only when built with MPI=1 and started by an MPI launcher.",
            fix="Rebuild nccl-tests with `make MPI=1 MPI_HOME=…` and start it with mpirun (or srun --mpi=pmix), "
            "one process per GPU (`-g 1`); or run one process with `-g <GPUs>` per node for a single-node test.",
            ranks=(0,),
            hosts=hosts,
            evidence=evidence,
            metrics={"processes": procs.height, "hosts": list(hosts)},
        )
    ]
