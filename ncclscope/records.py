"""Core record types shared by all stages: where a fact came from, and what a finding says.

Records are frozen and keep their source (path, line) so every finding can cite its evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class Evidence:
    """One cited line of a log (line >= 1) or one trace event (line = 0, text names the event)."""

    path: str
    line: int
    text: str

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True, slots=True)
class Finding:
    """A diagnosis produced by one rule; `metrics` carries rule-specific numbers for JSON readers."""

    id: str
    severity: Severity
    title: str
    why: str
    fix: str
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    metrics: dict[str, object] = field(default_factory=dict, hash=False, compare=False)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "evidence": [e.to_json() for e in self.evidence],
            "why": self.why,
            "fix": self.fix,
        }
        if self.metrics:
            out["metrics"] = self.metrics
        return out


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; stable within a severity (rule order)."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])
