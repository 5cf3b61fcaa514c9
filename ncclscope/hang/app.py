"""Hang stage: the rank whose own exception ended the job, and the ranks that only echoed it (issue 10).

Application output is evidence too: a Python traceback's last line (`torch.OutOfMemoryError: CUDA out of
memory …`, `RuntimeError: CUDA error: …`), spawn's `-- Process N terminated with the following error:`
and torchrun's ChildFailedError records (ncclscope.parse.logs.lines.app_output links them). An exception is a
rank's cause of death when the launcher reported it (spawn's header, a torchrun record) or when the
rank's log ends within `TAIL_LINES` lines after it. Exceptions that only say a peer went away (gloo
`Connection closed by peer`, `ncclRemoteError`, timeouts) are echoes; `KeyboardInterrupt`, `SystemExit`
and the launchers' own aggregate exceptions are no cause by themselves.
"""

from __future__ import annotations

import polars as pl

from ncclscope.frames import LogFrames
from ncclscope.hang.exits import STOP_SIGNALS, WAITER_KINDS
from ncclscope.parse.logs.lines import exceptions

TAIL_LINES = 40  # a dying process still prints a little (destructor warnings, c10d shutdown, buffered prints)
_STOP = r"(?:^|\.)(?:KeyboardInterrupt|SystemExit|ChildFailedError|ProcessRaisedException)$"
_ECHO = (
    r"(?i)connection (?:closed|reset) by (?:remote )?peer|remote process exit|ncclRemoteError|timed out|"
    r"watchdog|communicator was aborted|broken pipe|connection refused|socket timeout"
)
_CAUSES = (
    ("oom", r"(?i)OutOfMemoryError|out of memory|can't allocate memory|cannot allocate memory"),
    (
        "cuda",
        (
            r"(?i)CUDA error|cuda runtime error|illegal memory access|device-side assert|unhandled cuda error"
            r"|AcceleratorError|ECC error"
        ),
    ),
    ("nccl", r"(?i)NCCL error|nccl(?:Internal|System|InvalidUsage|InvalidArgument|UnhandledCuda)Error"),
)

CAUSES: dict[str, pl.DataType | type[pl.DataType]] = {
    "rank": pl.Int64,
    "cause": pl.Utf8,
    "exc_type": pl.Utf8,
    "message": pl.Utf8,
    "via": pl.Utf8,
    "echo": pl.Boolean,
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
    "block_line": pl.Int64,
    "block_text": pl.Utf8,
    "link_line": pl.Int64,
    "link_text": pl.Utf8,
    "local_rank": pl.Int64,
}
ECHOES: dict[str, pl.DataType | type[pl.DataType]] = {
    "rank": pl.Int64,
    "what": pl.Utf8,
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}


def single_node(logs: LogFrames) -> bool:
    """No line shows a second node: spawn's process index is then the global rank."""
    nn = logs.inits["nnodes"].max()
    return (not isinstance(nn, int) or nn <= 1) and logs.streams["host"].drop_nulls().n_unique() <= 1


def _classified(exc: pl.DataFrame) -> pl.DataFrame:
    cause = pl.lit("exception")
    for label, pat in reversed(_CAUSES):
        cause = (
            pl.when(pl.col("message").str.contains(pat) | pl.col("exc_type").str.contains(pat))
            .then(pl.lit(label))
            .otherwise(cause)
        )
    spawn_exit = (pl.col("kind") == "spawn") & pl.col("message").str.contains(r"^process \d+ terminated with")
    sig = pl.col("message").str.extract(r"signal (SIG\w+)", 1)
    cause = (
        pl.when(spawn_exit)
        .then(pl.format("exited ({})", pl.coalesce(sig, pl.lit("exit code"))))
        .otherwise(cause)
    )
    stop = (
        pl.col("exc_type").str.contains(_STOP)
        | ((pl.col("exc_type") == "Exception") & (pl.col("message") == ""))
        | (spawn_exit & sig.is_in(list(STOP_SIGNALS)).fill_null(False))
    )
    echo = pl.col("kind").is_in(WAITER_KINDS) | pl.col("message").str.contains(_ECHO)
    return exc.with_columns(cause.alias("cause"), stop.alias("_stop"), (echo & ~spawn_exit).alias("echo"))


def app_causes(logs: LogFrames, franks: pl.DataFrame, ends: pl.DataFrame, failed: set[int]) -> pl.DataFrame:
    """One row per rank that raised a fatal exception: its first cause (`echo` False), or, for a rank
    whose fatal exceptions all say a peer went away, the first of those (`echo` True). `failed`: ranks
    the launcher reported failed (their exceptions count wherever they are in the log)."""
    exc = exceptions(logs.torch)
    if exc.is_empty():
        return pl.DataFrame(schema=CAUSES)
    local = pl.col("local_rank") if single_node(logs) else pl.lit(None, pl.Int64)
    exc = (
        exc.join(franks, on="path", how="left")
        .with_columns(pl.coalesce("rank", local, "frank").alias("rank"))
        .filter(pl.col("rank").is_not_null())
        .pipe(_classified)
        .filter(~pl.col("_stop"))
    )
    last = ends.select("path", "rank", pl.col("last_line").alias("_last"))
    sizes = pl.DataFrame(
        {"path": [i.path for i in logs.inputs], "_size": [i.lines for i in logs.inputs]},
        schema={"path": pl.Utf8, "_size": pl.Int64},
    )
    exc = exc.join(last, on=["path", "rank"], how="left").join(sizes, on="path", how="left")
    near_end = (pl.coalesce("_last", "_size") - pl.col("line")) <= TAIL_LINES
    fatal = pl.col("via").is_in(["spawn", "torchrun_table"]) | pl.col("rank").is_in(list(failed)) | near_end
    exc = _not_after_wait(exc.filter(fatal), logs.torch)
    picked = exc.sort("echo", "line").group_by("rank", maintain_order=True).first()
    return picked.select(list(CAUSES)).cast(CAUSES).sort("rank")  # type: ignore[arg-type]


def _not_after_wait(exc: pl.DataFrame, torch: pl.DataFrame) -> pl.DataFrame:
    """Drop causes a rank raised after its own lines showed it waiting for a peer: a consequence."""
    waits = (
        torch.filter(pl.col("kind").is_in(WAITER_KINDS))
        .with_columns(pl.coalesce("rank_hint", "rank").alias("rank"))
        .group_by("path", "rank")
        .agg(pl.col("line").min().alias("_wait"))
    )
    exc = exc.join(waits, on=["path", "rank"], how="left")
    return exc.filter(pl.col("echo") | pl.col("_wait").is_null() | (pl.col("_wait") >= pl.col("line")))


def echo_lines(torch: pl.DataFrame, causes: pl.DataFrame, culprits: set[int]) -> pl.DataFrame:
    """What the other ranks printed after the culprit died: their timeouts, lost peers, the SIGTERMs
    the launcher sent them. One line per (rank, what), in file order."""
    waits = torch.filter(
        pl.col("kind").is_in(WAITER_KINDS) & ~pl.col("grank").is_in(list(culprits)).fill_null(False)
    )
    waits = waits.select(pl.col("grank").alias("rank"), pl.col("kind").alias("what"), "path", "line", "text")
    raised = causes.filter(pl.col("echo") & ~pl.col("rank").is_in(list(culprits))).select(
        "rank", pl.format("raised {}", pl.col("exc_type")).alias("what"), "path", "line", "text"
    )
    sent = torch.filter(
        pl.col("kind").is_in(["launcher", "spawn"]) & pl.col("detail").str.starts_with("sent ")
    ).select(
        pl.lit(None, pl.Int64).alias("rank"),
        pl.format("launcher {}", pl.col("detail")).alias("what"),
        "path",
        "line",
        "text",
    )
    out = pl.concat([waits, raised, sent], how="vertical_relaxed").cast(ECHOES)  # type: ignore[arg-type]
    return (
        out.unique(["path", "line"], keep="first", maintain_order=True)
        .unique(["rank", "what"], keep="first", maintain_order=True)
        .sort("path", "line")
    )
