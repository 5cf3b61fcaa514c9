"""Diagnosis stage: one verdict from the findings, with the echoes folded under their cause.

Findings → events (classed by `knowledge.KINDS`) → links (`knowledge.LINKS`) → causes, the first of
which is the verdict. Pure: findings and facts in, `Diagnosis` out.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclscope.diagnosis.events import DiagnosisInput, to_events
from ncclscope.diagnosis.knowledge import DEFAULT, Knowledge
from ncclscope.diagnosis.model import Cause, Diagnosis, Event, Link, Step
from ncclscope.diagnosis.reason import causes, link
from ncclscope.records import Finding

__all__ = ["Cause", "Diagnosis", "DiagnosisInput", "Event", "Knowledge", "Link", "Step", "diagnose"]


NO_INPUT = DiagnosisInput()


def diagnose(
    findings: Sequence[Finding], given: DiagnosisInput = NO_INPUT, knowledge: Knowledge = DEFAULT
) -> Diagnosis:
    """The diagnosis of a set of findings (in their report order)."""
    events = to_events(findings, given, knowledge)
    links = link(events, knowledge)
    return Diagnosis(causes=causes(events, links), events=events, links=links)
