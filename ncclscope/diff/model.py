"""Diff stage, records: what differs between two runs (`Difference`), and the whole comparison (`RunDiff`).

Differences are ranked most-likely-cause first: versions and the transport NCCL chose, then the
environment, the network details, the topology, and last the results those produce.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclscope.records import Evidence

CATEGORIES = ("diagnosis", "versions", "environment", "network", "topology", "results")


@dataclass(frozen=True, slots=True)
class Difference:
    """One fact that differs: `a` and `b` as shown (None: absent on that side), where (`scope`: `all ranks`,
    `ranks 0-3`, `node 1`, `job`), each side's evidence, and `rank`: lower is the likelier cause."""

    category: str  # one of CATEGORIES
    key: str  # NCCL, NCCL_IB_DISABLE, transport, coll channels, nccl-tests all_reduce busbw, …
    a: str | None
    b: str | None
    scope: str
    evidence_a: tuple[Evidence, ...] = ()
    evidence_b: tuple[Evidence, ...] = ()
    rank: int = 0
    relevant: bool = (
        True  # False: listed for completeness, no effect on the exit code (debug settings, noise)
    )
    details: tuple[tuple[str, str | None, str | None], ...] = ()  # per-size rows of a result (label, a, b)

    @property
    def change(self) -> str:
        """ "set" (only in B), "unset" (only in A) or "changed"."""
        if self.a is None:
            return "set"
        return "unset" if self.b is None else "changed"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "category": self.category,
            "key": self.key,
            "change": self.change,
            "a": self.a,
            "b": self.b,
            "scope": self.scope,
            "relevant": self.relevant,
            "rank": self.rank,
            "evidence_a": [e.to_json() for e in self.evidence_a],
            "evidence_b": [e.to_json() for e in self.evidence_b],
        }
        if self.details:
            out["details"] = [{"label": k, "a": a, "b": b} for k, a, b in self.details]
        return out


@dataclass(frozen=True)
class RunDiff:
    """Two analysed runs compared: `differences` in rank order (relevant ones first)."""

    a_label: str
    b_label: str
    differences: tuple[Difference, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def relevant(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.relevant)

    def to_json(self) -> dict[str, object]:
        return {
            "schema": "ncclscope.diff/1",
            "a": self.a_label,
            "b": self.b_label,
            "relevant": len(self.relevant),
            "differences": [d.to_json() for d in self.differences],
            "notes": list(self.notes),
        }
