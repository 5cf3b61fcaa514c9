"""Align stage, identity: who is who — (host, pid[, GPU]) ↔ global rank, communicators, per-rank config.

`[dev]` in NCCL's prefix is the calling thread's CUDA device, not the rank. Ranks come from the
Init lines of each communicator; the global rank is the rank in the largest communicator (the
world). Connection/ring lines and launcher tags (`[rank3]:`) are fallbacks; nothing defaults to 0.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.align.facts import real_hosts
from ncclscope.align.rankattrs import attach_config
from ncclscope.align.rankmap import comm_table, init_rows, origin_rows, participants
from ncclscope.frames import LogFrames

__all__ = ["identify"]


def identify(logs: LogFrames) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return (RANKS, COMMS): one row per rank (or per process when its rank is unknown), one per communicator."""
    inits = init_rows(logs.inits)
    comms = comm_table(inits, logs.torch)
    origin = origin_rows(logs)
    procs = participants(logs, inits, comms, origin)
    ranks = attach_config(procs, logs, origin)
    # A host name that is another's with text glued before it (`0e+00ip-host-01`: an nccl-tests row run
    # into the next line's prefix) holding only that host's pids is no process of its own.
    _, phantom = real_hosts(ranks.select("host", "pid"))
    if phantom:
        ranks = ranks.filter(~pl.col("host").is_in(list(phantom)))
    ranks = ranks.sort(["rank", "host", "pid", "cuda_dev"], nulls_last=True)
    return S.conform(ranks, S.RANKS), S.conform(comms, S.COMMS)
