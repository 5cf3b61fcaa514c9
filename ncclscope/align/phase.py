"""Align stage, job phase: where each input's teardown begins and whether a failure came before it.

NCCL says when a process shuts down: `comm … - Destroy|Abort COMPLETE`, and the proxy service thread's
`[Service thread] Connection closed by localRank N` (an INFO line; NCCL 2.30 files it under the DESTROY
subsystem). NCCL 2.18-2.29 also print `[Service thread] Accept failed <errno>` as a WARN when the
service thread's listening socket is torn down under it (2.30 demotes it to INFO, NCCL_PROXY), and a local
peer that exits without closing its proxy connection leaves `Could not receive type from localRank N` and
`[Proxy Service N] Failed to execute operation Close from rank N` (proxy.cc, 2.12-2.29).
Applications and launchers mark a clean end as well (MLPerf's `run_stop` with status success,
`destroy_process_group`, torchrun's `worker group … finished` / `SUCCEEDED`). Any line the message catalog
files under NCCL's DESTROY subsystem (2.30 tags its teardown messages so) marks the teardown too.

Closures and socket errors after the teardown began are the job ending, not a failure, unless a
failure (a non-teardown, non-benign WARN, or a watchdog/backend error from PyTorch) came first. Error
trails (`file.cc:N -> 3`) are not counted: NCCL prints them for failures it recovers from too (CollNet/
SHARP init falling back to P2P), and a real failure prints a WARN or a PyTorch error beside them.
Line numbers only compare within one input file, so the phase is per path; `failed` is job-wide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ncclscope.frames import LogFrames
from ncclscope.parse.logs.keep.policy import Search

# NCCL's own teardown vocabulary (see the module docstring for the source of each).
TEARDOWN_MSG = (
    r"\[Service thread\] (?:Connection closed by localRank|Accept failed|Could not receive type from localRank)"
    r"|Failed to execute operation Close from rank|- (?:Destroy|Abort) (?:START|COMPLETE)"
)
# Clean-end markers printed by applications and launchers (not NCCL).
APP_END = (
    r'"key": "run_stop".*"status": "success"|destroy_process_group\(\) (?:was )?called'
    r"|[Ww]orker group (?:successfully )?finished|WorkerState\.SUCCEEDED"
)
SEARCHES = (Search("align/phase.py APP_END", APP_END),)  # kept for it in big inputs (`keep.policy`)
# PyTorch rows that are failures by themselves.
TORCH_FAILURE = ("watchdog_timeout", "backend_error", "desync", "taking_down", "terminate", "heartbeat_stuck")
_PHASE_SCHEMA = {"path": pl.Utf8, "teardown_line": pl.Int64, "failure_line": pl.Int64}


@dataclass(frozen=True)
class JobPhase:
    """Per input path: the first teardown line and the first failure line (null when none);
    `failed`: some input shows a failure before its teardown (or a failure and no teardown)."""

    per_path: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_PHASE_SCHEMA))
    failed: bool = False

    def benign_teardown(self, rows: pl.DataFrame) -> pl.Series:
        """True for rows (with `path`, `line`) printed after their input's teardown began, in a job
        with no failure before its teardown."""
        if self.failed or rows.is_empty():
            return pl.Series("benign_teardown", [False] * rows.height, dtype=pl.Boolean)
        joined = rows.select("path", "line").join(self.per_path, on="path", how="left", maintain_order="left")
        return (joined["line"] >= joined["teardown_line"]).fill_null(False).alias("benign_teardown")


def is_teardown_message(col: str = "message") -> pl.Expr:
    return pl.col(col).fill_null("").str.contains(TEARDOWN_MSG)


def _first_lines(df: pl.DataFrame, alias: str) -> pl.DataFrame:
    return df.group_by("path").agg(pl.col("line").min().alias(alias))


def _teardown_rows(logs: LogFrames) -> pl.DataFrame:
    ends = logs.inits.filter(pl.col("phase").fill_null("").str.contains(r"^(?:destroy|abort)_"))
    warn = logs.warnings.filter(is_teardown_message())
    app = _app_end_rows(logs)
    destroy = logs.known.filter(
        pl.col("subsys").fill_null("").str.contains("DESTROY")  # NCCL 2.30's own tag
        & (pl.col("level") == "INFO")
    )
    parts = [d.select("path", "line") for d in (ends, warn, app, destroy) if d.height]
    return pl.concat(parts) if parts else pl.DataFrame(schema={"path": pl.Utf8, "line": pl.Int64})


def _failure_rows(logs: LogFrames) -> pl.DataFrame:
    w = logs.warnings.filter(
        (pl.col("level") == "WARN") & ~pl.col("benign").fill_null(False) & ~is_teardown_message()
    )
    t = logs.torch.filter(pl.col("kind").is_in(TORCH_FAILURE))
    parts = [d.select("path", "line") for d in (w, t) if d.height]
    return pl.concat(parts) if parts else pl.DataFrame(schema={"path": pl.Utf8, "line": pl.Int64})


def job_phase(logs: LogFrames) -> JobPhase:
    """The teardown/failure line of every input path, and whether the job failed before tearing down."""
    down = _first_lines(_teardown_rows(logs), "teardown_line")
    fail = _first_lines(_failure_rows(logs), "failure_line")
    per = down.join(fail, on="path", how="full", coalesce=True).select(list(_PHASE_SCHEMA)).sort("path")
    per = per.cast(_PHASE_SCHEMA)  # type: ignore[arg-type]
    failed = per.filter(
        pl.col("failure_line").is_not_null()
        & (pl.col("teardown_line").is_null() | (pl.col("failure_line") < pl.col("teardown_line")))
    )
    return JobPhase(per_path=per, failed=failed.height > 0 or _error_after_abort(logs, down))


def _error_after_abort(logs: LogFrames, down: pl.DataFrame) -> bool:
    """PyTorch aborts the communicators first and logs the error after (ProcessGroupNCCL's watchdog and
    its exception path): a PyTorch failure line after the teardown began on the same input, in a job that
    printed no clean-end marker anywhere, is the failure, and the teardown is part of it (issue 27)."""
    if down.is_empty() or _succeeded(logs):
        return False
    late = logs.torch.filter(pl.col("kind").is_in(TORCH_FAILURE)).select("path", "line")
    late = late.join(down, on="path", how="inner").filter(pl.col("line") > pl.col("teardown_line"))
    return late.height > 0


def _succeeded(logs: LogFrames) -> bool:
    """Some application or launcher line marks a clean end (APP_END)."""
    torch = logs.torch.filter(pl.col("text").fill_null("").str.contains(APP_END))
    return _app_end_rows(logs).height > 0 or torch.height > 0


def _app_end_rows(logs: LogFrames) -> pl.DataFrame:
    """Application lines that mark a clean end (APP_END), e.g. MLPerf's `run_stop` with status success."""
    return logs.unknown.filter(
        ~pl.col("is_nccl").fill_null(False) & pl.col("text").fill_null("").str.contains(APP_END)
    )
