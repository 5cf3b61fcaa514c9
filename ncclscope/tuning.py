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
    read_block_bytes: int = 16 << 20  # bytes per read (one Polars chunk of lines)
    max_line_chars: int = 64 << 10  # characters of one line that are parsed; the rest is cut
    prefetch_bytes: int = 64 << 20  # files up to this size are read ahead, whole, on worker threads
    prefetch_budget_bytes: int = 192 << 20  # bytes read ahead and not yet handed out, at most
    prefetch_workers: int = 2
    # --- log parser -------------------------------------------------------------------------------
    batch_lines: int = 1_000_000  # small inputs are processed together, big ones chunk by chunk
    pending_lines: int = 250_000  # lines left for the general path, gathered across batches
    polars_regex_min_rows: int = 3000  # below this, a Python regex loop beats a Polars pass
    # --- traces -----------------------------------------------------------------------------------
    trace_pool_min_bytes: int = 64 << 20  # a smaller trace set decodes in < 0.3 s: no worker processes
    trace_max_workers: int = 3  # each holds its own interpreter (~30 MB) while it runs
    trace_chunk_bytes: int = 1 << 20  # fast decode path: bytes decoded at once

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, int) and value < 0:
                raise ValueError(f"Tuning.{name} must be >= 0, got {value}")


DEFAULT = Tuning()
