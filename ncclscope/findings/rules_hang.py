"""Findings stage, hang rules: the stuck collective and the ranks holding it up (issue 3).

All four rules read the hang stage's `HangView` (`ctx.hang`, built once per analysis by
ncclscope.hang); the heuristics live there and in ncclscope.hang.classify.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import polars as pl

from ncclscope.findings.agent_exit import agent_failures
from ncclscope.findings.registry import REGISTRY, Context, rule
from ncclscope.hang.classify import HangVerdict, ev, fmt_ranks
from ncclscope.hang.verdict import HangView
from ncclscope.records import Evidence, Finding

WHY = {
    "a": "A collective completes only when every rank of the group calls it; these ranks never did, so the "
    "others waited until the watchdog timeout.",
    "b": "Every rank is inside the collective and none finished: data is not moving between them (network "
    "errors, a hanging P2P/PCIe path, a NCCL or driver bug, a GPU stuck in a CUDA call).",
    "c": "NCCL matches collectives by their order on each rank; ranks that called different collectives (or "
    "different sizes/dtypes) at the same position wait for each other forever.",
    "d": "A rank died, so the collective can never complete; the other ranks hang until the watchdog fires.",
    "e": "Every NCCL operation the reporting ranks enqueued has completed: the job is stuck outside NCCL "
    "(CPU work, I/O, a non-NCCL barrier or broadcast, a Python deadlock).",
    "undetermined": "A collective timed out, but the evidence does not show which rank held it up.",
}
FIX = {
    "a": "Look at what the culprit ranks did after their last line (data loading, checkpoint I/O on one rank, a "
    "swallowed exception, a branch that skips the collective). Make every rank issue the same collectives "
    "in the same order; for long one-rank I/O raise init_process_group(timeout=…).",
    "b": "Check the NCCL WARN lines cited; run nccl-tests across the same hosts; isolate the transport with "
    "NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1 or NCCL_IB_DISABLE=1; look for Xid errors in dmesg.",
    "c": "Find where the ranks' code diverges (rank-dependent branches, uneven last batch, collectives inside "
    "conditional logging); TORCH_DISTRIBUTED_DEBUG=DETAIL checks collective shapes at run time.",
    "d": "Read the dead rank's log around the cited line and fix that crash first (OOM: smaller batch or "
    "activation checkpointing); the other ranks' timeouts are only its echo.",
    "e": "Dump the stuck ranks' Python stacks (py-spy dump --pid …); look at data loading, checkpoint saving, "
    "shared-memory broadcasts and anything that waits on another process.",
    "undetermined": "Collect every rank's log and enable the Flight Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE=2000, "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1), then run ncclscope on the logs and the dumps together.",
}


def _finding(v: HangVerdict, rule_id: str, title: str) -> Finding:
    why = WHY[v.klass] + (f" Missing evidence: {'; '.join(v.missing)}." if v.missing else "")
    return Finding(
        id=rule_id,
        severity="error" if v.hang_evidence else "warning",
        title=title,
        why=why,
        fix=FIX[v.klass],
        ranks=v.culprits,
        hosts=v.hosts,
        evidence=v.evidence,
        metrics=v.metrics(),
    )


@rule(
    "collective-hang", "error", "A collective is stuck: which one, which class of hang, which ranks", "hang"
)
def collective_hang(ctx: Context) -> Iterable[Finding]:
    """One finding per stuck collective, from the most specific evidence available: the PyTorch
    desync report, Flight Recorder dumps (per process group and collective_seq_id), watchdog and
    PG-status lines (SeqNum, last enqueued/completed work), the NCCL RAS report, NCCL COLL opCounts.
    Classes: (a) ranks whose last enqueued work < the stuck SeqNum (or lower opCount) never entered;
    (b) all entered, none completed (with network WARNs or a stuck watchdog as support); (c) different
    op/size at one SeqNum, or ranks timing out at different SeqNums; (d) a rank's log ends in a crash
    while the others wait; (e) enqueued == completed on every reporting rank. The rank named by
    `dump signal … from rank N` only detected the timeout and is never blamed. Confidence is high
    only with every rank of the group in the evidence; the finding lists what evidence was missing.
    An opCount disagreement with no timeout anywhere is reported as a warning."""
    for v in ctx.hang.verdicts:
        if v.klass == "c" and not v.hang_evidence:
            continue  # a mismatch alone is collective-mismatch's business
        yield _finding(v, "collective-hang", v.sentence)


@rule("collective-mismatch", "error", "Ranks entered different collectives at the same sequence", "hang")
def collective_mismatch(ctx: Context) -> Iterable[Finding]:
    """Ranks of one group disagree at one sequence position: different OpType/NumelIn/NumelOut on
    watchdog lines with the same SeqNum, different profiling name/sizes/dtypes in Flight Recorder
    entries with the same (process group, collective_seq_id), different op/count/datatype in COLL
    lines with the same (commId, opCount), or watchdog SeqNums that differ across ranks of a group.
    The culprits are the ranks outside the majority (all of them when there is no majority)."""
    for v in ctx.hang.mismatches:
        title = f"Ranks entered different collectives at #{v.seq} on {v.group} (ranks {fmt_ranks(v.culprits)} differ)"
        yield _finding(v, "collective-mismatch", title)


@rule("rank-exited", "error", "A rank's log ends with a crash while the others wait", "hang", post=True)
def rank_exited(ctx: Context) -> Iterable[Finding]:
    """A rank whose log ends with a crash (segfault, OOM, CUDA error, killed) and that printed no
    watchdog line of its own, or that torchrun's failure report shows killed by a signal it did not
    send itself (SIGKILL, SIGABRT, SIGSEGV; not SIGTERM) while printing no timeout of its own: it died
    first, and the other ranks' timeouts are its echo. A rank that raised NCCL's own error (`NCCL error
    in: …`) while an error-group rule (duplicate-gpu, nvls-failure, …) names NCCL's reason on that rank is
    a warning: the exception is the echo of that finding, which heads the report. When a
    collective is stuck, a log that ends mid-line (no final newline) is reported as a warning: the
    writer was killed mid-write. With no rank known dead, torchrun's own `failed (exitcode: C) local_rank: L`
    line names a worker killed by a signal (`findings.agent_exit`), without a global rank."""
    rep = ctx.hang
    causes = {int(c["rank"]): c for c in rep.causes.filter(~pl.col("echo")).iter_rows(named=True)}
    for r, e in rep.exited:
        cause = causes.get(r)
        if cause is not None and (cause["path"], cause["line"]) == (e.path, e.line):
            yield _echo_of_root(_exited_by_exception(r, e, cause, rep), ctx.prior)
            continue
        who = e.text.split(": ", 1)[0]
        how = (
            f"{who} reports " + e.text.split("failed with ", 1)[1].split(": ", 1)[0]
            if who in _LAUNCHERS and "failed with " in e.text
            else "its log ends with a crash"
        )
        yield Finding(
            id="rank-exited",
            severity="error",
            title=f"Rank {r} exited: {how}",
            why=WHY["d"],
            fix=FIX["d"],
            ranks=(r,),
            evidence=(e, *_echo_evidence(rep, 4)),
            metrics={"rank": r, **_echo_metrics(rep)},
        )
    if not rep.exited:  # no rank known dead: the agent's own line, when its table was cut
        pids = set(rep.exits["pid"].drop_nulls().to_list()) if rep.exits is not None else set()
        yield from agent_failures(ctx.logs.torch, pids, WHY["d"], FIX["d"])
    ends = rep.ends if rep.ends is not None else pl.DataFrame()
    if ends.height and rep.verdicts:  # pasted excerpts often lack a final newline: only say so in a hang
        for row in ends.filter(pl.col("mid_line")).iter_rows(named=True):
            who = f"rank {row['rank']}" if row["rank"] is not None else "a process"
            yield Finding(
                id="rank-exited",
                severity="warning",
                title=f"The log of {who} ends mid-line",
                why="The last line has no newline: the process (or the job) was killed while writing.",
                fix="Check the scheduler's record of the job (OOM killer, time limit, node failure).",
                ranks=(row["rank"],) if row["rank"] is not None else (),
                evidence=(ev(row["path"], row["last_line"], row["last_text"]),),
                metrics={"rank": row["rank"], "path": row["path"]},
            )


# Launchers whose exit reports hang.exits cites as `<name>: rank R failed with …` (hang.crashes.launcher_name).
_LAUNCHERS = frozenset({"torchrun", "mpirun", "mpiexec", "orterun", "prterun", "prte", "srun", "UCX"})

_VIA = {
    "spawn": "torch.multiprocessing.spawn reported it",
    "torchrun_table": "torchrun's failure report holds it",
    "traceback": "its traceback ends the rank's log",
    "line": "the rank's log ends with it",
}


def _exited_by_exception(r: int, e: Evidence, cause: dict[str, object], rep: HangView) -> Finding:
    """Rank r raised a fatal exception (OOM, CUDA error, …): name it, cite it, list the others' echoes."""
    exc, msg = str(cause["exc_type"]), str(cause["message"] or "")
    short = msg if len(msg) <= 140 else msg[:137] + "..."
    extra = (
        [ev(cause["path"], cause["link_line"], cause["link_text"])] if cause["link_line"] is not None else []
    )
    extra += (
        [ev(cause["path"], cause["block_line"], cause["block_text"])]
        if cause["block_line"] is not None
        else []
    )
    own = rep.exits.filter((pl.col("rank") == r) & (pl.col("line") != cause["line"])).head(1)
    extra += [ev(p, ln, tx) for p, ln, tx in own.select("path", "line", "text").iter_rows()]
    evidence = (e, *extra, *_echo_evidence(rep, 6))
    local = f" (spawn process {cause['local_rank']})" if cause["local_rank"] is not None else ""
    return Finding(
        id="rank-exited",
        severity="error",
        title=f"Rank {r}{local} exited: {exc}: {short}".rstrip(": "),
        why=WHY["d"] + f" The rank raised {exc} ({_VIA.get(str(cause['via']), '')}).",
        fix=FIX["d"],
        ranks=(r,),
        evidence=evidence,
        metrics={
            "rank": r,
            "cause": cause["cause"],
            "exc_type": exc,
            "message": msg[:500],
            "local_rank": cause["local_rank"],
            "via": cause["via"],
            **_echo_metrics(rep),
        },
    )


def _echo_of_root(f: Finding, prior: tuple[Finding, ...]) -> Finding:
    """A rank killed by NCCL's own error is the echo of an error-group finding that names NCCL's reason
    on the same rank (duplicate-gpu: `invalid usage` after `Duplicate GPU detected`)."""
    if "NCCL error" not in str(f.metrics.get("message", "")):
        return f
    roots = [
        p
        for p in prior
        if p.severity == "error" and set(p.ranks) & set(f.ranks) and REGISTRY[p.id].group == "errors"
    ]
    if not roots:
        return f
    root = roots[0]
    return replace(
        f,
        severity="warning",
        title=f"{f.title} (the echo of {root.id})",
        why=f"The rank stopped on NCCL's error, whose reason is the {root.id} finding: {root.title}. "
        "Fix that and this exit goes with it.",
        fix=root.fix,
        metrics={**f.metrics, "echo_of": root.id},
    )


def _echo_evidence(rep: HangView, n: int) -> tuple[Evidence, ...]:
    return tuple(ev(p, ln, tx) for p, ln, tx in rep.echoes.select("path", "line", "text").head(n).iter_rows())


def _echo_metrics(rep: HangView) -> dict[str, object]:
    """The other ranks' reactions (timeouts, lost peers, the launcher's SIGTERMs): echoes, not causes."""
    e = rep.echoes
    return {
        "echo_ranks": sorted(set(e["rank"].drop_nulls().to_list())),
        "echoes": [
            {"rank": r, "what": w, "at": f"{p}:{ln}"}
            for r, w, p, ln in e.select("rank", "what", "path", "line").head(12).iter_rows()
        ],
    }


@rule("rank-exception", "error", "A rank raised its own fatal exception and went on waiting", "hang")
def rank_exception(ctx: Context) -> Iterable[Finding]:
    """A rank whose own exception (OOM, CUDA error, NCCL error; not one that only says a peer went away)
    the hang stage found (a traceback near its log's end, or one its launcher reported) while the rank
    did not simply die: it went on (an exception handler, an error path that calls another collective,
    a wait for its peers). rank-exited covers ranks whose exception ended them. Error: the exception is
    the first failure of that rank, whatever it did next."""
    rep = ctx.hang
    exited = {r for r, _e in rep.exited}
    for c in rep.causes.filter(~pl.col("echo")).iter_rows(named=True):
        r = int(c["rank"])
        if r in exited:
            continue
        exc, msg = str(c["exc_type"]), str(c["message"] or "")
        short = msg if len(msg) <= 140 else msg[:137] + "..."
        own = ev(c["path"], c["line"], c["text"])
        block = [ev(c["path"], c["block_line"], c["block_text"])] if c["block_line"] is not None else []
        yield Finding(
            id="rank-exception",
            severity="error",
            title=f"Rank {r} raised {exc}: {short}".rstrip(": "),
            why="The rank failed on its own first; it did not exit, so what it did next (an exception "
            "handler, an error path that calls another collective, waiting for its peers) and the other "
            "ranks' timeouts follow from this exception.",
            fix=FIX["d"],
            ranks=(r,),
            evidence=(own, *block, *_echo_evidence(rep, 4)),
            metrics={"rank": r, "cause": c["cause"], "exc_type": exc, "message": msg[:500], "via": c["via"]},
        )


@rule("watchdog-timeout", "error", "The PyTorch watchdog timed out a collective", "hang")
def watchdog_timeout(ctx: Context) -> Iterable[Finding]:
    """Every `Watchdog caught collective operation timeout: WorkNCCL(SeqNum, OpType, NumelIn,
    NumelOut, Timeout(ms))` line (also hard-wrapped ones and blocking-wait timeouts) and every gloo
    `Timed out waiting …ms for recv/send` (gloo's own timeout, no SeqNum), grouped by SeqNum and
    OpType: which ranks timed out, after how long, against which timeout."""
    t = ctx.hang.timeouts
    if t is None or t.is_empty():
        return
    # A line cut inside its WorkNCCL record (a terminal hard-wrap) keeps SeqNum but not OpType: it
    # joins its SeqNum's group when every other line of that SeqNum names one and the same op.
    ops = pl.col("op_type").drop_nulls().unique()
    one_op = pl.when(ops.len().over("seq") == 1).then(ops.first().over("seq"))
    t = t.with_columns(pl.coalesce("op_type", one_op).alias("op_type"))
    g = t.group_by("seq", "op_type", maintain_order=True).agg(
        pl.col("grank").drop_nulls().unique().sort().alias("ranks"),
        pl.col("timeout_ms").max(),
        pl.col("ran_for_ms").max(),
        pl.col("path"),
        pl.col("line"),
        pl.col("text"),
    )
    for row in g.iter_rows(named=True):
        ranks = tuple(int(r) for r in row["ranks"])
        secs = f"{row['timeout_ms'] / 1000:.0f} s" if row["timeout_ms"] else "the timeout"
        seq = f" SeqNum {row['seq']}" if row["seq"] is not None else ""
        title = (
            f"Watchdog timeout: {row['op_type'] or 'a collective'}{seq} did not finish within "
            f"{secs} on {len(ranks) or '?'} rank(s)"
        )
        evid = tuple(
            ev(p, ln, tx) for p, ln, tx in list(zip(row["path"], row["line"], row["text"], strict=False))[:8]
        )
        yield Finding(
            id="watchdog-timeout",
            severity="error",
            title=title,
            ranks=ranks,
            evidence=evid,
            why="The ranks that time out are the ones waiting; the rank holding them up often prints "
            "no timeout at all (see collective-hang).",
            fix="Do not only raise the timeout: find the rank that never joined (collective-hang), "
            "then raise it only if that rank was legitimately busy (checkpointing, evaluation).",
            metrics={
                "seq": row["seq"],
                "op": row["op_type"],
                "timeout_ms": row["timeout_ms"],
                "ran_for_ms": row["ran_for_ms"],
                "ranks": list(ranks),
            },
        )
