"""Parse stage, evidence: which unrecognised lines a big input keeps, so that rules see what they cite.

Every line no family or matcher claims is an `unknown` row. A big log's unknown rows are mostly the
application's own output, and the rules read them only through a few patterns and positions; the
reader keeps exactly those rows (the rest is counted, and read again only when a notebook asks for
`LogFrames.unknown_lines`):

- every NCCL-prefixed line (coverage, `--show-unknown`, rank identification);
- lines matching a pattern in `KEEP` (one per rule or hang check that searches unknown lines; the
  tests pin this list against the rules' own constants);
- per file, its last unknown line and the one with the latest timestamp (where each rank's log ends);
- the line after a `Last error:` line (PyTorch prints NCCL's error text on the next line).

Lines of the same rank tag or file name another rank hint only through the stream table, which the
reader keeps whole, so the rank a file belongs to does not change either.
"""

from __future__ import annotations

import functools

import polars as pl

KEEP: tuple[str, ...] = (
    # hang/exits.py _CRASH: crash-like last lines of a rank
    (r"Segmentation fault|SIGSEGV|SIGBUS|SIGKILL|Killed|core dumped|out of memory|OutOfMemoryError|CUDA error"
     r"|illegal memory access|Cuda failure|ECC error|Xid|exitcode: -?9|uncorrectable"),
    # align/phase.py APP_END: the application's own end of a successful run
    (r'"key": "run_stop".*"status": "success"|destroy_process_group\(\) (?:was )?called'
     r"|[Ww]orker group (?:successfully )?finished|WorkerState\.SUCCEEDED"),
    # findings/rules_topology.py ELISION: an excerpt with lines cut out
    r"^\s*(?:\.{3,}|。{2,}|…+|\[\.\.\.\]|\(\.\.\.\)|<snip>|\[snip\]|-- ?snip ?--)\s*$",
    # findings/rules_config.py PLUGIN_FAIL: libfabric's own failure lines
    (r"(?i)fi_getinfo\(\) call failed|fi_getinfo: provider \w+ output empty list|"
     r"Failed to initialize any NET plugin|Invalid type of PCI bus"),
    # findings/rules_gpu.py: unhandled CUDA errors and NVLS bind failures named outside NCCL's WARNs
    r"(?i)unhandled cuda error|ncclUnhandledCudaError",
    r"Failed to bind NVLink SHARP",
    # findings/rules_errors.py: an IB completion error pasted into another message
    r"Got completion from peer|NET/IB ?: Got completion",
)
LAST_ERROR = "Last error"  # the line after one holding this text is kept (hang/verdict.py `_last_errors`)


@functools.cache
def keep_pattern() -> str:
    """All of `KEEP` as one regex (each alternative keeps its own inline flags)."""
    return "|".join(f"(?:{p})" for p in KEEP)


def kept(unknown: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """The evidence rows of a part's unknown rows: NCCL-prefixed, matching `KEEP`, or at (path, line) in
    `after` (lines after a `Last error` line). Positional rows (last, latest) are added by `ends`."""
    text = pl.col("text").fill_null("")
    mark = pl.col("is_nccl").fill_null(False) | text.str.contains(keep_pattern())
    if not after.is_empty():
        mark = mark | pl.struct("path", "line").is_in(after.select(pl.struct("path", "line")).to_series().implode())
    return unknown.filter(mark)


def ends(unknown: pl.DataFrame) -> pl.DataFrame:
    """Per file: its last unknown row and the first one with its latest timestamp."""
    if unknown.is_empty():
        return unknown
    last = pl.col("line") == pl.col("line").max().over("path")
    ts = pl.col("ts_us")
    latest = ts.is_not_null() & (ts == ts.max().over("path"))
    first_latest = latest & (pl.col("line") == pl.col("line").filter(latest).min().over("path"))
    return unknown.filter(last | first_latest)
