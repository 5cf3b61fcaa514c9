"""Findings stage: the rule registry and the context every rule reads.

A rule is a small pure function `(ctx) -> Iterable[Finding]` registered with a stable id, a
severity and a title; its docstring states the heuristic and its thresholds (`ncclscope rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ncclscope.findings.stages import StageOutputs
from ncclscope.parse.logs.keep.policy import Search
from ncclscope.records import Finding, Severity, sort_findings


@dataclass(frozen=True, kw_only=True)
class Context(StageOutputs):
    """Everything a rule may read: the stage outputs (`stages.StageOutputs`, with the job's `facts` and the
    `init_rows` every rule shares) and, for `post` rules, what the other rules found."""

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
    searches: tuple[str, ...] = ()  # patterns it searches unknown lines with (kept for it in big inputs)

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


REGISTRY: dict[str, Rule] = {}


def rule(
    id: str, severity: Severity, title: str, group: str, *, post: bool = False, searches: tuple[str, ...] = ()
) -> Callable[[RuleFn], RuleFn]:
    """Register a rule under a stable id. The id must be unique across the package. `searches`: the patterns
    it reads unknown lines with (the reader keeps the lines they match in a big input: `rule_searches`)."""

    def deco(fn: RuleFn) -> RuleFn:
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id!r}")
        REGISTRY[id] = Rule(
            id=id, severity=severity, title=title, fn=fn, group=group, post=post, searches=searches
        )
        return fn

    return deco


# Within a severity, hangs and failures head the list (and the verdict) before configuration advice.
GROUP_ORDER = {"hang": 0, "errors": 1, "config": 2, "traces": 3, "warnings": 4}


def run_rules(ctx: Context, only: Iterable[str] | None = None, *, threads: int = 1) -> list[Finding]:
    """Run every registered rule (or those named) and return findings: errors first, then by group.
    `threads` > 1 runs that many rules at once (rules are pure functions of the context; their findings
    are gathered in registry order either way, so the result does not depend on it)."""
    _load_rule_modules()
    wanted = set(only) if only is not None else None
    chosen = [r for r in REGISTRY.values() if wanted is None or r.id in wanted]
    out = _each(ctx, [r for r in chosen if not r.post], threads)
    out += _each(replace(ctx, prior=tuple(out)), [r for r in chosen if r.post], threads)
    group = {r.id: GROUP_ORDER.get(r.group, len(GROUP_ORDER)) for r in REGISTRY.values()}
    return sort_findings(sorted(out, key=lambda f: group.get(f.id, len(GROUP_ORDER))))


def _each(ctx: Context, rules: list[Rule], threads: int) -> list[Finding]:
    """The findings of `rules` on `ctx`, in the order of `rules`."""
    if threads <= 1 or len(rules) <= 1:
        return [f for r in rules for f in r.fn(ctx)]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ncclscope-rule") as pool:
        return [f for found in pool.map(lambda r: list(r.fn(ctx)), rules) for f in found]


def rule_searches() -> tuple[Search, ...]:
    """What every rule searches unknown lines for (`keep.policy`), in registry order."""
    return tuple(Search(f"rule {r.id}", p) for r in all_rules() for p in r.searches)


def all_rules() -> list[Rule]:
    _load_rule_modules()
    return list(REGISTRY.values())


# Every rules module, listed once: importing one registers its rules (an unlisted module's rules
# never run, and tests/findings/test_registry.py checks that each rules_*.py file is listed).
RULE_MODULES = (
    "rules_config",
    "rules_errors",
    "rules_failed_stack",
    "rules_gpu",
    "rules_hang",
    "rules_init",
    "rules_jobs",
    "rules_kernel",
    "rules_iface",
    "rules_library",
    "rules_nccl_reports",
    "rules_nccltests",
    "rules_nccltests_mpi",
    "rules_results",
    "rules_topology",
    "rules_traces",
    "rules_warn",
)


def _load_rule_modules() -> None:
    import importlib

    for name in RULE_MODULES:
        importlib.import_module(f"ncclscope.findings.{name}")
