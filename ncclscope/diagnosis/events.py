"""Diagnosis stage, events: each finding classed by the knowledge table, placed in scope and time.

`DiagnosisInput` is what the stage reads besides the findings: each rule's registry group, the time
of every cited line that had one, and the member ranks of each process group a hang names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ncclscope.diagnosis.knowledge import CAUSE_CLASS_GROUP, DEFAULT_KINDS, Kind, Knowledge
from ncclscope.diagnosis.model import Event, When
from ncclscope.records import Finding


@dataclass(frozen=True)
class DiagnosisInput:
    """Facts about the evidence the diagnosis needs beyond the findings themselves."""

    rule_groups: Mapping[str, str] = field(default_factory=dict)  # rule id -> registry group
    stamps: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (path, line) -> ts_us
    group_members: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # hang group label -> ranks


def to_events(findings: Sequence[Finding], given: DiagnosisInput, k: Knowledge) -> tuple[Event, ...]:
    """One event per finding, in finding order."""
    return tuple(_event(i, f, given, k) for i, f in enumerate(findings))


def _event(i: int, f: Finding, given: DiagnosisInput, k: Knowledge) -> Event:
    facts = _facts(f, given, k)
    kind = next((e for e in k.kinds if _matches(e, f, facts)), None)
    if kind is None:
        kid, klass, tier = DEFAULT_KINDS[f.severity]
        reason = f"No knowledge entry classes {f.id}: a finding of {f.severity} severity is read as {klass}."
    else:
        kid, klass, tier, reason = kind.id, kind.klass, kind.tier, kind.reason
    groups = _groups(f)
    members = tuple(sorted({r for g in groups for r in given.group_members.get(g, ())}))
    return Event(
        index=i,
        finding_id=f.id,
        kind=kid,
        klass=klass,
        tier=tier,
        severity=f.severity,
        title=f.title,
        ranks=tuple(f.ranks),
        hosts=tuple(f.hosts),
        groups=groups,
        members=members,
        when=_when(f, given),
        evidence=f.evidence,
        kind_reason=reason,
        confidence=_str(f.metrics.get("confidence")),
        confidence_reason=_str(f.metrics.get("confidence_reason")),
    )


def _str(v: object) -> str | None:
    return str(v) if v is not None else None


def _facts(f: Finding, given: DiagnosisInput, k: Knowledge) -> dict[str, object]:
    """The finding's metrics plus the pseudo-metrics the knowledge table matches on (names with `_`)."""
    cc = f.metrics.get("cause_class")
    hang = f.metrics.get("class")
    return {
        **f.metrics,
        "_group": given.rule_groups.get(f.id, ""),
        "_finding_family": [k.finding_family[f.id]] if f.id in k.finding_family else [],
        "_cause_classes": [cc, CAUSE_CLASS_GROUP.get(str(cc), "")] if cc else [],
        # class d (a rank died) holds the group up exactly as class a does: a named rank never arrives
        "_hang_class": ["a" if hang in ("a", "d") else hang] if f.id == "collective-hang" else [],
    }


def _matches(e: Kind, f: Finding, facts: Mapping[str, object]) -> bool:
    if e.finding not in ("*", f.id):
        return False
    if e.severities and f.severity not in e.severities:
        return False
    if any(not facts.get(m) for m in e.has):
        return False
    if any(facts.get(m) != v for m, v in e.equals):
        return False
    if any(v not in _as_list(facts.get(m)) for m, v in e.contains):
        return False
    return all(_as_list(facts.get(m)) and set(_as_list(facts.get(m))) <= set(vs) for m, vs in e.only)


def _as_list(v: object) -> list[object]:
    return list(v) if isinstance(v, (list, tuple)) else []


def _groups(f: Finding) -> tuple[str, ...]:
    g = f.metrics.get("communicator")
    return (str(g),) if g else ()


def _when(f: Finding, given: DiagnosisInput) -> When:
    """The earliest stamped cited line, else the first cited line (order within its input)."""
    stamped = [(given.stamps[(e.path, e.line)], e) for e in f.evidence if (e.path, e.line) in given.stamps]
    if stamped:
        ts, e = min(stamped, key=lambda t: (t[0], t[1].path, t[1].line))
        return When(ts, e.path, e.line)
    first = next((e for e in f.evidence if e.line > 0), f.evidence[0] if f.evidence else None)
    return When(None, first.path, first.line) if first is not None else When(None, "", 0)
