"""Run stage, diagnosis: when the command has ended, analyse what it left (`session.analyze`) and write
report.md, report.html and report.json beside it.

A wrapper alone in `--out` analyses all of it and writes the reports there; one of several (nodes or
tasks sharing `--out`) analyses its own directory, since the others may still be writing:
`ncclscope analyze DIR` reads them all once every node is done.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from ncclscope.errors import NcclscopeError
from ncclscope.run.layout import RunLayout

FORMATS = (("report.md", "markdown"), ("report.html", "html"), ("report.json", "json"))


@dataclass(frozen=True)
class Diagnosis:
    scope: Path  # what was analysed
    verdict: str
    severity: str  # error | warning | info | ok
    reports: tuple[Path, ...] = ()
    has_errors: bool = False
    notes: tuple[str, ...] = ()


def scope_of(lay: RunLayout) -> Path:
    """The whole run directory when this wrapper's is the only one in it, else its own."""
    others = [d for d in lay.out_dir.iterdir() if d.is_dir() and not d.name.startswith(".")]
    alone = lay.task is None and [d.resolve() for d in others] == [lay.node_dir.resolve()]
    return lay.out_dir if alone else lay.node_dir


def diagnose(lay: RunLayout) -> Diagnosis:
    """Analyse and write the three reports; a run that left nothing readable gives a verdict saying so."""
    from ncclscope.report import document, write_report
    from ncclscope.session import analyze

    scope = scope_of(lay)
    try:
        s = analyze([str(scope)])
    except NcclscopeError as e:
        return Diagnosis(scope, f"Nothing to diagnose: {e}", "ok", notes=(str(e),))
    command = shlex.join(["ncclscope", "analyze", str(scope)])
    written = tuple(write_report(s, scope / name, fmt=fmt, command=command) for name, fmt in FORMATS)
    top = next(
        (sev for sev in ("error", "warning", "info") if any(f.severity == sev for f in s.findings)), "ok"
    )
    return Diagnosis(scope, document.verdict(s), top, written, s.has_errors, s.notes)
