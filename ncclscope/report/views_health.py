"""Report stage, health section: what was checked and what was found healthy, with the lines that show it.

`section(s)` builds the document's `health` entry (typed: `report.health_data.HealthSection`): the job's facts (`align.facts`), init
completion per communicator, the WARNs printed before teardown (none, or which), the success marker, the
data path (transports per channel, GPUDirect RDMA, PXN, channel counts, NICs, algorithm/protocol from
TUNING lines) and the settings that change it. A clean run then reads as a positive statement with
evidence. `markdown`, `html` and `terminal` lay it out, reading it back typed (`of(doc)`, after any
redaction); every string from the inputs is escaped there.
"""

from __future__ import annotations

from html import escape as html_escape
from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

from ncclscope.align.facts import DATA_PATH_SETTINGS as PATH_SETTINGS
from ncclscope.align.facts_path import comm_paths, transport_label
from ncclscope.align.phase import APP_END
from ncclscope.align.rankmap import init_rows
from ncclscope.report.facts import printable
from ncclscope.report.health_data import CommPath, HealthSection
from ncclscope.report.section import Document, Section

if TYPE_CHECKING:
    from rich.console import Console

    from ncclscope.session import Session

MAX_LIST = 8


def _cite(row: dict[str, Any]) -> dict[str, Any]:
    return {"path": row.get("path"), "line": row.get("line"), "text": (row.get("text") or "").strip()[:300]}


def _init(s: Session) -> list[dict[str, Any]]:
    out = []
    for c in s.facts.communicators:
        n = c.nranks
        state = "complete" if n is not None and c.complete >= n else "partial" if c.complete else "not seen"
        out.append(
            {
                "comm": c.key,
                "nranks": n,
                "nnodes": c.nnodes,
                "ranks_seen": c.ranks_seen,
                "complete": c.complete,
                "hosts": len(c.hosts),
                "state": state,
            }
        )
    return out


def _warns_before_teardown(s: Session) -> dict[str, Any]:
    """WARN lines printed before their input's teardown: unexplained ones (cited) and known-benign ones (counted)."""
    w = s.logs.warnings.filter(pl.col("level") == "WARN")
    if w.height:
        w = w.filter(~s.phase.benign_teardown(w))
    benign = w.filter(pl.col("benign").fill_null(False))
    w = w.filter(~pl.col("benign").fill_null(False))
    rows = w.sort("path", "line").head(MAX_LIST).to_dicts()
    return {"count": w.height, "benign": benign.height, "first": [_cite(r) for r in rows]}


def _success(s: Session) -> dict[str, Any] | None:
    hit = s.logs.unknown.filter(pl.col("text").fill_null("").str.contains(APP_END))
    if hit.is_empty():
        hit = s.logs.unknown.filter(pl.col("text").fill_null("").str.contains(r"^#\s*Avg bus bandwidth\s*:"))
    return _cite(hit.sort("path", "line").row(0, named=True)) if hit.height else None


def _data_path(s: Session) -> dict[str, Any]:
    conn = s.logs.connections
    per = (
        conn.select(t=transport_label())
        .group_by("t")
        .agg(pl.len().alias("n"))
        .sort(["n", "t"], descending=[True, False])
    )
    transports = [{"transport": t, "channels": n} for t, n in per.iter_rows()]
    ch = s.logs.channels
    summary = ch.filter(pl.col("kind") == "summary")
    coll = sorted({int(v) for v in summary["coll_channels"].drop_nulls().to_list()})
    pxn = sorted({int(v) for v in ch["pxn"].drop_nulls().to_list()})
    gdr_flag = sorted({int(v) for v in ch["gdr"].drop_nulls().to_list()})
    net = s.logs.network
    nics = sorted({h for h in net.filter(pl.col("kind") == "ib_dev")["hca"].drop_nulls().to_list()})
    ifaces = sorted(
        {i for i in net.filter(pl.col("kind") == "socket_iface")["iface"].drop_nulls().to_list() if i}
    )
    using = sorted({n for n in net.filter(pl.col("kind") == "using_network")["net"].drop_nulls().to_list()})
    tuning = s.logs.known.filter(
        pl.col("text").fill_null("").str.contains(r"NCCL INFO .*(?:TUNING|Algo|algo )")
    )
    return {
        "network": using,
        "transports": transports,
        "coll_channels": coll,
        "gdr_flag": gdr_flag,  # `use ring PXN x GDR y`
        "pxn": pxn,
        "nics": nics[:MAX_LIST],
        "socket_ifaces": ifaces[:MAX_LIST],
        "tuning_lines": tuning.height,
        "communicators": _per_comm(s),
    }


def _per_comm(s: Session) -> list[dict[str, Any]]:
    """Each communicator's data path (`align.facts_path`: lines attributed to the communicator their process
    named last), only those with something to say."""
    out = []
    for c in comm_paths(s.logs, init_rows(s.logs.inits)):
        d = {
            "comm": c.comm,
            "transports": [{"transport": t, "channels": n} for t, n in c.transports],
            "coll_channels": list(c.coll_channels),
            "pxn": list(c.pxn),
            "gdr_flag": list(c.gdr),
            "nics": list(c.nics),
            "algorithms": [{"algorithm": a, "lines": n} for a, n in c.algorithms],
            "ring_plan": c.ring_plan,
        }
        if any(v for k, v in d.items() if k != "comm"):
            out.append(d)
    return out


def _settings(s: Session) -> list[dict[str, Any]]:
    env = s.logs.env.filter(pl.col("name").is_in(list(PATH_SETTINGS)))
    rows = env.sort("path", "line").unique(["name", "value"], keep="first", maintain_order=True)
    return [
        {
            "name": r["name"],
            "value": (r["value"] or "").strip(),
            "changes": PATH_SETTINGS[r["name"]],
            **_cite(r),
        }
        for r in rows.to_dicts()
    ]


def section(s: Session) -> HealthSection:
    """The `health` entry: facts, init, WARNs before teardown, success marker, data path, settings, statement."""
    init = _init(s)
    warns = _warns_before_teardown(s)
    success = _success(s)
    bad = [f for f in s.findings if f.severity in ("error", "warning")]
    done = sum(c["state"] == "complete" for c in init)
    parts = []
    if init:
        parts.append(f"{done} of {len(init)} communicator(s) completed init")
    known = f" ({warns['benign']} known-benign)" if warns["benign"] else ""
    parts.append(
        (f"no unexplained WARN before teardown{known}" if warns["benign"] else "no WARN before teardown")
        if not warns["count"]
        else f"{warns['count']} WARN(s) before teardown{known}"
    )
    if success:
        parts.append("the run reports success")
    healthy = not bad and not warns["count"] and done == len(init)
    lead = "Healthy as far as the evidence goes: " if healthy else "Checked: "
    data = {
        "healthy": healthy,
        "statement": lead + "; ".join(parts) + ".",
        "init": init,
        "warns_before_teardown": warns,
        "success": success,
        "data_path": _data_path(s),
        "settings": _settings(s),
        "facts": s.facts.to_dict(),
    }
    return msgspec.convert(_printable(data), HealthSection)


def of(doc: Document) -> HealthSection | None:
    """The section's data, typed, from a (possibly redacted) document (None: a document without it)."""
    h = doc.get("health")
    return msgspec.convert(h, HealthSection) if h else None


def _printable(obj: Any) -> Any:
    """Every string of the section fit to quote (input paths, host names and log text are data: no control
    characters reach a terminal or a page)."""
    if isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, dict):
        return {k: _printable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_printable(v) for v in obj]
    return obj


def _lines(h: HealthSection) -> list[str]:
    """Plain-text lines of the section (renderers escape them)."""
    f = h.facts
    out = [h.statement]
    for key in ("library", "nodes", "world_size", "launcher", "multi_node", "opcount_sequence"):
        v = getattr(f, key)
        if v.value is not None:
            out.append(f"{key.replace('_', ' ')}: {v.value} ({v.sure}: {v.how})")
    for c in h.init[:MAX_LIST]:
        out.append(
            f"communicator {c.comm}: {c.complete}/{c.nranks or '?'} ranks completed init"
            + (f", nNodes {c.nnodes}" if c.nnodes is not None else "")
        )
    if len(h.init) > MAX_LIST:
        out.append(f"… and {len(h.init) - MAX_LIST} more communicators")
    for w in h.warns_before_teardown.first[:3]:
        out.append(f"WARN before teardown: {w.text}")
    if h.success:
        out.append(f"success marker: {h.success.text}")
    d = h.data_path
    if d.transports:
        out.append("data path: " + ", ".join(f"{t.transport} ×{t.channels}" for t in d.transports[:MAX_LIST]))
    extras = []
    if d.network:
        extras.append("network " + "/".join(d.network))
    if d.coll_channels:
        extras.append("coll channels " + "/".join(map(str, d.coll_channels)))
    if d.pxn:
        extras.append("PXN " + "/".join(map(str, d.pxn)))
    if d.gdr_flag:
        extras.append("GDR " + "/".join(map(str, d.gdr_flag)))
    if d.nics:
        extras.append("NICs " + ", ".join(d.nics))
    if extras:
        out.append("; ".join(extras))
    for path in d.communicators[:MAX_LIST]:
        out.append(_comm_line(path))
    if len(d.communicators) > MAX_LIST:
        out.append(f"… and {len(d.communicators) - MAX_LIST} more communicators' data paths")
    for st in h.settings[:MAX_LIST]:
        out.append(f"{st.name}={st.value}: {st.changes}")
    return out


def _comm_line(c: CommPath) -> str:
    bits = [", ".join(f"{t.transport} ×{t.channels}" for t in c.transports[:4])]
    if c.coll_channels:
        bits.append("coll channels " + "/".join(map(str, c.coll_channels)))
    if c.pxn or c.gdr_flag:
        bits.append(f"PXN {'/'.join(map(str, c.pxn)) or '?'} GDR {'/'.join(map(str, c.gdr_flag)) or '?'}")
    if c.nics:
        bits.append("NICs " + ", ".join(c.nics))
    if c.algorithms:
        bits.append("algorithms " + ", ".join(f"{a.algorithm} ×{a.lines}" for a in c.algorithms[:4]))
    if c.ring_plan:
        bits.append("ring plan " + c.ring_plan)
    return f"communicator {c.comm} data path: " + "; ".join(b for b in bits if b)


def markdown(doc: Document) -> list[str]:
    from ncclscope.report.md_text import text

    h = of(doc)
    if not h:
        return []
    return ["## Health", "", *[f"- {text(x)}" for x in _lines(h)], ""]


def html(doc: Document) -> str:
    h = of(doc)
    if not h:
        return ""
    return "<ul>" + "".join(f"<li>{html_escape(x)}</li>" for x in _lines(h)) + "</ul>"


def terminal(doc: Document, con: Console) -> None:
    from rich.markup import escape

    h = of(doc)
    if not h:
        return
    con.print("[b]Health[/b]")
    for x in _lines(h):
        con.print("  " + escape(x))


def _html(doc: Document, _figures: dict[str, str]) -> str:
    return html(doc)


SECTION = Section(
    "health",
    lambda s, _p: section(s),
    "what was checked and found healthy, job facts",
    schema=HealthSection,
    title="Health: what was checked",
    markdown=markdown,
    html=_html,
    terminal=terminal,
)
