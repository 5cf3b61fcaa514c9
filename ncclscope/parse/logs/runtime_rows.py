"""Parse stage, runtime rows: offer non-NCCL lines to `runtime_lines.match` and build the torch frame.

The torch grammar and matcher belong to `ncclscope.parse.logs.runtime_lines`; this module only calls it on
each peeled message and attaches the origin columns (path, line, rank hint, …) to its hits.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.parse.bounds import INT64_MAX
from ncclscope.parse.logs import runtime_lines

_ORIGIN = list(S.ORIGIN)
_FIELDS = [c for c in S.TORCH if c not in S.ORIGIN]


def torch_rows(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(torch frame rows, rows that matched nothing) for rows without an NCCL family."""
    if df.height == 0:
        return S.empty(S.TORCH), df
    hits: list[int] = []
    recs: list[dict[str, object]] = []
    for i, msg in enumerate(df["msg"].to_list()):
        if not msg:
            continue
        rec = runtime_lines.match(msg)
        if rec is not None:
            hits.append(i)
            recs.append(rec)
    if not hits:
        return S.empty(S.TORCH), df
    idx = pl.Series("i", hits, dtype=pl.UInt32)
    origin = df.select(_ORIGIN)[idx]
    fields = pl.DataFrame([{k: _fit(r.get(k)) for k in _FIELDS} for r in recs],
                          schema={k: S.TORCH[k] for k in _FIELDS}, strict=False)
    rows = pl.concat([origin, fields], how="horizontal")
    rows = rows.with_columns(pl.coalesce(pl.col("rank"), pl.col("rank_hint")).alias("rank"))
    keep = pl.Series(range(df.height)).is_in(hits).not_()
    return S.conform(rows, S.TORCH), df.filter(keep)


def _fit(v: object) -> object:
    """A number beyond 64 bits (a forged `SeqNum=99999999999999999999`) is read as unknown."""
    return None if type(v) is int and not -INT64_MAX <= v <= INT64_MAX else v
