"""Parse stage, needles: literal text every match of a regex must contain, read off the regex itself.

A line without an NCCL prefix matters to the reader only if some pattern could match it: a grammar
family (NCCL's banner and `Last error:` texts print without a prefix), the PyTorch line anchor, a
format of PyTorch's message catalog, or a pattern the rules look for in unknown lines. Each of those
regexes is parsed (Python's own regex parser) into the set of literals one of which every match
contains; one Polars pass with all of them as alternatives (literal search, no per-line Python) tells
which lines to offer to the patterns at all. A necessary condition only: a line it keeps may still
match nothing, a line it drops matches none of the patterns, so results do not change.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any
from re import _constants as C  # the regex parser's opcode names
from re import _parser as P

_META = "()[]{}.*+?|^$\\#&-~"  # escaped for Rust's regex (it rejects escapes of other characters)
VERSION = 1  # bump when the extraction changes (cached results are keyed by it)


@functools.cache
def literals(pattern: str) -> frozenset[str] | None:
    """Literals one of which every match of `pattern` contains; None when no such set is found.

    Case-insensitive parts (`(?i)`) give lowercase literals prefixed with `(?i)` (see `regex`)."""
    try:
        parsed = P.parse(pattern)
    except Exception:  # noqa: BLE001 - a pattern Python cannot parse has no needles
        return None
    ci = bool(parsed.state.flags & C.SRE_FLAG_IGNORECASE)
    best = _best(list(parsed), ci)
    return frozenset(best) if best else None


def _sub(items: Iterable[tuple[Any, Any]], ci: bool) -> set[str] | None:
    return _best(list(items), ci)


def _best(items: Sequence[tuple[Any, Any]], ci: bool) -> set[str] | None:
    """The candidate set of a sequence whose shortest literal is longest (each candidate is required)."""
    cands: list[set[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            text = "".join(run)
            cands.append({("(?i)" + text.lower()) if ci else text})
            run.clear()

    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op is C.SUBPATTERN:
            _, add, _, sub = av
            s = _sub(sub, ci or bool(add & C.SRE_FLAG_IGNORECASE))
            if s:
                cands.append(s)
        elif op is C.BRANCH:
            union: set[str] = set()
            for branch in av[1]:
                s = _sub(branch, ci)
                if not s:
                    union = set()
                    break
                union |= s
            if union:
                cands.append(union)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, _, sub = av
            if lo >= 1:
                s = _sub(sub, ci)
                if s:
                    cands.append(s)
    flush()
    if not cands:
        return None
    return max(cands, key=lambda s: min(len(_bare(x)) for x in s))


def _bare(needle: str) -> str:
    return needle.removeprefix("(?i)")


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _META else c for c in text)


def regex(needles: Iterable[str]) -> str:
    """One alternation of the needles for Polars (literal search; `(?i)` needles case-insensitively)."""
    plain = sorted({n for n in needles if not n.startswith("(?i)")})
    folded = sorted({_bare(n) for n in needles if n.startswith("(?i)")})
    alts = [_escape(n) for n in plain]
    if folded:
        alts.append("(?i:" + "|".join(_escape(n) for n in folded) + ")")
    return "|".join(alts)


def of_all(patterns: Iterable[str]) -> frozenset[str] | None:
    """Needles of a set of patterns together (a line any of them matches holds one); None if one has none."""
    out: set[str] = set()
    for p in patterns:
        lits = literals(p)
        if not lits or any(len(_bare(n)) < 1 for n in lits):
            return None
        out |= lits
    return frozenset(out)
