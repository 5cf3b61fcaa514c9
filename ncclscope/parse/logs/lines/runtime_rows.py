"""Parse stage, runtime rows: offer non-NCCL lines to `runtime_lines.match` and build the torch frame.

The torch grammar and matcher belong to `ncclscope.parse.logs.lines.runtime_lines` (imported, with Lark, only
when a line passes the anchor); this module picks the messages worth offering (one vectorised pass of
the matcher's own anchor regex, `runtime_anchor`, which every line the grammar accepts contains),
matches each distinct one once, and attaches the origin columns (path, line, rank hint, …) to the hits.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from ncclscope import schema as S
from ncclscope.parse.bounds import INT64_MAX
from ncclscope.parse.logs.lines.runtime_anchor import ANCHOR, CUT_RECORD, CUTS, MAX_CHARS, MAX_TAIL
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

    cand, joined = _rejoin(df, cand, runtime_lines.match)
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


_CUTS = tuple((re.compile(head), re.compile(tail)) for head, tail in CUTS)
# A line that starts a record of its own is no continuation: a c10/glog header, a rank wrapper, a traceback.
_OWN_START = re.compile(
    r"^\s*(?:\[[IWEF]\d|[IWEF]\d{4} |\[rank\d|\[Rank |Traceback|frame #|Exception raised)"
)


def _rejoin(
    df: pl.DataFrame, cand: pl.DataFrame, match: Callable[[str], dict[str, object] | None]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`cand` with each record a terminal cut (`CUTS`) joined to the next physical lines of its input (at
    most MAX_TAIL, none with a prefix or header of its own) until the joined text holds what the record
    must end with; and the joined rows (`_t`, and `_tn`: each continuation row the join consumed). A wrap
    can fall inside a word or a number, so the parts are joined as the terminal cut them (a space where the
    cut line's own text ended with one); a paste that lost that trailing space is joined with one where
    only that reading is a line `match` accepts. The evidence keeps the first line's text and place."""
    cut = cand.filter(pl.col("msg").str.contains(CUT_RECORD))
    none = pl.DataFrame(schema={"_t": pl.UInt32, "_tn": pl.UInt32})
    if cut.is_empty():
        return cand, none
    keys = cut.select("path", "line").join(pl.DataFrame({"_k": range(1, MAX_TAIL + 1)}), how="cross")
    keys = keys.select("path", (pl.col("line") + pl.col("_k")).alias("line"))
    tails = df.join(keys, on=["path", "line"], how="semi").filter(
        pl.col("host").is_null() & pl.col("rank_hint").is_null()
    )
    after = {(p, ln): (t, tn) for p, ln, t, tn in tails.select("path", "line", "text", "_t").iter_rows()}
    joined: list[tuple[int, str]] = []
    used: list[tuple[int, int]] = []
    for t, path, line, msg, text in cut.select("_t", "path", "line", "msg", "text").iter_rows():
        tail = next(tl for hd, tl in _CUTS if hd.search(msg))
        whole, prev = msg, str(text or "")
        took: list[int] = []
        for k in range(1, MAX_TAIL + 1):
            nxt = after.get((path, line + k))
            if nxt is None or _OWN_START.match(str(nxt[0] or "")):
                break
            piece = str(nxt[0] or "").strip()
            glued, spaced = whole + piece, f"{whole} {piece}"
            # the cut line's trailing space says where a word ended; a paste may have lost it
            lost = not prev[-1:].isspace() and match(glued) is None and match(spaced) is not None
            whole = spaced if prev[-1:].isspace() or lost else glued
            prev, took = str(nxt[0] or ""), [*took, nxt[1]]
            if tail.search(whole):
                joined.append((t, whole))
                used.extend((t, tn) for tn in took)
                break
    if not joined:
        return cand, none
    new = pl.DataFrame(joined, schema={"_t": pl.UInt32, "_joined": pl.Utf8}, orient="row")
    cand = cand.join(new, on="_t", how="left").with_columns(pl.coalesce("_joined", "msg").alias("msg"))
    return cand.drop("_joined"), pl.DataFrame(used, schema={"_t": pl.UInt32, "_tn": pl.UInt32}, orient="row")


def _unfit(rec: dict[str, object]) -> str:
    """The fields `_fit` reads as unknown (comma-separated): counted in a note."""
    return ",".join(k for k in _FIELDS if rec.get(k) is not None and _fit(rec.get(k)) is None)


def _fit(v: object) -> object:
    """A number beyond 64 bits (a forged `SeqNum=99999999999999999999`) is read as unknown."""
    return None if type(v) is int and not -INT64_MAX <= v <= INT64_MAX else v
