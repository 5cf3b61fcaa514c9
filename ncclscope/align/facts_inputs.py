"""Align stage, job facts about the inputs themselves: the library, the launcher, whether opCount counts,
whether each input is a whole log or an excerpt, and whether the inputs hold several jobs.

`Fact` (a value, how it was inferred, and `proven`/`likely`/`unknown`) is defined here; `align.facts` builds
`JobFacts` from these and from the rank map. An input is `whole` only when it shows the job's start (a
version banner or Init START) and its end (teardown, the application's success marker or nccl-tests'
`# Avg bus bandwidth` footer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from ncclscope.align.phase import APP_END, TEARDOWN_MSG
from ncclscope.frames import LogFrames
from ncclscope.parse.logs.keep.policy import Search

Sure = Literal["proven", "likely", "unknown"]
# RCCL prints its banner bare (`RCCL version : 2.22.3-HEAD:271856d`, NCCL_DEBUG=WARN) or, under
# NCCL_DEBUG=INFO, as an INFO line behind the usual prefix (MangoBoost's MLPerf v5.1 MI300X/MI325X logs).
RCCL_BANNER = r"(?:^\s*|\bNCCL INFO\s+)RCCL version\s*:?\s*(\S+)"
NCCLTESTS_FOOTER = r"^#\s*Avg bus bandwidth\s*:"


@dataclass(frozen=True)
class Fact:
    """One fact: its value (None when unknown), the evidence it came from, and how sure it is."""

    value: int | str | bool | None
    how: str
    sure: Sure = "proven"


UNKNOWN = Fact(None, "no line says", "unknown")


@dataclass(frozen=True)
class InputFact:
    """One input file: `whole` True (start and end seen), False (an excerpt), None (cannot tell), and why."""

    path: str
    whole: bool | None
    how: str


LAUNCHERS = (
    ("torchrun", r"torch\.distributed\.(?:run|elastic)|\[default\d+\]:"),
    ("slurm", r"\bsrun\b|SLURM_JOB|slurmstepd"),
    ("mpirun", r"\bmpirun\b|OMPI_COMM_WORLD|prterun"),
    ("deepspeed", r"deepspeed\.launcher"),
)
# Every launcher pattern and nccl-tests' footer (declared in SEARCHES: kept for it in big inputs).
LAUNCHER = (
    r"torch\.distributed\.(?:run|elastic)|\[default\d+\]:|\bsrun\b|SLURM_JOB|slurmstepd|\bmpirun\b"
    r"|OMPI_COMM_WORLD|prterun|deepspeed\.launcher|#\s*Avg bus bandwidth\s*:"
)
# What this module (and diff's version facts, which read the same banner) searches unknown lines for.
SEARCHES = (
    Search("align/facts_inputs.py LAUNCHER", LAUNCHER),
    Search("align/facts_inputs.py RCCL_BANNER", RCCL_BANNER),
)


def launcher_of(logs: LogFrames) -> Fact:
    text = pl.concat(
        [logs.unknown.select("text"), logs.torch.select("text"), logs.env.select("text")],
        how="vertical_relaxed",
    )["text"].fill_null("")
    for name, pattern in LAUNCHERS:
        hit = text.filter(text.str.contains(pattern))
        if hit.len():
            return Fact(name, f"a line matches {name}'s output: {hit[0].strip()[:60]}", "likely")
    return UNKNOWN


def library_of(logs: LogFrames) -> Fact:
    rccl = logs.unknown["text"].fill_null("").str.extract(RCCL_BANNER, 1).drop_nulls()
    rocm = logs.known.filter(pl.col("text").fill_null("").str.contains(r"hipify|rocm_smi_lib|ROCr version"))
    versions = logs.versions.filter(pl.col("kind") == "nccl")["value"].drop_nulls().unique().sort().to_list()
    if rccl.len():
        return Fact("RCCL " + rccl[0], "RCCL's version banner")
    if rocm.height:
        v = f" {versions[0]}" if versions else ""
        return Fact(f"RCCL{v}", "ROCm lines (hipify paths, rocm_smi_lib, ROCr)", "likely")
    if versions:
        return Fact("NCCL " + ", ".join(versions), "NCCL's version banner")
    return UNKNOWN


def opcount_of(logs: LogFrames) -> Fact:
    """Whether opCount counts the collectives: nccl-tests and some launchers print `opCount 0` on every line."""
    procs = logs.coll.procs
    if procs.is_empty():
        return UNKNOWN
    many = procs.filter(pl.col("n_coll") > 1)
    if many.is_empty():
        return Fact(None, "no process printed two COLL lines", "unknown")
    if (many["max_op_count"].fill_null(0) == 0).all():
        return Fact(False, f"{many.height} process(es) print opCount 0 on every COLL line")
    return Fact(True, "opCount grows on the COLL lines")


def inputs_of(logs: LogFrames) -> tuple[InputFact, ...]:
    text = logs.unknown.select("path", "line", "text")
    start = pl.concat(
        [
            logs.versions.filter(pl.col("kind") == "nccl").select("path"),
            logs.inits.filter(pl.col("phase") == "start").select("path"),
            text.filter(pl.col("text").fill_null("").str.contains(RCCL_BANNER)).select("path"),
        ]
    )["path"]
    end_text = f"{APP_END}|{TEARDOWN_MSG}|{NCCLTESTS_FOOTER}"
    ends = pl.concat(
        [
            text.filter(pl.col("text").fill_null("").str.contains(end_text)).select("path"),
            logs.inits.filter(pl.col("phase").fill_null("").str.contains(r"^(?:destroy|abort)_")).select(
                "path"
            ),
            logs.warnings.filter(pl.col("message").fill_null("").str.contains(TEARDOWN_MSG)).select("path"),
            logs.known.filter(pl.col("text").fill_null("").str.contains(end_text)).select("path"),
        ]
    )["path"]
    starts, stops = set(start.to_list()), set(ends.to_list())
    out = []
    for info in logs.inputs:
        s, e = info.path in starts, info.path in stops
        if s and e:
            out.append(
                InputFact(info.path, True, "the job's start (banner or Init START) and its end are in it")
            )
        elif not s and not e:
            out.append(
                InputFact(info.path, False, "neither the job's start nor its end is in it: an excerpt")
            )
        else:
            seen = "start" if s else "end"
            out.append(InputFact(info.path, None, f"only the job's {seen} is in it"))
    return tuple(out)


def jobs_of(inits: pl.DataFrame) -> tuple[tuple[tuple[str, ...], ...], Fact]:
    """Inputs that share no communicator and each hold every rank of their own largest one are separate jobs
    (two runs' logs in one directory); anything less is one job as far as the lines tell."""
    ids = inits.filter(pl.col("comm_id").is_not_null() & pl.col("path").is_not_null())
    paths = sorted(set(ids["path"].to_list()))
    if len(paths) < 2:
        return (), Fact(False if paths else None, "at most one input names communicators", "likely")
    parent = {p: p for p in paths}

    def root(p: str) -> str:
        while parent[p] != p:
            p = parent[p]
        return p

    for _, g in ids.group_by("comm_id"):
        ps = sorted(set(g["path"].to_list()))
        for other in ps[1:]:
            parent[root(other)] = root(ps[0])
    groups: dict[str, list[str]] = {}
    for p in paths:
        groups.setdefault(root(p), []).append(p)
    if len(groups) < 2:
        return (), Fact(False, "the inputs share communicators (commId)")
    for members in groups.values():
        g = ids.filter(pl.col("path").is_in(members))
        top = g.sort("nranks", descending=True, nulls_last=True)["comm_id"][0]
        world = g.filter(pl.col("comm_id") == top)
        if world["nranks"].max() != world["rank"].n_unique():
            how = "the inputs share no commId, but one of them lacks ranks of its largest communicator"
            return (), Fact(None, how, "unknown")
    jobs = tuple(tuple(m) for m in sorted(groups.values()))
    how = f"{len(jobs)} groups of inputs share no commId and each holds every rank of its own largest communicator"
    return jobs, Fact(True, how)
