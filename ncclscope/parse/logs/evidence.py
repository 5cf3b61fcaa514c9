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
    (
        r"Segmentation fault|SIGSEGV|SIGBUS|SIGKILL|Killed|core dumped|out of memory|OutOfMemoryError|CUDA error"
        r"|illegal memory access|Cuda failure|ECC error|Xid|exitcode: -?9|uncorrectable"
    ),
    # align/phase.py APP_END: the application's own end of a successful run
    (
        r'"key": "run_stop".*"status": "success"|destroy_process_group\(\) (?:was )?called'
        r"|[Ww]orker group (?:successfully )?finished|WorkerState\.SUCCEEDED"
    ),
    # findings/rules_init.py ELISION: an excerpt with lines cut out
    r"^\s*(?:\.{3,}|。{2,}|…+|\[\.\.\.\]|\(\.\.\.\)|<snip>|\[snip\]|-- ?snip ?--)\s*$",
    # findings/rules_config.py PLUGIN_FAIL: libfabric's own failure lines
    (
        r"(?i)fi_getinfo\(\) call failed|fi_getinfo: provider \w+ output empty list|"
        r"Failed to initialize any NET plugin|Invalid type of PCI bus"
    ),
    # findings/rules_gpu.py: unhandled CUDA errors and NVLS bind failures named outside NCCL's WARNs
    r"(?i)unhandled cuda error|ncclUnhandledCudaError",
    r"Failed to bind NVLink SHARP",
    # findings/rules_errors.py: an IB completion error pasted into another message
    r"Got completion from peer|NET/IB ?: Got completion",
    # diff/facts.py: RCCL's version banner, printed without a prefix
    r"^\s*RCCL version\s*:?\s*(\S+)",
    # align/facts.py LAUNCHER: the launcher's own lines, and nccl-tests' footer (a whole log's end)
    (
        r"torch\.distributed\.(?:run|elastic)|\[default\d+\]:|\bsrun\b|SLURM_JOB|slurmstepd|\bmpirun\b"
        r"|OMPI_COMM_WORLD|prterun|deepspeed\.launcher|#\s*Avg bus bandwidth\s*:"
    ),
    # findings/quoted.py NCCLTESTS: nccl-tests' own failure lines, which quote NCCL's last error
    r"Test (CUDA|NCCL) failure \S+:\d+ '(.*)'",
    # findings/rules_kernel.py LF_NEEDLE: libfabric's own log lines (the kernel's `NVRM: Xid` lines are kept
    # by `Xid` above)
    r"libfabric:",
)
LAST_ERROR = "Last error"  # the line after one holding this text is kept (hang/verdict.py `_last_errors`)


@functools.cache
def keep_pattern() -> str:
    """All of `KEEP` as one regex (each alternative keeps its own inline flags)."""
    return "|".join(f"(?:{p})" for p in KEEP)


def kept(unknown: pl.DataFrame, after: pl.DataFrame, *, patterns: bool = True) -> pl.DataFrame:
    """The evidence rows of a part's unknown rows: NCCL-prefixed, matching `KEEP` (when `patterns`: lines
    known to hold no needle of it skip the pass), or at (path, line) in `after` (lines after a `Last
    error` line). Positional rows (last, latest) are added by `ends`."""
    mark = pl.col("is_nccl").fill_null(False)
    if patterns:
        mark = mark | pl.col("text").fill_null("").str.contains(keep_pattern())
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
