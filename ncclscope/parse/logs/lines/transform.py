"""Parse stage, transform: matched fields (strings, `f_<field>` columns) -> typed rows of the declared frames.

One function per family shape turns the raw field text of many lines at once into the columns of
its frame (vectorised; the fast path and the Lark path both end here, so they agree by construction
once their field text agrees). List fields (`ifaces`, `hcas`, `tree_entries`) are split with the
regex of their element rule from the grammar and exploded into one row per element.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.parse.logs.lines import rx
from ncclscope.parse.logs.lines.families import BENIGN_WARN_PATTERN, FAMILIES, HEX_FIELDS
from ncclscope.parse.logs.lines.peel import bad_fields

TABLES: dict[str, S.Schema] = {
    "inits": S.INITS,
    "versions": S.VERSIONS,
    "env": S.ENV,
    "network": S.NETWORK,
    "rings": S.RINGS,
    "connections": S.CONNECTIONS,
    "channels": S.CHANNELS,
    "warnings": S.WARNINGS,
    "trail": S.TRAIL,
    "collectives": S.COLLECTIVES,
}
# Columns every matched row has before shaping (prefix fields); message fields override them.
_BASE = frozenset({*S.ORIGIN, "msg", "level", "src_file", "src_line", "func", "prefixed"})


def f(name: str) -> pl.Expr:
    return pl.col(f"f_{name}")


def _ensure(df: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=pl.Utf8).alias(f"f_{n}") for n in names if f"f_{n}" not in df.columns]
    return df.with_columns(missing) if missing else df


def _ints(s: pl.Expr) -> pl.Expr:
    """`"1 -1 3"` / `"1/-1/-1"` -> [1, -1, 3] (Int64 list)."""
    return s.str.extract_all(r"-?\d+").list.eval(
        pl.element().cast(pl.Int64, strict=False)
    )  # beyond 64 bits: null


OVF = "_ovf"  # fields of a row out of 64-bit range or not a number (comma-separated; see `overflow`)


def _typed(df: pl.DataFrame, schema: S.Schema) -> pl.DataFrame:
    """Cast every `f_<col>` that names a schema column to that column's dtype, as column `<col>`; the
    fields whose text does not fit the dtype (null after the cast) are named in column OVF."""
    out = []
    checked: dict[str, tuple[pl.Expr, pl.Expr]] = {}
    for col, dtype in schema.items():
        src = f"f_{col}"
        if src not in df.columns or (col in df.columns and col not in _BASE):
            continue  # a column the family's shaper set itself wins over the raw field
        if dtype == pl.Int64:
            v = pl.col(src).str.to_integer(base=16 if col in HEX_FIELDS else 10, strict=False)
            checked[col] = (pl.col(src), v)
            out.append(v.alias(col))
        elif dtype == pl.Utf8:
            out.append(pl.col(src).alias(col))
        elif dtype == pl.List(pl.Int64):
            lv = _ints(pl.col(src))
            any_null = lv.list.eval(pl.element().is_null()).list.any()
            checked[col] = (pl.col(src), pl.when(any_null).then(None).otherwise(pl.lit(0)))
            out.append(lv.alias(col))
    return df.with_columns(*out, _bad(df, checked)) if out else df


def _bad(df: pl.DataFrame, checked: dict[str, tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    """Column OVF naming the fields of `checked` that did not fit, after those named before (a shaper's
    fields, or fields typed once per distinct key by `typed_fields`)."""
    bad = bad_fields(checked, OVF)
    return pl.concat_str([pl.col(OVF), bad], separator=",").alias(OVF) if OVF in df.columns else bad


def overflow(df: pl.DataFrame, col: str = OVF) -> pl.DataFrame:
    """(path, field, n): how many values of each field `col` names, per input (a counted note each)."""
    if col not in df.columns or df.is_empty() or not (df[col] != "").any():
        return pl.DataFrame(schema={"path": pl.Utf8, "field": pl.Utf8, "n": pl.Int64})  # none (the rule)
    named = df.select("path", pl.col(col).str.split(",").alias("field")).explode("field")
    return (
        named.filter(pl.col("field").fill_null("") != "")
        .group_by("path", "field", maintain_order=True)
        .agg(pl.len().cast(pl.Int64).alias("n"))
    )


def explode_list(df: pl.DataFrame, field: str, element_rule: str) -> pl.DataFrame:
    """Split list field `field` with the grammar's element rule; one row per element, `f_` columns."""
    pat = G.rule_regex(element_rule)
    whole = G.rule_regex(element_rule, capture=False)
    df = df.with_columns(rx.find_all(df[f"f_{field}"], whole).alias("_el")).explode("_el")
    g = rx.groups(df["_el"], f"^(?:{pat})$")
    bases: dict[str, list[str]] = {}
    for n in g.columns:
        bases.setdefault(G.base_field(n), []).append(n)
    df = df.drop(["_el", *[f"f_{b}" for b in bases if f"f_{b}" in df.columns]])
    return df.with_columns(
        [pl.coalesce([pl.lit(g[n]) for n in ns]).alias(f"f_{b}") for b, ns in bases.items()]
    )


# --- family-specific shaping ------------------------------------------------------------------


def _versions(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    if fam != "version_banner":
        return df.with_columns(f("value").str.strip_chars().alias("f_value"))
    df = _ensure(df, ["nccl_version", "cuda_version"])
    nccl = df.with_columns(pl.lit("nccl").alias("kind"), f("nccl_version").alias("f_value"))
    cuda = df.filter(f("cuda_version").is_not_null()).with_columns(
        pl.lit("cuda").alias("kind"), f("cuda_version").alias("f_value")
    )
    return pl.concat([nccl, cuda], how="diagonal_relaxed")


def _env(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    df = _ensure(df, ["value"])
    # `%lld.` prints a trailing period after numbers ("NCCL_IB_DISABLE set by environment to 1.")
    return df.with_columns(f("value").str.replace(r"^(-?\d+)\.$", "$1").str.strip_chars().alias("f_value"))


def _network(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    if fam in ("bootstrap", "socket_ifaces"):
        df = explode_list(df, "ifaces", "iface_entry")
    elif fam == "ib_devices":
        df = _ensure(df, ["oob_iface", "address", "port"])
        oob = df.filter(f("oob_iface").is_not_null() | f("address").is_not_null()).with_columns(
            pl.lit("ib_oob").alias("kind"), f("oob_iface").alias("f_iface")
        )
        devs = explode_list(df.drop(["f_address", "f_port"]), "hcas", "hca_entry")
        return pl.concat([devs, oob], how="diagonal_relaxed")
    elif fam in ("ib_sideband",):
        df = df.with_columns(f("oob_iface").alias("f_iface"))
    elif fam == "using_network":
        df = df.with_columns(f("net").str.strip_chars().alias("f_net"))
    elif fam in ("gdr_hca", "gdr_gpu"):
        df = _ensure(df, ["gdr_state"]).with_columns(
            ("gdr_" + f("gdr_state").str.to_lowercase()).alias("kind"), pl.col("msg").alias("f_detail")
        )
    else:  # plugin, ofi, nic distance, counts, ...: the message is the detail
        df = df.with_columns(pl.col("msg").alias("f_detail"))
    return df


def _conn_transport(df: pl.DataFrame) -> pl.DataFrame:
    t = f("transport")
    net = t.str.extract(r"^NET/([^/]+)/", 1)
    dev = t.str.extract(r"^(?:NET|COLLNET)/[^/]+/(\d+)", 1)
    return df.with_columns(
        pl.when(t == "direct shared memory")
        .then(pl.lit("SHM"))
        .otherwise(t.str.extract(r"^([A-Z0-9]+)/", 1))
        .alias("transport"),
        pl.when(t == "direct shared memory")
        .then(t)
        .otherwise(t.str.replace(r"^[A-Z0-9]+/", ""))
        .alias("detail"),
        pl.when(net.is_not_null()).then(net).otherwise(t.str.extract(r"^COLLNET/([^/]+)/", 1)).alias("net"),
        dev.cast(pl.Int64, strict=False).alias("net_dev"),
        t.str.contains("GDRDMA").alias("gdr"),
        _bad(df, {"net_dev": (dev, dev.cast(pl.Int64, strict=False))}),
    )


def _connections(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    df = _ensure(df, ["conn_kind", "transport", "direction"])
    if fam != "collnet_conn":
        df = df.with_columns(f("conn_kind").str.to_lowercase().alias("kind"))
    return _conn_transport(df)


def _rings(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    if fam == "ring_order":
        return _ensure(df, ["ellipsis"]).with_columns(f("ellipsis").is_not_null().alias("truncated"))
    if fam == "ring_neighbors":
        ends = {n: (f(n), f(n).cast(pl.Int64, strict=False)) for n in ("ring_prev", "ring_me", "ring_next")}
        return df.with_columns(pl.concat_list([v for _, v in ends.values()]).alias("order"), _bad(df, ends))
    if fam == "trees":
        df = explode_list(df, "tree_entries", "tree_entry")
    down = _ints(f("tree_down"))
    fits = pl.when(down.list.eval(pl.element().is_null()).list.any()).then(None).otherwise(pl.lit(0))
    return df.with_columns(
        down.list.eval(pl.element().filter(pl.element() >= 0)).alias("tree_down"),
        _bad(df, {"tree_down": (f("tree_down"), fits)}),
    )


def _inits(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    if fam == "init":
        df = df.with_columns(f("phase").str.to_lowercase().alias("f_phase"), f("func_name").alias("func"))
    elif fam == "comm_end":
        df = df.with_columns(f("end_phase").str.to_lowercase().str.replace(" ", "_").alias("f_phase"))
    elif fam == "init_timings":
        df = _ensure(df, ["func_name"]).with_columns(f("func_name").alias("func"))
    return df


def _channels(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    if fam == "connected":
        m = pl.col("msg")
        kind = (
            pl.when(m.str.contains("rings"))
            .then(pl.lit("connected_rings"))
            .when(m.str.contains("trees"))
            .then(pl.lit("connected_trees"))
            .when(m.str.contains("NVLS"))
            .then(pl.lit("connected_nvls"))
            .otherwise(pl.lit("connected_collnet"))
        )
        return df.with_columns(kind.alias("kind"))
    if fam == "nvls_support":
        return df.with_columns(
            pl.when(pl.col("msg").str.contains(" not available"))
            .then(pl.lit("nvls_unavailable"))
            .otherwise(pl.lit("nvls_available"))
            .alias("kind")
        )
    return df


def _warnings(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    df = _ensure(df, ["peer", "cuda_msg", "cuda_code", "status", "vendor_err"])
    if fam in ("cuda_failure",):
        msg = f("cuda_msg")
        src = pl.col("src_file").fill_null("")
        df = df.with_columns(
            pl.when(src.str.contains("nvls"))
            .then(pl.lit("nvls"))
            .when(msg.str.contains("out of memory"))
            .then(pl.lit("oom"))
            .otherwise(pl.lit("cuda"))
            .alias("family")
        )
    return df.with_columns(
        pl.col("msg").alias("message"), f("peer").str.replace(r"<\d+>$", "").alias("peer_host")
    )


def _trail(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    return _ensure(df, ["trail_detail"]).with_columns(f("trail_detail").alias("detail"))


def _passthrough(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    return df


_SHAPERS: dict[str, Callable[[pl.DataFrame, str], pl.DataFrame]] = {
    "versions": _versions,
    "env": _env,
    "network": _network,
    "connections": _connections,
    "rings": _rings,
    "inits": _inits,
    "channels": _channels,
    "warnings": _warnings,
    "trail": _trail,
    "collectives": _passthrough,
}


def to_table(fam: str, df: pl.DataFrame) -> tuple[str, pl.DataFrame, pl.DataFrame]:
    """Rows of one family (with `f_` field columns) -> (frame name, rows in that frame's schema, the
    fields that did not fit their dtype: `overflow`)."""
    spec = FAMILIES[fam]
    schema = TABLES[spec.table]
    if spec.table == "warnings":
        df = df.with_columns(pl.lit(spec.warn).alias("family"), pl.lit(spec.benign).alias("benign"))
    df = _SHAPERS[spec.table](df, fam)
    consts = [
        (pl.coalesce(pl.col(k), pl.lit(v)) if k in df.columns else pl.lit(v)).alias(k)
        for k, v in spec.const.items()
    ]
    df = _typed(df.with_columns(consts) if consts else df, schema)
    if spec.table == "warnings":
        df = mark_benign(df.with_columns(pl.col("peer_host").alias("peer")))
    return spec.table, S.conform(df, schema), overflow(df)


def mark_benign(df: pl.DataFrame) -> pl.DataFrame:
    """Warnings rows: `benign` also when the message is one of `families.BENIGN_WARNS`."""
    known = pl.col("message").fill_null("").str.contains(BENIGN_WARN_PATTERN)
    return df.with_columns((pl.col("benign").fill_null(False) | known).alias("benign"))


def typed_fields(df: pl.DataFrame, fam: str) -> pl.DataFrame:
    """Cast the `f_` fields of one family to its frame's dtypes (as final columns), dropping the `f_`."""
    schema = TABLES[FAMILIES[fam].table]
    out = _typed(df, {c: t for c, t in schema.items() if c not in _BASE})
    return out.drop([f"f_{c}" for c in schema if f"f_{c}" in out.columns and c in out.columns])


def warning_rows(df: pl.DataFrame, fam: str | None) -> pl.DataFrame:
    """A warnings-frame row for WARN lines whose family lives in another frame (or matched none)."""
    spec = FAMILIES.get(fam) if fam else None
    out = df.with_columns(
        pl.lit(spec.warn if spec else "other").alias("family"),
        pl.lit(bool(spec and spec.benign)).alias("benign"),
        pl.col("msg").alias("message"),
    )
    return S.conform(mark_benign(out), S.WARNINGS)
