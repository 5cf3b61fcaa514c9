"""Report stage, facts: the builders of the report document's sections (`report.document`).

Plain JSON-like values; nothing here formats text for a medium: the renderers escape and lay out.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

import polars as pl

from ncclscope.report import views
from ncclscope.version import __version__

if TYPE_CHECKING:
    from ncclscope.session import Session


def _distinct(df: pl.DataFrame, value: str, by: list[str]) -> list[dict[str, Any]]:
    """Each distinct value and how many processes (by `by`) report it, most common first."""
    if df.is_empty() or value not in df.columns:
        return []
    keys = [c for c in by if c in df.columns] or [value]
    per = df.filter(pl.col(value).is_not_null()).unique([*keys, value])
    counted = (
        per.group_by(value).agg(pl.len().alias("count")).sort(["count", value], descending=[True, False])
    )
    return [{"value": str(v), "count": int(n)} for v, n in counted.iter_rows()]


def _version_rows(s: Session) -> list[dict[str, Any]]:
    v = s.logs.versions
    rows = [
        (
            "NCCL",
            _distinct(s.ranks, "nccl_version", ["host", "pid", "cuda_dev"])
            or _distinct(v.filter(pl.col("kind") == "nccl"), "value", ["host", "pid", "path"]),
        ),
        (
            "CUDA driver",
            _distinct(s.ranks, "cuda_driver", ["host", "pid", "cuda_dev"])
            or _distinct(v.filter(pl.col("kind") == "cuda_driver"), "value", ["host", "pid", "path"]),
        ),
        (
            "CUDA (NCCL build)",
            _distinct(v.filter(pl.col("kind") == "cuda"), "value", ["host", "pid", "path"]),
        ),
        ("torch", _distinct(v.filter(pl.col("kind") == "torch"), "value", ["host", "pid", "path"])),
        ("net plugin", _distinct(v.filter(pl.col("kind") == "plugin"), "value", ["host", "pid", "path"])),
    ]
    tr = s.traces.ranks if s.traces is not None else None
    if tr is not None:
        rows += [
            ("GPU (traces)", _distinct(tr, "gpu", ["rank"])),
            ("NCCL (traces)", _distinct(tr, "nccl_version", ["rank"])),
        ]
    return [{"name": n, "values": vals, "mixed": len(vals) > 1} for n, vals in rows if vals]


def _transport_rows(s: Session) -> list[dict[str, Any]]:
    edges = views.topology_edges(s.logs).filter(pl.col("kind") == "connection")
    out = []
    if edges.height:
        counted = (
            edges.group_by("label").agg(pl.len().alias("n")).sort(["n", "label"], descending=[True, False])
        )
        vals = [{"value": str(lab), "count": int(n)} for lab, n in counted.iter_rows()]
        out.append({"name": "transports (connections)", "values": vals, "mixed": False})
    net = _distinct(s.ranks, "net", ["host", "pid", "cuda_dev"])
    if net:
        out.append({"name": "network", "values": net, "mixed": len(net) > 1})
    iface = _distinct(s.ranks, "iface", ["host", "pid", "cuda_dev"])
    if iface:
        out.append({"name": "bootstrap interface", "values": iface, "mixed": len(iface) > 1})
    gdr = _distinct(s.ranks, "gdr", ["host", "pid", "cuda_dev"])
    if gdr:
        out.append({"name": "GPUDirect RDMA", "values": gdr, "mixed": len(gdr) > 1})
    return out


def _env_rows(s: Session) -> list[dict[str, Any]]:
    env = s.logs.env
    out = []
    for name in sorted(env["name"].drop_nulls().unique().to_list()):
        vals = _distinct(env.filter(pl.col("name") == name), "value", ["host", "pid", "path"])
        out.append({"name": name, "values": vals, "mixed": len(vals) > 1})
    return out


def environment(s: Session) -> dict[str, Any]:
    """The environment fingerprint: job shape, versions, transports and NCCL_* settings."""
    hosts = s.ranks["host"].drop_nulls().n_unique() if s.ranks.height else 0
    shape = {
        "ranks": int(s.ranks["rank"].drop_nulls().n_unique()) if s.ranks.height else 0,
        "processes": int(s.ranks.height),
        "hosts": int(hosts),
        "communicators": int(s.comms.height),
    }
    return {
        "shape": shape,
        "versions": _version_rows(s),
        "transports": _transport_rows(s),
        "env": _env_rows(s),
    }


def provenance(s: Session, command: str | None, redacted: bool) -> dict[str, Any]:
    tr = s.traces.ranks if s.traces is not None else None
    return {
        "ncclscope": __version__,
        "python": ".".join(str(x) for x in sys.version_info[:3]),
        "polars": pl.__version__,
        "command": command,
        "redacted": redacted,
        "inputs": [{"path": i.path, "lines": i.lines} for i in s.logs.inputs],
        "traces": [
            {"path": p, "rank": r, "events": n}
            for p, r, n in tr.select("path", "rank", "n_events").iter_rows()
        ]
        if tr is not None
        else [],
        "coverage": s.logs.coverage.to_json(),
    }


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
# C0 but tab and newline, DEL and C1 (U+009B is a CSI on its own), line separators, bidi overrides
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, limit: int = 500) -> str:
    """A log line fit to quote: colour codes dropped, control characters shown as �, capped."""
    t = _CONTROL.sub("\ufffd", _ANSI.sub("", text)).replace("\t", "    ")
    return t if len(t) <= limit else t[:limit] + " …"


def ranks_summary(ranks: list[int], limit: int = 24) -> str:
    """`0-7, 9, 12` for a sorted list of ranks (capped)."""
    spans: list[str] = []
    rs = sorted(set(ranks))
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        spans.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ", ".join(spans[:limit]) + (" …" if len(spans) > limit else "")


def cite(e: dict[str, Any]) -> str:
    """Where a piece of evidence is: `path:line` for a log line; the file alone for a trace event or a
    dump entry (line 0: the text names the event or entry), never a misleading `path:0`."""
    line = e.get("line")
    return f"{e['path']}:{line}" if isinstance(line, int) and line > 0 else str(e["path"])


def cell(v: object) -> str:
    """A table cell's text: nothing for None, yes/no for booleans."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "" if v is None else str(v)
