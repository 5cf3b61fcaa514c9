"""Align stage, expected bus bandwidth: NCCL's own plan for its rings, read from the graph search lines.

With `NCCL_DEBUG_SUBSYS` including GRAPH, NCCL prints each graph it found (graph/search.cc):
`Pattern 4, crossNic 0, nChannels 2, bw 12.000000/12.000000, type PHB/PIX, sameChannels 1` (2.14+;
2.6-2.13 print `speed` for `bw`, in the same GB/s). Its tuning model (graph/tuning.cc,
`ncclTopoTuneModel`) takes for Ring/Simple `busBw = nChannels × bw`, with `bw` the intra-node figure
when the communicator spans at most 2 nodes and the inter-node one beyond, and applies no other factor
to Ring/Simple: that product is the bus bandwidth NCCL expects large messages to reach over the links it
detected (or was told of: a topology or graph file). `ring_plans` gives it per input file, with the path
type that sets it (the limiting link), so a run can be judged against it.

Knowledge (each with its reason):
- `RING_PATTERN` = 4: NCCL_TOPO_PATTERN_RING in graph.h (1 balanced tree, 2 split tree, 3 tree, 4 ring,
  5 NVLS, 6 CollNet direct), the same in RCCL; only the ring plan is Ring/Simple's bound.
- `PATH_TYPES`: what each path type of the `type intra/inter` field means (graph/topo.h `topoPathTypeStr`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ncclscope.frames import LogFrames

RING_PATTERN = 4
PATTERN_LINE = (
    r"Pattern (?P<pattern>\d+), crossNic (?P<cross>\d+), nChannels (?P<nch>\d+), (?:bw|speed) "
    r"(?P<intra>[0-9.]+)/(?P<inter>[0-9.]+), type (?P<ti>[A-Z0-9]*)/(?P<te>[A-Z0-9]*)"
)
PATH_TYPES = {
    "LOC": "the same device",
    "NVL": "a direct NVLink",
    "NVB": "NVLink through another GPU",
    "C2C": "the CPU's chip-to-chip link",
    "PIX": "one PCIe switch",
    "PXB": "several PCIe switches (not through the CPU)",
    "P2C": "PCIe to the CPU, then its chip-to-chip link",
    "PXN": "a peer GPU's NVLink, then that GPU's NIC",
    "PHB": "PCIe through the CPU's host bridge",
    "SYS": "PCIe across the CPUs' interconnect (QPI/UPI/xGMI)",
    "NET": "the network",
    "DIS": "no path (disconnected)",
}


@dataclass(frozen=True)
class RingPlan:
    """NCCL's ring graph in one file and the bus bandwidth its tuning model expects of it."""

    path: str
    line: int
    text: str
    nchannels: int
    bw_intra: float
    bw_inter: float
    type_intra: str
    type_inter: str
    nnodes: int | None

    @property
    def inter(self) -> bool:
        """Does the model use the inter-node figure (nNodes > 2, graph/tuning.cc)?"""
        return self.nnodes is not None and self.nnodes > 2

    @property
    def per_channel(self) -> float:
        """NCCL's figure (inter-node beyond 2 nodes, else intra); on exactly 2 nodes the lower of the two, so
        an intra figure raised above the NIC's (NCCL raises it for trees) never inflates the plan."""
        if self.inter:
            return self.bw_inter
        if self.nnodes == 2:
            return min(self.bw_intra, self.bw_inter)
        return self.bw_intra

    @property
    def busbw(self) -> float:
        return self.nchannels * self.per_channel

    @property
    def link(self) -> str:
        """The limiting link as NCCL names its path type: the network when the ring spans nodes (the GPU's
        path to its NIC, `type …/X`, in brackets), else the GPU-to-GPU path (`type X/…`)."""
        if self.nnodes is not None and self.nnodes > 1:
            return f"NET (GPU to NIC: {self.type_inter or '?'})"
        return self.type_intra or "?"

    def describe(self) -> str:
        if self.nnodes is not None and self.nnodes > 1:
            te = self.type_inter or "?"
            what = f"the network, each GPU reaching its NIC through {te} ({PATH_TYPES.get(te, te)})"
        else:
            ti = self.type_intra or "?"
            what = f"{ti} ({PATH_TYPES.get(ti, 'a path NCCL names ' + ti)})"
        return (
            f"{self.nchannels} ring channel(s) × {self.per_channel:g} GB/s over {what} = {self.busbw:g} GB/s"
        )


def ring_plans(logs: LogFrames) -> dict[str, RingPlan]:
    """Per input file, the ring graph NCCL printed (the lowest expectation when several communicators or
    ranks printed different ones). Files without a GRAPH line are absent."""
    ch = logs.channels.filter(pl.col("kind") == "graph_pattern")
    if ch.is_empty():
        return {}
    g = ch.select("path", "line", "text", m=pl.col("text").str.extract_groups(PATTERN_LINE)).unnest("m")
    g = g.filter(pl.col("pattern").cast(pl.Int64, strict=False) == RING_PATTERN).with_columns(
        nch=pl.col("nch").cast(pl.Int64, strict=False),
        intra=pl.col("intra").cast(pl.Float64, strict=False),
        inter=pl.col("inter").cast(pl.Float64, strict=False),
    )
    g = g.drop_nulls(["nch", "intra", "inter"])
    nodes = logs.inits.filter(pl.col("nnodes").is_not_null()).group_by("path").agg(pl.col("nnodes").max())
    g = g.join(nodes, on="path", how="left")
    out: dict[str, RingPlan] = {}
    for r in g.sort("path", "line").iter_rows(named=True):
        p = RingPlan(
            path=r["path"],
            line=r["line"],
            text=(r["text"] or "").strip(),
            nchannels=r["nch"],
            bw_intra=r["intra"],
            bw_inter=r["inter"],
            type_intra=r["ti"] or "",
            type_inter=r["te"] or "",
            nnodes=r["nnodes"],
        )
        if p.path not in out or p.busbw < out[p.path].busbw:
            out[p.path] = p
    return out
