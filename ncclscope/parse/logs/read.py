"""Parse stage, NCCL logs: read every input chunk by chunk and fill `LogFrames`.

Per chunk (vectorised in Polars): clean the text, split off NCCL's prefix and launcher wrappers
(`peel`), fold wrapped continuation lines back into their NCCL line (`rejoin`), match each message
against the grammar's families in order (`match`), shape the fields into the declared frames
(`transform`), offer what is left to the PyTorch line matcher, keep the rest as `unknown`.
Per-process streams and coverage are accumulated across chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from ncclscope import schema as S
from ncclscope.errors import InputError
from ncclscope.frames import CollLines, Coverage, InputInfo, LogFrames, in_order
from ncclscope.parse.logs import peel, rejoin
from ncclscope.parse.logs.catalog import split_known, split_torch_known
from ncclscope.parse.logs.lane import MAX_TEXT, Lane
from ncclscope.parse.logs.match import match_families
from ncclscope.parse.logs.reader import read_many
from ncclscope.parse.logs.runtime_rows import torch_rows
from ncclscope.tuning import DEFAULT, Tuning


def prepare(raw: pl.DataFrame) -> pl.DataFrame:
    """(`path`, `line`, `raw`) -> one row per line with origin columns, prefix fields and `msg`."""
    longest = raw["raw"].str.len_bytes().max()
    text = pl.col("raw").str.slice(0, MAX_TEXT) if isinstance(longest, int) and longest > MAX_TEXT else pl.col("raw")
    df = raw.with_columns(text.alias("text"), pl.int_range(pl.len()).alias("_row"))
    df = peel.split(peel.clean(df).drop("raw"))
    if not df["_row"].is_sorted():
        df = df.sort("_row")
    return df.drop("_row", "clean")


class _Acc:
    """Per-table chunk results, coverage counters and stream spans accumulated over all inputs."""

    def __init__(self) -> None:
        self.tables: dict[str, list[pl.DataFrame]] = {}
        self.cov = [0, 0, 0, 0]
        self.streams: list[pl.DataFrame] = []
        self.lane = Lane(prepare)
        self.coll: list[CollLines] = []
        self.pending: list[pl.DataFrame] = []  # raw lines for the general path, taken in batches
        self.rejoined: dict[str, int] = {}  # wrapped lines folded into the line before, per path

    def add(self, name: str, df: pl.DataFrame) -> None:
        if df.height:
            self.tables.setdefault(name, []).append(df)

    def table(self, name: str, schema: S.Schema) -> pl.DataFrame:
        parts = self.tables.get(name)
        if not parts:
            return S.empty(schema)
        df = pl.concat(parts, how="vertical_relaxed")
        return df if in_order(df) else df.sort(["path", "line"], maintain_order=True)


def _streams(df: pl.DataFrame) -> pl.DataFrame:
    live = df.filter(pl.col("pid").is_not_null() | pl.col("rank_hint").is_not_null())
    key = pl.when(pl.col("pid").is_null()).then(pl.col("rank_hint")).alias("_rk")
    return live.with_columns(key).group_by(["path", "host", "pid", "_rk"]).agg(
        pl.col("rank_hint").drop_nulls().first().alias("rank_hint"),
        pl.col("line").min().alias("first_line"), pl.col("line").max().alias("last_line"),
        pl.len().cast(pl.Int64).alias("n_lines"),
        pl.col("ts_us").drop_nulls().last().alias("last_ts_us"),
        pl.col("text").get(pl.col("line").arg_max()).alias("last_text"),
    )


def _merge_streams(parts: list[pl.DataFrame]) -> pl.DataFrame:
    if not parts:
        return S.empty(S.STREAMS)
    df = pl.concat(parts, how="vertical_relaxed").sort("last_line")
    out = df.group_by(["path", "host", "pid", "_rk"], maintain_order=True).agg(
        pl.col("rank_hint").drop_nulls().first(), pl.col("first_line").min(), pl.col("last_line").max(),
        pl.col("n_lines").sum(), pl.col("last_ts_us").drop_nulls().last(), pl.col("last_text").last(),
    )
    return S.conform(out.sort(["path", "first_line"]), S.STREAMS)


def _coll_streams(part: CollLines, shapes: pl.DataFrame) -> pl.DataFrame:
    """`_streams` of COLL lines, aggregated per (path, shape) first: host, pid, rank hint and timestamp
    are properties of the shape (the wrappers and prefix are part of it)."""
    per = part.rows.group_by("path", "shape").agg(
        pl.col("line").min().alias("first_line"), pl.col("line").max().alias("last_line"),
        pl.len().cast(pl.Int64).alias("n_lines"), pl.col("text").get(pl.col("line").arg_max()).alias("last_text"))
    df = per.join(shapes.select("shape", "host", "pid", "rank_hint", pl.col("ts_us").alias("last_ts_us")), on="shape")
    live = df.filter(pl.col("pid").is_not_null() | pl.col("rank_hint").is_not_null())
    return live.select("path", "host", "pid", pl.when(pl.col("pid").is_null()).then(pl.col("rank_hint")).alias("_rk"),
                       "rank_hint", "first_line", "last_line", "n_lines", "last_ts_us", "last_text")


def process_chunk(raw: pl.DataFrame, acc: _Acc) -> None:
    """The lane takes COLL lines now; the rest waits for the general path until `PENDING_LINES` gather."""
    coll, raw = acc.lane.split(raw)
    if coll.height:
        acc.coll.append(coll)
        acc.streams.append(_coll_streams(coll, acc.lane.shapes))
        acc.cov = [acc.cov[0] + coll.height, acc.cov[1] + coll.height, acc.cov[2] + coll.height, acc.cov[3]]
    if raw.height:
        acc.pending.append(raw)
    if sum(p.height for p in acc.pending) >= PENDING_LINES:
        flush(acc, final=False)


def flush(acc: _Acc, *, final: bool = True) -> None:
    """Run the general path on the pending lines (one pass: its cost is mostly per call, not per line)."""
    if not acc.pending:
        return
    raw = pl.concat(acc.pending, how="vertical_relaxed")
    acc.pending = []
    df = prepare(raw)
    cut = df.height if final else rejoin.open_tail(df)  # a wrapped run may go on in the next block
    if cut < df.height:
        acc.pending, raw, df = [raw.slice(cut)], raw.slice(0, cut), df.slice(0, cut)
    df, folded = rejoin.rejoin(df)
    for path, n in folded.items():
        acc.rejoined[path] = acc.rejoined.get(path, 0) + n
    acc.streams.append(_streams(df))
    live = df.filter(pl.col("prefixed") | (pl.col("msg").str.len_chars() > 0))
    matched, rest = match_families(live)
    for name, part in matched.tables.items():
        if name == "collectives":
            acc.coll.append(acc.lane.own(part))
        else:
            acc.add(name, part)
    nccl_unknown = rest.filter(pl.col("prefixed"))
    other = rest.filter(~pl.col("prefixed"))
    torch, other = torch_rows(other)
    acc.add("torch", torch)
    torch_known, other = split_torch_known(other)  # PyTorch messages torch.lark has no family for
    acc.add("known", torch_known)
    acc.add("warnings", matched.unknown_warnings(nccl_unknown))
    known, nccl_unknown = split_known(nccl_unknown)  # the catalog names what no family claims
    acc.add("known", known)
    unknown = pl.concat([nccl_unknown.with_columns(pl.lit(True).alias("is_nccl")),
                         other.with_columns(pl.lit(False).alias("is_nccl"))], how="vertical_relaxed")
    acc.add("unknown", S.conform(unknown, S.UNKNOWN))
    n_nccl = live.filter(pl.col("prefixed")).height + matched.bare_lines + torch.height
    n_folded = sum(folded.values())  # parts of the line before: NCCL lines, recognised with it
    acc.cov[0] += raw.height
    acc.cov[1] += n_nccl + n_folded
    acc.cov[2] += matched.lines + torch.height + known.height + n_folded
    acc.cov[3] += nccl_unknown.height


def _fmt(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1_000_000 else f"{n / 1e3:.1f}k" if n >= 10_000 else str(n)


BATCH_LINES = 1_000_000  # small inputs are processed together, big ones chunk by chunk (COLL rows cost little)
PENDING_LINES = 250_000  # lines the lane left for the general path, gathered across batches before one pass


def read_logs(paths: Sequence[str], *, progress: Callable[[str], None] | None = None,
              tuning: Tuning = DEFAULT) -> LogFrames:
    """Read NCCL/PyTorch logs into typed frames; raise `InputError` only if nothing could be read."""
    acc = _Acc()
    inputs: list[InputInfo] = []
    notes: list[str] = []
    batch: list[pl.DataFrame] = []
    total = readable = 0
    for i, (path, chunks, stats) in enumerate(read_many(paths, tuning), 1):
        for chunk in chunks:
            batch.append(chunk)
            if sum(b.height for b in batch) >= BATCH_LINES:
                process_chunk(pl.concat(batch), acc)
                batch = []
        inputs.append(InputInfo(path, stats.lines))
        notes += stats.notes
        total += stats.lines
        readable += stats.lines - stats.binary_lines
        if progress:
            progress(f"read {i}/{len(paths)} files, {_fmt(total)} lines")
    if batch:
        process_chunk(pl.concat(batch), acc)
    flush(acc)
    notes += [f"{p}: {n} wrapped line(s) re-joined to the line before" for p, n in acc.rejoined.items()]
    if paths and readable == 0:
        what = "empty" if total == 0 else "binary data, not text"
        why = f"; {notes[0]}" if notes else ""  # (a cap or damage that cut the input short)
        raise InputError(f"nothing to analyze: the log input is {what} ({', '.join(list(paths)[:3])}){why}")
    tables = {name: acc.table(name, schema) for name, schema in _SCHEMAS.items()}
    return LogFrames(**tables, coll=CollLines.concat(acc.coll), streams=_merge_streams(acc.streams), inputs=tuple(inputs),
                     coverage=Coverage(*acc.cov), notes=tuple(notes))


_SCHEMAS: dict[str, S.Schema] = {
    "inits": S.INITS, "versions": S.VERSIONS, "env": S.ENV, "network": S.NETWORK, "rings": S.RINGS,
    "connections": S.CONNECTIONS, "channels": S.CHANNELS, "warnings": S.WARNINGS, "trail": S.TRAIL,
    "torch": S.TORCH, "known": S.KNOWN, "unknown": S.UNKNOWN,
}
