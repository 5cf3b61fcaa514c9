"""Parse stage, torch.profiler traces: link each NCCL kernel to the CPU op that issued it.

2024+ traces: the kernel's `External id` is that of its `record_param_comms` (and the kernel often
carries the metadata itself). Older traces: kernel `correlation` → the `cudaLaunchKernel` with that
correlation → the `nccl:<op>` annotation enclosing the launch on the same CPU thread, whose
`Input Dims` / `Input type` are the only size and dtype there are. Gloo runs have no kernel: each
`c10d::<op>` call is paired with the `gloo:<op>` span that waits for it (`gloo_of`).
"""

from __future__ import annotations

import polars as pl

from ncclscope import schema as S
from ncclscope.parse.traces.events import COMM_FIELDS
from ncclscope.parse.traces.gloo_groups import LANE, assign_groups

# Element sizes by the dtype spellings torch writes (`Float`, `c10::BFloat16`, `long int`, `unsigned char`…).
_DTYPES: dict[str, tuple[str, int]] = {
    "float": ("float32", 4),
    "float32": ("float32", 4),
    "half": ("float16", 2),
    "float16": ("float16", 2),
    "bfloat16": ("bfloat16", 2),
    "double": ("float64", 8),
    "float64": ("float64", 8),
    "int": ("int32", 4),
    "int32": ("int32", 4),
    "long": ("int64", 8),
    "long int": ("int64", 8),
    "int64": ("int64", 8),
    "short": ("int16", 2),
    "int16": ("int16", 2),
    "byte": ("uint8", 1),
    "unsigned char": ("uint8", 1),
    "uint8": ("uint8", 1),
    "char": ("int8", 1),
    "signed char": ("int8", 1),
    "int8": ("int8", 1),
    "bool": ("bool", 1),
    "float8_e4m3fn": ("float8_e4m3", 1),
    "float8_e5m2": ("float8_e5m2", 1),
    "complexfloat": ("complex64", 8),
    "complexdouble": ("complex128", 16),
}


def norm_op(e: pl.Expr) -> pl.Expr:
    """Collective name in any spelling (`_allgather_base`, `nccl:all_to_all`, kernel `AllReduce`) → one word."""
    s = e.cast(pl.Utf8).str.to_lowercase()
    rules = [
        ("all_?reduce", "allreduce"),
        ("reduce_?scatter", "reduce_scatter"),
        ("all_?gather", "allgather"),
        ("all_?to_?all", "alltoall"),
        ("broadcast", "broadcast"),
        ("barrier", "barrier"),
        ("sendrecv", "sendrecv"),
        ("send", "send"),
        ("recv", "recv"),
        ("gather", "gather"),
        ("scatter", "scatter"),
        ("reduce", "reduce"),
        ("^wait$", "wait"),
    ]
    out: pl.Expr = pl.lit(None, dtype=pl.Utf8)
    for pat, name in reversed(rules):
        out = pl.when(s.str.contains(pat)).then(pl.lit(name)).otherwise(out)
    return out


def _dtype(e: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    key = e.cast(pl.Utf8).str.to_lowercase().str.replace("^c10::", "")
    names = {k: v[0] for k, v in _DTYPES.items()}
    sizes = {k: v[1] for k, v in _DTYPES.items()}
    return (
        key.replace_strict(names, default=None, return_dtype=pl.Utf8),
        key.replace_strict(sizes, default=None, return_dtype=pl.Int64),
    )


def _dims_nelems(e: pl.Expr) -> pl.Expr:
    # "[[1,25136],[],…]" → 25136: elements of the first tensor argument
    return _nelems(e.str.extract(r"^\[\[([0-9, ]+)\]", 1))


def _nelems(shape: pl.Expr) -> pl.Expr:
    """ "1, 25136" (one tensor's dims as text) → 25136; null for no dims."""
    return (
        shape.str.split(",")
        .list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False).product())
        .list.first()
    )


def _int(c: str) -> pl.Expr:
    return pl.col(c).cast(pl.Utf8).cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)


def _txt(c: str) -> pl.Expr:
    return pl.col(c).cast(pl.Utf8)


def _with_step(df: pl.DataFrame, steps: pl.DataFrame, on: str) -> pl.DataFrame:
    """ProfilerStep#N whose span holds `on` (null outside every step)."""
    if steps.is_empty() or df.is_empty():
        return df.with_columns(pl.lit(None, dtype=pl.Int64).alias("step"))
    st = steps.select("rank", pl.col("start_us").alias("_s0"), pl.col("end_us").alias("_s1"), "step").sort(
        "_s0"
    )
    df = df.with_row_index("_row")
    has = df.filter(pl.col(on).is_not_null()).sort(on)
    hit = has.join_asof(
        st, left_on=on, right_on="_s0", by="rank", strategy="backward", check_sortedness=False
    ).select("_row", pl.when(pl.col(on) <= pl.col("_s1")).then(pl.col("step")).alias("step"))
    return df.join(hit, on="_row", how="left").sort("_row").drop("_row")


def _enclosing_annotation(k: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    ann = (
        ops.filter(pl.col("name").cast(pl.Utf8).str.starts_with("nccl:"))
        .select(
            "rank",
            pl.col("tid").alias("launch_tid"),
            pl.col("ts").alias("ann_ts"),
            (pl.col("ts") + pl.col("dur")).alias("ann_end"),
            _txt("name").alias("ann_name"),
            _txt("input_dims").alias("ann_dims"),
            _txt("input_type").alias("ann_type"),
        )
        .sort("ann_ts")
    )
    k = k.with_row_index("_row")
    has = k.filter(pl.col("launch_ts").is_not_null() & pl.col("launch_tid").is_not_null()).sort("launch_ts")
    if ann.is_empty() or has.is_empty():
        return k.drop("_row").with_columns(
            *(pl.lit(None, dtype=pl.Utf8).alias(c) for c in ("ann_name", "ann_dims", "ann_type")),
            pl.lit(None, dtype=pl.Float64).alias("ann_ts"),
        )
    hit = has.select("_row", "rank", "launch_ts", "launch_tid").join_asof(
        ann,
        left_on="launch_ts",
        right_on="ann_ts",
        by=["rank", "launch_tid"],
        strategy="backward",
        check_sortedness=False,
    )
    inside = pl.col("launch_ts") <= pl.col("ann_end")
    hit = hit.select(
        "_row",
        *(pl.when(inside).then(pl.col(c)).alias(c) for c in ("ann_ts", "ann_name", "ann_dims", "ann_type")),
    )
    return k.join(hit, on="_row", how="left").sort("_row").drop("_row")


def collectives_of(
    nccl: pl.DataFrame, launches: pl.DataFrame, ops: pl.DataFrame, steps: pl.DataFrame
) -> pl.DataFrame:
    """One row per NCCL kernel with its op, sizes, process group, launch and kernel times (epoch µs)."""
    if nccl.is_empty():
        return S.empty(S.TRACE_COLLECTIVES)
    k = nccl.with_columns(_int("external_id").alias("external_id"), _int("correlation").alias("correlation"))
    lau = launches.select(
        "rank",
        _int("correlation").alias("correlation"),
        pl.col("ts").alias("launch_ts"),
        pl.col("tid").alias("launch_tid"),
    ).unique(["rank", "correlation"], keep="first")
    k = k.join(lau, on=["rank", "correlation"], how="left")
    rpc = (
        ops.filter((pl.col("name") == "record_param_comms") & pl.col("coll").is_not_null())
        .select(
            "rank",
            _int("external_id").alias("external_id"),
            pl.col("ts").alias("rpc_ts"),
            *(_txt(c).alias(f"rpc_{c}") for c in COMM_FIELDS),
        )
        .unique(["rank", "external_id"], keep="first")
    )
    k = k.join(rpc, on=["rank", "external_id"], how="left")
    k = _enclosing_annotation(k, ops)
    kernel = _txt("name").str.replace(r"\(.*$", "")
    from_kernel = kernel.str.extract(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)", 1)

    def pick(c: str) -> pl.Expr:
        return pl.coalesce(_txt(c), pl.col(f"rpc_{c}"))

    dname, dbytes = _dtype(pl.coalesce(pick("dtype"), pl.col("ann_type").str.extract(r'^\["([^"]*)"', 1)))
    out = k.select(
        "rank",
        "path",
        "host",
        "stream",
        "external_id",
        "correlation",
        kernel.alias("kernel"),
        kernel.alias("event"),
        pl.lit("kernel").alias("source"),
        pl.coalesce(norm_op(pick("coll")), norm_op(pl.col("ann_name")), norm_op(from_kernel)).alias("op"),
        pick("pg_name").alias("pg_name"),
        pick("pg_desc").alias("pg_desc"),
        pick("pg_ranks").alias("pg_ranks"),
        pick("seq").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False).alias("seq"),
        pick("comms_id").alias("comms_id"),
        dname.alias("dtype"),
        dbytes.alias("dtype_bytes"),
        pl.coalesce(
            pick("in_nelems").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False),
            _dims_nelems(pl.col("ann_dims")),
        ).alias("in_nelems"),
        pick("out_nelems").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False).alias("out_nelems"),
        pick("group_size").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False).alias("group_size"),
        pl.coalesce("rpc_ts", "ann_ts", "launch_ts").alias("launch_us"),
        pl.col("ts").alias("start_us"),
        (pl.col("ts") + pl.col("dur")).alias("end_us"),
        pl.col("dur").alias("dur_us"),
    )
    return _finish(_with_step(out, steps, "launch_us"))


def gloo_of(
    ops: pl.DataFrame, nccl: pl.DataFrame, steps: pl.DataFrame, pgs: pl.DataFrame
) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """CPU collectives of gloo runs. A rank whose trace has `c10d::<op>` calls but neither
    `record_param_comms` nor an NCCL kernel (gloo under torch 2.13): one row per call (`_c10d_rows`).
    Any other rank (e.g. HTA's gloo trace, `gloo:*` spans only): the `gloo:<op>` span is the collective.
    Each gets its process group from the thread its span ran on (`gloo_groups`), with notes when not."""
    g = ops.filter(_txt("name").str.starts_with("gloo:"))
    c = _c10d_calls(ops, nccl)
    if g.is_empty() and c.is_empty():
        return S.empty(S.TRACE_COLLECTIVES), ()
    by_call = pl.col("rank").is_in(c["rank"].unique().implode())
    out = pl.concat(
        [_gloo_spans(g.filter(~by_call)), _c10d_rows(c, g.filter(by_call))], how="diagonal_relaxed"
    )
    out, notes = assign_groups(out, pgs)
    return _finish(_with_step(out, steps, "launch_us")), notes


def _gloo_spans(g: pl.DataFrame) -> pl.DataFrame:
    dname, dbytes = _dtype(_txt("input_type").str.extract(r'^\["([^"]*)"', 1))
    return g.select(
        "rank",
        "path",
        "host",
        pl.lit("gloo").alias("source"),
        _txt("name").alias("event"),
        norm_op(pl.col("name")).alias("op"),
        dname.alias("dtype"),
        dbytes.alias("dtype_bytes"),
        _dims_nelems(_txt("input_dims")).alias("in_nelems"),
        pl.col("ts").alias("launch_us"),
        pl.col("ts").alias("start_us"),
        (pl.col("ts") + pl.col("dur")).alias("end_us"),
        pl.col("dur").alias("dur_us"),
        pl.col("tid").alias(LANE),
    )


def _c10d_calls(ops: pl.DataFrame, nccl: pl.DataFrame) -> pl.DataFrame:
    """`c10d::<collective>` calls of the ranks with no `record_param_comms` and no NCCL kernel (their
    collectives come from `collectives_of`; a c10d call there is the same collective again)."""
    name = _txt("name")
    other = pl.concat([ops.filter(name == "record_param_comms")["rank"], nccl["rank"]]).unique().implode()
    calls = ops.filter(name.str.starts_with("c10d::") & ~pl.col("rank").is_in(other))
    return calls.with_columns(norm_op(name).alias("op")).filter(
        pl.col("op").is_not_null() & (pl.col("op") != "wait")
    )


def _kind(op: pl.Expr) -> pl.Expr:
    # send and recv each keep their own order; every other collective shares one.
    return pl.when(op.is_in(["send", "recv"])).then(op).otherwise(pl.lit("coll"))


def _c10d_rows(c: pl.DataFrame, g: pl.DataFrame) -> pl.DataFrame:
    """One row per c10d call: arrival = the call's start (main thread), end = the end of its `gloo:<op>` span.

    The k-th call of each kind on a rank owns the k-th span of that kind (gloo runs its work queue in
    order). A pair counts only if the span starts after the call and names the same op (gloo runs
    `_reduce_scatter_base_` as `gloo:all_reduce`); unpaired calls keep a null end.
    """
    c = (
        c.sort("rank", "ts", maintain_order=True)
        .with_columns(_kind(pl.col("op")).alias("_kind"))
        .with_columns(_K)
    )
    p = c.join(_numbered_spans(g, c), on=["rank", "_kind", "_k"], how="left")
    same = (pl.col("_gop") == pl.col("op")) | (
        (pl.col("_gop") == "allreduce") & (pl.col("op") == "reduce_scatter")
    )
    ok = same & (pl.col("_gts") >= pl.col("ts"))
    p = p.with_columns(*(pl.when(ok).then(pl.col(x)).alias(x) for x in ("_gend", "_gdims", "_gtype", LANE)))
    in_call, out_call = _c10d_sizes(_txt("input_dims"), _txt("name"))
    first_type = r'"([^"]*)"'
    dname, dbytes = _dtype(
        pl.coalesce(
            pl.col("_gtype").str.extract(first_type, 1), _txt("input_type").str.extract(first_type, 1)
        )
    )
    return p.select(
        "rank",
        "path",
        "host",
        pl.lit("cpu_op").alias("source"),
        _txt("name").alias("event"),
        "op",
        dname.alias("dtype"),
        dbytes.alias("dtype_bytes"),
        pl.coalesce(_dims_nelems(pl.col("_gdims")), in_call).alias("in_nelems"),
        out_call.alias("out_nelems"),
        pl.col("ts").alias("launch_us"),
        pl.col("ts").alias("start_us"),
        pl.col("_gend").alias("end_us"),
        (pl.col("_gend") - pl.col("ts")).alias("dur_us"),
        LANE,
    )


_K = (
    pl.int_range(pl.len()).over("rank", "_kind").alias("_k")
)  # k-th of its kind on its rank (rows in time order)


def _numbered_spans(g: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """`gloo:<op>` spans numbered like the calls; spans begun before a rank's first call of their kind
    belong to calls made before the trace window and are dropped."""
    first = calls.group_by("rank", "_kind").agg(pl.col("ts").min().alias("_first"))
    return (
        g.with_columns(norm_op(pl.col("name")).alias("_gop"))
        .with_columns(_kind(pl.col("_gop")).alias("_kind"))
        .join(first, on=["rank", "_kind"], how="inner")
        .filter(pl.col("ts") >= pl.col("_first"))
        .sort("rank", "ts", maintain_order=True)
        .with_columns(_K)
        .select(
            "rank",
            "_kind",
            "_k",
            "_gop",
            pl.col("ts").alias("_gts"),
            (pl.col("ts") + pl.col("dur")).alias("_gend"),
            _txt("input_dims").alias("_gdims"),
            _txt("input_type").alias("_gtype"),
            pl.col("tid").alias(LANE),
        )
    )


def _c10d_sizes(dims: pl.Expr, name: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(input, output) elements from a c10d call's `Input Dims`: `[[[4680]], [], …]` for a tensor list
    (its first tensor), `[[1024], [512], …]` for `(output, input, …)` signatures (`*_base_`)."""
    first = _nelems(dims.str.extract(r"^\[+([0-9, ]+)\]", 1))
    second = _nelems(dims.str.extract(r"^\[\[[0-9, ]*\],\s*\[([0-9, ]+)\]", 1))
    out_first = name.str.ends_with("_base_")
    return pl.when(out_first).then(second).otherwise(first), pl.when(out_first).then(first)


def _finish(df: pl.DataFrame) -> pl.DataFrame:
    """Derived columns: p2p flag and nccl-tests' message size S (allgather: the gathered output)."""
    df = S.conform(df, S.TRACE_COLLECTIVES)
    op = pl.col("op")
    nelems = (
        pl.when(op == "allgather")
        .then(pl.coalesce("out_nelems", pl.col("in_nelems") * pl.col("group_size")))
        .otherwise(pl.col("in_nelems"))
    )
    return df.with_columns(
        op.is_in(["send", "recv"]).alias("is_p2p"), (nelems * pl.col("dtype_bytes")).alias("msg_bytes")
    )


_NUMERIC = ("seq", "in_nelems", "out_nelems", "group_size")


def range_notes(*frames: pl.DataFrame) -> tuple[str, ...]:
    """Per file and field, the numbers in the communication args beyond 64 bits (read as unknown)."""
    counts: dict[tuple[str, str], int] = {}
    for df in frames:
        for c in (c for c in _NUMERIC if c in df.columns):
            num = _txt(c).cast(pl.Float64, strict=False).abs()
            bad = df.filter(num >= 2.0**63).group_by("path").len()
            for path, n in bad.iter_rows():
                counts[(path, c)] = counts.get((path, c), 0) + n
    return tuple(
        f"{path}: {n} value(s) of `{c}` beyond 64 bits, read as unknown"
        for (path, c), n in sorted(counts.items())
    )
