"""Report stage, terminal: verdict, ranks × configuration table with odd values marked, findings.

Every log-derived string is escaped before it reaches Rich (NCCL's `[0]` is Rich markup otherwise).
"""

from __future__ import annotations

from collections import Counter

import polars as pl
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ncclscope.records import Finding
from ncclscope.session import Session

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
CONFIG_COLUMNS = ["host", "iface", "address", "net", "gdr", "nccl_version"]
MAX_EVIDENCE = 6


def verdict(s: Session) -> str:
    """One sentence: the hang verdict when a collective is stuck, else the first error finding,
    else the first warning, else a clean bill."""
    hangs = [f for f in s.findings if f.id == "collective-hang" and f.severity == "error"]
    if hangs:
        more = f" (+{len(hangs) - 1} more stuck collectives)" if len(hangs) > 1 else ""
        return f"{hangs[0].title.rstrip('.')}{more}."
    for sev in ("error", "warning"):
        top = [f for f in s.findings if f.severity == sev]
        if top:
            more = f" (+{len(top) - 1} more {sev}s)" if len(top) > 1 else ""
            return f"{sev.upper()}: {top[0].title.rstrip('.')}{more}."
    infos = sum(f.severity == "info" for f in s.findings)
    if infos:
        return f"No error or warning findings in the evidence given ({infos} for information)."
    return "No problems found in the evidence given."


def _odd_values(col: pl.Series) -> set[str]:
    """Values held by a minority of ranks, when the column is not uniform."""
    vals = [str(v) for v in col.to_list() if v is not None]
    counts = Counter(vals)
    if len(counts) <= 1:
        return set()
    top = counts.most_common(1)[0][1]
    return {v for v, n in counts.items() if n < top}


def ranks_table(ranks: pl.DataFrame, limit: int = 64) -> Table:
    t = Table("rank", "pid", "dev", *CONFIG_COLUMNS, title="ranks × configuration (odd values in red)")
    odd = {c: _odd_values(ranks[c]) for c in CONFIG_COLUMNS if c in ranks.columns}
    for r in ranks.head(limit).to_dicts():
        cells = [str(r.get("rank") if r.get("rank") is not None else "?"), str(r.get("pid") or ""),
                 str(r.get("cuda_dev") if r.get("cuda_dev") is not None else "")]
        for c in CONFIG_COLUMNS:
            v = r.get(c)
            txt = "" if v is None else escape(str(v))
            cells.append(f"[red]{txt}[/red]" if v is not None and str(v) in odd.get(c, set()) else txt)
        t.add_row(*cells)
    if ranks.height > limit:
        t.caption = f"{ranks.height - limit} more ranks not shown (see --format json)"
    return t


def _finding(con: Console, f: Finding) -> None:
    style = _STYLE[f.severity]
    who = ""
    if f.ranks:
        who += " ranks " + ",".join(str(r) for r in f.ranks[:16]) + ("…" if len(f.ranks) > 16 else "")
    if f.hosts:
        who += " hosts " + ",".join(f.hosts[:8]) + ("…" if len(f.hosts) > 8 else "")
    con.print(f"[{style}]{f.severity.upper():7}[/{style}] [b]{escape(f.id)}[/b]: {escape(f.title)}{escape(who)}")
    for e in f.evidence[:MAX_EVIDENCE]:
        con.print(f"    [dim]{escape(e.path)}:{e.line}[/dim]  {escape(e.text[:200])}")
    if len(f.evidence) > MAX_EVIDENCE:
        con.print(f"    [dim]… {len(f.evidence) - MAX_EVIDENCE} more lines[/dim]")
    con.print(f"    [b]why:[/b] {escape(f.why)}")
    con.print(f"    [b]try:[/b] {escape(f.fix)}")


def evidence_summary(s: Session) -> str:
    """What was read: logs with their coverage, traces with the collectives aligned, dumps."""
    c = s.logs.coverage
    parts = []
    if s.logs.inputs or not (s.aligned_traces or s.flight):
        parts.append(f"{len(s.logs.inputs)} log(s), {c.lines} lines, {c.nccl_lines} NCCL lines, "
                     f"{c.recognized} recognized, {c.unknown} unknown")
    a = s.aligned_traces
    if a is not None:
        parts.append(f"traces of {a.n_ranks} rank(s), {a.collectives.height} collectives lined up "
                     f"({a.n_aligned} complete and consistent)")
    if s.flight is not None:
        parts.append(f"{s.flight.dumps.height} Flight Recorder dump(s)")
    return "; ".join(parts)


def render(s: Session, con: Console) -> None:
    con.print(f"[b]{escape(verdict(s))}[/b]")
    con.print(f"[dim]{escape(evidence_summary(s))}[/dim]")
    if s.ranks.height:
        con.print(ranks_table(s.ranks))
    if not s.findings:
        con.print("no findings")
    for f in s.findings:
        _finding(con, f)
