"""Report stage, findings section: every finding, errors first, the cause's echoes folded under it.

Data: a `Finding` per finding (typed: `Finding.to_json`'s fields, `metrics` left out when empty), stored in
the document as its tree and read back typed by the layouts (`of(doc)`, after any redaction). Layouts: Markdown (evidence in collapsible `<details>`,
quoted lines in fenced blocks), HTML (one card per finding) and terminal (one line per finding, its
evidence, why and what to try).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from ncclscope.records import SEVERITY_ORDER, Severity
from ncclscope.report import views_verdict
from ncclscope.report.cited import Evidence, at
from ncclscope.report.facts import printable, ranks_summary
from ncclscope.report.html_tables import e
from ncclscope.report.md_text import fenced, text
from ncclscope.report.section import Document, Provenance, Section

if TYPE_CHECKING:
    from rich.console import Console

    from ncclscope.session import Session

MD_EVIDENCE = 20  # cited lines per finding in Markdown
HTML_EVIDENCE = 50
TERMINAL_EVIDENCE = 6
MAX_LINE = 2000  # characters of one cited line on a terminal; a longer one is cut with a count
_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵", "ok": "🟢"}
_HEADINGS = {"error": "Errors", "warning": "Warnings", "info": "Info"}
_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


class Finding(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """One finding: what a rule found, on which ranks and hosts, the lines that show it, why it matters and
    what to try."""

    id: Annotated[str, msgspec.Meta(description="stable rule id (`ncclscope rules ID`)")]
    severity: Severity
    title: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    why: str
    fix: str
    metrics: Annotated[dict[str, Any], msgspec.Meta(description="rule-specific numbers")] = msgspec.field(
        default_factory=dict
    )


def build(s: Session, _p: Provenance) -> tuple[Finding, ...]:
    return tuple(
        Finding(
            id=f.id,
            severity=f.severity,
            title=f.title,
            ranks=f.ranks,
            hosts=f.hosts,
            evidence=tuple(Evidence(e.path, e.line, e.text) for e in f.evidence),
            why=f.why,
            fix=f.fix,
            metrics=f.metrics,
        )
        for f in sorted(s.findings, key=lambda f: SEVERITY_ORDER[f.severity])
    )


def of(doc: Document) -> tuple[Finding, ...]:
    """The section's data, typed, from a (possibly redacted) document."""
    return msgspec.convert(doc["findings"], tuple[Finding, ...])


# --- Markdown -----------------------------------------------------------------------------------------


def _md_finding(f: Finding) -> list[str]:
    out = [f"#### {_ICON[f.severity]} `{f.id}` {text(f.title)}", ""]
    who = []
    if f.ranks:
        who.append(f"**Ranks:** {text(ranks_summary(list(f.ranks)))}")
    if f.hosts:
        who.append(f"**Hosts:** {text(', '.join(f.hosts[:12]))}" + (" …" if len(f.hosts) > 12 else ""))
    if who:
        out += [" · ".join(who), ""]
    out += [f"**Why it matters:** {text(f.why)}", "", f"**What to try:** {text(f.fix)}", ""]
    ev = f.evidence
    if ev:
        lines = [printable(f"{at(x)}  {x.text}") for x in ev[:MD_EVIDENCE]]
        if len(ev) > MD_EVIDENCE:
            lines.append(f"… {len(ev) - MD_EVIDENCE} more lines")
        n = len(ev)
        out += [
            "<details>",
            f"<summary>Evidence: {n} line{'s' if n != 1 else ''}</summary>",
            "",
            fenced(lines),
            "",
            "</details>",
            "",
        ]
    return out


def markdown(doc: Document) -> list[str]:
    out = ["## Findings", ""]
    findings = of(doc)
    if not findings:
        return out + ["No findings: nothing in the evidence looks wrong.", ""]
    v = views_verdict.of(doc)
    folded = views_verdict.fold(v, findings)
    causes = folded[: 1 + len(v.causes)] if v.index is not None else []  # fold() puts the causes first
    if causes:
        out += ["### The cause and its echoes", ""]
        for f, echoes in causes:
            out += _md_finding(f)
            if echoes:
                out += [
                    "<details>",
                    f"<summary>{len(echoes)} finding(s) folded under it (its echoes)</summary>",
                    "",
                ]
                for x in echoes:
                    out += _md_finding(x)
                out += ["</details>", ""]
    rest = [f for f, _echoes in folded[len(causes) :]]
    for sev, heading in _HEADINGS.items():
        group = [f for f in rest if f.severity == sev]
        if group:
            out += [f"### {'Other ' + heading.lower() if causes else heading} ({len(group)})", ""]
            for f in group:
                out += _md_finding(f)
    return out


# --- HTML ---------------------------------------------------------------------------------------------


def _html_finding(i: int, f: Finding) -> str:
    who = []
    if f.ranks:
        who.append(f"ranks {e(ranks_summary(list(f.ranks)))}")
    if f.hosts:
        who.append(f"hosts {e(', '.join(f.hosts[:12]))}" + (" …" if len(f.hosts) > 12 else ""))
    ev = f.evidence
    lines = "\n".join(f'<span class="loc">{e(at(x))}</span>  {e(x.text)}' for x in ev[:HTML_EVIDENCE])
    if len(ev) > HTML_EVIDENCE:
        lines += f"\n… {len(ev) - HTML_EVIDENCE} more lines"
    details = (
        (
            f"<details><summary>Evidence: {len(ev)} line{'s' if len(ev) != 1 else ''}</summary>"
            f"<pre><code>{lines}</code></pre></details>"
        )
        if ev
        else ""
    )
    sev = e(f.severity)
    return (
        f'<div class="finding {sev}" id="finding-{i}"><h3><span class="chips"><span class="sev-{sev}">{sev}'
        f'</span></span>{e(f.title)} <span class="id">{e(f.id)}</span></h3>'
        f'<div class="who">{" · ".join(who)}</div><p><b>Why it matters:</b> {e(f.why)}</p>'
        f"<p><b>What to try:</b> {e(f.fix)}</p>{details}</div>"
    )


def html(doc: Document, _figures: dict[str, str] | None = None) -> str:
    findings = of(doc)
    if not findings:
        return '<p class="muted">No findings: nothing in the evidence looks wrong.</p>'
    index = {id(f): i for i, f in enumerate(findings)}
    out = []
    for f, echoes in views_verdict.fold(views_verdict.of(doc), findings):
        out.append(_html_finding(index[id(f)], f))
        if echoes:
            inner = "".join(_html_finding(index[id(x)], x) for x in echoes)
            out.append(
                f'<details class="echoes"><summary>{len(echoes)} finding(s) folded under it (its echoes)</summary>'
                f"{inner}</details>"
            )
    return "\n".join(out)


# --- terminal -----------------------------------------------------------------------------------------


def _quoted(line: str) -> str:
    from ncclscope.report.safe_text import escape

    cut = len(line) - MAX_LINE
    return escape(line) if cut <= 0 else f"{escape(line[:MAX_LINE])}[dim]… ({cut:,} more characters)[/dim]"


def _indented(con: Console, markup: str, indent: int = 4) -> None:
    """A line under a finding: on a terminal wrapped with every continuation line indented too."""
    if con.is_terminal:
        from rich.padding import Padding

        con.print(Padding(con.render_str(markup), (0, 0, 0, indent)))
    else:
        con.print(" " * indent + markup)


def _term_finding(con: Console, f: Finding) -> None:
    from ncclscope.report.safe_text import escape

    style = _STYLE[f.severity]
    ranks, hosts, evidence = f.ranks, f.hosts, f.evidence
    who = ""
    if ranks:
        who += " ranks " + ranks_summary(list(ranks), limit=8)
    if hosts:
        who += " hosts " + ",".join(hosts[:8]) + ("…" if len(hosts) > 8 else "")
    sev = str(f.severity).upper()
    con.print(f"[{style}]{sev:7}[/{style}] [b]{escape(f.id)}[/b]: {escape(f.title)}{escape(who)}")
    for x in evidence[:TERMINAL_EVIDENCE]:
        _indented(con, f"[dim]{escape(at(x))}[/dim]  {_quoted(str(x.text))}")
    if len(evidence) > TERMINAL_EVIDENCE:
        _indented(con, f"[dim]… {len(evidence) - TERMINAL_EVIDENCE} more lines[/dim]")
    _indented(con, f"[b]why:[/b] {escape(f.why)}")
    _indented(con, f"[b]try:[/b] {escape(f.fix)}")


def terminal(doc: Document, con: Console) -> None:
    from ncclscope.report.safe_text import escape

    findings = of(doc)
    if not findings:
        con.print("no findings")
    for f, echoes in views_verdict.fold(views_verdict.of(doc), findings):
        _term_finding(con, f)
        for x in echoes:  # folded under their cause: one line each, their detail in the JSON and reports
            where = at(x.evidence[0]) if x.evidence else ""
            con.print(f"    [dim]echo:[/dim] {escape(x.id)}: {escape(x.title)} [dim]{escape(where)}[/dim]")


SECTION = Section(
    "findings",
    build,
    "every finding, errors first",
    schema=tuple[Finding, ...],
    title="Findings",
    menu="Findings",
    markdown=markdown,
    html=html,
    terminal=terminal,
)
