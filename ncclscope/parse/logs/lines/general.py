"""Parse stage, the general path: candidate lines gathered across batches -> family rows, PyTorch rows, unknown lines.

The lines a pattern may claim (a small share of a big log) are gathered across batches and read in one
pass (`general_pass`): flattened one-line pastes cut back (`flattened`), prefix and wrappers (`prepare`), wrapped pastes joined back (`rejoin`), the grammar's
families (`match`), PyTorch/gloo/torchrun lines (`runtime_rows`), then the catalogs for what no family
claims (`catalog`). A pass that is not the piece's last leaves a wrapped run open at its end for the next
(`rejoin.open_tail`). Called only through `batch.parse_batch`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from ncclscope import frames_coll as FC
from ncclscope import schema as S
from ncclscope.parse.logs.lines import peel, rejoin, streams
from ncclscope.parse.logs.lines.catalog import split_known, split_torch_known
from ncclscope.parse.logs.lines.flattened import split_flattened
from ncclscope.parse.logs.lines.match import match_families
from ncclscope.parse.logs.lines.prepare import prepare
from ncclscope.parse.logs.lines.runtime_rows import torch_rows
from ncclscope.parse.logs.lines.transform import overflow
from ncclscope.tuning import Tuning


@dataclass(frozen=True)
class CollPart:
    """COLL lines read in one step: their count, their facts and (when the context asks) their rows."""

    lines: int
    procs: pl.DataFrame  # schema.COLL_PROCS
    seqs: pl.DataFrame  # schema.COLL_SEQS
    rows: pl.DataFrame | None = None  # schema.COLLECTIVES, with `Context.coll_rows`


@dataclass(frozen=True)
class General:
    """What one general-path pass read, in the order it was made (the caller holds tables in that order)."""

    tables: tuple[tuple[str, pl.DataFrame], ...]  # family rows (not COLL), torch, known, warnings
    coll: CollPart | None  # COLL lines the families claimed (a prefix the fast path does not read)
    unknown: pl.DataFrame  # schema.UNKNOWN: lines no family, matcher or catalog claims
    streams: pl.DataFrame  # streams.PART of the lines read
    overflow: tuple[pl.DataFrame, ...]  # (path, field, n): values out of range or not a number, kept as null
    rejoined: tuple[tuple[str, int], ...]  # (path, wrapped lines joined to the line before), in order
    cov: tuple[int, int, int, int]  # coverage added: (0, NCCL lines, recognised, NCCL unknown)
    read: pl.DataFrame  # the numbered lines (path, line, raw) this pass read
    waiting: pl.DataFrame | None  # numbered lines left for the next pass (a wrapped run open at the end)


def general_pass(
    raw: pl.DataFrame, widths: Mapping[str, int], tuning: Tuning, *, last: bool, coll_rows: bool
) -> General:
    """Read the gathered candidate lines `raw` (`path`, `line`, `raw`). Not `last`: a wrapped run open at
    the end is left in `waiting`. `widths`: each file's longest line, for lines a terminal cut."""
    raw = split_flattened(raw)  # one-line pastes of a task (srun -l) cut back into their lines
    df = prepare(raw, tuning)
    cut = df.height if last else rejoin.open_tail(df)  # a wrapped run may go on in the next block
    waiting = raw.slice(cut) if cut < df.height else None
    df = df.slice(0, cut) if waiting is not None else df
    over = [overflow(df, peel.OVF_PREFIX)]
    df = df.drop(peel.OVF_PREFIX)
    df, folded = rejoin.rejoin(df, dict(widths))
    parts = streams.part(df)
    live = df.filter(pl.col("prefixed") | (pl.col("msg").str.len_chars() > 0))
    matched, rest = match_families(live)
    over += matched.overflow
    tables: list[tuple[str, pl.DataFrame]] = []
    coll: CollPart | None = None
    for name, part in matched.tables.items():
        if name == "collectives":
            procs, seqs = FC.part_facts(part.select(list(FC.ROWS)))
            rows = S.conform(part, S.COLLECTIVES) if coll_rows else None
            coll = CollPart(part.height, procs, seqs, rows)
        else:
            tables.append((name, part))
    nccl_unknown = rest.filter(pl.col("prefixed"))
    other = rest.filter(~pl.col("prefixed"))
    torch, other, bad = torch_rows(other)
    over.append(bad)
    tables.append(("torch", torch))
    torch_known, other = split_torch_known(other)  # PyTorch messages torch.lark has no family for
    tables.append(("known", torch_known))
    tables.append(("warnings", matched.unknown_warnings(nccl_unknown)))
    known, nccl_unknown = split_known(nccl_unknown)  # the catalog names what no family claims
    tables.append(("known", known))
    unknown = pl.concat(
        [
            nccl_unknown.with_columns(pl.lit(True).alias("is_nccl")),
            other.with_columns(pl.lit(False).alias("is_nccl")),
        ],
        how="vertical_relaxed",
    )
    n_nccl = live.filter(pl.col("prefixed")).height + matched.bare_lines + torch.height
    n_folded = sum(folded.values())  # parts of the line before: NCCL lines, recognised with it
    return General(
        tuple(tables),
        coll,
        S.conform(unknown, S.UNKNOWN),
        parts,
        tuple(over),
        tuple(folded.items()),
        (0, n_nccl + n_folded, matched.lines + torch.height + known.height + n_folded, nccl_unknown.height),
        raw.slice(0, cut),
        waiting,
    )
