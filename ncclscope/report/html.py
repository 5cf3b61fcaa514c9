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

from ncclscope.report import views_health, views_nccltests, views_verdict
from ncclscope.report.facts import cite, printable, ranks_summary
from ncclscope.report.html_tables import hang_html, provenance_html, ranks_html

MAX_EVIDENCE = 50
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
    index = {id(f): i for i, f in enumerate(doc["findings"])}
    out = []
    for f, echoes in views_verdict.fold(doc):
        out.append(_finding(index[id(f)], f))
        if echoes:
            inner = "".join(_finding(index[id(x)], x) for x in echoes)
            out.append(
                f'<details class="echoes"><summary>{len(echoes)} finding(s) folded under it (its echoes)</summary>'
                f"{inner}</details>"
            )
    return "\n".join(out)


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


def summary_html(doc: dict[str, Any]) -> str:
    """Verdict, counts, findings and ranks: the notebook's rich repr and the top of the report."""
    v = doc["verdict"]
    chips = "".join(
        f'<span class="sev-{k}">{doc["counts"].get(k, 0)} {k}</span>' for k in ("error", "warning", "info")
    )
    steps = "".join(
        f"<li>{e(st['text'])}"
        + "".join(f' <span class="loc">{e(cite(x))}</span>' for x in st["evidence"][:2])
        + "</li>"
        for st in v.get("chain", [])
    )
    chain = (
        f'<details class="chain" open><summary>Why we think so ({e(str(v["confidence"]))} confidence: '
        f"{e(str(v['confidence_reason']))})</summary><ol>{steps}</ol></details>"
        if steps
        else ""
    )
    return (
        f'<div class="verdict {e(v["severity"])}">{e(v["text"])}</div>{chain}<div class="chips">{chips}</div>'
    )


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
        _section("health", "Health: what was checked", views_health.html(doc)),
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
