"""Diagnosis stage, reasoning: link events by the knowledge table, fold echoes under the events nothing
explains, and order those causes (the first is the verdict).

Each echo keeps one cause: the most fundamental candidate (class, then tier, then time). A link only
goes from a lower tier to a higher one (or, for entries that allow it, from an earlier finding of the
same tier to a later one), so the links form no cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclscope.diagnosis.knowledge import Knowledge, LinkRule
from ncclscope.diagnosis.model import Cause, Confidence, Event, Link, Step, no_period
from ncclscope.records import SEVERITY_ORDER

HANG_KINDS = ("hang-stuck-rank", "hang-desync", "hang-no-culprit")
CLASS_RANK = {"cause": 0, "symptom": 1, "consequence": 2, "risk": 3, "info": 4}
FAILURE = ("cause", "symptom", "consequence")
CONFIDENCE: dict[str, Confidence] = {"high": "high", "medium": "medium", "low": "low"}
MAX_STEPS = 6


def link(events: Sequence[Event], k: Knowledge) -> tuple[Link, ...]:
    """For each event that some other event explains, the one link to its best cause: candidates are
    taken most fundamental cause first, and one that would close a cycle is skipped."""
    found: list[tuple[tuple[object, ...], int, Link]] = []
    for order, rule in enumerate(k.links):
        causes = [e for e in events if "*" in rule.causes or e.kind in rule.causes]
        echoes = [e for e in events if "*" in rule.echoes or e.kind in rule.echoes]
        for c in causes:
            for e in echoes:
                if c.index != e.index and _allowed(rule, c, e, k):
                    found.append(
                        (_precedence(c), order, Link(e.index, c.index, rule.id, rule.reason, rule.relation))
                    )
    parent: dict[int, Link] = {}
    for _key, _order, lk in sorted(found, key=lambda t: (t[0], t[1], t[2].echo)):
        if lk.echo not in parent and not _reaches(lk.cause, lk.echo, parent):
            parent[lk.echo] = lk
    return tuple(parent[i] for i in sorted(parent))


def _reaches(start: int, target: int, parent: dict[int, Link]) -> bool:
    """Whether following causes up from `start` reaches `target` (linking target -> start would loop)."""
    node, seen = start, set()
    while node in parent and node not in seen:
        seen.add(node)
        node = parent[node].cause
        if node == target:
            return True
    return start == target


def _allowed(rule: LinkRule, c: Event, e: Event, k: Knowledge) -> bool:
    if not (rule.any_tier or c.tier < e.tier or (rule.same_tier and c.tier == e.tier and c.index < e.index)):
        return False
    return _in_scope(rule, c, e) and (not rule.timed or _not_after(c, e, k))


def _in_scope(rule: LinkRule, c: Event, e: Event) -> bool:
    if rule.scope == "job":
        return True
    if rule.scope == "ranks":
        return bool(set(c.ranks) & set(e.ranks)) or bool(set(c.hosts) & set(e.hosts))
    waiting = set(c.members) - set(c.ranks)  # members of c's group that entered and wait there
    if rule.scope == "members":  # a culprit of c belongs to e's group, or a member of e's group waits in c
        return bool((set(c.ranks) | waiting) & (set(e.members) | set(e.ranks)))
    if rule.scope == "same-line":
        return c.when.line > 0 and (c.when.path, c.when.line) == (e.when.path, e.when.line)
    if rule.scope == "culprits-wait":  # every culprit of e waits in c's stuck collective
        return bool(e.ranks) and set(e.ranks) <= waiting
    return bool(c.ranks) and set(c.ranks) == set(e.ranks)  # same-culprits


def _not_after(c: Event, e: Event, k: Knowledge) -> bool:
    """The cause may not come after the echo: by timestamps (with slack for clock skew between
    hosts), else by line order within one input for events of one rank; unknown order allows the link."""
    a, b = c.when, e.when
    if a.ts_us is not None and b.ts_us is not None:
        return a.ts_us <= b.ts_us + k.time_slack_us
    # Line order is time order only within one process (a pasted excerpt may group lines by rank), and
    # only between NCCL's own lines: PyTorch aborts the communicators first and logs its error after.
    if a.path and a.path == b.path and a.line > 0 and b.line > 0 and set(c.ranks) & set(e.ranks):
        return a.line <= b.line or not (_nccl_line(c) and _nccl_line(e))
    return True


def _nccl_line(e: Event) -> bool:
    first = next((x for x in e.evidence if (x.path, x.line) == (e.when.path, e.when.line)), None)
    return first is not None and (" NCCL WARN " in first.text or " NCCL INFO " in first.text)


def _precedence(e: Event) -> tuple[object, ...]:
    ts = e.when.ts_us if e.when.ts_us is not None else float("inf")
    return (CLASS_RANK[e.klass], e.tier, ts, e.when.path, e.when.line, e.index)


def causes(events: Sequence[Event], links: Sequence[Link]) -> tuple[Cause, ...]:
    """The events nothing explains, each with its echoes (transitively), most fundamental first.
    Failures (cause, symptom, consequence) when there are any, else risks; never info."""
    parent = {lk.echo: lk.cause for lk in links}
    roots = [e for e in events if e.index not in parent]
    chosen = [e for e in roots if e.klass in FAILURE]
    stamped = all(e.when.ts_us is not None for e in chosen if e.klass == "cause")
    # Without timestamps, causes cited from one input are in the order that input printed them (a console
    # or one rank's log is written as things happen): the earlier line is the earlier failure.
    one_input = len({e.when.path for e in chosen if e.klass == "cause"}) == 1
    chosen.sort(key=lambda e: _order(e, stamped, one_input))
    if not chosen:  # no failure: the leading risk, and other risks only where they explain something
        risks = sorted(
            (e for e in roots if e.klass == "risk" and e.severity != "info"), key=lambda e: _order(e, False)
        )
        chosen = risks[:1] + [e for e in risks[1:] if e.index in parent.values()]
    by_index = {e.index: e for e in events}
    folded: dict[int, list[Event]] = {}
    for echo in parent:  # the links form no cycle (`link`), so following causes up always ends at a root
        folded.setdefault(_root(echo, parent), []).append(by_index[echo])
    return tuple(
        _cause(root, tuple(sorted(folded.get(root.index, []), key=_seq)), links, len(chosen))
        for root in chosen
    )


def _order(e: Event, stamped: bool, one_input: bool = False) -> tuple[object, ...]:
    """Class first, then severity; among causes, the earliest in time when every cause carries a
    timestamp (the earliest failure wins), else the earliest line when they all come from one input,
    else the most fundamental tier."""
    ts = e.when.ts_us if (stamped and e.klass == "cause" and e.when.ts_us is not None) else 0.0
    line = e.when.line if (one_input and not stamped and e.klass == "cause") else 0
    return (
        CLASS_RANK[e.klass],
        SEVERITY_ORDER[e.severity],
        ts,
        line,
        e.tier,
        e.when.path,
        e.when.line,
        e.index,
    )


def _seq(e: Event) -> tuple[object, ...]:
    return (e.when.ts_us if e.when.ts_us is not None else float("inf"), e.tier, e.index)


def _root(index: int, parent: dict[int, int]) -> int:
    while index in parent:
        index = parent[index]
    return index


def _cause(root: Event, echoes: tuple[Event, ...], links: Sequence[Link], n_roots: int) -> Cause:
    conf, why = _confidence(root, echoes, n_roots)
    return Cause(
        event=root,
        title=_title(root, echoes),
        ranks=root.ranks,
        hosts=root.hosts,
        confidence=conf,
        confidence_reason=why,
        echoes=echoes,
        chain=_chain(root, echoes, links),
    )


def _title(root: Event, echoes: tuple[Event, ...]) -> str:
    """The cause's own title; for ranks stuck across process groups, a job-level title naming them and
    every group that waits on them (issue 27: one verdict, not one per group)."""
    groups = [g for e in echoes if e.kind in HANG_KINDS for g in e.groups]
    if root.kind != "hang-stuck-rank" or not groups or not root.ranks:
        return root.title
    who = ", ".join(str(r) for r in root.ranks[:8])
    names = ", ".join(dict.fromkeys(groups[:6])) + (" …" if len(groups) > 6 else "")
    return (
        f"Rank{'s' if len(root.ranks) > 1 else ''} {who} hold{'' if len(root.ranks) > 1 else 's'} the job up: "
        f"{len(groups)} other stuck process group(s) wait on {'them' if len(root.ranks) > 1 else 'it'} ({names}). "
        f"{root.title}"
    )


def _confidence(root: Event, echoes: tuple[Event, ...], n_roots: int) -> tuple[Confidence, str]:
    alone = n_roots == 1
    if root.klass == "cause":
        if echoes and (root.ranks or root.hosts) and alone:
            return "high", f"a failure on named ranks/hosts that explains {len(echoes)} other finding(s)"
        if echoes or alone:
            return "medium", (
                "a failure that explains the other findings" if echoes else "the only failure in the evidence"
            ) + ("" if alone else f"; {n_roots} independent failures in the evidence")
        return "low", f"one of {n_roots} independent failures in the evidence"
    if root.kind == "hang-stuck-rank" and _behind_everywhere(root, echoes):
        return "high", (
            f"rank(s) {', '.join(str(r) for r in root.ranks[:8])} are behind in every stuck process group they "
            "belong to, and every other stuck group waits on them"
        )
    if root.klass == "symptom" and root.confidence in ("high", "medium", "low"):
        own = CONFIDENCE[root.confidence]
        own = "medium" if own == "high" and not alone else own
        return own, f"the stuck collective's own reading: {root.confidence_reason or root.confidence}" + (
            "" if alone else f"; {n_roots} unexplained failures"
        )
    if root.klass == "symptom":
        return "low" if not alone else "medium", (
            "only the symptom is in the evidence: no finding says what caused it"
            + ("" if alone else f"; {n_roots} unexplained failures")
        )
    if root.klass == "consequence":
        return (
            "low",
            "only echoes of a peer's failure are in the evidence: the failing peer's own log is missing",
        )
    return "medium", "no failure in the evidence; the leading risk is named"


def _behind_everywhere(root: Event, echoes: tuple[Event, ...]) -> bool:
    """Every other stuck group is folded under the root, and in each one the root's ranks belong to, they
    are culprits too or nobody is (the wavefront test over all groups)."""
    hangs = [e for e in echoes if e.kind in HANG_KINDS]
    if not hangs:
        return False
    mine = set(root.ranks)
    return all(not (mine & set(e.members)) or mine <= set(e.ranks) or not e.ranks for e in hangs)


def _chain(root: Event, echoes: tuple[Event, ...], links: Sequence[Link]) -> tuple[Step, ...]:
    """Cause first, then its echoes in time order, each step saying why it follows."""
    relation = {lk.echo: lk.relation for lk in links}
    steps = [Step(_ranked(root), root.evidence[:2])]
    for e in echoes[: MAX_STEPS - 1]:
        steps.append(Step(f"→ {_ranked(e)} ({relation.get(e.index, 'explained above')})", e.evidence[:1]))
    if len(echoes) > MAX_STEPS - 1:
        rest = sorted({e.finding_id for e in echoes[MAX_STEPS - 1 :]})
        steps.append(Step(f"… and {len(echoes) - MAX_STEPS + 1} more echoes ({', '.join(rest)})", ()))
    return tuple(steps)


def _ranked(e: Event) -> str:
    named = e.ranks and f"ank {e.ranks[0]}" in e.title
    who = f"rank(s) {', '.join(str(r) for r in e.ranks[:6])}: " if e.ranks and not named else ""
    return f"{who}{no_period(e.title)}"
