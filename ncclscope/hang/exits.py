"""Hang stage: how each rank ended, from the launcher's report and the backend's own errors.

Three facts a hang verdict needs besides sequence numbers, all read from log lines that any
torchrun + gloo (or NCCL) job prints:

- `launcher_exits`: torchrun's ChildFailedError summary (`rank : R (local_rank: L)` followed by
  `exitcode : C (pid: P)  (SIGNAME)`), with the pids torchrun itself sent `closing signal SIGTERM`
  to. Its "Root Cause (first observed failure)" is kept as a column but never used to blame a
  rank: in a hang the first rank to fail is a waiting one. Other launchers' crash lines (OpenMPI/PRRTE
  `… noticed that process rank R … exited on signal N`, its `Process name:`/`Exit code:` report, srun's
  `task T: Killed`, UCX's `Caught signal N`) are added for ranks the table does not name (`hang.crashes`).
- `gloo_facts`: gloo's `Timed out waiting …ms for recv/send` (a rank that entered and waited, like
  the NCCL watchdog), `Connection closed/reset by peer` (its peer went away) and `Received data
  size doesn't match expected size` (a size mismatch; the rank that prints it received more bytes
  than its own tensor called for).
- `died_ranks`: who died first. A rank killed by a signal torchrun did not send (SIGKILL from the
  OOM killer, SIGABRT, SIGSEGV), or a rank that exited non-zero while its own log, present in the
  input, shows no sign of waiting for a peer.

`rank_ends` says where each rank's log ends (last line, a crash line, a final line cut mid-write).
Lines without a rank tag belong to the file's rank (`file_ranks`): the one rank its tagged lines
name, else the number in a `rank<N>` file name.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.frames import LogFrames
from ncclscope.hang import crashes
from ncclscope.hang.classify import Ctx, HangVerdict, ev, fmt_ranks
from ncclscope.hang.crashes import launcher_name
from ncclscope.parse.logs.keep.policy import Search
from ncclscope.parse.tail import ends_mid_line
from ncclscope.records import Evidence

# Signals that stop a job from outside (torchrun stopping the survivors, Slurm, Ctrl-C): never a culprit.
STOP_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP"})
STOP_CODES = frozenset({128 + 15, 128 + 2, 128 + 1})  # a SIGTERM/SIGINT/SIGHUP handler's exit status
WAITER_KINDS = (
    "gloo_timeout",
    "gloo_peer_lost",
    "watchdog_timeout",
    "pg_status",
    "dump_signal",
    "dump_observed",
)
_FILE_RANK = r"(?i)(?:^|[^a-z])rank[_\-.]?(\d+)(?:\.[a-z]+)*$"

EXITS = {
    "rank": pl.Int64,
    "exit_code": pl.Int64,
    "signal": pl.Utf8,
    "pid": pl.Int64,
    "root_cause": pl.Boolean,
    "stopped_by_launcher": pl.Boolean,
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}


def file_ranks(logs: LogFrames) -> pl.DataFrame:
    """(path, frank): the rank a whole file belongs to, when it holds one rank's output."""
    cols = ["path", "rank_hint"]
    hinted = pl.concat(
        [
            logs.unknown.select(cols),
            logs.torch.select(cols),
            logs.warnings.select(cols),
            logs.streams.select(cols),
        ],
        how="vertical_relaxed",
    ).filter(pl.col("rank_hint").is_not_null())
    solo = (
        hinted.group_by("path")
        .agg(pl.col("rank_hint").unique().alias("_r"))
        .filter(pl.col("_r").list.len() == 1)
        .select("path", pl.col("_r").list.first().alias("frank"))
    )
    paths = pl.DataFrame({"path": [i.path for i in logs.inputs]}, schema={"path": pl.Utf8})
    named = paths.with_columns(
        pl.col("path").str.split("/").list.last().str.extract(_FILE_RANK, 1).cast(pl.Int64).alias("_n")
    )
    multi = hinted.group_by("path").agg(pl.col("rank_hint").n_unique().alias("_k")).filter(pl.col("_k") > 1)
    named = named.join(multi, on="path", how="anti").filter(pl.col("_n").is_not_null())
    out = named.join(solo, on="path", how="left").select("path", pl.coalesce("frank", "_n").alias("frank"))
    return pl.concat([out, solo.join(out, on="path", how="anti")], how="vertical_relaxed").unique(
        "path", keep="first", maintain_order=True
    )


def with_file_rank(torch: pl.DataFrame, franks: pl.DataFrame) -> pl.DataFrame:
    """`grank` filled from the file's rank where the line itself names none."""
    return (
        torch.join(franks, on="path", how="left")
        .with_columns(pl.coalesce("grank", "frank").alias("grank"))
        .drop("frank")
    )


def launcher_exits(torch: pl.DataFrame) -> pl.DataFrame:
    """One row per rank a launcher reported as failed: torchrun's table first, then the crash lines of
    OpenMPI/PRRTE, srun and UCX (`crash_exits`) for ranks torchrun did not name."""
    table = torchrun_exits(torch)
    crashes = crash_exits(torch).join(table.select("rank"), on="rank", how="anti")
    return pl.concat([table, crashes], how="vertical_relaxed").cast(EXITS)  # type: ignore[arg-type]


def crash_exits(torch: pl.DataFrame) -> pl.DataFrame:
    """EXITS rows from OpenMPI/PRRTE, srun and UCX crash lines (`hang.crashes`); a stop signal
    (SIGTERM after scancel, Ctrl-C) is the launcher stopping the rank, as for torchrun."""
    c = crashes.crash_exits(torch)
    return c.with_columns(
        pl.lit(False).alias("root_cause"),
        (
            pl.col("signal").is_in(list(STOP_SIGNALS)).fill_null(False)
            | pl.col("exit_code").is_in(list(STOP_CODES)).fill_null(False)
        ).alias("stopped_by_launcher"),
    ).select(list(EXITS))


def torchrun_exits(torch: pl.DataFrame) -> pl.DataFrame:
    """One row per rank torchrun reported as failed: exit code, signal, pid, whether torchrun stopped it."""
    t = torch.filter((pl.col("kind") == "launcher") & ~pl.col("detail").str.starts_with("died ")).sort(
        "path", "line"
    )
    if t.is_empty():
        return pl.DataFrame(schema=EXITS)
    # Each `exitcode` line belongs to the record whose `rank : R` line came last before it (<= 4 lines up).
    is_rank = pl.col("detail").str.starts_with("rank ")
    t = t.with_columns(
        pl.col("detail").str.extract(r"^section (\w+)", 1).forward_fill().over("path").alias("_sec"),
        pl.when(is_rank).then(pl.col("rank")).forward_fill().over("path").alias("_rank"),
        pl.when(is_rank).then(pl.col("line")).forward_fill().over("path").alias("_rline"),
    )
    exits = t.filter(
        pl.col("detail").str.starts_with("exitcode ") & ((pl.col("line") - pl.col("_rline")) <= 4)
    ).select(
        "path",
        "line",
        "text",
        "_sec",
        "_rank",
        pl.col("detail").str.extract(r"exitcode (-?\d+)", 1).cast(pl.Int64, strict=False).alias("exit_code"),
        pl.col("detail").str.extract(r"pid (\d+)", 1).cast(pl.Int64, strict=False).alias("pid"),
        pl.col("detail").str.extract(r"signal (SIG\w+)", 1).alias("signal"),
    )
    if exits.is_empty():
        return pl.DataFrame(schema=EXITS)
    sent = t.filter(pl.col("detail").str.starts_with("sent ")).select(
        pl.col("detail").str.extract(r"^sent (SIG\w+)", 1).alias("_sent"),
        pl.col("detail").str.extract(r"pid (\d+)", 1).cast(pl.Int64, strict=False).alias("pid"),
    )
    # one pid sent two signals: the first printed counts (keep="any" picked one per run)
    exits = exits.join(sent.unique("pid", keep="first", maintain_order=True), on="pid", how="left")
    out = exits.with_columns(
        pl.col("_rank").alias("rank"),
        (pl.col("_sec") == "root_cause").alias("root_cause"),
        (
            pl.col("_sent").is_not_null()
            | pl.col("signal").is_in(list(STOP_SIGNALS)).fill_null(False)
            | pl.col("exit_code").is_in(list(STOP_CODES)).fill_null(False)
        ).alias("stopped_by_launcher"),
    )
    return out.unique("rank", keep="first", maintain_order=True).select(list(EXITS)).cast(EXITS)  # type: ignore[arg-type]


def gloo_facts(torch: pl.DataFrame) -> pl.DataFrame:
    """gloo timeouts, lost peers and size mismatches, one row per line, with the rank that printed it."""
    return torch.filter(pl.col("kind").str.starts_with("gloo_")).select(
        "kind",
        pl.col("grank").alias("rank"),
        "detail",
        "numel_in",
        "numel_out",
        "timeout_ms",
        "path",
        "line",
        "text",
    )


def waiting_ranks(torch: pl.DataFrame) -> set[int]:
    """Ranks whose own lines show them waiting for a peer (a timeout, a lost connection, a dump signal)."""
    return set(torch.filter(pl.col("kind").is_in(WAITER_KINDS))["grank"].drop_nulls().to_list())


def died_ranks(exits: pl.DataFrame, waiters: set[int], logged: set[int]) -> dict[int, Evidence]:
    """Ranks that died first, with the launcher line that says so.

    Never a rank whose own lines show it waiting (an NCCL watchdog takes its process down with
    SIGABRT after the timeout: an echo). Otherwise: a signal exit other than SIGTERM/SIGINT/SIGHUP
    is a death; a positive exit code (other than a stop handler's 128+N) counts only for a rank
    whose own log is in the input (`logged`). When signal deaths are more than half of the failures
    the launcher reported, only ranks whose logs are present count (without logs a job-wide abort
    after a timeout looks the same)."""
    rows = [
        r
        for r in exits.filter(~pl.col("stopped_by_launcher") & pl.col("rank").is_not_null()).iter_rows(
            named=True
        )
        if int(r["rank"]) not in waiters
    ]
    signalled = [r for r in rows if r["exit_code"] is not None and r["exit_code"] < 0]
    many = len(signalled) > max(1, exits.height // 2)
    out: dict[int, Evidence] = {}
    for r in rows:
        rank, code = int(r["rank"]), r["exit_code"]
        if code is None or code == 0 or ((code > 0 or many) and rank not in logged):
            continue
        why = f"exit code {code}" + (f" ({r['signal']})" if r["signal"] else "")
        who = launcher_name(str(r["text"]))
        out[rank] = ev(
            r["path"], r["line"], f"{who}: rank {rank} failed with {why}: {str(r['text']).strip()}"
        )
    return out


def size_mismatches(gloo: pl.DataFrame) -> dict[int, Evidence]:
    """Ranks on which gloo found a received size different from what their own tensor called for."""
    m = gloo.filter((pl.col("kind") == "gloo_size_mismatch") & pl.col("rank").is_not_null())
    return {
        int(r["rank"]): ev(r["path"], r["line"], r["text"])
        for r in m.unique("rank", keep="first").iter_rows(named=True)
    }


_NO_SEQ = "no Flight Recorder dump and no sequence number in the backend's errors: which collective is stuck is unknown"


def gloo_verdict(ctx: Ctx, gloo: pl.DataFrame, known: set[int]) -> HangVerdict | None:
    """A verdict from backend errors and exits alone, for jobs with no dump and no watchdog line.

    Order: a size mismatch (c) names the rank that reported it; a rank that died (d); else ranks that
    timed out waiting are waiters, and the known ranks (`known`: files, launcher report) that did not
    wait are the suspects of (a), with low confidence, when they are at most a quarter of the job."""
    if gloo.is_empty() and not (ctx.died and ctx.waiters):  # a death nobody waited on is rank-exited's alone
        return None
    waiters = tuple(sorted(ctx.waiters))
    seen = gloo.unique("rank", keep="first", maintain_order=True).head(6)
    evidence = tuple(ev(r["path"], r["line"], r["text"]) for r in seen.iter_rows(named=True))

    def verdict(
        klass: str, culprits: tuple[int, ...], conf: str, reason: str, first: tuple[Evidence, ...] = ()
    ) -> HangVerdict:
        return HangVerdict(
            klass=klass,
            group="the job's process group (backend errors, no Flight Recorder dump)",
            source="gloo",
            key="gloo",
            culprits=culprits,
            confidence=conf,
            reason=reason,
            ranks_seen=tuple(sorted(known)),
            group_size=len(known) or None,
            evidence=first + evidence,
            missing=(_NO_SEQ,),
        )

    if ctx.size_mismatch:
        return verdict(
            "c",
            tuple(sorted(ctx.size_mismatch)),
            "medium",
            "the backend aborted on a received size different from the rank's own",
            tuple(ctx.size_mismatch.values()),
        )
    if ctx.died:
        return verdict(
            "d",
            tuple(sorted(ctx.died)),
            "medium",
            "the launcher saw it die while the others waited",
            tuple(ctx.died.values()),
        )
    suspects = tuple(sorted(known - ctx.waiters))
    if waiters and suspects and len(suspects) <= max(1, len(known) // 4):
        return verdict(
            "a", suspects, "low", f"ranks {fmt_ranks(waiters)} timed out waiting for a peer; these did not"
        )
    return verdict(
        "undetermined",
        (),
        "low",
        f"ranks {fmt_ranks(waiters)} timed out waiting; the others are not in the evidence",
    )


# --- per (file, rank): where each rank's log ends ---------------------------------------------

_CRASH = (
    r"Segmentation fault|SIGSEGV|SIGBUS|SIGKILL|Killed|core dumped|out of memory|OutOfMemoryError|CUDA error"
    r"|illegal memory access|Cuda failure|ECC error|Xid|exitcode: -?9|uncorrectable"
)
SEARCHES = (Search("hang/exits.py _CRASH", _CRASH),)  # crash-like last lines: kept in big inputs


_ENDS: S.Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "last_line": pl.Int64,
    "last_ts_us": pl.Float64,
    "last_text": pl.Utf8,
    "crashed": pl.Boolean,
    "mid_line": pl.Boolean,
    "crash_line": pl.Int64,
    "crash_text": pl.Utf8,
}


def rank_ends(logs: LogFrames, franks: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (file, rank): last line, whether the rank's lines end with a crash, whether the file ends mid-line.
    `franks` (path, frank) names files that hold one rank's output: their last line is the file's."""
    st = logs.streams
    if st.is_empty():
        return S.empty(_ENDS)
    ranks = (
        logs.inits.filter(pl.col("rank").is_not_null())
        .group_by("host", "pid")
        .agg(pl.col("rank").min().alias("_r"))
    )
    st = st.join(ranks, on=["host", "pid"], how="left").with_columns(
        pl.coalesce("rank_hint", "_r").alias("rank")
    )
    cols = ["path", "rank", "last_line", "last_ts_us", "last_text"]
    st = st.filter(pl.col("rank").is_not_null()).select(cols)
    if franks is not None and not franks.is_empty():
        pool = pl.concat(
            [f.select("path", "line", "text", "ts_us") for f in (logs.unknown, logs.torch, logs.warnings)],
            how="vertical_relaxed",
        ).join(franks, on="path", how="inner")
        whole = (
            pool.sort("line")
            .group_by("path", "frank")
            .agg(
                pl.col("line").max().alias("last_line"),
                pl.col("ts_us").drop_nulls().max().alias("last_ts_us"),
                pl.col("text").last().alias("last_text"),
            )
            .rename({"frank": "rank"})
        )
        st = pl.concat([st, whole.select(cols)], how="vertical_relaxed")
    per = st.group_by("path", "rank").agg(
        pl.col("last_line").max(), pl.col("last_ts_us").max(), pl.col("last_text").sort_by("last_line").last()
    )
    per = per.join(_crash_lines(logs, per), on=["path", "rank"], how="left")
    mids = {p: _ends_mid_line(p) for p in per["path"].unique().to_list()}
    per = per.with_columns(
        pl.col("crash_line").is_not_null().alias("crashed"),
        pl.col("path").replace_strict(mids, default=False, return_dtype=pl.Boolean).alias("mid_line"),
    )
    return S.conform(per, _ENDS)


def _crash_lines(logs: LogFrames, per: pl.DataFrame) -> pl.DataFrame:
    """The last crash-like line of each (file, rank). Lines without a rank belong to the file's
    only rank (one file per rank); in a file holding several ranks they are left unassigned."""
    cols = ["path", "line", "rank_hint", "text"]
    pool = pl.concat([logs.unknown.select(cols), logs.warnings.select(cols)], how="vertical_relaxed")
    ucx = logs.torch.filter((pl.col("kind") == "launcher") & pl.col("detail").str.contains(" via ucx "))
    pool = pl.concat(
        [pool, ucx.select(cols)], how="vertical_relaxed"
    )  # UCX's `Caught signal`: a torch row now
    hits = pool.filter(pl.col("text").str.contains(_CRASH))
    solo = per.group_by("path").agg(pl.col("rank").unique()).filter(pl.col("rank").list.len() == 1)
    solo = solo.select("path", pl.col("rank").list.first().alias("_solo"))
    hits = hits.join(solo, on="path", how="left").with_columns(
        pl.coalesce("rank_hint", "_solo").alias("rank")
    )
    return (
        hits.filter(pl.col("rank").is_not_null())
        .group_by("path", "rank")
        .agg(
            pl.col("line").max().alias("crash_line"),
            pl.col("text").sort_by("line").last().alias("crash_text"),
        )
    )


def _ends_mid_line(path: str) -> bool:
    """True when the file's last byte is not a newline: the writer was killed mid-line."""
    return ends_mid_line(path)  # (compressed, UTF-16/32 and archive members too: `parse.tail`)
