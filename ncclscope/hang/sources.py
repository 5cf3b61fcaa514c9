"""Hang stage, verdicts that come straight from one kind of report.

The PyTorch desync-debug report (TORCH_NCCL_DESYNC_DEBUG=1), the NCCL RAS client's operation
counts, and NCCL COLL lines (last opCount per rank of a communicator) each name lagging or
mismatched ranks directly; no cross-rank reasoning beyond counting is needed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import polars as pl

from ncclscope.hang.classify import FR_HINT, HangVerdict, ev, minority_ranks

_RANKS = re.compile(r"\d+")


def _ranks_of(detail: str) -> tuple[int, ...]:
    return tuple(int(x) for x in _RANKS.findall(detail.split(" ", 1)[1])) if " " in detail else ()


def desync_verdicts(torch: pl.DataFrame) -> list[HangVerdict]:
    """The ranks torch's desync debugger names: one verdict per distinct report, the ranks that printed
    the same report merged into it. A report whose `Timeout at collective: OP, #N` is not the SeqNum its
    own rank's watchdog timed out on is left out: it counted on another sequence (torch 2.11 stores a
    batched send/recv's P2P number there, and reports `COALESCED, #15` for collective SeqNum 71, blaming
    the ranks that are waiting), and the dumps or the watchdog lines then decide."""
    d = torch.filter(pl.col("kind") == "desync").sort("path", "line")
    timed_out = _watchdog_seqs(torch)
    merged: dict[tuple[object, ...], HangVerdict] = {}
    for (path,), rows in d.group_by("path", maintain_order=True):
        recs = rows.to_dicts()
        head = next((r for r in recs if r["detail"] == "timeout_at"), None)
        if head is None:
            continue
        own = timed_out.get(str(path), set())
        if own and head["seq"] not in own:
            continue
        never = {
            x
            for r in recs
            if r["detail"].startswith(("never_joined", "not_joined"))
            for x in _ranks_of(r["detail"])
        }
        stuck = {x for r in recs if r["detail"].startswith("not_finished") for x in _ranks_of(r["detail"])}
        klass, culprits = ("a", never) if never else ("b", stuck) if stuck else ("undetermined", set())
        evidence = tuple(ev(r["path"], r["line"], r["text"]) for r in recs[:8])
        k = (klass, head["op_type"], head["seq"], tuple(sorted(culprits)))
        prev = merged.get(k)
        if prev is not None:
            merged[k] = replace(
                prev,
                evidence=prev.evidence + evidence[:2],
                ranks_seen=tuple(sorted({*prev.ranks_seen, head["rank"]} - {None})),
            )
            continue
        merged[k] = HangVerdict(
            klass=klass,
            group=f"PG of rank {head['rank']} (desync report)",
            source="desync",
            op=head["op_type"],
            seq=head["seq"],
            culprits=tuple(sorted(culprits)),
            confidence="high",
            reason="torch's desync debugger compared every rank's progress",
            evidence=evidence,
            ranks_seen=(head["rank"],),
            key=str(path),
        )
    return list(merged.values())


def _watchdog_seqs(torch: pl.DataFrame) -> dict[str, set[int]]:
    """Per file, the SeqNums its watchdog reported timing out."""
    w = torch.filter((pl.col("kind") == "watchdog_timeout") & pl.col("seq").is_not_null())
    out: dict[str, set[int]] = {}
    for path, seq in w.select("path", "seq").unique().iter_rows():
        out.setdefault(str(path), set()).add(int(seq))
    return out


def ras_verdicts(torch: pl.DataFrame) -> list[HangVerdict]:
    """NCCL RAS `N ranks have launched up to operation M`: the ranks at the lower count lag."""
    r = torch.filter(pl.col("kind") == "ras").sort("path", "line")
    if r.is_empty():
        return []
    # The count of ranks may have been peeled off as a viewer line number; the original text has it.
    n = pl.coalesce("numel_in", pl.col("text").str.extract(r"(\d+) ranks have", 1).cast(pl.Int64))
    r = r.with_columns(pl.col("pg_name").forward_fill().over("path").alias("comm"), n.alias("numel_in"))
    out = []
    for (comm,), rows in r.group_by("comm", maintain_order=True):
        v = _ras_comm(str(comm), rows.to_dicts())
        if v is not None:
            out.append(v)
    return out


def _ras_comm(comm: str, recs: list[dict[str, Any]]) -> HangVerdict | None:
    counts = [
        (int(x["numel_in"]), int(x["seq"]))
        for x in recs
        if x["detail"] == "op_count" and x["numel_in"] is not None
    ]
    if len(counts) < 2:
        return None
    listed = sorted(int(x["rank"]) for x in recs if x["rank"] is not None)
    total = sum(n for n, _ in counts)
    top = max(op for _, op in counts)
    n_min, op_min = min(counts)  # ncclras lists the ranks of the smallest group
    if op_min == top and listed:
        culprits = tuple(sorted(set(range(total)) - set(listed)))
    elif listed and len(listed) == n_min:
        culprits = tuple(listed)
    else:
        culprits = ()
    op = next((x["op_type"] for x in recs if x["op_type"]), None)
    return HangVerdict(
        klass="a",
        group=f"RAS comm {comm}",
        source="ras",
        op=op,
        seq=top,
        culprits=culprits,
        group_size=total,
        confidence="medium" if culprits else "low",
        reason=f"NCCL RAS: {', '.join(f'{n} ranks at operation {o}' for n, o in counts)}",
        missing=("RAS lists only the smallest group's ranks; the others are inferred as 0..N-1 minus those",),
        evidence=tuple(ev(x["path"], x["line"], x["text"]) for x in recs[:8]),
        key=comm,
    )


def coll_verdicts(coll: pl.DataFrame, mism: pl.DataFrame, hang_seen: bool) -> list[HangVerdict]:
    """Per communicator: ranks whose last opCount is behind (a), or a mismatched opCount (c)."""
    out: list[HangVerdict] = []
    for (comm,), rows in coll.group_by("comm", maintain_order=True):
        recs = rows.to_dicts()
        if len(recs) < 2:
            continue
        top = max(x["last_op_count"] for x in recs)
        behind = tuple(sorted(x["rank"] for x in recs if x["last_op_count"] < top))
        if not behind:
            continue
        nranks = max((x["nranks"] or 0) for x in recs) or None
        ahead = [x for x in recs if x["last_op_count"] == top]
        complete = nranks is not None and len(recs) >= nranks
        missing = [] if complete else [f"COLL lines from {len(recs)} of {nranks or '?'} ranks"]
        if not hang_seen:
            missing.append("no watchdog/timeout line: the logs may simply have been cut at different points")
        out.append(
            HangVerdict(
                klass="a",
                group=f"comm {comm}",
                source="nccl",
                op=ahead[0]["last_op"],
                seq=top,
                culprits=behind,
                ranks_seen=tuple(sorted(x["rank"] for x in recs)),
                group_size=nranks,
                confidence="medium" if complete and hang_seen else "low",
                reason=f"last opCount {top:#x} on {len(ahead)} rank(s), lower on {len(behind)}",
                missing=tuple(missing + [FR_HINT]),
                hang_evidence=hang_seen,
                key=str(comm),
                evidence=tuple(
                    ev(x["path"], x["line"], x["text"])
                    for x in sorted(recs, key=lambda x: x["last_op_count"])[:8]
                ),
            )
        )
    for row in mism.unique("comm", keep="first", maintain_order=True).iter_rows(named=True):
        sig = dict(zip(row["ranks"], row["sigs"], strict=False))
        out.append(
            HangVerdict(
                klass="c",
                group=f"comm {row['comm']}",
                source="nccl",
                op=None,
                seq=row["op_count"],
                culprits=minority_ranks(sig),
                confidence="medium",
                hang_evidence=hang_seen,
                key=str(row["comm"]),
                reason=f"opCount {row['op_count']:#x} launched as: "
                + "; ".join(sorted({str(g) for g in row["sigs"]})),
                evidence=(ev(row["path"], row["line"], row["text"]),),
            )
        )
    return out
