"""Parse stage, peel: split raw lines into launcher wrappers, NCCL's prefix and the message (vectorised).

Every pattern comes from the grammar (`prefix_std`, `prefix_dev`, `prefix_bare`, `wrapper`). The prefix
is looked for first at the start of the line, then anywhere (the last occurrence wins: CloudWatch
duplicates its columns and merged pastes put a whole line after a cut-off one); what precedes it is
peeled as wrappers for rank hints and timestamps. Lines with no NCCL prefix are peeled from the left.
"""

from __future__ import annotations

import functools

import polars as pl

from ncclscope import grammar as G
from ncclscope.parse.bounds import MAX_LINE
from ncclscope.parse.logs.lines import rx

MAX_TEXT = 2000  # characters of the original line kept in `text` (evidence)
# ANSI colour codes, also with the ESC byte lost in a paste (`[36m`), and markdown bold markers.
# A markdown autolink a forum or issue tracker put round a file name or address
# (`transport/[net_ib.cc:101](http://net_ib.cc:101/)`) keeps its text: group 1 is the replacement.
MD_LINK = r"\[([^\]\s\[]{1,200})\]\(https?://[^)\s]{0,300}\)"
ANSI = r"\x1b\[[0-9;?]*[A-Za-z]|\x1b|\[[0-9]{1,3}(?:;[0-9]{1,3})*m|\*\*|" + MD_LINK
_ANSI = ANSI
# Trailing whitespace and the k9s right border.
_TRAIL = r"[\s│]+$"
_TRAIL_CHARS = " \t\r\n\x0b\x0c\xa0│"
# Whatever precedes a prefix found mid-line ends at a space, `|` or `:` (so the host starts cleanly).
_JUNK = r"(?P<junk>(?:.*[\s|:])?)"
_PREFIX_FIELDS = ("host", "pid", "tid", "cuda_dev", "src_file", "src_line", "func", "level")
MAX_WRAPPERS = 8

_INTS = ("pid", "tid", "cuda_dev", "rank_hint", "src_line")
# NCCL's own level markers: the fast path splits the prefix off at the first one.
_MARKERS = (" NCCL INFO ", " NCCL WARN ", " NCCL ATTN ")  # equal lengths: `split` cuts after any


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


def _coalesced(g: pl.DataFrame, fields: tuple[str, ...]) -> list[pl.Expr]:
    """One expression per field: the first non-null of its numbered groups (`host`, `host__1`, …)."""
    out = []
    for fld in fields:
        cols = [pl.lit(g[n]) for n in g.columns if G.base_field(n) == fld]
        out.append(pl.coalesce(cols).alias(fld) if cols else pl.lit(None, pl.Utf8).alias(fld))
    return out


def clean(df: pl.DataFrame, src: str = "raw", max_line: int = MAX_LINE) -> pl.DataFrame:
    """Add `clean`: the line without ANSI residue, markdown bold, trailing blanks or k9s border."""
    text = pl.col(src)
    longest = df[src].str.len_bytes().max()
    if isinstance(longest, int) and longest > max_line:
        text = text.str.slice(0, max_line)
    df = df.with_columns(text.str.strip_chars_end(_TRAIL_CHARS).alias("clean"))
    dirty = df["clean"].str.contains(_ANSI)
    if not dirty.any():
        return df
    fixed = df.filter(dirty).with_columns(
        pl.col("clean").str.replace_all(_ANSI, "${1}").str.replace(_TRAIL, "")
    )
    return pl.concat([df.filter(~dirty), fixed]).sort("_row")


def split_prefix(df: pl.DataFrame) -> pl.DataFrame:
    """Add `junk`, the prefix fields (strings), `msg` and `prefixed` from column `clean`."""
    done: list[pl.DataFrame] = []
    pending = df
    for name, pat in prefix_patterns():
        if pending.height == 0:
            break
        hit_mask = rx.contains(pending["clean"], pat)
        if name == "std":
            # A second full prefix later on the line (merged pastes, CloudWatch duplicates): the last wins.
            hit_mask &= ~rx.contains(pending["clean"], nested_pattern())
        hit = pending.filter(hit_mask)
        pending = pending.filter(~hit_mask)
        if hit.height == 0:
            continue
        g = rx.groups(hit["clean"], pat)
        hit = hit.with_columns(
            *_coalesced(g, _PREFIX_FIELDS),
            g["msg"],
            (g["junk"] if "junk" in g.columns else pl.lit("")).alias("junk"),
            pl.lit(True).alias("prefixed"),
        )
        done.append(hit)
    pending = pending.with_columns(
        *[pl.lit(None, pl.Utf8).alias(c) for c in _PREFIX_FIELDS],
        pl.lit(None, pl.Utf8).alias("msg"),
        pl.col("clean").alias("junk"),
        pl.lit(False).alias("prefixed"),
    )
    done.append(pending)
    return pl.concat(done, how="vertical_relaxed") if len(done) > 1 else done[0]


def peel_wrappers(df: pl.DataFrame) -> pl.DataFrame:
    """Peel wrappers off `junk` from the left: `rank_hint` and `ts` from the first that carry them.

    For lines with no NCCL prefix, what is left after the wrappers becomes `msg`.
    """
    pat = wrapper_pattern()
    df = df.with_columns(*[pl.lit(None, pl.Utf8).alias(c) for c in ("rank_hint", "rank_tag", "ts")])
    settled: list[pl.DataFrame] = []
    pending = df
    for _ in range(MAX_WRAPPERS):
        if pending.height == 0:
            break
        m = rx.contains(pending["junk"], pat)
        settled.append(pending.filter(~m))
        pending = pending.filter(m)
        if pending.height == 0:
            break
        g = rx.groups(pending["junk"], pat)
        rh, tag, ts = _coalesced(g, ("rank_hint", "rank_tag", "ts"))
        pending = pending.with_columns(
            pl.coalesce(pl.col("rank_hint"), rh).alias("rank_hint"),
            pl.coalesce(pl.col("rank_tag"), tag).alias("rank_tag"),
            pl.coalesce(pl.col("ts"), ts).alias("ts"),
            pl.col("junk").str.slice(g["_w"].str.len_chars()).alias("junk"),
        )
    settled.append(pending)
    out = pl.concat(settled, how="vertical_relaxed")
    return out.with_columns(
        pl.when(pl.col("prefixed")).then(pl.col("msg")).otherwise(pl.col("junk")).alias("msg"),
        pl.coalesce("rank_hint", "rank_tag").alias("rank_hint"),
    ).drop("rank_tag")


def _general(df: pl.DataFrame) -> pl.DataFrame:
    """Prefix, wrappers and message of any line (typed prefix fields, `ts_us`); `clean` in, `msg` out."""
    out = peel_wrappers(split_prefix(df))
    return out.with_columns(
        *[pl.col(c).cast(pl.Int64, strict=False) for c in _INTS],
        bad_fields({c: (pl.col(c), pl.col(c).cast(pl.Int64, strict=False)) for c in _INTS}, OVF_PREFIX),
        parse_ts(pl.col("ts")).alias("ts_us"),
    ).drop("junk", "ts")


OVF_PREFIX = "_ovf_pre"  # prefix fields of a line out of 64-bit range or not a number (comma-separated)


def bad_fields(typed: dict[str, tuple[pl.Expr, pl.Expr]], name: str) -> pl.Expr:
    """Names of the fields (comma-separated, "" if none) whose text is there but whose typed value is null:
    a number beyond 64 bits, or digits Polars does not read (`\\d` matches any Unicode digit)."""
    if not typed:
        return pl.lit("").alias(name)
    flags = [pl.when(t.is_not_null() & v.is_null()).then(pl.lit(c)) for c, (t, v) in typed.items()]
    return pl.concat_str(flags, separator=",", ignore_nulls=True).fill_null("").alias(name)


def split(df: pl.DataFrame) -> pl.DataFrame:
    """Split every line of `clean` into origin fields, `level`, `prefixed` and `msg`.

    Fast path: cut at the first NCCL level marker; the text before it (host:pid:tid [dev] plus any
    wrappers) repeats for every line of a process, so each distinct head is parsed once with the
    grammar's patterns and joined back. Lines without a marker, heads that do not parse as a
    prefix, or messages that hold another NCCL prefix go through the general path line by line.
    """
    c = pl.col("clean")
    pos = pl.coalesce([c.str.find(m, literal=True) for m in _MARKERS])
    df = df.with_columns(pos.alias("_pos"))
    cand = df.filter(pl.col("_pos").is_not_null())
    rest = df.filter(pl.col("_pos").is_null())
    if cand.height:
        cut = pl.col("_pos") + len(_MARKERS[0])
        cand = cand.with_columns(c.str.slice(0, cut).alias("_head"), c.str.slice(cut).alias("msg"))
        nested = cand["msg"].str.contains(" NCCL ", literal=True)
        rest = pl.concat([rest, cand.filter(nested).drop("_head", "msg")])
        cand = cand.filter(~nested)
        heads = parse_heads(cand["_head"].unique())
        cand = cand.join(heads, on="_head", how="left")
        ok = cand["level"].is_not_null()
        rest = pl.concat([rest, cand.filter(~ok).select(rest.columns)])
        cand = cand.filter(ok).with_columns(pl.lit(True).alias("prefixed")).drop("_head")
    out = [cand] if cand.height else []
    if rest.height:
        out.append(_general(rest))
    if not out:
        return _general(df).drop("_pos")
    return pl.concat(out, how="diagonal_relaxed").drop("_pos")


def parse_heads(heads: pl.Series) -> pl.DataFrame:
    """Distinct heads (wrappers + prefix up to and with the level marker) -> `_head` and their typed prefix
    fields; heads that are no whole prefix are left out."""
    out = _general(heads.alias("clean").to_frame())
    out = out.filter(pl.col("prefixed") & (pl.col("msg") == "")).drop("msg", "prefixed")
    return out.rename({"clean": "_head"})


def parse_ts(ts: pl.Expr) -> pl.Expr:
    """Wrapper/NCCL timestamps (`2025-04-06 22:31:56`, ISO with `T`/`Z`/offset, `,ms`) -> epoch µs."""
    norm = ts.str.replace(r"(?:Z|[+-]\d\d(?::?\d\d)?)$", "").str.replace("T", " ").str.replace(",", ".")
    dt = norm.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    return dt.dt.epoch("us").cast(pl.Float64)
