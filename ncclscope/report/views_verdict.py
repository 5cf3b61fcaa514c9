"""Report stage, verdict view: the diagnosis as the report document's `verdict` section.

One sentence (`text`) for the line users read, and the structure behind it for every renderer and
the JSON: the cause's finding, ranks, hosts, confidence, the echoes folded under it, the chain of
reasoning with its evidence, and any further independent causes. `folded` maps each echo's finding
index to its cause's, so renderers can fold findings without reasoning again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclscope.diagnosis import Cause, Diagnosis
from ncclscope.diagnosis.model import no_period
from ncclscope.report.section import Section

if TYPE_CHECKING:
    from rich.console import Console

    from ncclscope.session import Session

_SEVERITIES = ("error", "warning", "info")


def section(s: Session) -> dict[str, Any]:
    """The verdict section of the report document."""
    d = s.diagnosis
    top = _top_severity(s)
    v = d.verdict
    base: dict[str, Any] = {"severity": top, "text": text(s, d)}
    if v is None:
        return {
            **base,
            "finding": None,
            "index": None,
            "ranks": [],
            "hosts": [],
            "confidence": None,
            "confidence_reason": None,
            "echoes": [],
            "chain": [],
            "causes": [],
            "folded": {},
        }
    stuck = list(d.stuck_ranks)
    return {
        **base,
        **_cause(v),
        **(_job_level(d, stuck) if stuck else {}),
        "causes": [_cause(c) for c in d.causes[1:]],
        "folded": {str(e.index): c.event.index for c in d.causes for e in c.echoes},
    }


def text(s: Session, d: Diagnosis) -> str:
    """The verdict sentence: the cause (or leading symptom/risk) with what it explains, else a clean bill."""
    v = d.verdict
    if v is None:
        infos = sum(f.severity == "info" for f in s.findings)
        if infos:
            return f"No error or warning findings in the evidence given ({infos} for information)."
        return "No problems found in the evidence given."
    stuck = list(d.stuck_ranks)
    if stuck:  # several groups of ranks stuck on their own: one job-level sentence naming them all
        where = "; ".join(
            f"rank(s) {', '.join(map(str, c.ranks))} in {', '.join(c.event.groups)}" for c in d.causes
        )
        waiting = sum(len(c.echoes) for c in d.causes)
        return (
            f"{v.event.severity.upper()}: Ranks {', '.join(map(str, stuck))} hold the job up, each on its own "
            f"({where}); {waiting} other finding(s) wait on them."
        )
    head = {"cause": "", "symptom": "", "consequence": "Only an echo is visible: ", "risk": ""}[v.event.klass]
    more = len(d.causes) - 1
    extra = f" (+{more} independent cause{'s' if more > 1 else ''})" if more else ""
    sev = v.event.severity.upper()
    return f"{sev}: {head}{no_period(v.sentence)}{extra}."


def _job_level(d: Diagnosis, stuck: list[int]) -> dict[str, Any]:
    """Several independently stuck rank sets read as one verdict: every cause's ranks and echoes, and the
    least confidence among them."""
    order = ("low", "medium", "high")
    least = min(d.causes, key=lambda c: order.index(c.confidence))
    return {
        "ranks": stuck,
        "echoes": [
            {"finding": e.finding_id, "index": e.index, "title": e.title} for c in d.causes for e in c.echoes
        ],
        "confidence": least.confidence,
        "confidence_reason": f"{len(d.causes)} rank sets stuck on their own; the least sure of them: "
        + least.confidence_reason,
    }


def _cause(c: Cause) -> dict[str, Any]:
    return {
        "finding": c.event.finding_id,
        "index": c.event.index,
        "class": c.event.klass,
        "kind": c.event.kind,
        "title": c.title,
        "ranks": list(c.ranks),
        "hosts": list(c.hosts),
        "confidence": c.confidence,
        "confidence_reason": c.confidence_reason,
        "echoes": [{"finding": e.finding_id, "index": e.index, "title": e.title} for e in c.echoes],
        "chain": [st.to_json() for st in c.chain],
    }


def _top_severity(s: Session) -> str:
    sevs = {f.severity for f in s.findings}
    return next((sev for sev in _SEVERITIES if sev in sevs), "ok")


def fold(doc: dict[str, Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The document's findings for a renderer: each cause (verdict first) with its echoes under it,
    then every other finding in report order with no echoes (those folded under a cause are not
    repeated)."""
    v, findings = doc["verdict"], doc["findings"]
    if v.get("index") is None:
        return [(f, []) for f in findings]
    causes = [v, *v["causes"]]
    heads = [c["index"] for c in causes]
    folded = {e["index"] for c in causes for e in c["echoes"]}
    out = [(findings[c["index"]], [findings[e["index"]] for e in c["echoes"]]) for c in causes]
    return out + [(f, []) for i, f in enumerate(findings) if i not in folded and i not in heads]


def chain_markdown(doc: dict[str, Any]) -> list[str]:
    """The verdict's chain of reasoning, a quoted list with each step's cited lines (under the verdict line)."""
    from ncclscope.report.facts import cite
    from ncclscope.report.md_text import code
    from ncclscope.report.md_text import text as md

    v = doc["verdict"]
    if not v.get("chain"):
        return []
    out = [
        f"> **Why we think so** ({md(str(v['confidence']))} confidence: {md(str(v['confidence_reason']))}):",
        ">",
    ]
    for st in v["chain"]:
        at = ", ".join(cite(x) for x in st["evidence"][:2])
        out.append(f"> - {md(st['text'])}" + (f" ({code(at)})" if at else ""))
    return out + [""]


def chain_terminal(doc: dict[str, Any], con: Console) -> None:
    """The verdict's chain of reasoning, each step with the line it cites."""
    from ncclscope.report.facts import cite
    from ncclscope.report.safe_text import escape

    v = doc["verdict"]
    if not v.get("chain"):
        return
    con.print(
        f"[b]why we think so[/b] ({escape(str(v['confidence']))} confidence: {escape(str(v['confidence_reason']))}):"
    )
    for st in v["chain"]:
        at = ", ".join(cite(x) for x in st["evidence"][:2])
        con.print(f"  {escape(st['text'])}" + (f" [dim]({escape(at)})[/dim]" if at else ""))


# The page header draws the verdict in HTML (`html.summary_html`); its chain follows the verdict line in
# Markdown and comes before the findings on a terminal.
SECTION = Section(
    "verdict",
    lambda s, _p: section(s),
    "the diagnosis: its sentence, cause, ranks, confidence, echoes and chain",
    markdown=chain_markdown,
    terminal=chain_terminal,
)
