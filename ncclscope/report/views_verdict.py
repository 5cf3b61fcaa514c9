"""Report stage, verdict view: the diagnosis as the report document's `verdict` section.

One sentence (`text`) for the line users read, and the structure behind it for every renderer and
the JSON: the cause's finding, ranks, hosts, confidence, the echoes folded under it, the chain of
reasoning with its evidence, and any further independent causes. `folded` maps each echo's finding
index to its cause's, so renderers can fold findings without reasoning again.

Data: a `VerdictSection` (typed; the JSON output's `Verdict` plus the renderer-only `folded`), stored in
the document as its tree and read back typed by the layouts (`of(doc)`, after any redaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import msgspec

from ncclscope.diagnosis import Cause, Diagnosis
from ncclscope.diagnosis.model import Confidence, EventClass, no_period
from ncclscope.report.cited import Evidence, at
from ncclscope.report.section import Document, Section

if TYPE_CHECKING:
    from rich.console import Console

    from ncclscope.session import Session

T = TypeVar("T")
TopSeverity = Literal["error", "warning", "info", "ok"]  # the most severe finding's; ok: no finding


class Echo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A finding folded under a cause: it is explained by it."""

    finding: Annotated[str, msgspec.Meta(description="the echo's rule id")]
    index: Annotated[int, msgspec.Meta(description="its position in `findings`")]
    title: str


class ChainStep(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One step of the chain of reasoning a person can check: a sentence and the lines it cites."""

    text: str
    evidence: tuple[Evidence, ...]


class CauseView(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename={"klass": "class"}):
    """A further cause, independent of the verdict's: its finding, who, how sure, what it explains."""

    finding: Annotated[str, msgspec.Meta(description="the cause's rule id")]
    index: Annotated[int, msgspec.Meta(description="its position in `findings`")]
    klass: Annotated[EventClass, msgspec.Meta(description="what kind of fact the finding is")]
    kind: Annotated[str, msgspec.Meta(description="the diagnosis' knowledge entry it was read as")]
    title: str
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    confidence: Confidence
    confidence_reason: str
    echoes: tuple[Echo, ...]
    chain: tuple[ChainStep, ...]


class Verdict(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    omit_defaults=True,
    rename={"klass": "class"},
):
    """The diagnosis: the cause nothing else explains (finding, ranks, hosts, confidence), the findings
    folded under it as its echoes, the chain of reasoning with its evidence, and further independent causes.
    `finding` is null when no failure or risk was found (then `class`, `kind` and `title` are left out)."""

    severity: Annotated[TopSeverity, msgspec.Meta(description="the most severe finding's severity; ok: none")]
    text: Annotated[str, msgspec.Meta(description="the verdict sentence")]
    finding: str | None
    index: int | None
    klass: EventClass | None = None
    kind: str | None = None
    title: str | None = None
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    confidence: Confidence | None
    confidence_reason: str | None
    echoes: tuple[Echo, ...]
    chain: tuple[ChainStep, ...]
    causes: tuple[CauseView, ...]


class VerdictSection(Verdict, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The document's verdict: the JSON's `Verdict` plus, for renderers only, each echo's finding index
    mapped to its cause's (`folded`)."""

    folded: dict[str, int]


def section(s: Session) -> VerdictSection:
    """The verdict section of the report document."""
    d = s.diagnosis
    top = _top_severity(s)
    v = d.verdict
    if v is None:
        return VerdictSection(
            severity=top,
            text=text(s, d),
            finding=None,
            index=None,
            ranks=(),
            hosts=(),
            confidence=None,
            confidence_reason=None,
            echoes=(),
            chain=(),
            causes=(),
            folded={},
        )
    c = _cause(v)
    stuck = d.stuck_ranks
    if stuck:  # several independently stuck rank sets read as one verdict (`_job_level`)
        ranks, echoes, confidence, reason = _job_level(d, tuple(stuck))
    else:
        ranks, echoes, confidence, reason = c.ranks, c.echoes, c.confidence, c.confidence_reason
    return VerdictSection(
        severity=top,
        text=text(s, d),
        finding=c.finding,
        index=c.index,
        klass=c.klass,
        kind=c.kind,
        title=c.title,
        ranks=ranks,
        hosts=c.hosts,
        confidence=confidence,
        confidence_reason=reason,
        echoes=echoes,
        chain=c.chain,
        causes=tuple(_cause(x) for x in d.causes[1:]),
        folded={str(e.index): x.event.index for x in d.causes for e in x.echoes},
    )


def of(doc: Document) -> VerdictSection:
    """The section's data, typed, from a (possibly redacted) document."""
    return msgspec.convert(doc["verdict"], VerdictSection)


def for_json(v: VerdictSection) -> Verdict:
    """The verdict of the JSON output: the section less the renderers' `folded` map."""
    return Verdict(**{f: getattr(v, f) for f in Verdict.__struct_fields__})


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


def _job_level(
    d: Diagnosis, stuck: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[Echo, ...], Confidence, str]:
    """Several independently stuck rank sets read as one verdict: every cause's ranks and echoes, and the
    least confidence among them (ranks, echoes, confidence, its reason)."""
    order = ("low", "medium", "high")
    least = min(d.causes, key=lambda c: order.index(c.confidence))
    echoes = tuple(Echo(e.finding_id, e.index, e.title) for c in d.causes for e in c.echoes)
    reason = (
        f"{len(d.causes)} rank sets stuck on their own; the least sure of them: " + least.confidence_reason
    )
    return stuck, echoes, least.confidence, reason


def _cause(c: Cause) -> CauseView:
    return CauseView(
        finding=c.event.finding_id,
        index=c.event.index,
        klass=c.event.klass,
        kind=c.event.kind,
        title=c.title,
        ranks=c.ranks,
        hosts=c.hosts,
        confidence=c.confidence,
        confidence_reason=c.confidence_reason,
        echoes=tuple(Echo(e.finding_id, e.index, e.title) for e in c.echoes),
        chain=tuple(
            ChainStep(st.text, tuple(Evidence(x.path, x.line, x.text) for x in st.evidence)) for st in c.chain
        ),
    )


def _top_severity(s: Session) -> TopSeverity:
    sevs: set[TopSeverity] = {f.severity for f in s.findings}
    order: tuple[TopSeverity, ...] = ("error", "warning", "info")
    return next((sev for sev in order if sev in sevs), "ok")


def fold(v: Verdict, findings: Sequence[T]) -> list[tuple[T, list[T]]]:
    """The findings for a renderer: each cause (verdict first) with its echoes under it, then every other
    finding in report order with no echoes (those folded under a cause are not repeated)."""
    if v.index is None:
        return [(f, []) for f in findings]
    causes = [(v.index, v.echoes), *((c.index, c.echoes) for c in v.causes)]
    heads = {i for i, _ in causes}
    folded = {e.index for _, echoes in causes for e in echoes}
    out = [(findings[i], [findings[e.index] for e in echoes]) for i, echoes in causes]
    return out + [(f, []) for i, f in enumerate(findings) if i not in folded and i not in heads]


def chain_markdown(doc: Document) -> list[str]:
    """The verdict's chain of reasoning, a quoted list with each step's cited lines (under the verdict line)."""
    from ncclscope.report.md_text import code
    from ncclscope.report.md_text import text as md

    v = of(doc)
    if not v.chain:
        return []
    out = [
        f"> **Why we think so** ({md(str(v.confidence))} confidence: {md(str(v.confidence_reason))}):",
        ">",
    ]
    for st in v.chain:
        where = ", ".join(at(x) for x in st.evidence[:2])
        out.append(f"> - {md(st.text)}" + (f" ({code(where)})" if where else ""))
    return out + [""]


def chain_terminal(doc: Document, con: Console) -> None:
    """The verdict's chain of reasoning, each step with the line it cites."""
    from ncclscope.report.safe_text import escape

    v = of(doc)
    if not v.chain:
        return
    con.print(
        f"[b]why we think so[/b] ({escape(str(v.confidence))} confidence: {escape(str(v.confidence_reason))}):"
    )
    for st in v.chain:
        where = ", ".join(at(x) for x in st.evidence[:2])
        con.print(f"  {escape(st.text)}" + (f" [dim]({escape(where)})[/dim]" if where else ""))


# The page header draws the verdict in HTML (`html.summary_html`); its chain follows the verdict line in
# Markdown and comes before the findings on a terminal.
SECTION = Section(
    "verdict",
    lambda s, _p: section(s),
    "the diagnosis: its sentence, cause, ranks, confidence, echoes and chain",
    schema=VerdictSection,
    markdown=chain_markdown,
    terminal=chain_terminal,
)
