"""Hang stage: per (process group or communicator, rank) progress facts from every source.

PyTorch lines and Flight Recorder dumps give, per rank of a group, the sequence number that timed
out and the last enqueued / completed work (PROGRESS); NCCL COLL lines give the last opCount per
rank of a communicator (COLL_PROGRESS, computed in `ncclscope.hang.coll` and re-exported here).
Everything here is vectorised Polars; the verdict itself is drawn in `ncclscope.hang.verdict`.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.frames import LogFrames
from ncclscope.hang.coll import COLL_PROGRESS, coll_mismatches, coll_progress
from ncclscope.parse.flight.read import FlightFrames

__all__ = [
    "COLL_PROGRESS",
    "PROGRESS",
    "RANK_FACTS",
    "coll_mismatches",
    "coll_progress",
    "flight_ops",
    "flight_progress",
    "newest_groups",
    "rank_facts",
    "torch_progress",
    "torch_rows",
    "untracked_groups",
]

PROGRESS: S.Schema = {
    "source": pl.Utf8,  # torch | flight
    "group": pl.Utf8,  # process-group key shared by every rank of the group ("?" when not printed)
    "rank": pl.Int64,  # global rank when known ([rankN]: wrapper, dump file name), else as printed
    "timed_out_seq": pl.Int64,  # first SeqNum the watchdog reported on this rank
    "op": pl.Utf8,  # op at timed_out_seq (WorkNCCL OpType / FR profiling name)
    "numel_in": pl.Int64,
    "numel_out": pl.Int64,
    "dtype": pl.Utf8,
    "enqueued": pl.Int64,  # last enqueued work (PG status, dump signal, FR pg_status)
    "completed": pl.Int64,
    "detector": pl.Boolean,  # this rank raised the dump signal (first to detect the timeout)
    "named_detector": pl.Int64,  # a rank this rank's lines name as the detector (`from rank N`)
    "heartbeat": pl.Boolean,  # the watchdog itself got stuck (a CUDA/NCCL API call hangs)
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}

# How much a row tells about progress, to pick each rank's evidence line (lower is better).
_EVIDENCE_RANK = {
    "pg_status": 0,
    "dump_signal": 1,
    "watchdog_timeout": 2,
    "heartbeat_stuck": 3,
    "dump_observed": 4,
}
_PROGRESS_KINDS = list(_EVIDENCE_RANK)


def _join_wrapped(torch: pl.DataFrame) -> pl.DataFrame:
    """Fold hard-wrapped continuation lines (`wrapped_tail`) into the line before them."""
    tails = torch.filter(pl.col("detail") == "wrapped_tail")
    if tails.is_empty():
        return torch
    fields = [
        "seq",
        "op_type",
        "numel_in",
        "numel_out",
        "timeout_ms",
        "ran_for_ms",
        "last_enqueued",
        "last_completed",
        "last_started",
    ]
    t = tails.select(
        "path", (pl.col("line") - 1).alias("line"), "kind", *[pl.col(f).alias(f"_t_{f}") for f in fields]
    )
    heads = torch.filter(pl.col("detail") != "wrapped_tail").join(t, on=["path", "line", "kind"], how="left")
    return heads.with_columns([pl.coalesce(f, f"_t_{f}").alias(f) for f in fields]).drop(
        [f"_t_{f}" for f in fields]
    )


def torch_rows(logs: LogFrames) -> pl.DataFrame:
    """TORCH rows with wrapped lines joined and `grank` (global rank when the wrapper printed one)."""
    t = _join_wrapped(logs.torch)
    return _terminate_timeouts(t.with_columns(pl.coalesce("rank_hint", "rank").alias("grank")))


def _terminate_timeouts(t: pl.DataFrame) -> pl.DataFrame:
    """`Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught … WorkNCCL(SeqNum,
    OpType, …)` (also as `what():` after `terminate called`) carries the whole timeout record. torch prints
    the watchdog line first; a paste that kept only the termination still shows that rank timing out in
    that collective, so it counts as one watchdog_timeout row unless the rank's own watchdog line is there."""
    term = t.filter(
        (pl.col("kind") == "terminate")
        & (pl.col("detail") == "watchdog_exception")
        & pl.col("seq").is_not_null()
        & pl.col("op_type").is_not_null()
    )
    if term.is_empty():
        return t
    seen = t.filter(pl.col("kind") == "watchdog_timeout").select("path", "grank", "seq").unique()
    add = term.join(seen, on=["path", "grank", "seq"], how="anti", nulls_equal=True).unique(
        ["path", "grank", "seq"], keep="first", maintain_order=True
    )
    return pl.concat(
        [t, add.with_columns(pl.lit("watchdog_timeout").alias("kind"), pl.lit("timeout").alias("detail"))]
    )


def _pg_of_seq(t: pl.DataFrame) -> pl.DataFrame:
    # WorkNCCL lines do not name their process group; the PG status line for the same rank and
    # SeqNum does, so the watchdog line inherits it.
    named = (
        t.filter(pl.col("pg_id").is_not_null() & pl.col("seq").is_not_null())
        .group_by("grank", "seq")
        .agg(pl.col("pg_id").first().alias("_pg"))
    )
    t = t.join(named, on=["grank", "seq"], how="left")
    t = t.with_columns(pl.coalesce("pg_id", "_pg").alias("group")).drop("_pg")
    # Other ranks' WorkNCCL lines: the group some rank named for that SeqNum, else the only group named.
    by_seq = (
        t.filter(pl.col("group").is_not_null() & pl.col("seq").is_not_null())
        .group_by("seq")
        .agg(pl.col("group").unique().alias("_gs"))
    )
    by_seq = by_seq.filter(pl.col("_gs").list.len() == 1).select(
        "seq", pl.col("_gs").list.first().alias("_g")
    )
    t = (
        t.join(by_seq, on="seq", how="left")
        .with_columns(pl.coalesce("group", "_g").alias("group"))
        .drop("_g")
    )
    groups = t["group"].drop_nulls().unique()
    only = groups[0] if groups.len() == 1 else "?"
    return t.with_columns(pl.col("group").fill_null(only))


def torch_progress(logs: LogFrames) -> pl.DataFrame:
    """One PROGRESS row per (process group, rank) that printed any watchdog / status / dump line."""
    t = torch_rows(logs).filter(pl.col("kind").is_in(_PROGRESS_KINDS) & pl.col("grank").is_not_null())
    if t.is_empty():
        return S.empty(PROGRESS)
    t = _pg_of_seq(t).with_columns(pl.col("kind").replace_strict(_EVIDENCE_RANK, default=9).alias("_prio"))
    timeout = pl.col("kind").is_in(["watchdog_timeout", "pg_status"])
    first_t = pl.col("seq").filter(timeout).min()
    at_t = (pl.col("seq") == first_t) & pl.col("op_type").is_not_null()
    detects = (pl.col("kind") == "dump_signal") & pl.col("detail").is_in(
        ["this_local_rank", "broadcast", "first_pg"]
    )
    # `first()` below takes the best-ranked line of each (group, rank): the sort must break every tie
    # (same kind and line number in two files) or the evidence line changes with the thread count.
    out = (
        t.sort("_prio", "line", "path", maintain_order=True)
        .group_by("group", "grank")
        .agg(
            first_t.alias("timed_out_seq"),
            pl.col("op_type").filter(at_t).first().alias("op"),
            pl.col("numel_in").filter(at_t).first().alias("numel_in"),
            pl.col("numel_out").filter(at_t).first().alias("numel_out"),
            pl.col("last_enqueued").max().alias("enqueued"),
            pl.col("last_completed").max().alias("completed"),
            detects.any().alias("detector"),
            pl.col("from_rank").drop_nulls().first().alias("named_detector"),
            (pl.col("kind") == "heartbeat_stuck").any().alias("heartbeat"),
            pl.col("path").first(),
            pl.col("line").first(),
            pl.col("text").first(),
        )
    )
    out = out.with_columns(pl.lit("torch").alias("source"), pl.col("grank").alias("rank"))
    # group_by hands groups back in no set order and the verdicts follow this frame's order: groups in
    # numeric order ("2" before "10"; the unnamed "?" after the numbers), ranks ascending.
    out = out.sort(pl.col("group").str.len_chars(), "group", "rank")
    return S.conform(out, PROGRESS)


def untracked_groups(flight: FlightFrames) -> set[str]:
    """Groups whose dumps never mark an entry started or completed although they retire entries (or
    whose entries are all `gloo:`): the backend records no completion (gloo), so `completed` there
    means retired, failed work included, and `completed == enqueued` proves nothing."""
    e = flight.entries
    if e.is_empty():
        return set()
    g = (
        e.filter(~pl.col("is_p2p"))
        .group_by("pg_name")
        .agg(
            (
                pl.col("state").is_in(["started", "completed"])
                | pl.col("time_started_ns").is_not_null()
                | pl.col("time_completed_ns").is_not_null()
            )
            .any()
            .alias("_tracked"),
            pl.col("retired").fill_null(False).any().alias("_retired"),
            pl.col("profiling_name").str.starts_with("gloo:").all().alias("_gloo"),
        )
    )
    return set(g.filter(~pl.col("_tracked") & (pl.col("_retired") | pl.col("_gloo")))["pg_name"].to_list())


def newest_groups(flight: FlightFrames, untracked: set[str]) -> dict[int, str]:
    """Rank → the group of its newest Flight Recorder entry (by creation time), for ranks whose dumps
    hold only groups without completion tracking (gloo). A gloo collective blocks the thread that
    waits on it, so a rank that created work in another group later is not waiting in this one: its
    last entry there finished, though nothing in the dump says so."""
    e = flight.entries
    if e.is_empty() or not untracked:
        return {}
    per = (
        e.filter(pl.col("time_created_ns").is_not_null() & pl.col("rank").is_not_null())
        .group_by("rank")
        .agg(
            pl.col("pg_name").sort_by("time_created_ns").last().alias("_newest"),
            pl.col("pg_name").is_in(list(untracked)).all().alias("_all_untracked"),
        )
        .filter(pl.col("_all_untracked") & pl.col("_newest").is_not_null())
    )
    return {int(r): str(g) for r, g in per.select("rank", "_newest").iter_rows()}


def flight_progress(flight: FlightFrames) -> pl.DataFrame:
    """PROGRESS rows from Flight Recorder dumps: pg_status numbers plus the entry at the stuck seq.
    In groups without completion tracking (`untracked_groups`) both numbers count collective_seq_id
    from the entries (pg_status counts op_id, p2p included): enqueued = the last entry, completed =
    the last retired entry."""
    if flight.entries.is_empty():
        return S.empty(PROGRESS)
    e = flight.entries.filter(~pl.col("is_p2p"))
    st = flight.status
    names = e.group_by("rank", "pg_id").agg(pl.col("pg_name").first(), pl.col("path").first())
    per = e.group_by("rank", "pg_name").agg(
        pl.col("collective_seq_id").max().alias("_max_seq"),
        pl.col("collective_seq_id").filter(pl.col("state") == "completed").max().alias("_max_done"),
        # (a batch of sends and receives, `coalesced`, carries the collective seq before it: not its work)
        pl.col("collective_seq_id")
        .filter(pl.col("state").is_in(["scheduled", "started"]) & (pl.col("op") != "coalesced"))
        .min()
        .alias("_open"),
        pl.col("collective_seq_id").filter(pl.col("retired").fill_null(False)).max().alias("_max_retired"),
        pl.col("path").first(),
    )
    if not st.is_empty():
        per = per.join(
            st.join(names.drop("path"), on=["rank", "pg_id"], how="inner").select(
                "rank", "pg_name", "last_enqueued", "last_completed"
            ),
            on=["rank", "pg_name"],
            how="left",
        )
    else:
        per = per.with_columns(
            pl.lit(None, pl.Int64).alias("last_enqueued"), pl.lit(None, pl.Int64).alias("last_completed")
        )
    loose = pl.col("pg_name").is_in(list(untracked_groups(flight)))
    # pg_status holds the `seq_` of the last work enqueued / completed, and a batched P2P work's `seq_`
    # is the P2P counter (ProcessGroupNCCL, torch 2.11 dumps: last_enqueued_collective 15 with
    # last_started_collective 71 after a send/recv batch). The entries' collective_seq_id is always in
    # collective units, so they decide where they exist; pg_status only fills a group without entries.
    # Completed is the end of the completed prefix: work runs in order on the stream, and an entry read
    # as completed after an open one is an aborted communicator's kernels ending (events complete then).
    per = per.with_columns(
        pl.when(loose)
        .then(pl.col("_max_seq"))
        .otherwise(pl.coalesce("_max_seq", "last_enqueued"))
        .alias("enqueued"),
        pl.when(loose)
        .then(pl.col("_max_retired"))
        .otherwise(pl.coalesce(pl.col("_open") - 1, "_max_done", "last_completed"))
        .alias("completed"),
    )
    # group_by hands groups back in no set order: sort, so the verdicts (and the report) do not change
    # from run to run on the same dumps (issue 27: three runs gave three JSON files).
    per = per.sort(pl.col("pg_name").str.len_chars(), "pg_name", "rank")
    return S.conform(
        per.with_columns(
            pl.lit("flight").alias("source"),
            pl.col("pg_name").alias("group"),
            pl.lit(0, pl.Int64).alias("line"),
            pl.lit(False).alias("detector"),
            pl.lit(False).alias("heartbeat"),
        ),
        PROGRESS,
    )


def flight_ops(flight: FlightFrames) -> pl.DataFrame:
    """Per (group, rank, collective_seq_id): op, sizes and dtypes, for the desync check."""
    if flight.entries.is_empty():
        return pl.DataFrame(
            schema={
                "group": pl.Utf8,
                "rank": pl.Int64,
                "seq": pl.Int64,
                "op": pl.Utf8,
                "numel_in": pl.Int64,
                "numel_out": pl.Int64,
                "dtype": pl.Utf8,
                "state": pl.Utf8,
            }
        )
    e = flight.entries
    return e.filter(~pl.col("is_p2p") & (pl.col("op") != "coalesced")).select(
        pl.col("pg_name").alias("group"),
        "rank",
        pl.col("collective_seq_id").alias("seq"),
        "op",
        pl.col("input_numel").alias("numel_in"),
        pl.col("output_numel").alias("numel_out"),
        pl.col("input_dtypes").alias("dtype"),
        "state",
    )


RANK_FACTS: S.Schema = {
    "comm": pl.Utf8,
    "rank": pl.Int64,  # rank in that communicator
    "host": pl.Utf8,
    "pid": pl.Int64,
    "nranks": pl.Int64,
    "init_start": pl.Boolean,
    "init_complete": pl.Boolean,
    "last_op_count": pl.Int64,
    "last_op": pl.Utf8,
    "first_warn_line": pl.Int64,
    "first_warn": pl.Utf8,
    "last_warn_line": pl.Int64,
    "last_warn": pl.Utf8,
    "path": pl.Utf8,
}


def rank_facts(logs: LogFrames, coll: pl.DataFrame) -> pl.DataFrame:
    """Per (communicator, rank): Init START/COMPLETE, last opCount, first and last WARN of its process."""
    ini = logs.inits.filter(
        pl.col("rank").is_not_null() & pl.col("phase").is_in(["start", "complete", "legacy"])
    )
    if ini.is_empty():
        return S.empty(RANK_FACTS)
    per = ini.group_by(pl.coalesce("comm_id", pl.format("nranks={}", "nranks")).alias("comm"), "rank").agg(
        pl.col("host").first(),
        pl.col("pid").first(),
        pl.col("nranks").max(),
        pl.col("path").first(),
        (pl.col("phase") == "start").any().alias("init_start"),
        pl.col("phase").is_in(["complete", "legacy"]).any().alias("init_complete"),
    )
    w = (
        logs.warnings.filter(pl.col("level") == "WARN")
        .sort("line")
        .group_by("path", "host", "pid")
        .agg(
            pl.col("line").first().alias("first_warn_line"),
            pl.col("message").first().alias("first_warn"),
            pl.col("line").last().alias("last_warn_line"),
            pl.col("message").last().alias("last_warn"),
        )
    )
    per = per.join(w, on=["path", "host", "pid"], how="left")
    per = per.join(coll.select("comm", "rank", "last_op_count", "last_op"), on=["comm", "rank"], how="left")
    return S.conform(per.sort("comm", "rank"), RANK_FACTS)
