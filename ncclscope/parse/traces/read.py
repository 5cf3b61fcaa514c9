"""Parse stage, torch.profiler traces: per-rank Chrome traces (`.json`, `.json.gz`) → `TraceFrames`.

Each file is decoded by `traces.decode` (msgspec, only the needed fields), its rank resolved
(`distributedInfo.rank` → `--rank-map` → file name), and its NCCL kernels linked back to the CPU
op that issued them (by External id from 2024 on, by correlation + time containment before); gloo
runs give one collective per `c10d::<op>` call (or `gloo:<op>` span) instead.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress

import polars as pl

from ncclscope import schema as S
from ncclscope.errors import TraceError
from ncclscope.parse.archive import locate
from ncclscope.parse.bounds import INT64_MAX, RANK_MAX, int_in
from ncclscope.parse.traces.decode import Scratch
from ncclscope.parse.traces.events import COMM_FIELDS, DecodedTrace
from ncclscope.parse.traces.link import collectives_of, gloo_of, range_notes
from ncclscope.parse.traces.workers import decoded
from ncclscope.parse.walk import Found, walk
from ncclscope.tuning import DEFAULT, Tuning

_RANK_IN_NAME = re.compile(r"(?:rank|worker|trainer)[-_]?(\d+)", re.IGNORECASE)
_SUFFIXES = (".json", ".json.gz", ".json.zst")
# Before 2024 Kineto wrote absolute epoch µs; later files are relative to baseTimeNanoseconds.
_EPOCH_US_2001 = 1.0e15


@dataclass(frozen=True)
class TraceFrames:
    """Every trace-derived table of one analysis (schemas in `ncclscope.schema`)."""

    collectives: pl.DataFrame  # TRACE_COLLECTIVES: one row per collective per rank
    steps: pl.DataFrame  # TRACE_STEPS
    kernels: pl.DataFrame  # TRACE_KERNELS: every GPU interval, for overlap
    ranks: pl.DataFrame  # TRACE_RANKS: one row per file
    pgs: pl.DataFrame  # TRACE_PGS
    notes: tuple[str, ...] = ()


def expand_trace_paths(paths: Sequence[str]) -> list[str]:
    """Files as given, directories expanded to their `.json` / `.json.gz` files (recursively), globs expanded."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            # Regular files only, symlinks not followed (`up -> ..`); the log walk notes what it skips.
            found = sorted(f for f in walk(p, Found()) if f.endswith(_SUFFIXES))
            if not found:
                raise TraceError(f"{p}: no trace files (.json, .json.gz) in this directory")
            out.extend(found)
        elif os.path.exists(locate(p)):  # (a file, or a member of an archive: `archive!member`)
            out.append(p)
        elif glob.has_magic(p) and (hits := sorted(glob.glob(p))):
            out.extend(hits)
        else:
            raise TraceError(f"{p}: no such trace file")
    # The same file named twice (a directory and a file in it, or two spellings) is read once.
    return list({os.path.realpath(p): p for p in reversed(out)}.values())[::-1]


def read_traces(
    paths: Sequence[str],
    *,
    rank_map: dict[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
    tuning: Tuning = DEFAULT,
) -> TraceFrames:
    """Read every rank's trace. A file that cannot be used is skipped with a note while another can be;
    when none can, its TraceError (one line) is raised, as is a rank claimed by two traces."""
    files = expand_trace_paths(paths)
    acc: dict[str, list[pl.DataFrame]] = {k: [] for k in _KINDS}
    ranks: list[pl.DataFrame] = []
    pgs: list[pl.DataFrame] = []
    seen: dict[int, str] = {}
    failed: list[TraceError] = []
    notes: list[str] = []
    scratch = Scratch()  # where each file's bytes are; the last one given back before the frames are built
    with contextlib.closing(decoded(files, scratch, tuning)) as traces:
        for d in traces:  # in file order; large sets partly on worker processes
            try:
                if isinstance(d, TraceError):
                    raise d
                rank, how = _rank_of(d, rank_map or {})
            except TraceError as e:
                failed.append(e)
                continue
            if rank in seen:
                raise TraceError(
                    f"rank {rank} appears in two traces ({seen[rank]}, {d.path}): pass the traces "
                    "of one job, or give each file its rank with --rank-map FILE=RANK"
                )
            seen[rank] = d.path
            notes += d.notes
            _accumulate(acc, d, rank, notes)
            ranks.append(_rank_row(d, rank, how))
            pgs.append(_pg_rows(d, rank))
            if progress:
                progress(f"trace {d.path}: rank {rank}, {d.n_events} events")
    scratch.close()
    del scratch
    if not seen:
        raise failed[0]
    return _build(acc, ranks, pgs, tuple(f"trace skipped: {e}" for e in failed) + tuple(notes))


_KINDS = ("gpu", "nccl", "launches", "ops", "steps")


def _accumulate(acc: dict[str, list[pl.DataFrame]], d: DecodedTrace, rank: int, notes: list[str]) -> None:
    # Each file's columns become compact Polars frames at once (its Python lists are dropped with `d`);
    # linking runs once over the concatenation of every rank, not per file.
    off = _offset_us(d)
    d.launches = _nccl_launches(d)
    for kind in _KINDS:
        cols = getattr(d, kind)
        try:
            frame = _frame(cols, rank=rank, off=off, path=d.path, host=d.host)
        except (pl.exceptions.PolarsError, OverflowError, TypeError, ValueError):
            frame = _frame(_in_range(cols, d.path, notes), rank=rank, off=off, path=d.path, host=d.host)
        acc[kind].append(frame)


def _in_range(cols: dict[str, list[object]], path: str, notes: list[str]) -> dict[str, list[object]]:
    """The columns with every integer beyond 64 bits made null (counted in a note per field); only
    called once a frame could not be built, so well-formed traces never pay for the scan."""
    out = {}
    for name, vals in cols.items():
        bad = sum(type(v) is int and not -INT64_MAX <= v <= INT64_MAX for v in vals)
        if bad:
            notes.append(f"{path}: {bad} value(s) of `{name}` beyond 64 bits, read as unknown")
            vals = [None if type(v) is int and not -INT64_MAX <= v <= INT64_MAX else v for v in vals]
        out[name] = vals
    return out


def _nccl_launches(d: DecodedTrace) -> dict[str, list[object]]:
    """The launches of this rank's NCCL kernels (~1 in 10), the only ones linking joins: same float key."""
    want = {float(c) for c in d.nccl.get("correlation", ()) if c is not None}
    keep = list(map(want.__contains__, map(float, d.launches.get("correlation", ()))))
    return {k: list(compress(v, keep)) for k, v in d.launches.items()}


def _rank_of(d: DecodedTrace, rank_map: dict[str, int]) -> tuple[int, str]:
    base = os.path.basename(d.path)
    for key in (d.path, base):
        if key in rank_map:
            return rank_map[key], "rank-map"
    rank = d.distributed.get("rank")  # (an int in [0, 2^31) or None: checked by traces.header)
    if isinstance(rank, int):
        return rank, "distributedInfo"
    m = _RANK_IN_NAME.search(base)
    if m and int_in(int(m.group(1)), 0, RANK_MAX) is not None:
        return int(m.group(1)), "file name"
    what = "distributedInfo.rank out of range" if "rank" in d.distributed else "no distributedInfo.rank"
    raise TraceError(
        f"{d.path}: cannot tell which rank wrote this trace ({what}, no rank in the file name); "
        "pass --rank-map FILE=RANK"
    )


def _offset_us(d: DecodedTrace) -> float:
    # Use the base only when ts are clearly relative (an absolute epoch-µs ts is > 1e15).
    if d.base_ns is None:
        return 0.0
    sample = (d.gpu["ts"] or d.ops["ts"] or d.steps["ts"] or [0.0])[0]
    return d.base_ns / 1000.0 if sample < _EPOCH_US_2001 else 0.0


def _frame(
    cols: dict[str, list[object]], *, rank: int, off: float, path: str, host: str | None
) -> pl.DataFrame:
    df = pl.DataFrame(cols, strict=False, infer_schema_length=None)
    exprs: list[pl.Expr] = [
        pl.lit(rank, dtype=pl.Int64).alias("rank"),
        pl.lit(path, dtype=pl.Utf8).alias("path"),
        pl.lit(host, dtype=pl.Utf8).alias("host"),
    ]
    if "ts" in cols:
        exprs.append((pl.col("ts").cast(pl.Float64) + off).alias("ts"))
    if "dur" in cols:
        exprs.append(pl.col("dur").cast(pl.Float64).fill_null(0.0).alias("dur"))
    for c in ("stream", "tid"):
        if c in cols:
            exprs.append(pl.col(c).cast(pl.Utf8).cast(pl.Int64, strict=False).alias(c))
    for c in ("external_id", "correlation"):
        if c in cols:
            exprs.append(pl.col(c).cast(pl.Int64, strict=False))
    exprs.extend(pl.col(c).cast(pl.Utf8) for c in cols if c in _TEXT and c != "input_dims")
    if "input_dims" in cols:  # numbers and brackets only: a re-indented trace reads as Kineto's one line
        exprs.append(pl.col("input_dims").cast(pl.Utf8).str.replace_all(r"\s+", "").alias("input_dims"))
    return df.with_columns(exprs)


_TEXT = ("name", "input_dims", "input_type", *COMM_FIELDS)


def _build(
    acc: dict[str, list[pl.DataFrame]],
    ranks: list[pl.DataFrame],
    pgs: list[pl.DataFrame],
    notes: tuple[str, ...],
) -> TraceFrames:
    gpu, nccl, launches, ops, st = (pl.concat(acc[k], how="vertical_relaxed") for k in _KINDS)
    kernels = gpu.select(
        "rank",
        "stream",
        pl.col("ts").alias("start_us"),
        (pl.col("ts") + pl.col("dur")).alias("end_us"),
        pl.col("is_comm").cast(pl.Boolean),
    )
    steps = st.select(
        "path",
        "rank",
        pl.col("name").cast(pl.Utf8).str.extract(r"#(\d+)").cast(pl.Int64, strict=False).alias("step"),
        pl.col("ts").alias("start_us"),
        (pl.col("ts") + pl.col("dur")).alias("end_us"),
        pl.col("dur").alias("dur_us"),
    )
    pg = pl.concat(pgs) if pgs else S.empty(S.TRACE_PGS)
    gloo, group_notes = gloo_of(ops, nccl, steps, pg)
    colls = pl.concat([collectives_of(nccl, launches, ops, steps), gloo], how="diagonal_relaxed")
    era = nccl.group_by("rank").agg(
        pl.when(pl.col("name").cast(pl.Utf8).str.starts_with("ncclDevKernel").any())
        .then(pl.lit("ncclDevKernel"))
        .otherwise(pl.lit("ncclKernel"))
        .alias("kernel_era")
    )
    rk = pl.concat(ranks).drop("kernel_era").join(era, on="rank", how="left")
    return TraceFrames(
        collectives=S.conform(colls, S.TRACE_COLLECTIVES).sort("rank", "start_us"),
        steps=S.conform(steps, S.TRACE_STEPS),
        kernels=S.conform(kernels, S.TRACE_KERNELS),
        ranks=S.conform(rk, S.TRACE_RANKS).sort("rank"),
        pgs=pg,
        notes=notes
        + group_notes
        + range_notes(nccl, ops)
        + _missing_kernel_notes(ops, nccl, rk)
        + _unpaired_call_notes(colls),
    )


def _missing_kernel_notes(ops: pl.DataFrame, nccl: pl.DataFrame, ranks: pl.DataFrame) -> tuple[str, ...]:
    """CPU-side NCCL ops that no kernel in the trace answers. Point-to-point ops (send, recv, all_to_all)
    share kernels: a batch of sends and receives, or one all_to_all, is one SendRecv kernel, so that
    family is missing only when it has no SendRecv kernel at all. A one-rank world launches no NCCL
    kernel (NCCL copies), so its traces are not counted."""
    if "coll" not in ops.columns or ops.is_empty():
        return ()
    p2p_op = pl.col("coll").cast(pl.Utf8).str.contains(r"send|recv|all_to_all|alltoall")
    cpu = (
        ops.filter(
            (pl.col("name") == "record_param_comms")
            & pl.col("coll").is_not_null()
            & (pl.col("coll").cast(pl.Utf8) != "wait")
        )
        .group_by("path")
        .agg((~p2p_op).sum().alias("n_cpu"), p2p_op.sum().alias("n_cpu_p2p"))
    )
    p2p_kernel = pl.col("name").cast(pl.Utf8).str.contains("SendRecv")
    gpu = (
        nccl.group_by("path").agg((~p2p_kernel).sum().alias("n_gpu"), p2p_kernel.sum().alias("n_gpu_p2p"))
        if nccl.height
        else pl.DataFrame(schema={"path": pl.Utf8, "n_gpu": pl.UInt32, "n_gpu_p2p": pl.UInt32})
    )
    one_rank = ranks.filter(pl.col("world_size") == 1).select("path")
    gap = (
        cpu.join(one_rank, on="path", how="anti")
        .join(gpu, on="path", how="left")
        .with_columns(
            (
                (pl.col("n_cpu").cast(pl.Int64) - pl.col("n_gpu").fill_null(0).cast(pl.Int64)).clip(0)
                + pl.when(pl.col("n_gpu_p2p").fill_null(0) == 0)
                .then(pl.col("n_cpu_p2p").cast(pl.Int64))
                .otherwise(0)
            ).alias("n")
        )
        .filter(pl.col("n") > 0)
    )
    return tuple(
        f"{r['path']}: {r['n']} NCCL op(s) on the CPU side have no kernel in the trace (sampled or cut-off "
        "trace); they are not lined up"
        for r in gap.sort("path").iter_rows(named=True)
    )


def _unpaired_call_notes(colls: pl.DataFrame) -> tuple[str, ...]:
    """Gloo `c10d::<op>` calls with no `gloo:<op>` span to end them (a filtered or cut-off trace)."""
    gap = (
        colls.filter((pl.col("source") == "cpu_op") & pl.col("end_us").is_null())
        .group_by("path")
        .len("n")
        .sort("path")
    )
    return tuple(
        f"{r['path']}: {r['n']} c10d op(s) have no gloo:* span after them: their completion is unknown, "
        "so they line up by arrival only"
        for r in gap.iter_rows(named=True)
    )


def _rank_row(d: DecodedTrace, rank: int, how: str) -> pl.DataFrame:
    dist = d.distributed
    gpu = d.devices[0].get("name") if d.devices else None
    return pl.DataFrame(
        [
            {
                "path": d.path,
                "rank": rank,
                "world_size": dist.get("world_size"),
                "host": d.host,
                "backend": dist.get("backend"),
                "nccl_version": dist.get("nccl_version"),
                "gpu": gpu,
                "n_gpus": len(d.devices),
                "base_ns": d.base_ns,
                "n_events": d.n_events,
                "kernel_era": None,
                "rank_from": how,
            }
        ],
        schema=S.TRACE_RANKS,
    )


def _pg_rows(d: DecodedTrace, rank: int) -> pl.DataFrame:
    cfg = d.distributed.get("pg_config") or []  # (dicts of typed values: checked by traces.header)
    rows = [
        {
            "rank": rank,
            "pg_name": str(c["pg_name"]),
            "pg_desc": c["pg_desc"],
            "backend_config": c["backend_config"],
            "pg_size": c["pg_size"],
            "pg_ranks": str(c["ranks"]),
        }
        for c in cfg
    ]
    return pl.DataFrame(rows, schema=S.TRACE_PGS) if rows else S.empty(S.TRACE_PGS)
