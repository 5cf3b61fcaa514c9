"""Hang stage, classes: turn one group's progress facts into a verdict (a)–(e).

(a) some ranks never entered the stuck collective; (b) every rank entered and none completed — the
network/NCCL layer; (c) ranks entered different collectives at the same sequence — desync; (d) a
rank died; (e) enqueued == completed everywhere — the hang is outside NCCL. The rank that first
detected the timeout (`dump signal … from rank N`) is never blamed for it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ncclscope.records import Evidence

CLASS_LABEL = {
    "a": "some ranks never entered the collective",
    "b": "every rank entered and none completed: the network/NCCL layer",
    "c": "ranks entered different collectives at the same sequence: desync",
    "d": "a rank died",
    "e": "enqueued == completed everywhere: the hang is outside NCCL",
    "undetermined": "the evidence does not tell which rank holds it up",
}
# `Last enqueued NCCL work: -1` in every torch line that reported (dump signal / PG status): this group
# never ran NCCL work, so the collective that timed out (the dump signal says one did) belongs to another
# process group. (A Flight Recorder dump of an unused group says nothing about a timeout: not this case.)
NEVER_USED = (
    "this process group never enqueued NCCL work (last enqueued -1): the collective that timed out is on "
    "another process group, whose lines are not in the evidence"
)
FR_HINT = (
    "Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE>0, TORCH_NCCL_DUMP_ON_TIMEOUT=1) from every rank"
)


MAX_LISTED = 16  # silent ranks named in an excerpt's reason


@dataclass(frozen=True)
class HangVerdict:
    """One stuck collective: its class, where it is, who holds it up and how sure we are."""

    klass: str
    group: str  # "PG 0 (default_pg)", "comm 0x…", "RAS comm …"
    source: str  # torch | flight | fr_trace | nccl | ras | desync
    op: str | None = None
    seq: int | None = None  # PyTorch SeqNum / FR collective_seq_id / NCCL opCount / RAS operation
    culprits: tuple[int, ...] = ()
    detectors: tuple[int, ...] = ()
    ranks_seen: tuple[int, ...] = ()
    group_size: int | None = None
    confidence: str = "low"
    reason: str = ""
    missing: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    hang_evidence: bool = True  # False: only an opCount disagreement, no timeout anywhere
    key: str = ""
    hosts: tuple[
        str, ...
    ] = ()  # (b): hosts and peers the network WARNs name  # the raw group key, for de-duplication

    @property
    def sentence(self) -> str:
        where = "in " + (self.op or "collective") + (f" #{self.seq}" if self.seq is not None else "")
        if self.klass == "e":
            where = "after " + (f"work #{self.seq - 1}" if self.seq is not None else "the last work")
        who = f"; culprit rank(s) {fmt_ranks(self.culprits)}" if self.culprits else ""
        det = f"; rank {fmt_ranks(self.detectors)} only detected it first" if self.detectors else ""
        return (
            f"Hang {where} on {self.group}: ({self.klass}) {CLASS_LABEL[self.klass]}{who}{det} "
            f"[{self.confidence} confidence: {self.reason}]."
        )

    def metrics(self) -> dict[str, object]:
        return {
            "class": self.klass,
            "communicator": self.group,
            "source": self.source,
            "op": self.op,
            "seq": self.seq,
            "culprit_ranks": list(self.culprits),
            "first_detectors": list(self.detectors),
            "ranks_seen": len(self.ranks_seen),
            "group_size": self.group_size,
            "confidence": self.confidence,
            "confidence_reason": self.reason,
            "missing_evidence": list(self.missing),
        }


@dataclass
class Ctx:
    """Facts from other sources that a group's verdict may use."""

    net_warnings: list[Evidence] = field(default_factory=list)
    net_hosts: tuple[str, ...] = ()
    died: dict[int, Evidence] = field(default_factory=dict)
    remote_exit: list[Evidence] = field(default_factory=list)
    detectors: set[int] = field(default_factory=set)
    sizes: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    mid_line: dict[int, Evidence] = field(default_factory=dict)
    # every log input is an excerpt (align.facts_inputs: neither the job's start nor its end in it) and no
    # Flight Recorder dump came with it: a rank absent from it may simply not have been pasted
    excerpt: bool = False
    flight_ops: pl.DataFrame | None = None
    have_flight: bool = False
    untracked: set[str] = field(default_factory=set)  # dump groups without completion tracking (gloo)
    waiters: set[int] = field(default_factory=set)  # ranks whose own lines show them waiting for a peer
    size_mismatch: dict[int, Evidence] = field(default_factory=dict)  # gloo: received size != own size
    newest: dict[int, str] = field(default_factory=dict)  # gloo dumps: rank → group of its newest entry


def fmt_ranks(rs: tuple[int, ...] | list[int] | set[int]) -> str:
    r = sorted(rs)
    return ", ".join(map(str, r)) if len(r) <= 12 else ", ".join(map(str, r[:12])) + f" … ({len(r)} ranks)"


def ev(path: object, line: object, text: object) -> Evidence:
    return Evidence(str(path or "?"), int(line) if isinstance(line, int) else 0, str(text or "")[:300])


def majority(values: list[Any]) -> Any:
    """The most common value when more than half hold it, else None."""
    if not values:
        return None
    v, n = Counter(values).most_common(1)[0]
    return v if n * 2 > len(values) else None


MAX_GROUP = 1 << 20  # ranks in a group, at most, before its size is taken for a forged value


def minority_ranks(sig: dict[int, Any]) -> tuple[int, ...]:
    """Ranks whose value differs from the majority's (all of them when there is no majority)."""
    top = majority(list(sig.values()))
    return tuple(sorted(r for r, s in sig.items() if top is None or s != top))


# --- one process group (PyTorch lines or Flight Recorder dumps) ------------------------------


@dataclass
class _Group:
    key: str
    source: str
    recs: list[dict[str, Any]]
    ctx: Ctx
    entered: set[int] = field(default_factory=set)  # ranks known to have entered the stuck collective

    def col(self, name: str) -> dict[int, Any]:
        return {r["rank"]: r[name] for r in self.recs if r[name] is not None}

    @property
    def seen(self) -> list[int]:
        return sorted(r["rank"] for r in self.recs)

    def waits_elsewhere(self) -> bool:
        """Gloo dumps: every rank that reported created newer work in another group, so none waits here."""
        newest = [self.ctx.newest.get(r) for r in self.seen]
        return self.key in self.ctx.untracked and all(n is not None and n != self.key for n in newest)

    def blocked_here(self) -> bool:
        """Some rank that reported has its newest work in this group (always true without gloo dumps)."""
        return not self.ctx.newest or any(self.ctx.newest.get(r) == self.key for r in self.seen)

    @property
    def size(self) -> int | None:
        return self.ctx.sizes.get(self.key)

    def stuck_seq(self) -> int | None:
        ts = list(self.col("timed_out_seq").values())
        if ts:
            m = majority(ts)
            return int(m) if m is not None else min(ts)
        if self.key in self.ctx.untracked:
            # No completion tracking: the last enqueued collective is the stuck one when ranks differ
            # in what they enqueued, left work unretired, or (in their logs) waited for a peer.
            E, C = self.col("enqueued"), self.col("completed")
            if E and (
                len(set(E.values())) > 1
                or any(C.get(r, -1) < e for r, e in E.items())
                or {r for r in self.ctx.waiters & set(E) if self.ctx.newest.get(r, self.key) == self.key}
            ):
                return int(max(E.values()))
        cs = list(self.col("completed").values())
        return max(cs) + 1 if cs else None

    def evidence(self, first: tuple[int, ...] = (), then: tuple[int, ...] = ()) -> tuple[Evidence, ...]:
        """One line per rank: the culprits' first, then the detectors', then the others' in rank order."""
        rows = sorted(self.recs, key=lambda r: (r["rank"] not in first, r["rank"] not in then, r["rank"]))
        return tuple(
            ev(
                r["path"],
                r["line"],
                r["text"]
                or f"rank {r['rank']}: enqueued {r['enqueued']}, "
                f"completed {r['completed']} (Flight Recorder)",
            )
            for r in rows[:8]
        )


def classify_group(key: str, source: str, rows: pl.DataFrame, ctx: Ctx) -> HangVerdict:
    """Verdict for one process group from its PROGRESS rows (one per rank)."""
    g = _Group(key, source, rows.to_dicts(), ctx)
    s = g.stuck_seq()
    named = {r["named_detector"] for r in g.recs if r["named_detector"] is not None}
    detectors = tuple(sorted(named | {r["rank"] for r in g.recs if r["detector"]}))
    base: dict[str, Any] = {
        "group": ctx.labels.get(key, f"PG {key}" if source == "torch" else f"FR group {key}"),
        "source": source,
        "seq": s,
        "detectors": detectors,
        "ranks_seen": tuple(g.seen),
        "group_size": g.size,
        "key": key,
    }
    ops = [v for r, v in g.col("op").items() if g.col("timed_out_seq").get(r) == s]
    ops += [sig[0] for sig in _signatures(g, s).values()] if s is not None and source == "flight" else []
    base["op"] = majority(ops) or next(iter(ops), None)
    klass, culprits, conf, reason = _decide(g, s, set(detectors))
    if reason == NEVER_USED:  # no work of this group is stuck: name none
        base.update(seq=None, op=None, group=f"a process group other than {base['group']}")
    # Dumps alone showing nothing outstanding may be a healthy on-demand snapshot: say so softly.
    base["hang_evidence"] = not (source == "flight" and klass == "e")
    missing = _missing(g, conf)
    base["evidence"] = g.evidence(culprits, detectors) + _extra_evidence(klass, culprits, ctx)
    base["hosts"] = ctx.net_hosts if klass == "b" else ()
    return HangVerdict(
        klass=klass, culprits=culprits, confidence=conf, reason=reason, missing=missing, **base
    )


def _decide(g: _Group, s: int | None, detectors: set[int]) -> tuple[str, tuple[int, ...], str, str]:
    T, E = g.col("timed_out_seq"), g.col("enqueued")
    seen = g.seen
    if s is None:
        return "undetermined", (), "low", "only dump-signal lines: no rank printed which work timed out"
    g.entered = {r for r in seen if T.get(r) == s or E.get(r, -1) >= s}
    sig = _signatures(g, s)
    if len(set(sig.values())) > 1:
        return (
            "c",
            minority_ranks(sig),
            "high" if len(sig) == len(seen) else "medium",
            f"ranks report different op/size at sequence {s}",
        )
    if g.waits_elsewhere():
        return "e", (), "medium", "every rank that reported created newer work in another group (gloo)"
    # A size mismatch belongs to a group some rank waits in, not one a reporting rank never entered
    # (gloo dumps name no members: the culprit rank's groups are unknown).
    lagging = any(e < s for e in E.values())
    mism = tuple(
        sorted(
            r
            for r in g.ctx.size_mismatch
            if (g.size is None or r < g.size) and g.blocked_here() and not (g.ctx.newest and lagging)
        )
    )
    if mism:
        return (
            "c",
            mism,
            "medium",
            (
                "the backend aborted on a received size different from the rank's own: its "
                "tensor differs from its peers' (or, less likely, its ring neighbour's does)"
            ),
        )
    if len(set(T.values())) > 1:
        conf = "low" if g.key == "?" else "medium"
        why = "watchdog lines do not name their process group" if g.key == "?" else "same process group"
        return "c", minority_ranks(T), conf, f"ranks time out at different sequence numbers ({why})"
    never = tuple(sorted(r for r, e in E.items() if e < s and r not in detectors))
    died = tuple(sorted(r for r in g.ctx.died if r not in detectors and (r in never or r not in seen)))
    if died:
        return (
            "d",
            died,
            "medium",
            "it died (its log ends with a crash, or the launcher saw it killed) while the others wait",
        )
    if g.source == "torch" and not T and E and max(E.values()) < 0:
        return "undetermined", (), "low", NEVER_USED
    if not T and E and len(E) == len(seen) and max(E.values()) < s:
        idle = tuple(sorted(r for r in E if r not in detectors))
        if detectors and idle and not detectors & set(E):
            return "a", idle, "medium", _idle_reason(detectors, idle, s)
        # Nobody enqueued the next work: what lags in `completed` on one rank is bookkeeping (the
        # watchdog updates it lazily), not a stuck collective.
        return "e", (), "high" if _complete(g) else "medium", "no rank that reported has enqueued work left"
    if never:
        return "a", never, "high" if _complete(g) else "medium", f"last enqueued work < {s} on those ranks"
    return _all_entered(g, s)


def _idle_reason(detectors: set[int], idle: tuple[int, ...], s: int) -> str:
    """Another rank timed out (its dump signal reached these ranks, whose own progress it does not show)
    while these had completed every work they enqueued: they never issued the collective it waits in."""
    return (
        f"rank {fmt_ranks(tuple(sorted(detectors)))} timed out while rank(s) {fmt_ranks(idle)} had completed every "
        f"work they enqueued (last {s - 1}): they never issued the next collective, held up before it on the "
        "host side (the program, a data loader, the GIL), or the stuck collective is in another group"
    )


def _all_entered(g: _Group, s: int) -> tuple[str, tuple[int, ...], str, str]:
    heartbeat = any(r["heartbeat"] for r in g.recs)
    if _complete(g):
        return "b", (), "high", f"all {len(g.entered)} ranks entered #{s} and none completed it"
    if g.ctx.net_warnings or heartbeat:
        why = (
            "NCCL network warnings"
            if g.ctx.net_warnings
            else "the watchdog itself is stuck in a CUDA/NCCL call"
        )
        return "b", (), "medium", f"every rank that reported entered #{s}; {why}"
    unseen: tuple[int, ...] = ()
    if g.size and g.size <= MAX_GROUP:  # (a size from a forged line may be 2^53: no set of that)
        unseen = tuple(sorted(set(range(g.size)) - g.entered))
        if unseen and len(unseen) <= max(1, g.size // 4) and not g.ctx.excerpt:
            return (
                "a",
                unseen,
                "low",
                "every rank that reported entered it; the silent ranks are the suspects",
            )
    # Ranks seen only observing another rank's dump signal: no timeout and no progress of their own. A rank
    # that entered later than the detector looks the same (its own timeout had not fired yet), so they are
    # named as conditional suspects, never as culprits.
    progress = set(g.col("timed_out_seq")) | set(g.col("enqueued"))
    quiet = sorted(set(g.seen) - g.entered - progress)
    if quiet and g.entered:
        return (
            "undetermined",
            (),
            "low",
            (
                f"every rank that reported its progress entered #{s}; rank(s) {fmt_ranks(tuple(quiet))} only "
                "observed the dump signal and printed no timeout of their own: if their logs are whole, they "
                "never entered it"
            ),
        )
    gap = ""
    if g.ctx.excerpt:
        absent = f"rank(s) {fmt_ranks(unseen)} are" if 0 < len(unseen) <= MAX_LISTED else "the others are"
        gap = f"; the input is an excerpt: {absent} not in it (the suspects only if their logs show no progress)"
    return (
        "undetermined",
        (),
        "low",
        f"every rank that reported entered #{s}; the others are not in the evidence{gap}",
    )


def _complete(g: _Group) -> bool:
    """Every rank of the group is in the evidence with its progress (not only `observed a signal`)."""
    known = {
        r for r in g.seen if g.col("timed_out_seq").get(r) is not None or g.col("enqueued").get(r) is not None
    }
    return g.size is not None and len(known) >= g.size


def _signatures(g: _Group, s: int) -> dict[int, Any]:
    sig: dict[int, tuple[Any, ...]] = {
        r["rank"]: (r["op"], r["numel_in"], r["numel_out"])
        for r in g.recs
        if r["timed_out_seq"] == s and r["op"] is not None
    }
    fo = g.ctx.flight_ops
    if g.source == "flight" and fo is not None and not fo.is_empty():
        at = fo.filter((pl.col("group") == g.key) & (pl.col("seq") == s))
        sig = {
            r["rank"]: (r["op"], r["numel_in"], r["numel_out"], r["dtype"]) for r in at.iter_rows(named=True)
        }
    return sig


def _missing(g: _Group, conf: str) -> tuple[str, ...]:
    out: list[str] = []
    if g.size is None:
        out.append(
            f"group size unknown (at least {max(g.seen) + 1} ranks): progress lines from ranks "
            f"{fmt_ranks(g.seen)} only"
        )
    elif len(g.seen) < g.size <= MAX_GROUP:
        unseen = sorted(set(range(g.size)) - set(g.seen))
        out.append(f"no progress from {len(unseen)} of {g.size} ranks ({fmt_ranks(unseen)})")
    if g.source == "torch" and not g.col("enqueued"):
        out.append(
            "only watchdog lines: last enqueued/completed work not printed (torch >= 2.3 prints them)"
            if g.col("timed_out_seq")
            else "only dump-signal lines: no rank printed its own progress"
        )
    if g.source == "flight" and not g.ctx.labels.get("_logs"):
        out.append("only Flight Recorder dumps: no log lines (WARNs, crashes) to explain the stuck ranks")
    for r, e in sorted(g.ctx.mid_line.items()):
        out.append(f"log of rank {r} ends mid-line ({e.path}): killed while writing")
    if conf != "high" and not g.ctx.have_flight:
        out.append(FR_HINT)
    return tuple(out)


def _extra_evidence(klass: str, culprits: tuple[int, ...], ctx: Ctx) -> tuple[Evidence, ...]:
    if klass == "b":
        return tuple(ctx.net_warnings[:6]) + tuple(ctx.remote_exit[:2])
    if klass == "d":
        return tuple(ctx.died[r] for r in culprits if r in ctx.died) + tuple(ctx.remote_exit[:2])
    if klass == "c":
        return tuple(ctx.size_mismatch[r] for r in culprits if r in ctx.size_mismatch)
    return ()
