"""Diff stage, verdict: what each run's diagnosis says, compared first (a hung run against a clean one
names the hang and the ranks behind it before any configuration difference)."""

from __future__ import annotations

from ncclscope.diagnosis import Cause
from ncclscope.diff.model import Difference
from ncclscope.session import Session

HEALTHY = "no failure diagnosed"


def verdict_difference(a: Session, b: Session) -> list[Difference]:
    """One `diagnosis` difference when the two runs' verdicts differ (cause, or the ranks behind it)."""
    va, vb = a.diagnosis.verdict, b.diagnosis.verdict
    if _key(va) == _key(vb):
        return []
    return [
        Difference(
            "diagnosis",
            "verdict",
            _say(va),
            _say(vb),
            "job",
            evidence_a=va.event.evidence[:1] if va is not None else (),
            evidence_b=vb.event.evidence[:1] if vb is not None else (),
            rank=-10,
        )
    ]


def _key(c: Cause | None) -> tuple[str, tuple[int, ...]] | None:
    if c is None or c.event.klass in ("risk", "info"):
        return None
    return (c.event.kind, c.ranks)


def _say(c: Cause | None) -> str:
    if c is None or c.event.klass in ("risk", "info"):
        return HEALTHY
    return c.sentence
