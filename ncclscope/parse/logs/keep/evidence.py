"""Parse stage, evidence: which unrecognised lines a big input keeps, so that rules see what they cite.

Every line no family or matcher claims is an `unknown` row. A big log's unknown rows are mostly the
application's own output, and the rules read them only through a few patterns and positions; the
reader keeps exactly those rows (the rest is counted, and read again only when a notebook asks for
`LogFrames.unknown_lines`):

- every NCCL-prefixed line (coverage, `--show-unknown`, rank identification);
- lines matching a search of the `KeepPolicy` the session passes (`policy`: each rule, align, hang or
  diff check that searches unknown lines declares its pattern);
- per file, its last unknown line and the one with the latest timestamp (where each rank's log ends);
- the line after a `Last error:` line (PyTorch prints NCCL's error text on the next line).

Lines of the same rank tag or file name another rank hint only through the stream table, which the
reader keeps whole, so the rank a file belongs to does not change either.
"""

from __future__ import annotations

import polars as pl

from ncclscope.parse.logs.keep.policy import KeepPolicy, combined

LAST_ERROR = "Last error"  # the line after one holding this text is kept (hang/verdict.py `_last_errors`)


def kept(
    unknown: pl.DataFrame, after: pl.DataFrame, policy: KeepPolicy, *, patterns: bool = True
) -> pl.DataFrame:
    """The evidence rows of a part's unknown rows: NCCL-prefixed, matching a search of `policy` (when
    `patterns`: lines known to hold no needle of one skip the pass), or at (path, line) in `after` (lines
    after a `Last error` line). Positional rows (last, latest) are added by `ends`."""
    mark = pl.col("is_nccl").fill_null(False)
    if patterns and (pattern := combined(policy)) is not None:
        mark = mark | pl.col("text").fill_null("").str.contains(pattern)
    out = unknown.filter(mark)
    if not after.is_empty():
        out = pl.concat([out, unknown.join(after, on=["path", "line"], how="semi")]).unique(
            ["path", "line"], maintain_order=True
        )
    return out


def ends(unknown: pl.DataFrame) -> pl.DataFrame:
    """Per file: its last unknown row and the first one with its latest timestamp."""
    if unknown.is_empty():
        return unknown
    last = unknown.sort("path", "line").unique("path", keep="last", maintain_order=True)
    timed = unknown.filter(pl.col("ts_us").is_not_null())
    if timed.is_empty():
        return last
    latest = timed.sort("path", "ts_us", "line", descending=[False, True, False]).unique("path", keep="first")
    return pl.concat([last, latest]).unique(["path", "line"], maintain_order=True)
