"""CLI stage: `--select`, `--ignore` and `--fail-on` for CI (which findings count, and when to fail).

A pattern is a rule id (`version-mismatch`), an id prefix ending in `-` or `*` (`nccltests-`, `ib*`) or
a rule group (`config`, `errors`, `hang`, `traces`, `warnings`); several are given comma-separated or by
repeating the option. A pattern that matches no rule is a usage error (exit 2), so a typo never
silences a check. Rules still all run (some read the others' findings); the filter applies to what is
reported and to the exit status.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from ncclscope.errors import EXIT_FINDINGS, EXIT_OK, InputError

if TYPE_CHECKING:
    from ncclscope.findings.registry import Rule
    from ncclscope.session import Session

Select = Annotated[
    list[str] | None,
    typer.Option(
        "--select",
        help="Report only these rules: ids, id prefixes (nccltests-, ib*) or groups, comma-separated.",
        show_default=False,
    ),
]
Ignore = Annotated[
    list[str] | None,
    typer.Option("--ignore", help="Leave these rules out (same forms as --select).", show_default=False),
]


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


# Which severities make `--fail-on X` exit 1: the named one and every one above it.
FAILING: dict[FailOn, frozenset[str]] = {
    FailOn.error: frozenset({"error"}),
    FailOn.warning: frozenset({"error", "warning"}),
    FailOn.info: frozenset({"error", "warning", "info"}),
    FailOn.never: frozenset(),
}


FailOnOption = Annotated[
    FailOn,
    typer.Option(
        "--fail-on",
        help="Exit 1 when a reported finding has this severity or a higher one (never: exit 0).",
        case_sensitive=False,
    ),
]


def _patterns(values: list[str] | None) -> list[str]:
    return [p.strip() for v in values or [] for p in v.split(",") if p.strip()]


def matches(rule: Rule, pattern: str) -> bool:
    """Whether `pattern` (an id, an id prefix ending in `-` or `*`, or a group) names `rule`."""
    if pattern.endswith(("*", "-")):
        return rule.id.startswith(pattern.rstrip("*"))
    return rule.id == pattern or rule.group == pattern


def chosen_ids(select: list[str] | None, ignore: list[str] | None) -> frozenset[str] | None:
    """The ids of the rules to report (None: every rule); InputError for a pattern that names none."""
    sel, ign = _patterns(select), _patterns(ignore)
    if not sel and not ign:
        return None
    from ncclscope.findings import all_rules

    rules = all_rules()
    for option, pats in (("--select", sel), ("--ignore", ign)):
        for p in pats:
            if not any(matches(r, p) for r in rules):
                raise InputError(f"{option}: {p!r} names no rule (see `ncclscope rules`)")
    keep = [r for r in rules if not sel or any(matches(r, p) for p in sel)]
    return frozenset(r.id for r in keep if not any(matches(r, p) for p in ign))


def filtered(s: Session, ids: frozenset[str] | None) -> Session:
    """The session with only the findings of the chosen rules (all of them when `ids` is None)."""
    if ids is None:
        return s
    from ncclscope.session import with_findings  # the CLI imports the analysis only when it runs one

    return with_findings(s, tuple(f for f in s.findings if f.id in ids))


def exit_code(s: Session, fail_on: FailOn) -> int:
    """1 when a finding of a failing severity is reported, else 0."""
    bad = FAILING[fail_on]
    return EXIT_FINDINGS if any(f.severity in bad for f in s.findings) else EXIT_OK
