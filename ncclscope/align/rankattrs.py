"""Align stage, per-rank configuration: NCCL version, CUDA driver, bootstrap interface, network, GDR.

Version banner quirk: up to NCCL 2.26 rank 0 alone prints a bare `NCCL version …` line with no
prefix, so it applies to its file (or to its launcher stream, `[1,0]<stdout>:`); from 2.27 every
rank prints it with its own prefix.
"""

from __future__ import annotations

import polars as pl

from ncclscope.align.rankmap import transport
from ncclscope.frames import LogFrames

PROC = ["host", "pid"]


def _h(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.col("host").fill_null(""))


def _first_per_proc(df: pl.DataFrame, value: pl.Expr, name: str) -> pl.DataFrame:
    rows = _h(df.filter(pl.col("pid").is_not_null())).sort("line")
    return rows.group_by(PROC, maintain_order=True).agg(value.drop_nulls().first().alias(name))


def _proc_lines(origin: pl.DataFrame) -> pl.DataFrame:
    """Per process and file: its first line and its first launcher tag (local or global)."""
    return (
        origin.sort("line")
        .group_by([*PROC, "path"], maintain_order=True)
        .agg(
            pl.col("line").first().alias("first_line"), pl.col("rank_hint").drop_nulls().first().alias("hint")
        )
    )


def _bare_versions(logs: LogFrames) -> pl.DataFrame:
    """Unprefixed version statements: bare banners, and `NCCL version` inside PyTorch exceptions."""
    banners = logs.versions.filter((pl.col("kind") == "nccl") & pl.col("pid").is_null()).select(
        "path", "line", "rank_hint", "value", prio=pl.lit(0)
    )
    torch = logs.torch.filter(pl.col("nccl_version").is_not_null() & pl.col("pid").is_null()).select(
        "path", "line", "rank_hint", pl.col("nccl_version").alias("value"), prio=pl.lit(1)
    )
    return pl.concat([banners, torch], how="vertical_relaxed").sort(["prio", "line"])


def _nccl_versions(logs: LogFrames, origin: pl.DataFrame) -> pl.DataFrame:
    own = _first_per_proc(logs.versions.filter(pl.col("kind") == "nccl"), pl.col("value"), "v_own")
    bare = _bare_versions(logs)
    lines = _proc_lines(origin)
    by_tag = (
        bare.drop_nulls("rank_hint")
        .group_by(["path", "rank_hint"], maintain_order=True)
        .agg(pl.col("value").first().alias("v_tag"))
    )
    untagged = bare.filter(pl.col("rank_hint").is_null()).select("path", "line", "value").sort("line")
    left = lines.sort("first_line")
    back = left.join_asof(
        untagged,
        left_on="first_line",
        right_on="line",
        by="path",
        strategy="backward",
        check_sortedness=False,
    )
    fwd = left.join_asof(
        untagged, left_on="first_line", right_on="line", by="path", strategy="forward", check_sortedness=False
    )
    per_file = (
        back.select(*PROC, "path", "hint", pl.col("value").alias("v_back"))
        .join(fwd.select(*PROC, "path", pl.col("value").alias("v_fwd")), on=[*PROC, "path"])
        .join(by_tag, left_on=["path", "hint"], right_on=["path", "rank_hint"], how="left")
    )
    per_proc = per_file.group_by(PROC).agg(
        pl.coalesce("v_tag", "v_back", "v_fwd").drop_nulls().first().alias("v_file")
    )
    return per_proc.join(own, on=PROC, how="full", coalesce=True).select(
        *PROC, pl.coalesce("v_own", "v_file").alias("nccl_version")
    )


def _ifaces(net: pl.DataFrame, kind: str, name: str) -> pl.DataFrame:
    """Interfaces of a process's first `kind` line, comma-joined in list order."""
    rows = _h(net.filter((pl.col("kind") == kind) & pl.col("pid").is_not_null()))
    rows = rows.with_columns(first=pl.col("line").min().over(PROC)).filter(pl.col("line") == pl.col("first"))
    rows = rows.sort(["line", "index"], nulls_last=True)
    return rows.group_by(PROC, maintain_order=True).agg(
        pl.col("iface").drop_nulls().str.join(",").alias(f"{name}_iface"),
        pl.col("address").drop_nulls().str.join(",").alias(f"{name}_address"),
    )


def _net(logs: LogFrames) -> pl.DataFrame:
    """The network each process uses: `Using network X`, else its NET channels, else what was probed."""
    net = logs.network
    using = _first_per_proc(net.filter(pl.col("kind") == "using_network"), pl.col("net"), "using")
    conn = _first_per_proc(logs.connections.filter(transport() == "NET"), pl.col("net"), "conn_net")
    probed = (
        _h(net.filter(pl.col("pid").is_not_null()))
        .group_by(PROC)
        .agg(
            (pl.col("kind") == "ib_dev").any().alias("has_ib"),
            (pl.col("kind") == "socket_iface").any().alias("has_sock"),
            pl.col("kind").is_in(["ib_no_device", "ibverbs_missing"]).any().alias("no_ib"),
            (
                pl.col("link_layer").drop_nulls().eq("RoCE").all()
                & pl.col("link_layer").drop_nulls().len().gt(0)
            ).alias("roce"),
        )
    )
    out = probed.join(using, on=PROC, how="full", coalesce=True).join(
        conn, on=PROC, how="full", coalesce=True
    )
    guess = (
        pl.when(pl.col("has_ib"))
        .then(pl.lit("IB"))
        .when(pl.col("no_ib") & pl.col("has_sock"))
        .then(pl.lit("Socket"))
    )
    chosen = pl.coalesce("using", "conn_net", guess)
    label = (
        pl.when(chosen.str.starts_with("IB") & pl.col("roce").fill_null(False))
        .then(pl.concat_str([chosen, pl.lit("/RoCE")]))
        .otherwise(chosen)
    )
    return out.select(*PROC, label.alias("net"))


def _gdr(logs: LogFrames) -> pl.DataFrame:
    """True when a NET channel runs GPUDirect RDMA; False when IB runs without it or it was disabled."""
    conn = _h(logs.connections.filter((transport() == "NET") & pl.col("pid").is_not_null()))
    by_conn = conn.group_by(PROC).agg(
        pl.col("gdr").fill_null(False).any().alias("gdr_on"),
        (pl.col("net").fill_null("").str.starts_with("IB") & ~pl.col("gdr").fill_null(False))
        .any()
        .alias("ib_no_gdr"),
    )
    off_net = _h(logs.network.filter((pl.col("kind") == "gdr_disabled") & pl.col("pid").is_not_null()))
    off = off_net.select(PROC).unique().with_columns(disabled=pl.lit(True))
    ch = _h(logs.channels.filter((pl.col("gdr") == 0) & pl.col("pid").is_not_null()))
    off_ch = ch.select(PROC).unique().with_columns(gdr0=pl.lit(True))
    out = by_conn.join(off, on=PROC, how="full", coalesce=True).join(
        off_ch, on=PROC, how="full", coalesce=True
    )
    value = (
        pl.when(pl.col("gdr_on").fill_null(False))
        .then(pl.lit(True))
        .when(
            pl.col("disabled").fill_null(False)
            | pl.col("ib_no_gdr").fill_null(False)
            | pl.col("gdr0").fill_null(False)
        )
        .then(pl.lit(False))
    )
    return out.select(*PROC, value.alias("gdr"))


def attach_config(procs: pl.DataFrame, logs: LogFrames, origin: pl.DataFrame) -> pl.DataFrame:
    """Add nccl_version, cuda_driver, iface, address, net and gdr to each participant row."""
    driver = _first_per_proc(
        logs.versions.filter(pl.col("kind") == "cuda_driver"), pl.col("value"), "cuda_driver"
    )
    boot = _ifaces(logs.network, "bootstrap", "boot")
    sock = _ifaces(logs.network, "socket_iface", "sock")
    out = procs
    for extra in (_nccl_versions(logs, origin), driver, boot, sock, _net(logs), _gdr(logs)):
        out = out.join(extra, on=PROC, how="left")
    return out.with_columns(
        iface=pl.coalesce("boot_iface", "sock_iface"),
        address=pl.coalesce("boot_address", "sock_address"),
    )
