"""Report stage, HTML: one self-contained, offline page (Plotly inlined, no network requests).

The body is built from the report document with every string escaped; figures and the document
itself are embedded as JSON inside `<script type="application/json">` with `<`, `>` and `&`
escaped, so log text can never close a tag. Same document → same bytes: fixed element ids,
sorted keys, no timestamps.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from string import Template
from typing import Any

from ncclscope.report import sections
from ncclscope.report.facts import cite, ranks_summary
from ncclscope.report.html_tables import e
from ncclscope.report.section_ranks import ranks_html

FIGURES = [
    ("fig-hang", "Hang view"),
    ("fig-topology", "Topology"),
    ("fig-arrivals", "Collective arrivals"),
    ("fig-timeline", "Per-rank timeline"),
]


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


# --- header -----------------------------------------------------------------------------------------


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
    """The whole page: `figures` maps a FIGURES id to Plotly's JSON (data, layout). The blocks and the
    menu come from `report.sections.SECTIONS`: each section with an HTML layout that has something to
    show is a block, and a menu entry when it has a menu label."""
    figs = {fid: _figure(fid, figures[fid]) for fid, _ in FIGURES if fid in figures}
    blocks = [(sec, sec.html(doc, figs)) for sec in sections.SECTIONS if sec.html is not None]
    shown = [(sec, inner) for sec, inner in blocks if inner]
    menu = "".join(f'<a href="#{sec.element_id}">{e(sec.menu)}</a>' for sec, _ in shown if sec.menu)
    body = [
        "<header><h1>ncclscope report</h1>" + summary_html(doc) + f"<nav>{menu}</nav></header><main>",
        *(_section(sec.element_id, sec.title, inner) for sec, inner in shown),
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
