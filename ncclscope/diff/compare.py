"""Diff stage, comparison: two analysed runs in, one `RunDiff` out (pure; nothing is printed).

Facts are lined up by global rank, host role (`node i`) or job, as each run scopes them; ranks or nodes
that exist in one run only are left to the `world` fact rather than listed one by one. Values that differ
are grouped by (fact, value in A, value in B), so a job-wide change is one line, not one per rank.
"""

from __future__ import annotations

import polars as pl

from ncclscope.diff.facts import FACTS, node_roles, session_facts
from ncclscope.diff.model import CATEGORIES, Difference, RunDiff
from ncclscope.diff.results import compare_results
from ncclscope.diff.verdict import verdict_difference
from ncclscope.records import Evidence
from ncclscope.session import Session

# Settings that change what NCCL prints, not what it does.
DEBUG_ENV = frozenset(
    {
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "NCCL_DEBUG_FILE",
        "NCCL_DEBUG_TIMESTAMP_FORMAT",
        "NCCL_DEBUG_TIMESTAMP_LEVELS",
        "TORCH_CPP_LOG_LEVEL",
    }
)
_KEYS = ["category", "key"]


def cause_rank(category: str, key: str) -> int:
    """Most likely cause first: library versions, GPU model and the transport NCCL chose; then the
    environment, GPUDirect RDMA, other versions, network details, topology; results (effects) last."""
    if category == "versions":
        return 0 if key in ("NCCL", "RCCL", "net plugin", "CUDA driver") else 40
    if category == "network":
        return {"network": 10, "transport": 10, "GPUDirect RDMA": 30}.get(key, 45)
    if category == "environment":
        return 20
    if category == "topology":
        return 5 if key == "GPU" else 50
    return 70


def _ranges(values: list[int]) -> str:
    vs, out, i = sorted(set(values)), [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        out.append(str(vs[i]) if i == j else f"{vs[i]}-{vs[j]}")
        i = j + 1
    return ",".join(out)


def _scope_label(kind: str, scopes: list[int], every: set[int]) -> str:
    if kind == "job":
        return "job"
    noun = "rank" if kind == "rank" else "node"
    if every and set(scopes) >= every:
        return f"all {noun}s"
    return f"{noun}{'s' if len(set(scopes)) > 1 else ''} {_ranges(scopes)}"


def _ev(path: str | None, line: int | None, text: str | None) -> tuple[Evidence, ...]:
    return (Evidence(path or "", int(line or 0), (text or "").strip()),) if path else ()


def _existing(s: Session, facts: pl.DataFrame) -> dict[str, set[int]]:
    ranks = set(s.ranks["rank"].drop_nulls().to_list())
    ranks |= set(facts.filter(pl.col("scope_kind") == "rank")["scope"].to_list())
    return {"rank": ranks, "node": set(node_roles(s)["node"].to_list()), "job": {0}}


def _collapse(f: pl.DataFrame) -> pl.DataFrame:
    """One job-scoped row per fact: every value any scope has."""
    return (
        f.sort("path", "line", nulls_last=True)
        .with_columns(pl.col("value").str.split(" | "))
        .explode("value")
        .group_by(_KEYS, maintain_order=True)
        .agg(
            scope_kind=pl.lit("job"),
            scope=pl.lit(0, pl.Int64),
            value=pl.col("value").unique().sort().str.join(" | "),
            path=pl.col("path").first(),
            line=pl.col("line").first(),
            text=pl.col("text").first(),
        )
        .select(list(FACTS))
    )


def _in_both(f: pl.DataFrame, both: dict[str, set[int]]) -> pl.DataFrame:
    """Facts of ranks and nodes that exist in both runs (the others are the `world` fact's business)."""
    keep = pl.lit(False)
    for kind, scopes in both.items():
        keep = keep | ((pl.col("scope_kind") == kind) & pl.col("scope").is_in(sorted(scopes)))
    return f.filter(keep)


def _signature(f: pl.DataFrame, name: str) -> pl.DataFrame:
    scope = pl.concat_str("scope_kind", pl.col("scope").cast(pl.Utf8), separator=":")
    return f.group_by(_KEYS).agg(scope.unique().sort().str.join(",").alias(name))


def compare_facts(
    fa: pl.DataFrame, fb: pl.DataFrame, exist_a: dict[str, set[int]], exist_b: dict[str, set[int]]
) -> list[Difference]:
    """Differences between two runs' facts. A fact printed by the same scopes in both runs is compared
    scope by scope; otherwise (older NCCL prints its version on rank 0 only, newer on every rank) both
    sides are collapsed to the job's set of values. A fact only one run prints is listed, and counts as
    relevant for the environment only (set/unset): elsewhere it mostly means the releases print different
    lines."""
    both = {k: exist_a[k] & exist_b[k] for k in exist_a}
    fa, fb = _in_both(fa, both), _in_both(fb, both)
    sig = _signature(fa, "sa").join(_signature(fb, "sb"), on=_KEYS, how="full", coalesce=True)
    # scope by scope where both print the fact for the same scopes, or only one run prints it at all
    same = sig.filter(
        (pl.col("sa") == pl.col("sb")) | pl.col("sa").is_null() | pl.col("sb").is_null()
    ).select(_KEYS)
    one_sided = sig.filter(pl.col("sa").is_null() | pl.col("sb").is_null()).select(_KEYS)
    a = pl.concat([fa.join(same, on=_KEYS, how="semi"), _collapse(fa.join(same, on=_KEYS, how="anti"))])
    b = pl.concat([fb.join(same, on=_KEYS, how="semi"), _collapse(fb.join(same, on=_KEYS, how="anti"))])
    j = a.join(b, on=[*_KEYS, "scope_kind", "scope"], how="full", coalesce=True, suffix="_b")
    j = j.filter(pl.col("value").ne_missing(pl.col("value_b")))
    j = j.join(one_sided.with_columns(one=pl.lit(True)), on=_KEYS, how="left")
    groups = (
        j.sort("scope")
        .group_by([*_KEYS, "scope_kind", "value", "value_b"], maintain_order=True)
        .agg(
            pl.col("scope"),
            pl.col("one").first(),
            pl.col("path").drop_nulls().first(),
            pl.col("line").drop_nulls().first(),
            pl.col("text").drop_nulls().first(),
            pl.col("path_b").drop_nulls().first(),
            pl.col("line_b").drop_nulls().first(),
            pl.col("text_b").drop_nulls().first(),
        )
    )
    out = []
    for g in groups.iter_rows(named=True):
        cat, key = g["category"], g["key"]
        quiet = (cat == "environment" and key in DEBUG_ENV) or (bool(g["one"]) and cat != "environment")
        out.append(
            Difference(
                cat,
                key,
                g["value"],
                g["value_b"],
                _scope_label(g["scope_kind"], g["scope"], both[g["scope_kind"]]),
                evidence_a=_ev(g["path"], g["line"], g["text"]),
                evidence_b=_ev(g["path_b"], g["line_b"], g["text_b"]),
                rank=cause_rank(cat, key),
                relevant=not quiet,
            )
        )
    return out


def _order(d: Difference) -> tuple[bool, int, int, str, str]:
    return (not d.relevant, d.rank, CATEGORIES.index(d.category), d.key, d.scope)


def diff_sessions(a: Session, b: Session, *, a_label: str = "A", b_label: str = "B") -> RunDiff:
    """Every fact and result that differs between runs `a` and `b`, most likely cause first."""
    fa, fb = session_facts(a), session_facts(b)
    diffs = verdict_difference(a, b) + compare_facts(fa, fb, _existing(a, fa), _existing(b, fb))
    diffs += compare_results(a, b)
    notes = []
    for label, s, f in ((a_label, a, fa), (b_label, b, fb)):
        if f.is_empty() and s.nccltests.is_empty:
            notes.append(
                f"{label}: no NCCL line and no nccl-tests table: nothing of this run could be compared"
            )
        elif s.logs.coverage.nccl_lines == 0:
            notes.append(
                f"{label}: no NCCL_DEBUG=INFO lines; versions, environment and network come from "
                "nccl-tests output only"
            )
    return RunDiff(
        a_label=a_label, b_label=b_label, differences=tuple(sorted(diffs, key=_order)), notes=tuple(notes)
    )
