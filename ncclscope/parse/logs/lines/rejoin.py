"""Parse stage, rejoin: fold wrapped continuation lines of a pasted log back into their NCCL line (vectorised).

Terminals and issue forms wrap long lines (inside a word or at a space) and re-flow lists one item per
line. A run of lines right after an NCCL-prefixed line is folded into it when every line of the run can be
a continuation (no prefix, no wrapper that carries a rank or a timestamp, not a traceback or log-header
line, not a message of its own) and the joined message matches a family where arbitrary text (a canary
word) in place of the last piece does not: the family's shape, not a free-text tail, asks for that piece.
A free-text tail is joined only on a terminal's evidence: the lines before the piece are as long as the
longest line of the file, and most prefixed lines that long go on in the next line (a paste cut at that
many columns). If the first line alone matches a family, the joined message must match the same one.
The joined row keeps the first line's path:line; the folded lines are counted, never silently lost.

Not joined, by design: a piece that starts with a bare rank tag (`[2] `, `3: `; a Trees list cut before
`[2]` looks exactly like a tagged line of rank 2); a single cut line with a free-text tail (one line is no
terminal); a COLL line that parses whole (`collfast` takes it before this pass).
"""

from __future__ import annotations

import polars as pl

from ncclscope.parse.logs.lines import peel, rx
from ncclscope.parse.logs.lines.match import family_index
from ncclscope.parse.logs.lines.peel import MAX_TEXT

MAX_RUN = 16  # continuation lines folded into one line at most (an IB device list re-flowed one per line)
CANARY = "zqx"  # stands for any text: a family that accepts it where a piece goes gives no evidence
# Lines that start a record of their own: Python tracebacks and exceptions, glog/c10 headers, nccl-tests
# `#` lines, shell traces, MLPerf `:::MLLOG`, bracketed application tags (`[HUGECTR][...]`, `[INFO]:`).
NEVER = (
    r"^(?:Traceback \(most recent call last\)|File \"|During handling of |The above exception"
    r"|[\w.]*(?:Error|Exception|Warning|Interrupt)\b|[IWEF]\d{4} \d\d:|\[[IWEF]\d{4} |#|\+ |:::"
    r"|\[[\w .-]+\]\s*[:\[])"
)
_PEELED_OK = r"^[ \t\d>]*$"  # what peel took off a continuation: indentation, a number, `>` (of `->`)
_SPACE_END = r"[ \t]$"  # a wrap at a space leaves it on the first line (a CR of CRLF is no evidence)
_RUN_COLS = ["_h", "_j", "_r"]
MIN_WIDTH = 40  # a terminal narrower than this is not a terminal
WIDTH_SHARE = 0.8  # of the prefixed lines as long as the longest that must go on in the next line


def _family(s: pl.Series) -> pl.Series:
    """Family index of each string; each distinct string is matched once (ranks repeat their lines)."""
    u = pl.DataFrame({"msg": s.unique()})
    u = u.with_columns(family_index(u).alias("_f"))
    return pl.DataFrame({"msg": s}).join(u, on="msg", how="left", maintain_order="left")["_f"]


def _maybe_cont(df: pl.DataFrame) -> pl.Series:
    """Cheap test on every line: no prefix, rank hint or timestamp, some text, right after the line before."""
    same = (pl.col("path") == pl.col("path").shift(1)) & (pl.col("line") == pl.col("line").shift(1) + 1)
    cont = ~pl.col("prefixed") & pl.col("rank_hint").is_null() & pl.col("ts_us").is_null() & same
    return df.select((cont & (pl.col("msg").str.len_chars() > 0)).fill_null(False)).to_series()


def _width_cut(df: pl.DataFrame, cont: pl.Series, widths: dict[str, int]) -> pl.Series:
    """Lines cut by a terminal: as long as the longest line of their file, in a file where at least two
    prefixed lines that long, and most of them, are followed by a possible continuation. `widths` holds
    the longest line of files whose other lines are not in `df` (the reader passes only the lines that
    may take part)."""
    part = (pl.col("path") != pl.col("path").shift(1)).fill_null(True).cum_sum().alias("_p")  # files in order
    goes_on = (pl.col("prefixed") & cont.shift(-1).fill_null(False)).alias("_go")
    width = (
        pl.col("path").replace_strict(widths, default=0, return_dtype=pl.Int64)
        if widths
        else pl.lit(0, pl.Int64)
    )
    g = df.select(
        part,
        pl.col("text").str.len_chars().cast(pl.Int64).alias("_n"),
        "prefixed",
        goes_on,
        width.alias("_w"),
    )
    g = g.with_columns(
        pl.max_horizontal(pl.col("_n").max().over("_p"), pl.col("_w").max().over("_p")).alias("_max")
    )
    top = pl.col("_n") == pl.col("_max")
    per = g.group_by("_p").agg(
        pl.col("_max").first().alias("_len"),
        (top & pl.col("prefixed")).sum().alias("_top"),
        (top & pl.col("_go")).sum().alias("_goes"),
    )
    per = per.filter(
        (pl.col("_goes") >= 2)
        & (pl.col("_goes") >= WIDTH_SHARE * pl.col("_top"))
        & (pl.col("_len") >= MIN_WIDTH)
        & (pl.col("_len") < MAX_TEXT)
    )  # MAX_TEXT: cut by the reader
    if per.height == 0:
        return pl.Series("_w", [False] * df.height, dtype=pl.Boolean)
    g = g.join(per.select("_p", "_len"), on="_p", how="left", maintain_order="left")
    return g.select((pl.col("_n") == pl.col("_len")).fill_null(False)).to_series()


def _runs(df: pl.DataFrame, widths: dict[str, int]) -> pl.DataFrame:
    """(`_h` head row, `_j` 1.., `_r` row, `_w` all lines before it were cut by a terminal) for the lines
    that may continue a prefixed line."""
    cont = _maybe_cont(df)
    marked = df.select("_r", "prefixed", cont.alias("_c"))
    marked = marked.with_columns((~pl.col("_c")).cum_sum().alias("_g"))  # a run shares its head's group
    heads = marked.filter(pl.col("prefixed") & pl.col("_c").shift(-1).fill_null(False))
    if heads.height == 0:
        return pl.DataFrame(schema={**{c: pl.UInt32 for c in _RUN_COLS}, "_w": pl.Boolean})
    marked = marked.with_columns(
        _width_cut(df, cont, widths).shift(1).fill_null(False).alias("_w")
    )  # the line before was cut
    runs = marked.filter(pl.col("_c")).join(heads.select("_g", pl.col("_r").alias("_h")), on="_g")
    runs = runs.with_columns((pl.col("_r") - pl.col("_h")).alias("_j")).filter(pl.col("_j") <= MAX_RUN)
    runs = runs.sort("_r").with_columns(pl.col("_w").cast(pl.Int8).cum_min().over("_h").cast(pl.Boolean))
    return runs.select(*_RUN_COLS, "_w")


def _pieces(df: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Runs cut at their first line that cannot be a continuation, with each piece's text and separators."""
    idx = runs["_r"]
    text = df["text"].gather(idx)
    clean = peel.clean(pl.DataFrame({"raw": text, "_row": pl.int_range(text.len(), eager=True)}))["clean"]
    body = clean.str.strip_chars_start()
    peeled = clean.str.head(clean.str.len_chars() - df["msg"].gather(idx).str.len_chars())
    ok = rx.contains(peeled, _PEELED_OK) & (body.str.len_chars() > 0) & ~rx.contains(body, NEVER)
    ok &= _family(body).is_null()
    space = rx.contains(df["text"].gather(idx - 1), _SPACE_END) | (
        clean.str.len_chars() > body.str.len_chars()
    )
    runs = runs.with_columns(
        body.alias("_body"),
        text.str.strip_chars().alias("_text"),
        pl.when(space).then(pl.lit(" ")).otherwise(pl.lit("")).alias("_glue"),
        ok.alias("_ok"),
    )
    keep = pl.col("_ok").cast(pl.Int8).cum_min().over("_h", order_by="_j") == 1
    return runs.filter(keep).drop("_ok")


def _candidates(df: pl.DataFrame, pieces: pl.DataFrame) -> pl.DataFrame:
    """One row per (head `_h`, run length `_k`): the message joined both ways and with the canary last.

    Built one run position at a time (a run is at most MAX_RUN lines; most are one line)."""
    heads = pieces.select("_h").unique()
    msg, text = df["msg"].gather(heads["_h"]), df["text"].gather(heads["_h"]).str.strip_chars_end()
    prev = heads.with_columns(
        msg.alias("_ja"), msg.alias("_jb"), text.alias("_xa"), text.alias("_xb"), msg.alias("_m")
    )
    out = []
    for k in range(1, MAX_RUN + 1):
        step = pieces.filter(pl.col("_j") == k).join(prev.drop("_w", strict=False), on="_h")
        if step.height == 0:
            break
        glue, sp, body, txt = pl.col("_glue"), pl.lit(" "), pl.col("_body"), pl.col("_text")
        prev = step.select(
            "_h",
            pl.lit(k, pl.UInt32).alias("_k"),
            "_m",
            "_w",
            (pl.col("_ja") + glue + CANARY).alias("_ca"),
            (pl.col("_jb") + sp + CANARY).alias("_cb"),
            (pl.col("_ja") + glue + body).alias("_ja"),
            (pl.col("_jb") + sp + body).alias("_jb"),
            (pl.col("_xa") + glue + txt).alias("_xa"),
            (pl.col("_xb") + sp + txt).alias("_xb"),
        )
        out.append(prev)
    return pl.concat(out)


def _fams(cand: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    """Family index of every column in `cols`, matched in one pass (`_f<col>`)."""
    fam = _family(pl.concat([cand[c] for c in cols]))
    n = cand.height
    return cand.with_columns([fam.slice(i * n, n).alias(f"_f{c}") for i, c in enumerate(cols)])


def _choose(cand: pl.DataFrame) -> pl.DataFrame:
    """Per head: the longest accepted run (`_h`, `_k`, new `msg`, new `text`); glued pieces before spaced."""
    cand = _fams(cand, ("_ja", "_jb"))
    cand = _fams(
        cand.filter(pl.col("_f_ja").is_not_null() | pl.col("_f_jb").is_not_null()), ("_m", "_ca", "_cb")
    )
    first = pl.col("_f_m")

    def accepted(j: str, c: str, width: pl.Expr) -> pl.Expr:
        fam = pl.col(f"_f{j}")
        shaped = pl.col(f"_f{c}").is_null() | width
        return (fam.is_not_null() & shaped & (first.is_null() | (first == fam))).fill_null(False)

    # a terminal cuts at a column and keeps every space: its evidence holds for the glued join only
    cand = cand.with_columns(
        accepted("_ja", "_ca", pl.col("_w")).alias("_a"), accepted("_jb", "_cb", pl.lit(False)).alias("_b")
    )
    cand = cand.filter(pl.col("_a") | pl.col("_b")).sort("_h", "_k")
    best = cand.group_by("_h").agg(pl.all().last())
    a = pl.col("_a")
    return best.select(
        "_h",
        "_k",
        pl.when(a).then("_ja").otherwise("_jb").alias("msg"),
        pl.when(a).then("_xa").otherwise("_xb").str.slice(0, MAX_TEXT).alias("text"),
    )


def rejoin(df: pl.DataFrame, widths: dict[str, int] | None = None) -> tuple[pl.DataFrame, dict[str, int]]:
    """(`df` with every wrapped run folded into its first line, lines folded per path).

    `df` is `logs.prepare`'s output (rows in file order); columns and their order are kept. It may hold
    only the lines that can take part (every prefixed line and the MAX_RUN lines after it); then
    `widths` gives each file's longest line.
    """
    df = df.with_row_index("_r")
    runs = _runs(df, widths or {})
    pieces = _pieces(df, runs) if runs.height else runs
    best = _choose(_candidates(df, pieces)) if pieces.height else pieces
    if best.height == 0:
        return df.drop("_r"), {}
    folded = runs.join(best.select("_h", "_k"), on="_h").filter(pl.col("_j") <= pl.col("_k"))
    new = best.select(pl.col("_h").alias("_r"), pl.col("msg").alias("_nm"), pl.col("text").alias("_nt"))
    out = df.join(new, on="_r", how="left", maintain_order="left").join(
        folded.select("_r"), on="_r", how="anti", maintain_order="left"
    )
    out = out.with_columns(pl.coalesce("_nm", "msg").alias("msg"), pl.coalesce("_nt", "text").alias("text"))
    paths = df["path"].gather(folded["_r"]).value_counts()
    return out.select(df.columns).drop("_r"), dict(
        zip(paths["path"].to_list(), paths["count"].to_list(), strict=True)
    )


def open_tail(df: pl.DataFrame) -> int:
    """First row of a run that may go on in the next block (the last prefixed line, if few lines follow it);
    `df.height` when every run is complete. Rows from there are parsed with the next block."""
    prefixed = df["prefixed"]
    if df.height == 0 or not prefixed.any():
        return df.height
    last = df.height - 1 - int(prefixed.reverse().arg_max() or 0)
    return last if df.height - last <= MAX_RUN + 1 else df.height
