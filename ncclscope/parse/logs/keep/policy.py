"""Parse stage, keep policy: what the consumers search unrecognised lines for, declared by them.

A big input keeps only the unknown lines a consumer may read (`evidence`), and the fast path rejects at
once the lines no pattern can claim (`inert`). The patterns come from the consumers themselves: a rule
declares them (`@rule(..., searches=...)`), the align, hang and diff stages in a `SEARCHES` tuple next to
the pattern they use, and the session gathers them into one `KeepPolicy` it passes to the reader. The
reader holds no copy of a consumer's regex: a consumer that searches a new text declares it, and a test
reads each consumer's declaration against the lines a big input keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Search:
    """One pattern a consumer searches the `unknown` lines with, and who (`owner`, for notes and tests)."""

    owner: str
    pattern: str


@dataclass(frozen=True)
class KeepPolicy:
    """The searches a reading must keep the evidence of (empty: only the positional evidence)."""

    searches: tuple[Search, ...] = ()

    @classmethod
    def of(cls, *groups: Iterable[Search]) -> KeepPolicy:
        """The searches of every group, each pattern once, in order."""
        seen: dict[str, Search] = {}
        for group in groups:
            for s in group:
                seen.setdefault(s.pattern, s)
        return cls(tuple(seen.values()))

    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(s.pattern for s in self.searches)


@functools.cache
def combined(policy: KeepPolicy) -> str | None:
    """All of the policy's patterns as one regex (each alternative keeps its own inline flags); None if none."""
    return "|".join(f"(?:{p})" for p in policy.patterns) or None


POSITIONAL = (
    KeepPolicy()
)  # no search: a big input keeps only its positional evidence (callers outside a session)
