"""Report stage, terminal: the report document (`report.document`) laid out for a Rich console.

Verdict, what was read, the ranks × configuration table with the document's odd cells marked `⚠` (and
red, where colour is on: never colour alone), then every finding with its evidence. Every log-derived
string is escaped before it reaches Rich (NCCL's `[0]` is Rich markup otherwise) and its control
characters (ESC, C1) made visible. On a terminal, long lines wrap with a hanging indent; piped, the
console leaves them whole.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table

from ncclscope.report import views_health, views_nccltests, views_verdict
from ncclscope.report.document import Document
from ncclscope.report.facts import cite, ranks_summary
from ncclscope.report.fold import fold_ranks
from ncclscope.report.safe_text import escape  # Rich markup escaped and control characters made visible

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_HEAD = {"cuda_dev": "dev"}
ODD = "⚠"  # the same mark as the Markdown report's
MAX_EVIDENCE = 6
MAX_RANKS = 64
MAX_LINE = 2000  # characters of one cited line; a longer one is cut with a count, never silently


def _quoted(text: str) -> str:
    cut = len(text) - MAX_LINE
    return escape(text) if cut <= 0 else f"{escape(text[:MAX_LINE])}[dim]… ({cut:,} more characters)[/dim]"


def _cell(v: object) -> str:
    return "" if v is None else escape(str(v))


def ranks_table(t: dict[str, Any], limit: int = MAX_RANKS) -> Table:
    """The document's ranks table, folded as in the reports (ranks with an odd value or uncommon findings,
    the rest counted); odd cells (held by a minority of ranks) marked `⚠`, and red."""
    cols: list[str] = t["columns"]
    table = Table(*[_HEAD.get(c, c) for c in cols], title=f"ranks × configuration ({ODD}: odd value)")
    fold = fold_ranks(t, cap=limit)
    for r in fold.rows:
        table.add_row(
            *[
                f"[red]{ODD} {_cell(r['cells'][c])}[/red]" if c in r["odd"] else _cell(r["cells"][c])
                for c in cols
            ]
        )
    if fold.hidden:
        common = f" and the same findings ({', '.join(fold.common)})" if fold.common else ""
        table.caption = escape(f"{fold.hidden:,} more ranks with no odd value{common} (see --format json)")
    return table


def _indented(con: Console, markup: str, indent: int = 4) -> None:
    """A line under a finding: on a terminal wrapped with every continuation line indented too."""
    if con.is_terminal:
        con.print(Padding(con.render_str(markup), (0, 0, 0, indent)))
    else:
        con.print(" " * indent + markup)


def _finding(con: Console, f: dict[str, Any]) -> None:
    style = _STYLE[f["severity"]]
    ranks, hosts, evidence = f["ranks"], f["hosts"], f["evidence"]
    who = ""
    if ranks:
        who += " ranks " + ranks_summary(ranks, limit=8)
    if hosts:
        who += " hosts " + ",".join(hosts[:8]) + ("…" if len(hosts) > 8 else "")
    sev = str(f["severity"]).upper()
    con.print(f"[{style}]{sev:7}[/{style}] [b]{escape(f['id'])}[/b]: {escape(f['title'])}{escape(who)}")
    for e in evidence[:MAX_EVIDENCE]:
        _indented(con, f"[dim]{escape(cite(e))}[/dim]  {_quoted(str(e['text']))}")
    if len(evidence) > MAX_EVIDENCE:
        _indented(con, f"[dim]… {len(evidence) - MAX_EVIDENCE} more lines[/dim]")
    _indented(con, f"[b]why:[/b] {escape(f['why'])}")
    _indented(con, f"[b]try:[/b] {escape(f['fix'])}")


def render(doc: Document, con: Console) -> None:
    """Print the document: verdict, evidence summary, ranks table, findings."""
    con.print(f"[b]{escape(doc['verdict']['text'])}[/b]")
    con.print(f"[dim]{escape(doc['summary'])}[/dim]")
    if doc["ranks"]["rows"]:
        con.print(ranks_table(doc["ranks"]))
    views_nccltests.terminal(doc, con)
    _chain(con, doc["verdict"])
    views_health.terminal(doc, con)
    if not doc["findings"]:
        con.print("no findings")
    for f, echoes in views_verdict.fold(doc):
        _finding(con, f)
        for x in echoes:  # folded under their cause: one line each, their detail in the JSON and reports
            at = cite(x["evidence"][0]) if x["evidence"] else ""
            con.print(f"    [dim]echo:[/dim] {escape(x['id'])}: {escape(x['title'])} [dim]{escape(at)}[/dim]")


def _chain(con: Console, v: dict[str, Any]) -> None:
    """The verdict's chain of reasoning, each step with the line it cites."""
    if not v.get("chain"):
        return
    con.print(
        f"[b]why we think so[/b] ({escape(str(v['confidence']))} confidence: {escape(str(v['confidence_reason']))}):"
    )
    for st in v["chain"]:
        at = ", ".join(cite(x) for x in st["evidence"][:2])
        con.print(f"  {escape(st['text'])}" + (f" [dim]({escape(at)})[/dim]" if at else ""))
