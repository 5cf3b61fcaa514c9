"""Parse stage, inert lines: application output no pattern can claim, rejected once and cheaply.

Most lines of a real training log are the application's own output. A line goes through the general
path (prefix, families, PyTorch matcher, catalogs: `read.prepare` and on) only if one vectorised pass
says a pattern may claim it (`candidates`):

- it may carry an NCCL prefix: every prefix rule ends in a level word after `NCCL ` or a `[dev] `
  (or, NCCL 2.2, `file:line WARN`), so a line without one has none;
- it holds a needle (`needles`) of a grammar family, of the PyTorch anchor, of PyTorch's message
  catalog, or of a consumer's search (`policy.KeepPolicy`), a `Last error`, or an nccl-tests marker;
- it is one of the `rejoin.MAX_RUN` lines after a line that may carry a prefix (a wrapped paste).

Every other line is inert: an unknown row that only the stream table (rank tag, timestamp) and the
coverage count see. Its launcher wrappers are read without running the wrapper patterns per line:
one regex pass cuts the run of wrappers at the start of each line (`^(?:wrapper)*`), and each distinct
run (a few per file: `12: `, `[rank3]:`) is peeled with the general path's own loop.
"""

from __future__ import annotations

import functools

import polars as pl

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.parse.logs.keep import evidence
from ncclscope.parse.logs.keep.policy import POSITIONAL, KeepPolicy
from ncclscope.parse.logs.lines import needles, peel
from ncclscope.parse.logs.lines.catalog import torch_needles
from ncclscope.parse.logs.lines.peel import MAX_TEXT
from ncclscope.parse.logs.lines.rejoin import MAX_RUN
from ncclscope.parse.logs.lines.runtime_anchor import ANCHOR, CUT_RECORD
from ncclscope.parse.nccltests.markers import MARKERS

# A line that may carry an NCCL prefix (see the module docstring; tests check every prefixed corpus line).
PREFIX_POSSIBLE = r"(?:NCCL |\d\] ).*(?:INFO|WARN|ATTN|CALL|TRACE|ABORT)|\d WARN"
# The same with ASCII digits (a literal prefilter finds its starts), and what a non-ASCII line needs
# (a Unicode digit before `] ` or ` WARN`): together a necessary condition again, many times faster.
_PREFIX_ASCII = r"(?:NCCL |[0-9]\] ).*(?:INFO|WARN|ATTN|CALL|TRACE|ABORT)|[0-9] WARN"
_PREFIX_WIDE = r"\] | WARN"
_TRAIL = r"[\s│]$"  # `peel.clean` strips these (and ANSI residue): lines with neither are clean already


@functools.cache
def needle_set(policy: KeepPolicy = POSITIONAL) -> frozenset[str]:
    """Literals one of which every line a family, the PyTorch matcher, a catalog format or a search may
    claim contains."""
    pats = tuple([G.rule_regex(f, capture=False) for f in G.families()] + [ANCHOR.pattern, *policy.patterns])
    found = needles.cached(pats)
    if any(f is None for f in found):  # a pattern without needles: every line is a candidate
        return frozenset({""})
    extra = {evidence.LAST_ERROR, *MARKERS}  # nccl-tests' markers: the reader notes which inputs hold one
    return frozenset().union(*[f for f in found if f]) | frozenset(torch_needles()) | extra


@functools.cache
def candidate_pattern(policy: KeepPolicy = POSITIONAL) -> str:
    return f"{_PREFIX_ASCII}|{needles.regex(needles.minimal(needle_set(policy)))}"


def clean_text(raw: pl.DataFrame) -> pl.Series:
    """`peel.clean` of the `raw` column, computed only for the few lines it changes."""
    r = raw["raw"]
    dirty = (r.str.contains(peel.ANSI) | r.str.contains(_TRAIL)).fill_null(False)
    if not dirty.any():
        return raw["raw"].alias("clean")
    fixed = peel.clean(raw.filter(dirty).select("raw", pl.int_range(pl.len()).alias("_row")))["clean"]
    return raw["raw"].scatter(dirty.arg_true(), fixed).alias("clean")


def candidates(
    clean: pl.Series, carry: int | None, policy: KeepPolicy = POSITIONAL
) -> tuple[pl.Series, int | None]:
    """(candidate mask, carry for the next block). `carry` is how many rows before this block's first
    row the last line that may carry a prefix sat (None: none within reach): the rejoin window of the
    block before goes on here."""
    n = clean.len()
    hit = clean.str.contains(candidate_pattern(policy)).fill_null(False)
    maybe = ~hit & clean.str.contains(_PREFIX_WIDE).fill_null(False)  # a Unicode digit may sit before it
    if maybe.any():
        at = maybe.arg_true()
        wide = clean.gather(at)
        hit = hit.scatter(at, (wide.str.len_bytes() != wide.str.len_chars()))
    pre = hit
    if hit.any():  # the lines that may carry a prefix (a few): where the rejoin windows start
        at = hit.arg_true()
        pre = pl.repeat(False, n, eager=True).scatter(
            at, clean.gather(at).str.contains(f"{PREFIX_POSSIBLE}|{CUT_RECORD}").fill_null(False)
        )
    if not pre.any():
        if carry is None or carry > MAX_RUN:
            return hit, None
        near = pl.int_range(n, eager=True) + carry <= MAX_RUN
        return hit | near, carry + n
    idx = pl.int_range(n, eager=True)
    anchor = pl.select(pl.when(pre).then(idx).otherwise(None).forward_fill()).to_series()
    anchor = anchor.fill_null(-carry if carry is not None else -(MAX_RUN + 1))
    near = (idx - anchor) <= MAX_RUN
    last = idx.filter(pre).max()
    return hit | near, n - (last if isinstance(last, int) else 0)


def wrapper_fields(clean: pl.Series) -> pl.DataFrame:
    """`rank_hint`, `ts_us` and the length of the message after the wrappers (bytes), per line (no prefix)."""
    span = clean.str.extract(rf"^(?:{G.rule_regex('wrapper', capture=False)})*", 0).fill_null("")
    uniq = span.unique()
    df = pl.DataFrame({"_span": uniq}).with_columns(
        pl.col("_span").alias("junk"), pl.lit(False).alias("prefixed"), pl.lit(None, pl.Utf8).alias("msg")
    )
    peeled = peel.peel_wrappers(df).select(
        "_span",
        pl.col("rank_hint").cast(pl.Int64, strict=False),
        peel.parse_ts(pl.col("ts")).alias("ts_us"),
        (pl.col("_span").str.len_bytes() - pl.col("msg").str.len_bytes()).alias("_cut"),
    )
    out = pl.DataFrame({"_span": span}).join(peeled, on="_span", how="left", maintain_order="left")
    return out.select("rank_hint", "ts_us", (clean.str.len_bytes() - pl.col("_cut")).alias("_msg_len"))


def rows(raw: pl.DataFrame, clean: pl.Series) -> pl.DataFrame:
    """Inert lines as rows: ORIGIN columns (no prefix fields) and `_msg_len`."""
    w = wrapper_fields(clean)
    text = raw["raw"]
    long = text.str.len_bytes() > MAX_TEXT  # bytes >= characters: only these may need the cut
    if long.any():
        at = long.arg_true()
        text = text.scatter(at, text.gather(at).str.slice(0, MAX_TEXT))
    return pl.DataFrame([raw["path"], raw["line"], text.alias("text")]).with_columns(
        *[pl.lit(None, S.ORIGIN[c]).alias(c) for c in ("host", "pid", "tid", "cuda_dev")],
        w["rank_hint"],
        w["ts_us"],
        w["_msg_len"],
    )
