"""Tuning: every batch size, cap and worker count of the pipeline, in one frozen object.

`analyze(..., tuning=Tuning())` passes it down to each stage; tests and callers change a value
with `dataclasses.replace(Tuning(), …)` instead of patching module constants. Finding thresholds
stay next to their rules (`ncclscope rules` prints them); this object holds the knobs that change
speed and memory, and the caps that bound what hostile input may cost. No value here changes a
finding on well-formed input.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tuning:
    """Knobs of the read and parse stages (sizes in bytes unless the name says otherwise)."""

    # --- log reader -------------------------------------------------------------------------------
    read_block_bytes: int = 4 << 20  # bytes per read (one Polars chunk of lines; bigger: more RSS held)
    max_line_chars: int = 64 << 10  # characters of one line that are parsed; the rest is cut
    # --- log parser -------------------------------------------------------------------------------
    batch_lines: int = 125_000  # lines parsed together (per-call costs vs. memory held per process)
    pending_lines: int = 250_000  # lines left for the general path, gathered across batches
    # ... and the bytes of either, whichever bound comes first: lines of up to `max_line_chars` (64 K) made a
    # batch of 125,000 lines up to 8 GB (256 MB of 60 KB lines: 615 MiB peak, bench_memory.py `mb_lines`).
    # Real logs (~100-200 B a line) reach the line bounds first (~20 / ~40 MB), so their speed is unchanged.
    batch_bytes: int = 32 << 20
    pending_bytes: int = 64 << 20
    # Lines the general path parses at once: it holds ~3.6 KB per line while it runs, so a piece of evidence
    # lines only (every line an `Xid` or a WARN) flushed 166 k lines at once, +600 MiB (bench_memory.py `kept`).
    # Real logs send a few thousand lines per piece down that path (the rest is COLL or inert): unchanged.
    flush_lines: int = 32_768
    polars_regex_min_rows: int = 3000  # below this, a Python regex loop beats a Polars pass
    # The family dispatch (one pattern of every family) runs as one Polars pass from this many rows, a Python
    # loop with needle prefilters below: 2,129 application lines 54 -> 19 ms; 619 Init lines 4 ms in Python,
    # 17 ms in Polars (its capture set-up costs ~10 ms a call).
    dispatch_polars_min_rows: int = 1000
    piece_bytes: int = 256 << 20  # unit of work: small files together or a cut of a big plain file (at most)
    log_workers: int | None = None  # worker processes besides the caller; None: one per other core, at most 7
    log_pool_min_bytes: int = 64 << 20  # a smaller log set is read in the calling process
    # Opt-in (NCCLSCOPE_PIN_CPUS=1): the CLI's log workers and the caller each keep to one CPU while the
    # pieces are read (Linux; see `parse.logs.engine.spawn`): the 243 MB COLL set 0.967x wall, 0.981x CPU (16 paired
    # runs, bench/README.md). Off by default (issue 30): ~3% is not worth changing the affinity of a
    # process and its threads, which a user's own pinning (taskset, a container's cpuset) may rely on.
    pin_log_processes: bool = False
    round_min_bytes: int = 64 << 20  # a later round of pieces smaller than this joins the round before
    full_frames_max_bytes: int = 64 << 20  # up to this, every COLL and unknown line is kept; above, the facts
    # Every unknown line is kept while a piece has read at most `full_frames_max_bytes` (bytes read, so a
    # `.gz` or stdin counts by what it expands to) and holds at most this many of them; past either, only
    # the evidence (`evidence.py`), the rest counted. A row costs ~250 B whatever the line's length: 8.4 M
    # two-byte lines of a 16 MB stream held 2.3 GB before this bound (bench/bench_memory.py).
    full_unknown_max_lines: int = 200_000
    # Rows of one per-line table (WARNs, evidence lines, PyTorch lines, …) kept per input and in all: the
    # first and the last half of each (`bounded.py`), the rest counted in a note. Real logs hold at most a
    # few hundred of one kind per input; an 80 MB log of `Xid` lines held every one.
    # Per input 16,384: the biggest real input (mlperf50oracle_64node_h200_lora, 512 ranks in one file) holds
    # 7,378 WARN lines, which 4,096 cut (benign-warn said 4,096 where the log holds 5,574 on its 41oracle twin).
    max_kept_rows_per_input: int = 16_384
    max_kept_rows: int = 131_072
    # Rows of one kind (one process, one message with its numbers masked) kept per input in the evidence
    # tables (WARN, unknown, PyTorch, catalog lines; `bounded.py`): the first and the last half, the rest
    # counted and carried by the kind's first row (`LogFrames.repeats`), so counts stay whole. The most a
    # real input holds of one kind is far below (tests/parse/test_kept_kinds.py reads the corpus); an 80 MB
    # log of `Xid` lines keeps 1,024 of them instead of every one.
    max_kept_rows_per_kind: int = 1024
    fast_paths: bool = (
        True  # COLL lines field by field, inert lines rejected early (off: all take the general path)
    )
    # --- after reading -----------------------------------------------------------------------------
    # Threads for the stages after reading: the hang view beside rank identity, the rules side by side. Their
    # ~600 small Polars queries release the GIL while they run, so two threads overlap them: on the 243 MB
    # COLL set (2 cores), identity, hang view and rules took 111-126 -> 76-93 ms (bench/README.md). 1: one
    # after another. The findings and their order do not depend on it.
    analysis_threads: int = 2
    # --- traces -----------------------------------------------------------------------------------
    trace_pool_min_bytes: int = 64 << 20  # a smaller trace set decodes in < 0.3 s: no worker processes
    trace_max_workers: int = 3  # each holds its own interpreter (~30 MB) while it runs
    trace_chunk_bytes: int = 1 << 20  # fast decode path: bytes decoded at once
    # --- hostile input: what one input may cost at most (a cap hit is a note or a one-line error) --
    max_expansion_ratio: int = 200  # decompressed bytes per compressed byte (.gz, .zst); real logs ~10-50
    expansion_floor_bytes: int = 64 << 20  # the ratio is checked once this much has been decompressed
    max_decompressed_bytes: int = 16 << 30  # bytes one compressed input may expand to
    max_json_report_bytes: int = 64 << 20  # an nccl-tests `-J` report (real: a few KB) read whole
    max_json_depth: int = 64  # nesting of a trace's header values, a JSON dump, a pickle (real: <= 8)
    max_pickle_memo: int = 1 << 22  # memo slots a pickle may ask for (a real dump numbers them 0, 1, 2…)
    max_pickle_items: int = 1 << 22  # items in one pickled list, dict, tuple or set
    max_pickle_objects: int = 1 << 24  # objects in one dump, a shared reference counted each time it is met

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, int) and value < 0:
                raise ValueError(f"Tuning.{name} must be >= 0, got {value}")


DEFAULT = Tuning()
