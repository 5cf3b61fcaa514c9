"""CLI stage, `ncclscope diff A B`: what changed between the run that worked and the one that doesn't."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ncclscope.cli import app
from ncclscope.cli.console import progress_printer, safe_console, stdout_console, warn
from ncclscope.cli.options import Quiet, tuning
from ncclscope.errors import EXIT_FINDINGS, EXIT_OK, InputError


class Format(str, Enum):
    text = "text"
    json = "json"
    md = "md"


Side = Annotated[
    str,
    typer.Argument(
        help="A run: log file, directory or glob, .gz, nccl-tests output or -J JSON "
        "(several: comma-separated).",
        show_default=False,
    ),
]
SideTrace = Annotated[
    list[str] | None, typer.Option(help="torch.profiler trace file or directory of that run (repeatable).")
]


def side_paths(spec: str) -> list[str]:
    """One side's inputs: the path/glob as given, or its comma-separated parts when no such path exists."""
    if os.path.exists(spec) or "," not in spec:
        return [spec]
    return [p for p in (s.strip() for s in spec.split(",")) if p]


def _usable(s: Any) -> bool:
    return bool(s.logs.coverage.nccl_lines or not s.nccltests.is_empty or s.traces is not None)


def _redactor(a: Any, b: Any, doc: dict[str, Any]) -> Any:
    from ncclscope.report.redact import Redactor, session_frames

    r = Redactor()
    for s in (a, b):
        r.learn_frames([s.ranks.sort("rank", nulls_last=True)])
    for s in (a, b):
        r.learn_frames(session_frames(s))
    r.learn(doc)
    return r


@app.command()
def diff(
    a: Side,
    b: Side,
    trace_a: SideTrace = None,
    trace_b: SideTrace = None,
    fmt: Annotated[
        Format,
        typer.Option("--format", "-f", help="text (terminal), json, or md (a ticket's Markdown section)."),
    ] = Format.text,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Host names, addresses, user names and pointers -> "
            "consistent pseudonyms (as `report --redact`).",
        ),
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Compare two runs, most likely cause first: exit 0 nothing relevant differs, 1 something does, 2 unusable input."""
    from ncclscope.diff import diff_sessions, render
    from ncclscope.session import analyze as run

    progress = progress_printer(not quiet)
    sessions = []
    for label, spec, trace in (("A", a, trace_a), ("B", b, trace_b)):
        s = run(side_paths(spec), trace_paths=trace or [], progress=progress, tuning=tuning())
        if not _usable(s):
            raise InputError(f"run {label} ({spec}): no NCCL line, nccl-tests table or trace to compare")
        sessions.append(s)
    d = diff_sessions(sessions[0], sessions[1], a_label=a, b_label=b)
    doc = render.view(d)
    if redact:
        doc = render.view(d, _redactor(sessions[0], sessions[1], doc).tree)
    if fmt is Format.text and output is None:
        render.to_terminal(doc, stdout_console())
    else:
        out = render.to_json(doc) if fmt is Format.json else render.to_markdown(doc)
        if fmt is Format.text:  # a text file: the terminal layout without colours
            import io

            con = safe_console(record=True, width=160, file=io.StringIO(), highlight=False, color_system=None)
            render.to_terminal(doc, con)
            out = con.export_text()
        if output is None:
            typer.echo(out, nl=False)
        else:
            from ncclscope.report.write import write_text

            read = [i.path for s in sessions for i in s.logs.inputs]
            write_text(output, out, [*side_paths(a), *side_paths(b), *read])
    for label, s in zip("AB", sessions):
        warn([f"{label}: {note}" for note in s.notes])
    raise typer.Exit(EXIT_FINDINGS if d.relevant else EXIT_OK)
