"""Parse stage, nccl-tests: table rows that NCCL INFO lines cut in two, put back together.

nccl-tests prints a row in pieces (src/common.cu: `%12li  %12li  %8s  %6s  %6i` for size, count, type,
redop and root, then `  %7s  %6.2f  %6.2f  %5s` per placement, then the newline), and runs the
collective between the pieces. With `NCCL_DEBUG=INFO`, NCCL's lines written meanwhile to the same stdout
(lazy connection setup on the first call of an algorithm, COLL lines, a peer's lines forwarded by the
launcher) land inside the row: the row's head runs into the next line's prefix (`… sum  -1node-00:12:34
[0] NCCL INFO …`, the glued phantom host of `align.facts`) and the rest of the row comes alone a few lines
later. Such a row matches no line rule, and its size was lost.

`cut_glued` cuts the NCCL line off a row piece it was glued to (the host names come from the lines that
start with a prefix, so `-1node-00` is cut after `-1`); `rejoin` then joins the pieces in line order,
a head (`size count type …`) followed by tails (`time algbw busbw …`), up to a whole row, which is
given the head's line number. Only lines shaped like a row piece are looked at: the Python loop in
`rejoin` runs once per piece, not per line.
"""

from __future__ import annotations

import re

import polars as pl

from ncclscope.parse.nccltests import patterns

_PREFIX = r":\d+:\d+ \[\d+\] NCCL "
HOST_LINE = r"^([^\s:\[\]]+)" + _PREFIX  # `node-00:123:456 [0] NCCL …`: a host printing its own line
HEAD = r"^\s*\d+\s+\d+\s+[a-z][a-z0-9_]*(?:\s|$)"  # size count type …
TAIL = r"^\s*(?:\d+(?:\.\d*)?|N/A)\s+(?:\d+\.\d+|nan|inf|-?0)\s+(?:\d+\.\d+|nan|inf|-?0)(?:\s|$)"  # time algbw busbw
GLUED = r"^\s*\d.*" + _PREFIX  # a row piece with an NCCL line run onto it
MAX_PIECES = 4  # head, out-of-place, in-place, the newline: no whole row has more
MAX_HOSTS = 256  # host names tried when cutting a glued line (longest first)


def pieces(df: pl.DataFrame) -> pl.DataFrame:
    """Lines of `df` (line, raw, body) that may be a piece of a cut row (glued ones included)."""
    b = pl.col("body")
    digit = df.filter(b.str.contains(r"^\s*\d"))  # every piece starts with a number: one cheap pass first
    return digit.filter(b.str.contains(GLUED) | b.str.contains(HEAD) | b.str.contains(TAIL))


def cut_glued(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with the NCCL line cut off every row piece it was glued to (`body` only; `raw` stays as read)."""
    glued = pl.col("body").str.contains(GLUED)
    if not df.select(glued.any()).item():
        return df
    hosts = df.select(pl.col("body").str.extract(HOST_LINE, 1).drop_nulls().unique()).to_series().to_list()
    hosts = sorted(hosts, key=lambda h: (-len(h), h))[:MAX_HOSTS]
    # the known host names first; without any, a name starts with a letter after the row's last digit
    who = "|".join(re.escape(h) for h in hosts) if hosts else r"(?<=\d)[A-Za-z][^\s:]*"
    cut = pl.col("body").str.extract(rf"^(.*?)(?:{who}){_PREFIX}", 1)
    return df.with_columns(body=pl.when(glued & cut.is_not_null()).then(cut).otherwise(pl.col("body")))


def rejoin(df: pl.DataFrame) -> pl.DataFrame:
    """`df` (line, raw, body; glued lines cut) with each cut row joined on its head's line, its other
    pieces' bodies emptied. Rows already whole are left alone."""
    row = re.compile(patterns.anchored("result"))
    cand = pieces(df).filter(~pl.col("body").str.contains(patterns.anchored("result")))
    if cand.is_empty():
        return df
    head_rx, tail_rx = re.compile(HEAD), re.compile(TAIL)
    joined: dict[int, str] = {}
    emptied: list[int] = []
    open_line, text, used = -1, "", []  # the row being joined: its head's line, text so far, its lines
    for line, body in cand.select("line", "body").iter_rows():
        if head_rx.match(body):
            open_line, text, used = line, body.rstrip(), [line]
            continue
        if open_line < 0 or not tail_rx.match(body):
            continue
        text, used = f"{text} {body.strip()}", [*used, line]
        if row.match(text.strip()):
            joined[open_line] = text.strip()
            emptied += used[1:]
            open_line = -1
        elif len(used) >= MAX_PIECES:
            open_line = -1
    if not joined:
        return df
    fix = pl.DataFrame(
        {"line": [*joined, *emptied], "_new": [*joined.values(), *([""] * len(emptied))]},
        schema={"line": pl.Int64, "_new": pl.Utf8},
    )
    out = df.join(fix, on="line", how="left")
    return out.with_columns(body=pl.coalesce("_new", "body")).drop("_new")
