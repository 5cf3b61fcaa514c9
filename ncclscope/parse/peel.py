"""Parse stage, peel: split raw lines into launcher wrappers, NCCL's prefix and the message (vectorised).

Every pattern comes from the grammar (`prefix_std`, `prefix_dev`, `prefix_bare`, `wrapper`). The prefix
is looked for first at the start of the line, then anywhere (the last occurrence wins: CloudWatch
duplicates its columns and merged pastes put a whole line after a cut-off one); what precedes it is
peeled as wrappers for rank hints and timestamps. Lines with no NCCL prefix are peeled from the left.
"""

from __future__ import annotations

import functools
import re

import polars as pl

from ncclscope import grammar as G

# ANSI colour codes, also with the ESC byte lost in a paste (`[36m`), and markdown bold markers.
_ANSI = r"\x1b\[[0-9;?]*[A-Za-z]|\x1b|\[[0-9]{1,3}(?:;[0-9]{1,3})*m|\*\*"
# Trailing whitespace and the k9s right border.
_TRAIL = r"[\s│]+$"
# Whatever precedes a prefix found mid-line ends at a space, `|` or `:` (so the host starts cleanly).
_JUNK = r"(?P<junk>(?:.*[\s|:])?)"
_PREFIX_FIELDS = ("host", "pid", "tid", "cuda_dev", "src_file", "src_line", "func", "level")
MAX_WRAPPERS = 8


@functools.cache
def prefix_patterns() -> tuple[tuple[str, str], ...]:
    """(name, anchored regex with a `msg` group) in the order they are tried."""
    std, dev, bare = (G.rule_regex(r) for r in ("prefix_std", "prefix_dev", "prefix_bare"))
    return (
        ("std", rf"^(?:{std})(?P<msg>.*)$"),
        ("std_mid", rf"^{_JUNK}(?:{std})(?P<msg>.*)$"),
        ("dev", rf"^{_JUNK}(?:{dev})(?P<msg>.*)$"),
        ("bare", rf"^{_JUNK}(?:{bare})(?P<msg>.*)$"),
    )


@functools.cache
def nested_pattern() -> str:
    """A standard prefix that is not at the start of the line."""
    return rf".[\s|:](?:{G.rule_regex('prefix_std', capture=False)})"


@functools.cache
def wrapper_pattern() -> str:
    return rf"^(?P<_w>{G.rule_regex('wrapper')})"


def _coalesced(struct_col: str, names: list[str], fields: tuple[str, ...]) -> list[pl.Expr]:
    out = []
    for fld in fields:
        cols = [pl.col(struct_col).struct.field(n) for n in names if G.base_field(n) == fld]
        out.append(pl.coalesce(cols).alias(fld) if cols else pl.lit(None, pl.Utf8).alias(fld))
    return out


def clean(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(_ANSI, "").str.replace(_TRAIL, "")


def split_prefix(df: pl.DataFrame) -> pl.DataFrame:
    """Add `junk`, the prefix fields (strings), `msg` and `prefixed` from column `clean`."""
    done: list[pl.DataFrame] = []
    pending = df
    for name, pat in prefix_patterns():
        if pending.height == 0:
            break
        hit_mask = pending["clean"].str.contains(pat)
        if name == "std":
            # A second full prefix later on the line (merged pastes, CloudWatch duplicates): the last wins.
            hit_mask &= ~pending["clean"].str.contains(nested_pattern())
        hit = pending.filter(hit_mask)
        pending = pending.filter(~hit_mask)
        if hit.height == 0:
            continue
        names = list(re.compile(pat).groupindex)
        g = hit["clean"].str.extract_groups(pat).alias("_g")
        hit = hit.with_columns(g).with_columns(
            *_coalesced("_g", names, _PREFIX_FIELDS),
            pl.col("_g").struct.field("msg"),
            (pl.col("_g").struct.field("junk") if "junk" in names else pl.lit("")).alias("junk"),
            pl.lit(True).alias("prefixed"),
        ).drop("_g")
        done.append(hit)
    pending = pending.with_columns(
        *[pl.lit(None, pl.Utf8).alias(c) for c in _PREFIX_FIELDS],
        pl.lit(None, pl.Utf8).alias("msg"), pl.col("clean").alias("junk"), pl.lit(False).alias("prefixed"))
    done.append(pending)
    return pl.concat(done, how="vertical_relaxed") if len(done) > 1 else done[0]


def peel_wrappers(df: pl.DataFrame) -> pl.DataFrame:
    """Peel wrappers off `junk` from the left: `rank_hint` and `ts` from the first that carry them.

    For lines with no NCCL prefix, what is left after the wrappers becomes `msg`.
    """
    pat = wrapper_pattern()
    names = list(re.compile(pat).groupindex)
    df = df.with_columns(pl.lit(None, pl.Utf8).alias("rank_hint"), pl.lit(None, pl.Utf8).alias("ts"))
    settled: list[pl.DataFrame] = []
    pending = df
    for _ in range(MAX_WRAPPERS):
        if pending.height == 0:
            break
        m = pending["junk"].str.contains(pat)
        settled.append(pending.filter(~m))
        pending = pending.filter(m)
        if pending.height == 0:
            break
        g = pending["junk"].str.extract_groups(pat).alias("_g")
        rh, ts = _coalesced("_g", names, ("rank_hint", "ts"))
        pending = pending.with_columns(g).with_columns(
            pl.coalesce(pl.col("rank_hint"), rh).alias("rank_hint"),
            pl.coalesce(pl.col("ts"), ts).alias("ts"),
            pl.col("junk").str.slice(pl.col("_g").struct.field("_w").str.len_chars()).alias("junk"),
        ).drop("_g")
    settled.append(pending)
    out = pl.concat(settled, how="vertical_relaxed")
    return out.with_columns(
        pl.when(pl.col("prefixed")).then(pl.col("msg")).otherwise(pl.col("junk")).alias("msg"))


def parse_ts(ts: pl.Expr) -> pl.Expr:
    """Wrapper/NCCL timestamps (`2025-04-06 22:31:56`, ISO with `T`/`Z`/offset, `,ms`) -> epoch µs."""
    norm = ts.str.replace(r"(?:Z|[+-]\d\d(?::?\d\d)?)$", "").str.replace("T", " ").str.replace(",", ".")
    dt = norm.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    return dt.dt.epoch("us").cast(pl.Float64)
