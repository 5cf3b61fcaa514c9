"""Hang stage, verdicts from PyTorch's Flight Recorder analyzer output (`fr_trace`), pasted into a log.

The analyzer has already compared every rank's dump; its records say which collective of which
process group went wrong and who is to blame. A record is its header row (`not_joined`, `errors`,
`io_mismatch`) and the `fr_trace` rows after it in the same file, up to the next header:

- `Not all ranks joining collective` with `missing ranks: {…}` → class (a), the missing ranks are the
  culprits (they never called it; the others wait in it);
- `Collective … has errors` with `Culprit rank R; Error type: T` → class (c) for a type, size or dtype
  mismatch (the ranks called different collectives; those ranks are the culprits); when only the state
  differs (COLLECTIVE_STATE_MISMATCH: one rank's work `scheduled`, another's `started`) the record does not
  say who waits on whom: undetermined, the ranks named in the reason only;
- `Input/output mismatch` (all_to_all sizes) → class (c); the analyzer names no culprit there.

The verdict keys by the record's process group (`group info: 0:default_pg` → `0`), so a dump or watchdog
verdict of the same group and sequence is the same hang (`verdict._dedupe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ncclscope.hang.classify import HangVerdict, ev
from ncclscope.parse.bounds import RANK_MAX

# `no_dumps` (`We cannot decide … missed FR dumps from ranks ({3})`) is logged on its own line, with no
# record header: it closes the record before it and gives no verdict (a rank without a dump proves nothing).
_HEADS = ("not_joined", "errors", "io_mismatch", "no_dumps")
# Culprit error types that mean "the ranks called different collectives" (types.py MatchState).
_DESYNC = {"COLLECTIVE_TYPE_MISMATCH", "SIZE_OR_SYNTAX_MISMATCH", "COLLECTIVE_DTYPE_MISMATCH"}
_READ = "PyTorch's Flight Recorder analyzer (fr_trace) compared every rank's dump"


@dataclass
class _Record:
    head: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def first(self, prefix: str) -> dict[str, Any] | None:
        return next((r for r in [self.head, *self.rows] if str(r["detail"]).startswith(prefix)), None)

    def ranks(self, prefix: str) -> tuple[int, ...]:
        r = self.first(prefix)
        if r is None:
            return ()
        words = str(r["detail"]).split(prefix, 1)[1].replace(",", " ").replace(";", " ").split()
        return tuple(sorted({int(w) for w in words if _rank(w)}))

    def culprits(self) -> dict[int, str]:
        r = self.first("culprits ")
        if r is None:
            return {}
        out: dict[int, str] = {}
        for part in str(r["detail"]).removeprefix("culprits ").split("; "):
            rank, _, kind = part.partition(" ")
            if _rank(rank):
                out.setdefault(int(rank), kind)
        return out


def _rank(word: str) -> bool:
    """A rank number as torch keeps them (int32); a forged `{99999999999}` is no rank."""
    return word.isdigit() and len(word) <= 10 and int(word) <= RANK_MAX


def _records(rows: list[dict[str, Any]]) -> list[_Record]:
    out: list[_Record] = []
    for r in rows:
        if str(r["detail"]).split(" ", 1)[0] in _HEADS:
            out.append(_Record(r))
        elif out:
            out[-1].rows.append(r)
    return out


def _verdict(rec: _Record) -> HangVerdict | None:
    head = str(rec.head["detail"]).split(" ", 1)[0]
    if head == "no_dumps":
        return None
    group = rec.first("group") or rec.head
    pg, desc = group.get("pg_name"), group.get("pg_desc")
    op = next((r["op_type"] for r in [rec.head, *rec.rows] if r.get("op_type")), None)
    expected = rec.ranks("expected ")
    size = next((r["world_size"] for r in [rec.head, *rec.rows] if r.get("world_size")), None)
    if head == "not_joined":
        culprits = rec.ranks("not_joined missing ") or rec.ranks("missing ")
        klass, why = "a", f"missing ranks {', '.join(map(str, culprits))}" if culprits else "no rank named"
    elif head == "errors":
        blamed = rec.culprits()
        kinds = sorted(set(blamed.values()))
        named = ", ".join(map(str, sorted(blamed)))
        if set(kinds) & _DESYNC:
            culprits = tuple(sorted(r for r, k in blamed.items() if k in _DESYNC))
            klass, why = "c", f"culprit rank(s) {named}: {', '.join(kinds)}"
        else:  # only a state differs (one rank's work `scheduled`, another's `started`): who waits on whom is open
            culprits, klass = (), "undetermined"
            why = (
                f"only the state differs on rank(s) {named} ({', '.join(kinds)})" if blamed else "no culprit"
            )
    else:
        culprits, klass, why = (), "c", "input/output sizes of all_to_all do not add up"
    missing = () if culprits else ("the analyzer's record names no culprit rank",)
    return HangVerdict(
        klass=klass,
        group=f"PG {pg}" + (f" ({desc})" if desc else "") if pg is not None else "FR group ?",
        source="fr_trace",
        op=op,
        seq=rec.head.get("seq"),
        culprits=culprits,
        ranks_seen=tuple(sorted(set(expected) - set(culprits))) if expected else (),
        group_size=size,
        confidence="high" if culprits else "low",
        reason=f"{_READ}: {why}",
        missing=missing,
        evidence=tuple(ev(r["path"], r["line"], r["text"]) for r in [rec.head, *rec.rows][:8]),
        key=str(pg) if pg is not None else f"fr_trace {rec.head['path']}",
    )


def frtrace_verdicts(torch: pl.DataFrame) -> list[HangVerdict]:
    """One verdict per analyzer record (the same record pasted twice counts once)."""
    t = torch.filter(pl.col("kind") == "fr_trace").sort("path", "line")
    out: dict[tuple[object, ...], HangVerdict] = {}
    for (_path,), rows in t.group_by("path", maintain_order=True):
        for rec in _records(rows.to_dicts()):
            v = _verdict(rec)
            if v is not None:
                out.setdefault((v.key, v.seq, v.klass, v.culprits), v)
    return list(out.values())
