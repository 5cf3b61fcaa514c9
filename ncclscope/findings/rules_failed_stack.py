"""Findings stage, the Flight Recorder's stack of a failed collective, when it is all the evidence holds.

When ProcessGroupNCCL's watchdog finds a work that timed out or failed, it logs the Python stack the
Flight Recorder stored when that collective was called: `Stack trace of the failed collective: ` then one
`#N <function> from <file>:<line>` per frame, innermost first (torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp WorkNCCL::printTraceback, torch >= 2.5; the entries come from the Flight Recorder's
`getTraceback`). Frame #0 is the c10d API that was called (`broadcast`, `all_reduce`, …); the first frame
outside torch is the program's call site. A paste that kept only this record still shows which rank's
collective failed and where the program issued it; the peer that never joined cannot be told from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import make
from ncclscope.records import Finding

FRAME = re.compile(r"^(?P<fn>\S+) from (?P<file>.+?):(?P<line>\d+)$")
TORCH_FILE = re.compile(r"/torch/(?:distributed|utils|nn|_dynamo)/")  # torch's own frames, not the program's
# The `[rankN]:` tag as a paste may leave it: `[rank3]:` and a markdown-damaged `[rank3[]:` alike.
RANK_TAG = re.compile(r"^\s*\[rank(\d+)\W{0,3}:")
MAX_FRAMES = 12


def _records(ctx: Context) -> list[tuple[pl.DataFrame, list[str]]]:
    """(head row, frame details) of each `Stack trace of the failed collective:` record: the stack_frame
    rows on the lines right after its head."""
    t = ctx.logs.torch
    if t.is_empty() or "detail" not in t.columns:
        return []
    heads = t.filter((pl.col("kind") == "other") & (pl.col("detail") == "stack_head"))
    frames = t.filter(pl.col("kind") == "stack_frame").sort("path", "line")
    out = []
    for i in range(heads.height):
        h = heads.slice(i, 1)
        path, line = h["path"][0], h["line"][0]
        mine = frames.filter((pl.col("path") == path) & (pl.col("line") > line)).head(MAX_FRAMES)
        run = [d for n, d in zip(mine["line"], mine["detail"], strict=True) if n - line <= MAX_FRAMES and d]
        if run:
            out.append((h, [str(d) for d in run]))
    return out


def _rank(head: pl.DataFrame) -> int | None:
    r = head["rank"][0] if "rank" in head.columns else None
    if r is not None:
        return int(r)
    m = RANK_TAG.match(str(head["text"][0] or ""))
    return int(m.group(1)) if m else None


@rule("failed-collective", "error", "A rank's failed collective, with where the program called it", "hang")
def failed_collective(ctx: Context) -> Iterable[Finding]:
    """A `Stack trace of the failed collective:` record (its frames on the next lines) in an input with no
    watchdog timeout line and no hang verdict (there those name the collective): which rank's collective
    failed (the `[rankN]:` tag), the c10d API of frame #0 and the program's call site (the first frame
    outside torch). Error: PyTorch prints it only for a work that timed out or failed."""
    if ctx.hang.verdicts or not ctx.logs.torch.filter(pl.col("kind") == "watchdog_timeout").is_empty():
        return []
    out: list[Finding] = []
    for head, frames in _records(ctx):
        parsed = [m for m in (FRAME.match(f) for f in frames) if m is not None]
        if not parsed:
            continue
        api = parsed[0].group("fn")
        site = next((m for m in parsed[1:] if not TORCH_FILE.search(m.group("file"))), None)
        outer = parsed[-1]
        rank = _rank(head)
        who = f"Rank {rank}'s" if rank is not None else "A rank's"
        at = (
            f", called from {site.group('fn')} ({site.group('file').rsplit('/', 1)[-1]}:{site.group('line')})"
            if site is not None
            else ""
        )
        title = f"{who} {api} failed (timed out or errored){at}"
        out.append(
            make(
                "failed-collective",
                "error",
                title,
                "PyTorch's watchdog prints the Flight Recorder's stack of a collective only when that work "
                "timed out or failed on this rank. Frame #0 is the c10d call; the first frame outside torch is "
                f"where the program issued it (outermost: {outer.group('fn')}). The rank that never joined, or "
                "the error, is in lines this excerpt does not hold.",
                "Look at the same collective on the other ranks of its group (their watchdog lines, Flight "
                "Recorder dumps with TORCH_NCCL_DUMP_ON_TIMEOUT=1): a rank that never reached this call site is "
                "the one holding it up.",
                head,
                ctx,
                metrics={
                    "api": api,
                    "frames": frames[:MAX_FRAMES],
                    **({"rank": rank} if rank is not None else {}),
                },
                named_ranks=(rank,) if rank is not None else (),
            )
        )
    return out
