"""Findings stage: the rule registry and the context every rule reads.

A rule is a small pure function `(ctx) -> Iterable[Finding]` registered with a stable id, a
severity and a title; its docstring states the heuristic and its thresholds (`ncclscope rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from ncclscope.align.phase import JobPhase
from ncclscope.frames import LogFrames
from ncclscope.records import Finding, Severity, sort_findings


@dataclass(frozen=True)
class Context:
    """Everything a rule may read. Optional evidence kinds are None when not supplied."""

    logs: LogFrames
    ranks: pl.DataFrame  # schema.RANKS
    comms: pl.DataFrame  # schema.COMMS
    traces: Any = None  # ncclscope.parse.trace.TraceFrames
    aligned_traces: Any = None  # ncclscope.align.traces.AlignedCollectives
    flight: Any = None  # ncclscope.parse.flight.FlightFrames
    options: dict[str, object] = field(default_factory=dict)
    phase: JobPhase = field(default_factory=JobPhase)  # teardown/failure lines per input (align.phase)
    prior: tuple[Finding, ...] = ()  # what the other rules found (given to `post` rules only)


RuleFn = Callable[[Context], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    title: str
    fn: RuleFn
    group: str  # "config" | "errors" | "hang" | "traces" | "warnings"
    post: bool = False  # runs after every other rule and reads their findings (`Context.prior`)

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


REGISTRY: dict[str, Rule] = {}


def rule(id: str, severity: Severity, title: str, group: str, *, post: bool = False) -> Callable[[RuleFn], RuleFn]:
    """Register a rule under a stable id. The id must be unique across the package."""

    def deco(fn: RuleFn) -> RuleFn:
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id!r}")
        REGISTRY[id] = Rule(id=id, severity=severity, title=title, fn=fn, group=group, post=post)
        return fn

    return deco


# Within a severity, hangs and failures head the list (and the verdict) before configuration advice.
GROUP_ORDER = {"hang": 0, "errors": 1, "config": 2, "traces": 3, "warnings": 4}


def run_rules(ctx: Context, only: Iterable[str] | None = None) -> list[Finding]:
    """Run every registered rule (or those named) and return findings: errors first, then by group."""
    _load_rule_modules()
    wanted = set(only) if only is not None else None
    chosen = [r for r in REGISTRY.values() if wanted is None or r.id in wanted]
    out: list[Finding] = []
    for r in chosen:
        if not r.post:
            out.extend(r.fn(ctx))
    after = replace(ctx, prior=tuple(out))
    for r in chosen:
        if r.post:
            out.extend(r.fn(after))
    group = {r.id: GROUP_ORDER.get(r.group, len(GROUP_ORDER)) for r in REGISTRY.values()}
    return sort_findings(sorted(out, key=lambda f: group.get(f.id, len(GROUP_ORDER))))


def all_rules() -> list[Rule]:
    _load_rule_modules()
    return list(REGISTRY.values())


def _load_rule_modules() -> None:
    # Importing a rules module registers its rules; modules are added as stages land.
    import importlib
    import pkgutil

    import ncclscope.findings as pkg

    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name.startswith("rules_"):
            importlib.import_module(f"ncclscope.findings.{m.name}")
