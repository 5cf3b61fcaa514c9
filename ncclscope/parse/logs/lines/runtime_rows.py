"""Parse stage, runtime rows: offer non-NCCL lines to `runtime_lines.match` and build the torch frame.

The torch grammar and matcher belong to `ncclscope.parse.logs.lines.runtime_lines` (imported, with Lark, only
when a line passes the anchor); this module picks the messages worth offering (one vectorised pass of
the matcher's own anchor regex, `runtime_anchor`, which every line the grammar accepts contains),
matches each distinct one once, and attaches the origin columns (path, line, rank hint, …) to the hits.
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.parse.bounds import INT64_MAX
from ncclscope.parse.logs.lines.runtime_anchor import ANCHOR, CUT_RECORD, MAX_CHARS
from ncclscope.parse.logs.lines.transform import OVF, overflow

_ORIGIN = list(S.ORIGIN)
_FIELDS = [c for c in S.TORCH if c not in S.ORIGIN]


def candidates(msg: pl.Expr) -> pl.Expr:
    """Messages `runtime_lines.match` may accept (its anchor and length bound, vectorised)."""
    return (msg.str.contains(ANCHOR.pattern) & (msg.str.len_chars() <= MAX_CHARS)).fill_null(False)


def torch_rows(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(torch frame rows, rows that matched nothing, `transform.overflow` of the hits) for rows without an
    NCCL family."""
    if df.height == 0:
        return S.empty(S.TORCH), df, overflow(df)
    df = df.with_row_index("_t")
    cand = df.filter(candidates(pl.col("msg")))
    if cand.is_empty():
        return S.empty(S.TORCH), df.drop("_t"), overflow(cand)
    from ncclscope.parse.logs.lines import runtime_lines  # Lark: imported once a line may be a PyTorch line

    cand, joined = _rejoin(df, cand)
    msgs = cand["msg"].unique().to_list()
    recs = {m: r for m in msgs if (r := runtime_lines.match(m)) is not None}
    if not recs:
        return S.empty(S.TORCH), df.drop("_t"), overflow(cand)
    fields = pl.DataFrame(
        [{"msg": m, **{k: _fit(r.get(k)) for k in _FIELDS}, OVF: _unfit(r)} for m, r in recs.items()],
        schema={"msg": pl.Utf8, **{k: S.TORCH[k] for k in _FIELDS}, OVF: pl.Utf8},
        strict=False,
    )
    hit = cand.join(fields, on="msg", how="inner").sort("_t")
    rows = hit.select(*_ORIGIN, *_FIELDS).with_columns(
        pl.coalesce(pl.col("rank"), pl.col("rank_hint")).alias("rank")
    )
    used = pl.concat(
        [
            hit.select("_t"),
            joined.join(hit.select("_t"), on="_t", how="semi").select("_tn").rename({"_tn": "_t"}),
        ]
    )
    rest = df.join(used, on="_t", how="anti").drop("_t")
    return S.conform(rows, S.TORCH), rest, overflow(hit)


def _rejoin(df: pl.DataFrame, cand: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`cand` with each WorkNCCL record cut at a line's end joined to the next physical line of its input,
    when that line is no PyTorch line of its own (no anchor) and closes the record; and the joined rows
    (their `_t`, and `_tn`: the continuation row the join consumed). The wrap point can fall inside a
    field name or a number, so the two parts are joined without a separator; the evidence keeps the
    first line's text and place."""
    cut = cand.filter(pl.col("msg").str.contains(CUT_RECORD))
    none = pl.DataFrame(schema={"_t": pl.UInt32, "_tn": pl.UInt32})
    if cut.is_empty():
        return cand, none
    nxt = df.select(
        "path", (pl.col("line") - 1).alias("line"), pl.col("msg").alias("_next"), pl.col("_t").alias("_tn")
    )
    j = cut.join(nxt, on=["path", "line"], how="inner").filter(
        ~candidates(pl.col("_next")) & pl.col("_next").str.contains(")", literal=True)
    )
    if j.is_empty():
        return cand, none
    j = j.with_columns(
        (pl.col("msg").str.strip_chars_end("\r\n") + pl.col("_next").str.strip_chars()).alias("msg")
    )
    merged = pl.concat([cand.join(j.select("_t"), on="_t", how="anti"), j.drop("_next", "_tn")]).sort("_t")
    return merged, j.select("_t", "_tn")


def _unfit(rec: dict[str, object]) -> str:
    """The fields `_fit` reads as unknown (comma-separated): counted in a note."""
    return ",".join(k for k in _FIELDS if rec.get(k) is not None and _fit(rec.get(k)) is None)


def _fit(v: object) -> object:
    """A number beyond 64 bits (a forged `SeqNum=99999999999999999999`) is read as unknown."""
    return None if type(v) is int and not -INT64_MAX <= v <= INT64_MAX else v
