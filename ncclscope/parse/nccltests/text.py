"""Parse stage, nccl-tests text output → frames, vectorised in Polars over a file's lines.

Every line rule of `grammars/nccltests.lark` runs as one regex over the candidate lines (`#` lines for
the header and footer, lines starting with a digit for the table); runs, operations and the meaning of
the error column are then carried down the file with forward fills, never a per-line Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ncclscope import schema as S
from ncclscope.parse.nccltests import patterns
from ncclscope.parse.nccltests.rejoin import cut_glued, pieces, rejoin

_HEADER_RULES = ("version_line", "test_start", "params", "device", "oob", "avg_bw")
_I64 = (
    "size_bytes",
    "count",
    "root",
    "rank",
    "group",
    "pid",
    "device_index",
    "nthreads",
    "ngpus",
    "min_bytes",
    "max_bytes",
    "warmup_iters",
    "iters",
    "nccl_library",
    "oob_values",
)


@dataclass(frozen=True)
class TextFrames:
    results: pl.DataFrame
    devices: pl.DataFrame
    summary: pl.DataFrame
    runs: pl.DataFrame


def lines_frame(text: str) -> pl.DataFrame:
    """(line, raw, body): every line of `text`, 1-based, with launcher tags and indentation cut from `body`."""
    raw = pl.Series("raw", [text]).str.split("\n").explode()
    df = pl.DataFrame({"raw": raw}).with_row_index("line", offset=1)
    return with_body(df.with_columns(pl.col("line").cast(pl.Int64)))


def with_body(df: pl.DataFrame) -> pl.DataFrame:
    """(line, raw) -> (line, raw, body): `\\r` cut from `raw`, launcher tags and indentation from `body`."""
    lead = f"^(?:{patterns.unanchored('lead')})"
    df = df.with_columns(pl.col("raw").str.strip_chars_end("\r"))
    return df.with_columns(body=pl.col("raw").str.replace(lead, "").str.strip_chars_end(" \t"))


def _heads(df: pl.DataFrame) -> pl.DataFrame:
    return df.filter(pl.col("body").str.starts_with("#") | pl.col("body").str.starts_with("nThread "))


def _result_lines(df: pl.DataFrame) -> pl.DataFrame:
    return df.filter(pl.col("body").str.contains(r"^\s*\d"))


def relevant(df: pl.DataFrame) -> pl.DataFrame:
    """The lines `parse_lines` reads (headers, program names, table rows and the pieces of rows that NCCL
    lines cut, glued lines already cut: `rejoin`): what a big input is cut to."""
    df = cut_glued(df)
    rows = _result_lines(df)
    rows = rows.filter(pl.col("body").str.contains(patterns.anchored("result")))
    named = df.filter(pl.col("raw").str.contains("_perf"))
    return pl.concat([_heads(df), named, rows, pieces(df)]).unique("line", keep="first").sort("line")


def _rule(df: pl.DataFrame, rule: str) -> pl.DataFrame:
    """Rows of `df` whose body the rule matches whole: line, raw and the rule's fields (text)."""
    rx = patterns.anchored(rule)
    names = [n for n in patterns.fields(rule) if "__" not in n]
    hit = df.filter(pl.col("body").str.contains(rx))
    if hit.is_empty():
        return pl.DataFrame(schema={"line": pl.Int64, "raw": pl.Utf8, **dict.fromkeys(names, pl.Utf8)})
    return (
        hit.select("line", "raw", pl.col("body").str.extract_groups(rx).alias("_g"))
        .unnest("_g")
        .select("line", "raw", *names)
    )


def _typed(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns([pl.col(c).cast(pl.Int64, strict=False) for c in _I64 if c in df.columns])


def _float(col: str) -> pl.Expr:
    """A number column: nan, inf and what does not parse are unknown (null), as in the JSON reader."""
    x = pl.col(col).cast(pl.Float64, strict=False)
    return pl.when(x.is_finite()).then(x)


def _op(program: pl.Expr) -> pl.Expr:
    """`all_reduce_perf_mpi` → `all_reduce` (what a program name or a command line names)."""
    return program.str.extract(patterns.unanchored("program_mention"), 1)


def _marks(df: pl.DataFrame) -> pl.DataFrame:
    """One row per line that steers the rows after it: a run header, a program name, a table header."""
    heads = _heads(df)
    params = _rule(heads, "params").select("line", is_params=pl.lit(True))
    named = df.filter(pl.col("raw").str.contains("_perf")).select("line", mention=_op(pl.col("raw")))
    table = heads.filter(pl.col("body").str.contains(patterns.anchored("table_head"))).select(
        "line",
        err=pl.when(pl.col("body").str.contains(patterns.anchored("error_wrong")))
        .then(pl.lit("wrong"))
        .when(pl.col("body").str.contains(patterns.anchored("error_max")))
        .then(pl.lit("max_error")),
    )
    starts = pl.concat([_rule(heads, r).select("line") for r in ("version_line", "test_start")]).with_columns(
        is_start=pl.lit(True)
    )
    marks = pl.concat([params, named.filter(pl.col("mention").is_not_null()), table, starts], how="diagonal")
    return marks.group_by("line").agg(pl.all().drop_nulls().first()).sort("line")


def _timeline(df: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Line → run, op and error-column kind in force at that line (for the given rows' lines)."""
    marks = _marks(df)
    ev = pl.concat([marks, rows.select("line")], how="diagonal").unique("line", keep="first").sort("line")
    ev = ev.with_columns(
        is_params=pl.col("is_params").fill_null(False), is_start=pl.col("is_start").fill_null(False)
    )
    ev = ev.with_columns(run=pl.col("is_params").cast(pl.Int64).cum_sum())
    nxt = pl.when(pl.col("is_params")).then(pl.col("run")).backward_fill()
    # A version / program line opens the run whose `# nThread` header follows it.
    ev = ev.with_columns(
        run=pl.when(pl.col("is_start")).then(pl.coalesce(nxt, pl.col("run"))).otherwise(pl.col("run"))
    )
    ev = ev.with_columns(op=pl.col("mention").forward_fill(), err=pl.col("err").forward_fill())
    first_op = ev.group_by("run").agg(run_op=pl.col("mention").drop_nulls().first())
    return (
        ev.join(first_op, on="run", how="left")
        .with_columns(op=pl.coalesce("op", "run_op"))
        .select("line", "run", "op", "err")
    )


def _results(rows: pl.DataFrame, tl: pl.DataFrame, path: str) -> pl.DataFrame:
    if rows.is_empty():
        return S.empty(S.NCCLTESTS_RESULTS)
    rows = _typed(rows).join(tl, on="line", how="left").with_columns(op=pl.coalesce("op", _op(pl.lit(path))))
    sides = []
    for side, prefix in (("out", "oop_"), ("in", "ip_")):
        value = _float(f"{prefix}wrong")
        integral = value.is_not_null() & (value == value.floor())
        is_count = (pl.col("err") == "wrong") | (pl.col("err").is_null() & integral)
        sides.append(
            rows.select(
                pl.lit(path).alias("path"),
                "line",
                "run",
                "op",
                "size_bytes",
                "count",
                "dtype",
                "redop",
                "root",
                pl.lit(side).alias("placement"),
                _float(f"{prefix}time_us").alias("time_us"),
                _float(f"{prefix}algbw_gbps").alias("algbw_gbps"),
                _float(f"{prefix}busbw_gbps").alias("busbw_gbps"),
                pl.when(is_count).then(value.cast(pl.Int64, strict=False)).alias("wrong"),
                pl.when(~is_count).then(value).alias("max_error"),
                pl.col("raw").alias("text"),
            )
        )
    out = pl.concat(sides).sort("line", pl.col("placement") != "out")
    return S.conform(out, S.NCCLTESTS_RESULTS)


def _with_run(frame: pl.DataFrame, tl: pl.DataFrame) -> pl.DataFrame:
    return frame.join_asof(tl.select("line", "run", "op").sort("line"), on="line", strategy="backward")


def parse_text(path: str, text: str) -> TextFrames:
    """The nccl-tests frames of one file's text (empty frames when it holds none)."""
    return parse_lines(path, lines_frame(text))


def parse_lines(path: str, df: pl.DataFrame) -> TextFrames:
    """The nccl-tests frames of one file's lines (`lines_frame`, or only its `relevant` lines); rows that
    NCCL lines cut in two are read whole (`rejoin`)."""
    df = rejoin(cut_glued(df))
    rows = _rule(_result_lines(df), "result")
    heads = _heads(df)
    found = {r: _typed(_rule(heads, r)) for r in _HEADER_RULES}
    tl = _timeline(df, pl.concat([rows.select("line"), *(f.select("line") for f in found.values())]))
    results = _results(rows, tl, path)
    dev = _with_run(found["device"], tl).rename({"device_index": "device", "raw": "text"})
    devices = S.conform(dev.with_columns(path=pl.lit(path)), S.NCCLTESTS_DEVICES)
    return TextFrames(
        results=results, devices=devices, summary=_summary(found, tl, path), runs=_runs(found, tl, path)
    )


def _summary(found: dict[str, pl.DataFrame], tl: pl.DataFrame, path: str) -> pl.DataFrame:
    avg = _with_run(found["avg_bw"], tl).select(
        "run", "line", _float("avg_busbw_gbps").alias("avg_busbw_gbps"), text="raw"
    )
    oob = _with_run(found["oob"], tl).select("run", "oob_values", oob_line="line", oob_text="raw")
    if avg.is_empty() and oob.is_empty():
        return S.empty(S.NCCLTESTS_SUMMARY)
    both = (
        avg.group_by("run")
        .agg(pl.all().last())
        .join(oob.group_by("run").agg(pl.all().last()), on="run", how="full", coalesce=True)
    )
    both = both.with_columns(line=pl.coalesce("line", "oob_line"), path=pl.lit(path)).sort("line")
    return S.conform(both, S.NCCLTESTS_SUMMARY)


def _runs(found: dict[str, pl.DataFrame], tl: pl.DataFrame, path: str) -> pl.DataFrame:
    params = _with_run(found["params"], tl)
    if params.is_empty():
        return S.empty(S.NCCLTESTS_RUNS)
    ver = (
        _with_run(found["version_line"], tl)
        .group_by("run")
        .agg(pl.col("tests_version").last(), pl.col("nccl_library").last())
    )
    out = params.join(ver, on="run", how="left").with_columns(path=pl.lit(path), text=pl.col("raw"))
    return S.conform(out, S.NCCLTESTS_RUNS)
