"""Findings stage, shared helpers for the configuration and error rules (registers no rule).

Rows of any log table become evidence (path, line, text), ranks (through the RANKS table) and
hosts; `job_shape` says what the evidence tells about the job's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ncclscope.findings.registry import Context
from ncclscope.records import Evidence, Finding, Severity
from ncclscope.schema import ORIGIN

MAX_EVIDENCE = 12
PROC = ["host", "pid"]
CITE = list(ORIGIN)


def cite(*frames: pl.DataFrame) -> pl.DataFrame:
    """Stack rows of different log tables, keeping only their ORIGIN columns (for `make`)."""
    parts = [f.select(CITE) for f in frames if f.height]
    return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame(schema=ORIGIN)


def norm_host(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.col("host").fill_null(""))


def live_warnings(ctx: Context) -> pl.DataFrame:
    """Non-benign warnings (WARN lines and the INFO retry/downgraded ones)."""
    return ctx.logs.warnings.filter(~pl.col("benign").fill_null(False))


def warnings_matching(ctx: Context, pattern: str) -> pl.DataFrame:
    """Warning rows (benign or not) whose message matches `pattern`, a regex."""
    return ctx.logs.warnings.filter(pl.col("message").fill_null("").str.contains(pattern))


def with_rank(df: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """Add `grank`: the global rank of the process (or of its GPU, for multi-GPU processes) that
    printed each row; null when unknown. Launcher rank tags fill in for lines without a prefix."""
    r = norm_host(ranks.select("host", "pid", "cuda_dev", "rank")).filter(pl.col("pid").is_not_null())
    r = r.with_columns(n=pl.len().over(PROC))
    one = r.filter(pl.col("n") == 1).select(*PROC, pl.col("rank").alias("_r1"))
    many = r.filter(pl.col("n") > 1).select(*PROC, "cuda_dev", pl.col("rank").alias("_r2"))
    out = norm_host(df).join(one, on=PROC, how="left").join(many, on=[*PROC, "cuda_dev"], how="left")
    hint = pl.col("rank_hint") if "rank_hint" in df.columns else pl.lit(None, dtype=pl.Int64)
    return out.with_columns(grank=pl.coalesce("_r1", "_r2", hint)).drop("_r1", "_r2")


def evidence(df: pl.DataFrame, limit: int = MAX_EVIDENCE) -> tuple[Evidence, ...]:
    """Distinct cited lines in file order, at most `limit`."""
    if df.is_empty():
        return ()
    rows = df.select("path", "line", "text").unique(["path", "line"]).sort(["path", "line"]).head(limit)
    return tuple(
        Evidence(path=p or "", line=int(n or 0), text=(t or "").strip()) for p, n, t in rows.iter_rows()
    )


def ordered_evidence(df: pl.DataFrame, limit: int = MAX_EVIDENCE) -> tuple[Evidence, ...]:
    """Cited lines in the row order given (first is the root), without repeats."""
    rows = df.select("path", "line", "text").unique(["path", "line"], maintain_order=True).head(limit)
    return tuple(
        Evidence(path=p or "", line=int(n or 0), text=(t or "").strip()) for p, n, t in rows.iter_rows()
    )


def ranks_of(df: pl.DataFrame, ranks: pl.DataFrame) -> tuple[int, ...]:
    if df.is_empty():
        return ()
    col = df["grank"] if "grank" in df.columns else with_rank(df, ranks)["grank"]
    return tuple(sorted({int(v) for v in col.drop_nulls().to_list()}))


def hosts_of(df: pl.DataFrame) -> tuple[str, ...]:
    if df.is_empty() or "host" not in df.columns:
        return ()
    return tuple(sorted({h for h in df["host"].drop_nulls().to_list() if h}))


def make(
    rule_id: str,
    severity: Severity,
    title: str,
    why: str,
    fix: str,
    rows: pl.DataFrame,
    ctx: Context,
    *,
    ordered: bool = False,
    metrics: dict[str, object] | None = None,
    named_ranks: Sequence[int] = (),
) -> Finding:
    """A finding whose ranks, hosts and evidence come from `rows` (any ORIGIN-carrying table);
    `named_ranks` adds ranks that the cited messages name themselves."""
    ev = ordered_evidence(rows) if ordered else evidence(rows)
    ranks = tuple(sorted(set(ranks_of(rows, ctx.ranks)) | set(named_ranks)))
    return Finding(
        id=rule_id,
        severity=severity,
        title=title,
        why=why,
        fix=fix,
        ranks=ranks,
        hosts=hosts_of(rows),
        evidence=ev,
        metrics=dict(metrics or {}),
    )


def where(row: pl.DataFrame, ctx: Context) -> str:
    """'on <host> rank <r>' for the first row, or '<file>:<line>' when the line names no process."""
    r = with_rank(row, ctx.ranks).row(0, named=True)
    parts = [
        f"on {r['host']}" if r.get("host") else "",
        f"rank {r['grank']}" if r.get("grank") is not None else "",
    ]
    return " ".join(p for p in parts if p) or f"in {Path(r['path'] or '').name}:{r['line']}"


@dataclass(frozen=True)
class JobShape:
    """What the evidence says about the job's size; `multi_node` is None when it cannot tell."""

    hosts: tuple[str, ...]
    multi_node: bool | None
    reason: str


def job_shape(ctx: Context) -> JobShape:
    """Whether the job spans nodes, as the job's facts say (`align.facts`: NCCL's nNodes first, then the host
    names, nRanks > localRanks, NET channels); `multi_node` is None when they cannot tell."""
    job = ctx.facts
    return JobShape(
        job.hosts,
        job.multi_node.value if isinstance(job.multi_node.value, bool) else None,
        job.multi_node.how,
    )


def first_per(df: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """The first row (by path, line) of each key group."""
    return df.sort(["path", "line"]).unique(list(keys), keep="first", maintain_order=True)
