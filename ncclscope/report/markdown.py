"""Report stage, Markdown: a report to paste into a GitHub/GitLab/Jira ticket.

Verdict first, findings by severity with their evidence in collapsible `<details>`, the ranks ×
configuration table with odd values marked, the environment fingerprint, and how it was made.
Every log-derived string is escaped: quoted lines sit in fenced code blocks (never interpreted),
other text has its HTML and Markdown metacharacters escaped.
"""

from __future__ import annotations

from typing import Any

from ncclscope.report import views_health, views_nccltests, views_verdict
from ncclscope.report.facts import cite, printable, ranks_summary
from ncclscope.report.fold import (
    HANG_LABELS,
    MAX_INPUTS,
    InputRow,
    fold_hang,
    fold_inputs,
    fold_ranks,
    hang_columns,
)
from ncclscope.report.md_text import code, fenced, text

__all__ = ["code", "fenced", "render_doc", "text"]

MAX_EVIDENCE = 20
MAX_ROWS = 64
_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵", "ok": "🟢"}
_HEADINGS = {"error": "Errors", "warning": "Warnings", "info": "Info"}


def _finding(f: dict[str, Any]) -> list[str]:
    out = [f"#### {_ICON[f['severity']]} `{f['id']}` {text(f['title'])}", ""]
    who = []
    if f["ranks"]:
        who.append(f"**Ranks:** {text(ranks_summary(f['ranks']))}")
    if f["hosts"]:
        who.append(f"**Hosts:** {text(', '.join(f['hosts'][:12]))}" + (" …" if len(f["hosts"]) > 12 else ""))
    if who:
        out += [" · ".join(who), ""]
    out += [f"**Why it matters:** {text(f['why'])}", "", f"**What to try:** {text(f['fix'])}", ""]
    ev = f["evidence"]
    if ev:
        lines = [printable(f"{cite(e)}  {e['text']}") for e in ev[:MAX_EVIDENCE]]
        if len(ev) > MAX_EVIDENCE:
            lines.append(f"… {len(ev) - MAX_EVIDENCE} more lines")
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


def _findings(doc: dict[str, Any]) -> list[str]:
    out = ["## Findings", ""]
    if not doc["findings"]:
        return out + ["No findings: nothing in the evidence looks wrong.", ""]
    folded = views_verdict.fold(doc)
    v = doc["verdict"]
    causes = folded[: 1 + len(v["causes"])] if v["index"] is not None else []  # fold() puts the causes first
    if causes:
        out += ["### The cause and its echoes", ""]
        for f, echoes in causes:
            out += _finding(f)
            if echoes:
                out += [
                    "<details>",
                    f"<summary>{len(echoes)} finding(s) folded under it (its echoes)</summary>",
                    "",
                ]
                for x in echoes:
                    out += _finding(x)
                out += ["</details>", ""]
    rest = [f for f, _echoes in folded[len(causes) :]]
    for sev, heading in _HEADINGS.items():
        group = [f for f in rest if f["severity"] == sev]
        if group:
            out += [f"### {'Other ' + heading.lower() if causes else heading} ({len(group)})", ""]
            for f in group:
                out += _finding(f)
    return out


def _chain(v: dict[str, Any]) -> list[str]:
    """The verdict's chain of reasoning, a quoted list with each step's cited lines."""
    if not v.get("chain"):
        return []
    out = [
        f"> **Why we think so** ({text(str(v['confidence']))} confidence: {text(str(v['confidence_reason']))}):",
        ">",
    ]
    for st in v["chain"]:
        at = ", ".join(cite(x) for x in st["evidence"][:2])
        out.append(f"> - {text(st['text'])}" + (f" ({code(at)})" if at else ""))
    return out + [""]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(r) + " |" for r in rows
    ]


def _ranks(doc: dict[str, Any]) -> list[str]:
    t = doc["ranks"]
    if not t["rows"]:
        return []
    cols = t["columns"]
    fold = fold_ranks(t)
    body = []
    for r in fold.rows:
        cells = [
            ("**⚠ " + text(r["cells"][c]) + "**") if c in r["odd"] else text(_cell(r["cells"][c]))
            for c in cols
        ]
        body.append(cells + [text(", ".join(r["findings"]))])
    out = ["## Ranks × configuration", ""]
    if t["odd_columns"]:
        out += [
            f"Cells marked **⚠** differ from most ranks (columns: {text(', '.join(t['odd_columns']))}).",
            "",
        ]
    out += _table(cols + ["findings"], body)
    if fold.hidden:
        common = f" and the same findings ({text(', '.join(fold.common))})" if fold.common else ""
        out += ["", f"{fold.hidden:,} more ranks with no odd value{common} are not shown."]
    return out + [""]


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _values(vals: list[dict[str, Any]], mixed: bool) -> str:
    parts = [f"{text(v['value'])} ({v['count']})" for v in vals[:8]]
    more = f" … +{len(vals) - 8}" if len(vals) > 8 else ""
    return ("⚠ " if mixed else "") + ", ".join(parts) + more


def _environment(doc: dict[str, Any]) -> list[str]:
    env = doc["environment"]
    sh = env["shape"]
    shape = f"{sh['ranks']} ranks · {sh['processes']} processes · {sh['hosts']} hosts · {sh['communicators']} communicators"
    out = ["## Environment", "", shape, ""]
    rows = [[text(r["name"]), _values(r["values"], r["mixed"])] for r in env["versions"] + env["transports"]]
    if rows:
        out += _table(["", "value (processes)"], rows) + [""]
    if env["env"]:
        mixed = sum(1 for r in env["env"] if r["mixed"])
        out += [
            "<details>",
            f"<summary>NCCL environment: {len(env['env'])} variables set"
            + (f", {mixed} differ across ranks" if mixed else "")
            + "</summary>",
            "",
        ]
        out += _table(
            ["variable", "value (processes)"],
            [[code(r["name"]).replace("|", "\\|"), _values(r["values"], r["mixed"])] for r in env["env"]],
        )
        out += ["", "</details>", ""]
    return out


def _hang(doc: dict[str, Any]) -> list[str]:
    rows = doc["hang"]
    if not rows:
        return []
    cols = hang_columns(rows)
    folded = fold_hang(rows)
    body = [
        [text(h.who), text(h.where)]
        + [text(v) for v in h.state]
        + [f"**{h.flag}**" if h.behind and h.flag else h.flag]
        for h in folded[:MAX_ROWS]
    ]
    head = ["ranks", "host"] + [HANG_LABELS[c] for c in cols] + [""]
    out = ["## Hang view: how far each rank got", ""]
    if len(folded) < len(rows):
        out += [f"{len(rows):,} ranks in {len(folded)} rows: ranks in the same state share a row.", ""]
    out += _table(head, body)
    if len(folded) > MAX_ROWS:
        out += ["", f"{len(folded) - MAX_ROWS} more states not shown (see --format json)."]
    return out + [""]


def _provenance(doc: dict[str, Any]) -> list[str]:
    p = doc["provenance"]
    c = p["coverage"]
    pct = f"{100.0 * c['recognized'] / c['nccl_lines']:.1f}%" if c["nccl_lines"] else "n/a"
    out = [
        "## How this report was made",
        "",
        f"- ncclscope {text(p['ncclscope'])} (Python {text(p['python'])}, Polars {text(p['polars'])})",
    ]
    if p["command"]:
        out.append(f"- command: {code(p['command'])}")
    out.append(
        f"- coverage: {c['lines']} lines, {c['nccl_lines']} NCCL lines, {pct} recognized, "
        f"{c['unknown']} unknown"
    )
    if p["redacted"]:
        out.append(
            "- redacted: host names, IP/MAC addresses, user names in paths and pointers are replaced "
            "by consistent pseudonyms (`host-1`, `ip-1.2`, `user-1`, `0xptr-1`)"
        )
    out.append("")
    if p["inputs"] or p["traces"]:
        out += [
            "<details>",
            f"<summary>Inputs: {len(p['inputs'])} logs, {len(p['traces'])} traces</summary>",
            "",
        ]
        rows = fold_inputs(p)
        out += _table(["input", "lines / events"], [_input(i) for i in rows[:MAX_INPUTS]])
        if len(rows) > MAX_INPUTS:
            rest = rows[MAX_INPUTS:]
            out += ["", f"{len(rest)} more directories ({sum(r.files for r in rest):,} files) not shown."]
        out += ["", "</details>", ""]
    if doc["notes"]:
        out += ["Notes on the input:", ""] + [f"- {text(n)}" for n in doc["notes"]] + [""]
    return out


def _input(i: InputRow) -> list[str]:
    if i.files > 1:
        return [text(i.path) + f" ({i.files:,} files)", f"{i.amount:,} {i.what}"]
    rank = f" (rank {i.rank})" if i.what == "events" else ""
    return [text(i.path) + text(rank), f"{i.amount:,} {i.what}"]


def render_doc(doc: dict[str, Any]) -> str:
    """Markdown for a report document built by `document.build` (and redacted, when asked)."""
    v = doc["verdict"]
    counts = doc["counts"]
    tally = " · ".join(
        f"{counts.get(k, 0)} {k}{'s' if counts.get(k, 0) != 1 and k != 'info' else ''}"
        for k in ("error", "warning", "info")
    )
    out = ["# ncclscope report", "", f"> {_ICON[v['severity']]} **{text(v['text'])}**", ">", f"> {tally}", ""]
    out += _chain(v)
    out += (
        views_health.markdown(doc)
        + _findings(doc)
        + _hang(doc)
        + _ranks(doc)
        + _environment(doc)
        + views_nccltests.markdown(doc)
    )
    out += _provenance(doc)
    return "\n".join(out).rstrip("\n") + "\n"
