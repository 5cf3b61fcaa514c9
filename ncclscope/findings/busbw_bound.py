"""Findings stage, what an nccl-tests run's links should carry: the hardware floor and NCCL's own plan.

Two references, each computed from what NCCL printed in the run's file:
- the slowest link its channels use (`limiting_link`): the NIC port speed NCCL printed
  (`NET/IB: [0] mlx5_0:… speed=200000`), the NVLink bandwidth of a known GPU model on one host, or a floor
  for the link kind;
- NCCL's plan for its rings (`align.facts_bw.RingPlan`): nChannels × per-channel bandwidth from the GRAPH
  `Pattern 4 …` line, which is what NCCL's tuning model expects Ring/Simple to reach on the links it
  detected or was given (a topology or graph file).
`judge` compares a measured bus bandwidth with both and says which shortfall it shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from ncclscope.align.facts import DATA_PATH_SETTINGS, LOWERS_BANDWIDTH
from ncclscope.align.facts_bw import RingPlan
from ncclscope.align.rankmap import transport
from ncclscope.findings.registry import Context
from ncclscope.findings.trace_metrics import NVLINK_GBPS
from ncclscope.records import Evidence

NIC_SHARE = 0.35  # of one NIC port's line rate, when NCCL printed the speed
NVLINK_SHARE = 0.25  # of the GPU model's NVLink bandwidth, one host, P2P only (as the traces' low-busbw)
# Floors (GB/s of busbw) when no speed is printed: ~40 % of the slowest link of that kind in use today.
FLOOR_GBPS = {"NET/Socket": 0.05, "NET": 1.1, "SHM": 1.0, "P2P": 2.0}
# Below this share of NCCL's own ring plan (nChannels × bw): NCCL's Ring/Simple model applies no derating
# to that product (graph/tuning.cc) and healthy large-message runs reach most of it (NVIDIA/nccl-tests#119:
# 24 GB/s per 200G NIC is the peak, and a run at 96 of 96 GB/s is "perfect"); under half means the links
# deliver far less than NCCL measured or was told.
PLAN_SHARE = 0.5
# A plan below this share of the hardware link's line rate, in a run that set a setting which can only lower
# bandwidth (NCCL_TOPO_FILE, NCCL_P2P_LEVEL, NCCL_MAX_NCHANNELS, …): that setting made NCCL plan for less than
# the links carry. Healthy plans are at or above one link's rate (several channels per NIC or NVLink set).
FORCED_SHARE = 0.5
_ORDER = {"NET/Socket": 0, "NET": 1, "SHM": 2, "P2P": 3}  # slowest first
_SPEED = re.compile(
    r"^NET/IB ?: ?(?:\[\d+\] (?P<dev>[^:\s]+)\S* .*|Made virtual device \[\d+\] name=(?P<vdev>\S+) .*)"
    r"speed=(?P<mbps>\d+)"
)


def _ev(path: str, line: int, text: str) -> Evidence:
    return Evidence(path=path, line=line, text=text.strip())


def forced(ctx: Context, path: str) -> tuple[str, tuple[str, ...], tuple[Evidence, ...]]:
    """The settings in this file that can only lower bandwidth (`align.facts.LOWERS_BANDWIDTH`) and the coll
    channel count NCCL printed, as a clause for the finding (empty when neither is printed), the names set."""
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
    return clause, tuple(dict.fromkeys(env["name"].to_list())), ev


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


FIX = {
    "forced": (
        "Unset the setting named (or fix the topology/graph file it points to: its links must match "
        "`nvidia-smi topo -m` and the NICs NCCL lists), rerun, and compare the `Pattern 4` line's "
        "nChannels × bw and the busbw with this run."
    ),
    "plan": (
        "The links deliver less than NCCL measured: check for down or degraded NVLinks (`nvidia-smi nvlink "
        "-s`), PCIe links trained below width/generation, NIC port speed and errors, and other traffic on "
        "the same links."
    ),
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


@dataclass(frozen=True)
class Shortfall:
    """Why a measured bus bandwidth is too low: below the link's floor, below NCCL's plan, or a plan that a
    setting forced below the link (any of the three; `reasons` names them)."""

    reasons: tuple[str, ...]  # "floor" | "plan" | "forced"
    link: Link | None
    plan: RingPlan | None
    settings: tuple[str, ...]


def judge(measured: float, link: Link | None, plan: RingPlan | None, settings: tuple[str, ...]) -> Shortfall:
    """The shortfalls `measured` (GB/s of busbw on bandwidth-bound sizes) shows against the references."""
    reasons = []
    if link is not None and measured < link.floor_gbps:
        reasons.append("floor")
    if plan is not None and plan.busbw > 0 and measured < PLAN_SHARE * plan.busbw:
        reasons.append("plan")
    bound = link.bound_gbps if link is not None else None
    if plan is not None and bound and settings and plan.busbw < FORCED_SHARE * bound:
        reasons.append("forced")
    return Shortfall(tuple(reasons), link, plan, settings)
