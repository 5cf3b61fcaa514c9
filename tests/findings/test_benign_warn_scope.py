"""Findings, benign-warn: counted per message kind, scoped to every line's ranks and hosts (issue 31:
"5574 × [Service thread] Accept failed … hosts node-00" counted three kinds as one, from one host)."""

from __future__ import annotations

from logframes_builder import logs, proc, run, warn

A, B = proc("node-a", 100, 0), proc("node-b", 200, 0)
ACCEPT = "[Service thread] Accept failed Resource temporarily unavailable"
RECV = "[Service thread] Could not receive type from localRank 1, res=3, closed=0"


def test_counts_and_hosts_per_message_kind() -> None:
    downs = [
        {**p, "phase": "destroy_complete", "rank": r, "nranks": 2, "line": 100} for r, p in enumerate((A, B))
    ]
    lines = [warn(A, "proxy", ACCEPT, line=101)]
    lines += [warn(p, "proxy", RECV, line=102 + i) for i, p in enumerate((A, B, B))]
    [f] = run("benign-warn", logs(inits=downs, warnings=lines))
    kinds = {k["example"]: (k["count"], k["hosts"]) for k in f.metrics["kinds"]}  # type: ignore[union-attr]
    assert kinds == {RECV: (3, 2), ACCEPT: (1, 1)}
    assert f.title.startswith("4 known-benign WARN line(s) of 2 kind(s): 3 × [Service thread] Could not")
    assert f.hosts == ("node-a", "node-b")
    assert len(f.evidence) == 2  # one cited line per kind
