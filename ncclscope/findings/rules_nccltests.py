"""Findings stage, nccl-tests rules: wrong results, and bus bandwidth far below what the links carry.

They read the nccl-tests frames (`ctx.nccltests`, parse.nccltests) and, for the links, the NCCL INFO
lines printed in the same file as the table (channel transports, NIC speeds, GPU model).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ncclscope.align.facts import DATA_PATH_SETTINGS, LOWERS_BANDWIDTH
from ncclscope.align.rankmap import transport
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.trace_metrics import NVLINK_GBPS
from ncclscope.records import Evidence, Finding

WRONG_ROWS_CITED = 6
LARGE_BYTES = 64 * 2**20  # busbw is judged on messages this big or bigger (bandwidth-bound)
NIC_SHARE = 0.35  # of one NIC port's line rate, when NCCL printed the speed
NVLINK_SHARE = 0.25  # of the GPU model's NVLink bandwidth, one host, P2P only (as the traces' low-busbw)
# Floors (GB/s of busbw) when no speed is printed: ~40 % of the slowest link of that kind in use today.
FLOOR_GBPS = {"NET/Socket": 0.05, "NET": 1.1, "SHM": 1.0, "P2P": 2.0}
_PLACE = {"out": "out-of-place", "in": "in-place"}
_ORDER = {"NET/Socket": 0, "NET": 1, "SHM": 2, "P2P": 3}  # slowest first
_SPEED = re.compile(
    r"^NET/IB ?: ?(?:\[\d+\] (?P<dev>[^:\s]+)\S* .*|Made virtual device \[\d+\] name=(?P<vdev>\S+) .*)"
    r"speed=(?P<mbps>\d+)"
)


def _ev(path: str, line: int, text: str) -> Evidence:
    return Evidence(path=path, line=line, text=text.strip())


def _hosts(ctx: Context, path: str, run: int) -> tuple[str, ...]:
    d = ctx.nccltests.devices.filter((pl.col("path") == path) & (pl.col("run") == run))
    return tuple(sorted({h for h in d["host"].drop_nulls().to_list() if h}))


def _forced(ctx: Context, path: str) -> tuple[str, tuple[Evidence, ...]]:
    """The settings in this file that can only lower bandwidth (`align.facts.LOWERS_BANDWIDTH`) and the coll
    channel count NCCL printed, as a clause for the finding (empty when neither is printed)."""
    env = ctx.logs.env.filter((pl.col("path") == path) & pl.col("name").is_in(list(LOWERS_BANDWIDTH)))
    env = env.sort("line").unique(["name", "value"], keep="first", maintain_order=True)
    ch = ctx.logs.channels.filter((pl.col("path") == path) & (pl.col("kind") == "summary"))
    chans = sorted({int(v) for v in ch["coll_channels"].drop_nulls().to_list()})
    parts = [
        f"{n}={(v or '').strip()} ({DATA_PATH_SETTINGS[n]})" for n, v in env.select("name", "value").rows()
    ]
    ev = tuple(_ev(path, r["line"], r["text"] or "") for r in env.head(3).to_dicts())
    clause = ("; set in this run: " + ", ".join(parts)) if parts else ""
    if chans:
        clause += f"; NCCL built {'/'.join(map(str, chans))} coll channel(s)"
        r = ch.sort("line").row(0, named=True)
        ev += (_ev(path, r["line"], r["text"] or ""),)
    return clause, ev


def _label(path: str, run: int, runs: int) -> str:
    return Path(path).name + (f" (run {run})" if runs > 1 else "")


@rule("nccltests-wrong", "error", "nccl-tests found wrong results", group="errors")
def nccltests_wrong(ctx: Context) -> Iterable[Finding]:
    """Error when an nccl-tests run reports data errors: any `#wrong` count > 0 (out-of-place or in-place,
    any size), or `# Out of bounds values : N` with N > 0 (nccl-tests' own verdict, which also covers
    the `error` column of releases before 2.13). No threshold: one wrong element is wrong data. `N/A`
    (validation off, `-c 0`) is no evidence either way. Cites the out-of-bounds line and the first rows
    with wrong elements, smallest size first."""
    nt = ctx.nccltests
    bad = nt.results.filter(pl.col("wrong") > 0)
    oob = nt.summary.filter(pl.col("oob_values") > 0)
    keys = pl.concat([bad.select("path", "run"), oob.select("path", "run")]).unique().sort("path", "run")
    out = []
    for path, run in keys.iter_rows():
        rows = bad.filter((pl.col("path") == path) & (pl.col("run") == run)).sort("line")
        o = oob.filter((pl.col("path") == path) & (pl.col("run") == run))
        n_oob = o.select(pl.col("oob_values").max()).item() if o.height else None
        max_wrong = rows.select(pl.col("wrong").max()).item() if rows.height else None
        ev = [_ev(path, int(r["oob_line"]), r["oob_text"]) for r in o.iter_rows(named=True)]
        firsts = rows.unique("line", keep="first", maintain_order=True).head(WRONG_ROWS_CITED)
        ev += [_ev(path, int(r["line"]), r["text"]) for r in firsts.iter_rows(named=True)]
        sizes = rows["size_bytes"].drop_nulls().unique().sort().to_list()  # (a size beyond 64 bits: null)
        what = (
            f"{len(sizes)} message size(s) from {sizes[0]:,} B with wrong elements (up to {max_wrong or 0:,})"
            if sizes
            else "no per-size count (the table has no `#wrong` column)"
        )
        oob_txt = f"`Out of bounds values : {n_oob}`" if n_oob is not None else "no out-of-bounds line"
        out.append(
            Finding(
                id="nccltests-wrong",
                severity="error",
                title="nccl-tests found wrong results",
                why=(
                    f"{_label(path, run, nt.runs.filter(pl.col('path') == path).height)}: {oob_txt}; {what}. "
                    "nccl-tests checks every element of the result against the expected values; wrong data means "
                    "a GPU, link, NIC or switch feature (in-network reduction) corrupts it, or NCCL/plugin "
                    "versions disagree, and a training job on these nodes would silently learn from bad gradients."
                ),
                fix=(
                    "Bisect: rerun with `-c 1` on pairs of nodes / single GPUs; check `nvidia-smi -q -d ECC` and "
                    "`dmesg` for Xid errors; turn off in-network features (NCCL_COLLNET_ENABLE=0, SHARP/INC) and "
                    "try NCCL_ALGO=Ring NCCL_PROTO=Simple; make NCCL and plugin versions identical on every node."
                ),
                hosts=_hosts(ctx, path, run),
                evidence=tuple(ev),
                metrics={
                    "oob_values": n_oob,
                    "sizes_with_wrong": len(sizes),
                    "max_wrong": max_wrong,
                    "run": run,
                },
            )
        )
    return out


@dataclass(frozen=True)
class Link:
    """The slowest transport the channels printed in one file use, and what it can carry."""

    kind: str  # "NET/Socket" | "NET" | "SHM" | "P2P"
    name: str  # as shown: NET/IB, NET/AWS Libfabric, P2P, …
    floor_gbps: float
    bound_gbps: float | None  # the line rate behind the floor, when known
    basis: str
    evidence: tuple[Evidence, ...]


def _speed(ctx: Context, path: str) -> tuple[float, str, Evidence] | None:
    """The slowest NIC port speed NCCL printed in this file (`NET/IB: [0] mlx5_0:… speed=400000`, Mb/s)."""
    k = ctx.logs.known.filter((pl.col("path") == path) & pl.col("message").str.contains("speed="))
    k = k.with_columns(m=pl.col("message").str.extract_groups(_SPEED.pattern)).unnest("m")
    k = k.with_columns(pl.col("mbps").cast(pl.Int64, strict=False)).filter(pl.col("mbps").is_not_null())
    if k.is_empty():
        return None
    r = k.sort("mbps", "line").row(0, named=True)
    dev = r["dev"] or r["vdev"] or "NIC"
    return r["mbps"] / 8000.0, f"{dev} port at {r['mbps'] / 1000:g} Gb/s", _ev(path, r["line"], r["text"])


def _nvlink(ctx: Context, path: str) -> tuple[float, str] | None:
    d = ctx.nccltests.devices.filter(pl.col("path") == path)
    gpus, hosts = d["gpu_name"].drop_nulls().unique().to_list(), d["host"].drop_nulls().unique().to_list()
    if len(gpus) != 1 or len(hosts) != 1:
        return None
    bw = next((b for key, b in NVLINK_GBPS if key in gpus[0]), None)
    return (bw, gpus[0]) if bw is not None else None


def limiting_link(ctx: Context, path: str) -> Link | None:
    """The slowest transport among this file's channel lines (NET/Socket < other NET < SHM < P2P), with
    its floor: a fraction of the printed NIC speed or NVLink bandwidth where known, else FLOOR_GBPS."""
    c = ctx.logs.connections.filter(pl.col("path") == path).with_columns(fam=transport())
    c = c.with_columns(
        kind=pl.when(pl.col("fam") != "NET")
        .then(pl.col("fam"))
        .when(pl.col("net") == "Socket")
        .then(pl.lit("NET/Socket"))
        .otherwise(pl.lit("NET"))
    )
    c = c.filter(pl.col("kind").is_in(list(_ORDER))).with_columns(o=pl.col("kind").replace_strict(_ORDER))
    if c.is_empty():
        return None
    worst = c.filter(pl.col("o") == pl.col("o").min()).sort("line")
    r = worst.row(0, named=True)
    kind = r["kind"]
    name = f"NET/{r['net']}" if kind.startswith("NET") and r["net"] else kind
    ev = (_ev(path, r["line"], r["text"]),)
    speed = _speed(ctx, path) if kind == "NET" else None
    if speed is not None:
        gbps, nic, line = speed
        return Link(kind, name, NIC_SHARE * gbps, gbps, f"one {nic} ({gbps:g} GB/s)", (line, *ev))
    nvl = _nvlink(ctx, path) if kind == "P2P" else None
    if nvl is not None:
        return Link(
            kind, name, NVLINK_SHARE * nvl[0], nvl[0], f"NVLink of one {nvl[1]} ({nvl[0]:g} GB/s)", ev
        )
    return Link(kind, name, FLOOR_GBPS[kind], None, f"the slowest {name} link in use today", ev)


_FIX = {
    "NET": (
        "Compare with a point-to-point test (`ib_write_bw`) between the two hosts; check the negotiated "
        "port speed and width (`ibstat`, `ethtool`), FEC and, on RoCE, PFC/ECN; check that NCCL_IB_HCA "
        "names the right ports and that GPUDirect RDMA is on where the platform supports it."
    ),
    "NET/Socket": (
        "Check the interface NCCL uses (NCCL_SOCKET_IFNAME) is the fast one, not a management "
        "port or a container bridge; raise NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD; use RDMA "
        "(IB/RoCE/EFA plugin) where the nodes have it."
    ),
    "SHM": "Check NUMA placement and why P2P is not used (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, ACS/IOMMU).",
    "P2P": (
        "Check `nvidia-smi nvlink -s` for down links and `nvidia-smi topo -m` / `lspci -vv` for a PCIe "
        "link trained below its width or generation; disable ACS for peer-to-peer over PCIe."
    ),
}


@rule(
    "nccltests-low-busbw",
    "warning",
    "nccl-tests bus bandwidth is far below what the links carry",
    group="config",
)
def nccltests_low_busbw(ctx: Context) -> Iterable[Finding]:
    """Per nccl-tests run: the best busbw over messages >= 64 MiB (either placement; smaller ones are
    latency-bound) against the slowest transport its file's channel lines use (NET/Socket < other NET <
    SHM < P2P; no channel lines: no finding). Fires below 35% of one NIC port's line rate when NCCL
    printed the speed (`NET/IB: [0] mlx5_0:… speed=200000`; healthy runs reach 70-95%), below 25% of the
    NVLink bandwidth of a known SXM GPU model for P2P on one host, else below a floor of ~40% of the
    slowest link of that kind in use: NET/Socket 0.05 GB/s (1 GbE), other NET 1.1 GB/s (25 Gb/s RoCE),
    SHM 1.0 GB/s, P2P 2.0 GB/s (PCIe Gen3 x8). busbw already has the collective's factor applied, so one
    bound serves every operation. Names the limiting link and cites the best row, speed and channel lines, and
    the settings printed in that file that can only lower bandwidth (NCCL_TOPO_FILE, NCCL_GRAPH_FILE,
    NCCL_P2P_LEVEL, NCCL_MAX_NCHANNELS, …) with the coll channel count NCCL chose."""
    nt = ctx.nccltests
    big = nt.results.filter((pl.col("size_bytes") >= LARGE_BYTES) & pl.col("busbw_gbps").is_not_null())
    best = big.sort("busbw_gbps", descending=True).unique(["path", "run"], keep="first").sort("path", "run")
    out = []
    for r in best.iter_rows(named=True):
        link = limiting_link(ctx, r["path"])
        if link is None or r["busbw_gbps"] >= link.floor_gbps:
            continue
        share = f" ({100 * r['busbw_gbps'] / link.bound_gbps:.0f}% of it)" if link.bound_gbps else ""
        forced, forced_ev = _forced(ctx, r["path"])
        label = _label(r["path"], r["run"], nt.runs.filter(pl.col("path") == r["path"]).height)
        out.append(
            Finding(
                id="nccltests-low-busbw",
                severity="warning",
                title=f"nccl-tests busbw is far below what {link.name} carries",
                why=(
                    f"{label}: the best bus bandwidth at >= {LARGE_BYTES >> 20} MiB is {r['busbw_gbps']:g} GB/s "
                    f"({r['op'] or 'collective'}, {r['size_bytes']:,} B, {_PLACE[r['placement']]}). The slowest "
                    f"link its channels use is {link.name}: {link.basis}{share} should give at least "
                    f"{link.floor_gbps:.2f} GB/s{forced}."
                ),
                fix=_FIX[link.kind],
                hosts=_hosts(ctx, r["path"], r["run"]),
                evidence=(_ev(r["path"], r["line"], r["text"]), *link.evidence, *forced_ev),
                metrics={
                    "busbw_gbps": r["busbw_gbps"],
                    "size_bytes": r["size_bytes"],
                    "link": link.name,
                    "floor_gbps": round(link.floor_gbps, 3),
                    "bound_gbps": link.bound_gbps,
                    "run": r["run"],
                },
            )
        )
    return out
