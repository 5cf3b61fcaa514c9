"""Diagnosis stage, model: the typed records the diagnosis is made of.

A finding becomes an `Event` (what kind of fact it is, where and when); knowledge links events
(`Link`: this one is an echo of that one, for this reason); the events nobody explains are the
`Cause`s, each with its echoes folded under it and a short chain of checkable steps. `Diagnosis` is
the stage's one output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ncclscope.records import Evidence, Severity

EventClass = Literal["cause", "consequence", "symptom", "risk", "info"]
Confidence = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class When:
    """When an event happened: wall-clock microseconds where a cited line had a timestamp, and always
    the (path, line) of its first cited line, which orders events within one input."""

    ts_us: float | None
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class Event:
    """One finding as the diagnosis sees it: its kind (from the knowledge table), its class, its
    precedence tier (lower is more fundamental) and its scope."""

    index: int  # the finding's position in Session.findings
    finding_id: str
    kind: str
    klass: EventClass
    tier: int
    severity: Severity
    title: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    groups: tuple[str, ...]  # process groups / communicators the finding is about
    members: tuple[int, ...]  # ranks of those groups, where the evidence lists them
    when: When
    evidence: tuple[Evidence, ...]
    kind_reason: str
    confidence: str | None = None  # the finding's own confidence, where its rule states one (hangs)
    confidence_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """`echo` is explained by `cause`, by the knowledge entry `rule`."""

    echo: int  # event index
    cause: int
    rule: str
    reason: str
    relation: str  # how the chain says it: "<echo> (<relation>)"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the chain of reasoning a person can check: a sentence and the evidence it cites."""

    text: str
    evidence: tuple[Evidence, ...]

    def to_json(self) -> dict[str, object]:
        return {"text": self.text, "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True, slots=True)
class Cause:
    """A failure nothing else in the evidence explains, with everything it explains folded under it."""

    event: Event
    title: str  # the event's title, or a job-level one (ranks stuck across process groups)
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    confidence: Confidence
    confidence_reason: str
    echoes: tuple[Event, ...]
    chain: tuple[Step, ...]

    @property
    def sentence(self) -> str:
        """The verdict line: the cause, who is behind it, and how many echoes it explains."""
        who = ""
        named = "ank" in self.title and str(self.ranks[0] if self.ranks else "") in self.title
        if self.ranks and not named:
            who = f" (rank{'s' if len(self.ranks) > 1 else ''} {_ranks(self.ranks)}"
            who += f" on {', '.join(self.hosts[:3])})" if self.hosts else ")"
        elif self.hosts and not any(h in self.title for h in self.hosts):
            who = f" (on {', '.join(self.hosts[:3])})"
        folded = f"; explains {len(self.echoes)} other finding(s)" if self.echoes else ""
        return f"{no_period(self.title)}{who}{folded}."


@dataclass(frozen=True)
class Diagnosis:
    """The diagnosis stage's output: the causes (the first is the verdict; several independent ones
    when the evidence says so), every event and every link between them."""

    causes: tuple[Cause, ...] = ()
    events: tuple[Event, ...] = ()
    links: tuple[Link, ...] = ()

    @property
    def verdict(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    @property
    def stuck_ranks(self) -> tuple[int, ...]:
        """Every cause's ranks when there are several and each is a set of ranks stuck on its own across
        process groups (one job-level verdict names them all); else ()."""
        if len(self.causes) < 2 or any(c.event.kind != "hang-stuck-rank" for c in self.causes):
            return ()
        return tuple(sorted({r for c in self.causes for r in c.ranks}))

    def echo_of(self, index: int) -> int | None:
        """The finding index that explains finding `index`, if any."""
        return next((lk.cause for lk in self.links if lk.echo == index), None)


def _ranks(ranks: tuple[int, ...]) -> str:
    shown = ", ".join(str(r) for r in ranks[:8])
    return shown + (f" (+{len(ranks) - 8} more)" if len(ranks) > 8 else "")


def no_period(text: str) -> str:
    """`text` without its closing full stop, keeping an ellipsis (a title cut short ends in `...`)."""
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text
