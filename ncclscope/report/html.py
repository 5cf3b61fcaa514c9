"""Report stage, HTML: one self-contained, offline page (Plotly inlined, no network requests).

The body is built from the report document with every string escaped; figures and the document
itself are embedded as JSON inside `<script type="application/json">` with `<`, `>` and `&`
escaped, so log text can never close a tag. Same document → same bytes: fixed element ids,
sorted keys, no timestamps.
"""

from __future__ import annotations

import json
from functools import lru_cache
from html import escape
from importlib import resources
from string import Template
from typing import Any

from ncclscope.report import views_nccltests
from ncclscope.report.facts import cite, hang_flag, printable, ranks_summary
from ncclscope.report.fold import (
    FLAG_ORDER,
    HANG_LABELS,
    MAX_INPUTS,
    fold_hang,
    fold_inputs,
    fold_ranks,
    hang_columns,
    op_count,
)

MAX_EVIDENCE = 50
REDACTED_NOTE = (
    "host names, IP/MAC addresses, user names in paths and pointers are replaced by consistent "
    "pseudonyms (host-1, ip-1.2, user-1, 0xptr-1)"
)
MAX_ROWS = 1024  # rows of a collapsed every-rank table
MAX_STATES = 64  # rows of the folded hang table
FIGURES = [
    ("fig-hang", "Hang view"),
    ("fig-topology", "Topology"),
    ("fig-arrivals", "Collective arrivals"),
    ("fig-timeline", "Per-rank timeline"),
]


def e(value: object) -> str:
    """Escaped text for HTML content and attribute values."""
    return escape(printable("" if value is None else str(value), limit=4000), quote=True)


def script_json(obj: Any) -> str:
    """JSON safe inside <script>: no `</script>`, `<!--` or `]]>` can form; U+2028/9 escaped."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@lru_cache(maxsize=1)
def _template() -> Template:
    return Template(resources.files("ncclscope.report").joinpath("templates/report.html").read_text("utf-8"))


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js.replace("</script", "<\\/script")


# --- sections ----------------------------------------------------------------------------------------


def _finding(i: int, f: dict[str, Any]) -> str:
    who = []
    if f["ranks"]:
        who.append(f"ranks {e(ranks_summary(f['ranks']))}")
    if f["hosts"]:
        who.append(f"hosts {e(', '.join(f['hosts'][:12]))}" + (" …" if len(f["hosts"]) > 12 else ""))
    ev = f["evidence"]
    lines = "\n".join(f'<span class="loc">{e(cite(x))}</span>  {e(x["text"])}' for x in ev[:MAX_EVIDENCE])
    if len(ev) > MAX_EVIDENCE:
        lines += f"\n… {len(ev) - MAX_EVIDENCE} more lines"
    details = (
        (
            f"<details><summary>Evidence: {len(ev)} line{'s' if len(ev) != 1 else ''}</summary>"
            f"<pre><code>{lines}</code></pre></details>"
        )
        if ev
        else ""
    )
    sev = e(f["severity"])
    return (
        f'<div class="finding {sev}" id="finding-{i}"><h3><span class="chips"><span class="sev-{sev}">{sev}'
        f'</span></span>{e(f["title"])} <span class="id">{e(f["id"])}</span></h3>'
        f'<div class="who">{" · ".join(who)}</div><p><b>Why it matters:</b> {e(f["why"])}</p>'
        f"<p><b>What to try:</b> {e(f['fix'])}</p>{details}</div>"
    )


def findings_html(doc: dict[str, Any]) -> str:
    if not doc["findings"]:
        return '<p class="muted">No findings: nothing in the evidence looks wrong.</p>'
    return "\n".join(_finding(i, f) for i, f in enumerate(doc["findings"]))


def _cell(v: object) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "" if v is None else str(v)


def _rank_row(r: dict[str, Any], cols: list[str]) -> str:
    cells = "".join(
        f"<td{' class=odd' if c in r['odd'] else ''}>{'⚠ ' if c in r['odd'] else ''}{e(_cell(r['cells'][c]))}</td>"
        for c in cols
    )
    return f'<tr>{cells}<td class="flag">{e(", ".join(r["findings"]))}</td></tr>'


def ranks_html(doc: dict[str, Any], limit: int = MAX_ROWS) -> str:
    """The ranks that stand out (odd values, uncommon findings); every rank, collapsed, below."""
    t = doc["ranks"]
    if not t["rows"]:
        return '<p class="muted">No rank could be identified (no Init lines or rank tags in the logs).</p>'
    cols = t["columns"]
    head = "<tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "<th>findings</th></tr>"
    fold = fold_ranks(t)
    shown = "".join(_rank_row(r, cols) for r in fold.rows)
    table = f'<div class="scroll"><table class="sortable">{head}{shown}</table></div>'
    odd = (
        f'<p class="muted">Cells marked ⚠ differ from most ranks ({e(", ".join(t["odd_columns"]))}).</p>'
        if t["odd_columns"]
        else ""
    )
    if not fold.hidden:
        return odd + table
    common = f" and the same findings ({e(', '.join(fold.common))})" if fold.common else ""
    every = "".join(_rank_row(r, cols) for r in t["rows"][:limit])
    more = f" (first {limit:,})" if len(t["rows"]) > limit else ""
    return (
        f'{odd}{table}<p class="muted">{fold.hidden:,} more ranks with no odd value{common}.</p>'
        f"<details><summary>Every rank ({len(t['rows']):,}){more}</summary>{_filter()}"
        f'<div class="scroll tall"><table class="sortable">{head}{every}</table></div></details>'
    )


def _filter() -> str:
    return '<input class="filter" type="search" placeholder="filter rows (rank, host, value…)">'


def _values(vals: list[dict[str, Any]]) -> str:
    return ", ".join(f"{e(v['value'])} <span class=muted>({int(v['count'])})</span>" for v in vals[:12]) + (
        f" … +{len(vals) - 12}" if len(vals) > 12 else ""
    )


def environment_html(doc: dict[str, Any]) -> str:
    env = doc["environment"]
    sh = env["shape"]
    rows = "".join(
        f"<tr><th>{e(r['name'])}</th><td{' class=odd' if r['mixed'] else ''}>{_values(r['values'])}</td></tr>"
        for r in env["versions"] + env["transports"]
    )
    envs = "".join(
        f"<tr><td><code>{e(r['name'])}</code></td><td{' class=odd' if r['mixed'] else ''}>"
        f"{_values(r['values'])}</td></tr>"
        for r in env["env"]
    )
    env_table = (
        (
            f"<details><summary>NCCL environment: {len(env['env'])} variables set</summary>"
            f"<table><tr><th>variable</th><th>value (processes)</th></tr>{envs}</table></details>"
        )
        if envs
        else ""
    )
    return (
        f"<p>{sh['ranks']} ranks · {sh['processes']} processes · {sh['hosts']} hosts · "
        f"{sh['communicators']} communicators</p><table>{rows}</table>{env_table}"
    )


def hang_html(doc: dict[str, Any]) -> str:
    """Ranks folded by state, culprits and the detector first; every rank, collapsed, sortable below."""
    rows = doc["hang"]
    if not rows:
        return ""
    cols = hang_columns(rows)
    labels = "".join(f"<th>{e(HANG_LABELS[c])}</th>" for c in cols)
    folded = "".join(
        f"<tr{' class=behind' if h.behind else ''}><td>{e(h.who)}</td><td>{e(h.where)}</td>"
        + "".join(f"<td>{e(v)}</td>" for v in h.state)
        + f'<td class="flag">{e(h.flag)}</td></tr>'
        for h in fold_hang(rows)[:MAX_STATES]
    )
    out = f'<div class="scroll"><table><tr><th>ranks</th><th>host</th>{labels}<th></th></tr>{folded}</table></div>'
    if len(rows) <= 1:
        return out
    first = sorted(rows, key=lambda r: (FLAG_ORDER.get(hang_flag(r), 9), r["rank"] is None, r["rank"] or 0))
    every = "".join(
        f"<tr{' class=behind' if r['behind'] else ''}><td>{e(_cell(r['rank']))}</td><td>{e(_cell(r['host']))}</td>"
        + "".join(f"<td>{e(op_count(r[c]) if c == 'last_op_count' else _cell(r[c]))}</td>" for c in cols)
        + f'<td class="flag">{e(hang_flag(r))}</td></tr>'
        for r in first[:MAX_ROWS]
    )
    return (
        f"{out}<details><summary>Every rank ({len(rows):,}), culprits first; click a heading to sort</summary>"
        f'{_filter()}<div class="scroll tall"><table class="sortable"><tr><th>rank</th><th>host</th>{labels}'
        f"<th></th></tr>{every}</table></div></details>"
    )


def provenance_html(doc: dict[str, Any]) -> str:
    p = doc["provenance"]
    c = p["coverage"]
    pct = f"{100.0 * c['recognized'] / c['nccl_lines']:.1f}%" if c["nccl_lines"] else "n/a"
    items = [("ncclscope", f"{p['ncclscope']} (Python {p['python']}, Polars {p['polars']})")]
    if p["command"]:
        items.append(("command", p["command"]))
    items.append(
        (
            "coverage",
            f"{c['lines']} lines, {c['nccl_lines']} NCCL lines, {pct} recognized, {c['unknown']} unknown",
        )
    )
    if p["redacted"]:
        items.append(("redacted", REDACTED_NOTE))
    dl = "".join(
        f"<dt>{e(k)}</dt><dd><code>{e(v)}</code></dd>"
        if k == "command"
        else f"<dt>{e(k)}</dt><dd>{e(v)}</dd>"
        for k, v in items
    )
    rows = fold_inputs(p)
    inputs = "".join(
        f"<tr><td>{e(i.path)}{f' ({i.files:,} files)' if i.files > 1 else ''}</td><td>"
        + (f"rank {e(i.rank)}, " if i.what == "events" and i.files == 1 else "")
        + f"{i.amount:,} {i.what}</td></tr>"
        for i in rows[:MAX_INPUTS]
    )
    if len(rows) > MAX_INPUTS:
        rest = rows[MAX_INPUTS:]
        inputs += (
            f"<tr><td>… {len(rest)} more directories</td><td>{sum(r.files for r in rest):,} files</td></tr>"
        )
    n_in = f"{len(p['inputs']):,} logs, {len(p['traces']):,} traces"
    notes = "".join(f"<li>{e(n)}</li>" for n in doc["notes"])
    return (
        f"<dl>{dl}</dl>"
        + (
            f"<details><summary>Inputs: {n_in}</summary><table><tr><th>input</th><th></th></tr>"
            f"{inputs}</table></details>"
            if inputs
            else ""
        )
        + (f"<p>Notes on the input:</p><ul>{notes}</ul>" if notes else "")
    )


def summary_html(doc: dict[str, Any]) -> str:
    """Verdict, counts, findings and ranks: the notebook's rich repr and the top of the report."""
    v = doc["verdict"]
    chips = "".join(
        f'<span class="sev-{k}">{doc["counts"].get(k, 0)} {k}</span>' for k in ("error", "warning", "info")
    )
    return f'<div class="verdict {e(v["severity"])}">{e(v["text"])}</div><div class="chips">{chips}</div>'


# --- page -------------------------------------------------------------------------------------------


def _section(sid: str, title: str, inner: str) -> str:
    return f'<section class="block" id="{sid}"><h2>{e(title)}</h2>{inner}</section>'


def _figure(fid: str, fig: dict[str, Any]) -> str:
    """A panel for a figure with data; one muted line saying why for an empty one (no blank panel)."""
    if fig.get("data"):
        return f'<div class="figure" id="{fid}"></div>'
    notes = [a.get("text", "") for a in (fig.get("layout") or {}).get("annotations") or []]
    title = (fig.get("layout") or {}).get("title") or {}
    name = title.get("text", "") if isinstance(title, dict) else str(title)
    return f'<p class="muted empty-figure">{e(name)}: {e(" ".join(notes) or "nothing to plot")}</p>'


def render_page(doc: dict[str, Any], figures: dict[str, dict[str, Any]]) -> str:
    """The whole page: `figures` maps a FIGURES id to Plotly's JSON (data, layout)."""
    figs = {fid: _figure(fid, figures[fid]) for fid, _ in FIGURES if fid in figures}
    hang = hang_html(doc)
    body = [
        "<header><h1>ncclscope report</h1>"
        + summary_html(doc)
        + '<nav><a href="#findings">Findings</a><a href="#hang">Hang view</a><a href="#ranks">Ranks</a>'
        '<a href="#topology">Topology</a><a href="#traces">Traces</a><a href="#environment">Environment</a>'
        + ('<a href="#nccltests">nccl-tests</a>' if views_nccltests.html(doc) else "")
        + '<a href="#provenance">How it was made</a></nav></header><main>',
        _section("findings", "Findings", findings_html(doc)),
        _section("hang", "Hang view: how far each rank got", hang + figs.get("fig-hang", "")),
        _section("ranks", "Ranks × configuration", ranks_html(doc)),
        _section("topology", "Topology", figs.get("fig-topology", "")),
        _section("traces", "Traces", figs.get("fig-arrivals", "") + figs.get("fig-timeline", "")),
        _section("environment", "Environment", environment_html(doc)),
        *(
            [_section("nccltests", "nccl-tests", views_nccltests.html(doc))]
            if views_nccltests.html(doc)
            else []
        ),
        _section("provenance", "How this report was made", provenance_html(doc)),
        "</main>",
    ]
    return _template().substitute(
        version=e(doc["provenance"]["ncclscope"]),
        title=e("ncclscope report — " + doc["verdict"]["text"]),
        body="\n".join(body),
        figures_json=script_json(figures),
        report_json=script_json(doc),
        plotly_js=_plotly_js(),
    )


# --- notebook repr ------------------------------------------------------------------------------------

_SEV_COLOR = {"error": "#c62828", "warning": "#e08a00", "info": "#1565c0", "ok": "#2e7d32"}


def repr_html(doc: dict[str, Any], tables: dict[str, int]) -> str:
    """A compact, inline-styled summary for Jupyter: verdict, findings, ranks table, frames available."""
    v = doc["verdict"]
    color = _SEV_COLOR.get(v["severity"], "#666")
    rows = "".join(
        f'<tr><td style="color:{_SEV_COLOR[f["severity"]]}">{e(f["severity"])}</td><td><code>{e(f["id"])}</code></td>'
        f'<td style="text-align:left">{e(f["title"])}</td><td>{e(ranks_summary(f["ranks"]))}</td>'
        f"<td>{len(f['evidence'])}</td></tr>"
        for f in doc["findings"]
    )
    findings = (
        f"<table><tr><th>severity</th><th>id</th><th>title</th><th>ranks</th><th>lines</th></tr>{rows}</table>"
        if rows
        else "<p>No findings.</p>"
    )
    frames = ", ".join(f"<code>s.{e(k)}</code> ({n})" for k, n in tables.items())
    return (
        f'<div><div style="border-left:5px solid {color};padding:4px 10px;font-weight:600">{e(v["text"])}</div>'
        f"{findings}<details><summary>ranks × configuration ({len(doc['ranks']['rows'])} rows)</summary>"
        f'{ranks_html(doc, limit=64)}</details><p style="font-size:12px">frames: {frames or "none"}; figures: '
        "<code>s.fig.topology()</code>, <code>s.fig.arrivals()</code>, <code>s.fig.timeline()</code>, "
        "<code>s.fig.hang()</code></p></div>"
    )
