"""Report stage: renderers behind one protocol, picked by name or by the output file's suffix.

`render(session, "html")` / `write_report(session, "out.md")` for Markdown (tickets), self-contained
HTML and the stable JSON schema; `redact=True` replaces identifying values in every format.
Renderer modules (and Plotly) are imported only when a report is made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ncclscope.errors import InputError

if TYPE_CHECKING:
    from ncclscope.session import Session

__all__ = ["RENDERERS", "Options", "Renderer", "document_for", "render", "renderer_for", "write_report"]


@dataclass(frozen=True)
class Options:
    """What every renderer is told: the command line that made the report, whether to redact, and the
    Markdown flavour ("markdown", or "jira" for Jira wiki markup; the Markdown renderer's only)."""

    command: str | None = None
    redact: bool = False
    flavor: str = "markdown"


class Renderer(Protocol):
    name: str
    suffixes: tuple[str, ...]

    def render(self, s: Session, options: Options) -> str: ...


def document_for(s: Session, options: Options = Options()) -> dict[str, Any]:
    """The report document of `s` (`report.document.build`), redacted when `options.redact`."""
    from ncclscope.report import document as D
    from ncclscope.report import redact

    doc = D.build(s, D.Provenance(command=options.command, redacted=options.redact))
    if not options.redact:
        return doc
    result: dict[str, Any] = D.redacted(doc, redact.for_session(s, doc))
    return result


class JsonRenderer:
    name = "json"
    suffixes: tuple[str, ...] = (".json",)

    def render(self, s: Session, options: Options) -> str:
        from ncclscope.report import json_report

        return json_report.render_doc(document_for(s, options))


class MarkdownRenderer:
    name = "markdown"
    suffixes: tuple[str, ...] = (".md", ".markdown")

    def render(self, s: Session, options: Options) -> str:
        from ncclscope.report import markdown

        return markdown.render_doc(document_for(s, options), options.flavor)


class HtmlRenderer:
    name = "html"
    suffixes: tuple[str, ...] = (".html", ".htm")

    def render(self, s: Session, options: Options) -> str:
        from ncclscope.report import document as D
        from ncclscope.report import figures, html, redact

        doc = D.build(s, D.Provenance(command=options.command, redacted=options.redact))
        figs = {
            k: json.loads(f.to_json(validate=False, engine="json"))
            for k, f in figures.session_figures(s).items()
        }
        if options.redact:
            r = redact.for_session(s, doc)
            r.learn(figs)
            doc, figs = D.redacted(doc, r), r.tree(figs)
        return html.render_page(doc, figs)


class PerfettoRenderer:
    """Chrome JSON trace for ui.perfetto.dev (`.perfetto.json`); Perfetto's protobuf `.pftrace` is not written."""

    name = "perfetto"
    suffixes: tuple[str, ...] = (".perfetto.json",)

    def render(self, s: Session, options: Options) -> str:
        from ncclscope.report import perfetto, redact

        doc = perfetto.trace_document(s, command=options.command)
        if options.redact:
            r = redact.for_session(s)
            r.learn(doc)
            doc = r.tree(doc)
        return perfetto.dumps(doc)


_ALL: tuple[Renderer, ...] = (PerfettoRenderer(), JsonRenderer(), MarkdownRenderer(), HtmlRenderer())
RENDERERS: dict[str, Renderer] = {r.name: r for r in _ALL}
_ALIASES = {"md": "markdown", "htm": "html"}


def renderer_for(name: str | None = None, path: str | Path | None = None) -> Renderer:
    """The renderer called `name` (json, markdown/md, html, perfetto), else the one for `path`'s suffix."""
    if name:
        key = _ALIASES.get(name.lower(), name.lower())
        if key not in RENDERERS:
            raise InputError(f"unknown report format {name!r}; choose one of {', '.join(sorted(RENDERERS))}")
        return RENDERERS[key]
    # Whole-name endings, so `run.perfetto.json` is a Perfetto trace before it is JSON.
    fname = Path(str(path or "")).name.lower()
    for r in RENDERERS.values():
        if fname.endswith(r.suffixes):
            return r
    known = ", ".join(x for r in RENDERERS.values() for x in r.suffixes)
    if fname.endswith(".pftrace"):
        raise InputError(
            f"{str(path)!r}: the protobuf .pftrace form is not written; name it .perfetto.json "
            "(Perfetto opens the JSON trace)"
        )
    raise InputError(f"cannot tell the report format from {str(path)!r}: name it {known}, or pass --format")


def render(
    s: Session, fmt: str, *, command: str | None = None, redact: bool = False, flavor: str = "markdown"
) -> str:
    """The report as text in format `fmt` (json, markdown, html); `flavor="jira"`: Markdown as Jira markup."""
    return renderer_for(fmt).render(s, Options(command=command, redact=redact, flavor=flavor))


def write_report(
    s: Session,
    path: str | Path,
    *,
    fmt: str | None = None,
    command: str | None = None,
    redact: bool = False,
    flavor: str = "markdown",
) -> Path:
    """Write the report to `path` (format from `fmt` or the suffix) and return the path: atomically,
    and never over a file the analysis read (`report.write`)."""
    from ncclscope.report.write import check_target, write_text

    out = Path(path)
    read = [i.path for i in s.logs.inputs]
    if s.traces is not None:
        read += [str(p) for p in s.traces.ranks["path"].to_list()]
    check_target(out, read)  # before rendering: a refused target costs no work
    text = renderer_for(fmt, out).render(s, Options(command=command, redact=redact, flavor=flavor))
    return write_text(out, text, read)
