"""CLI stage, `ncclscope analyze`: read every rank's evidence and print the findings."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from ncclscope.cli import app
from ncclscope.cli.console import echo, progress_printer, say, stdout_console, warn
from ncclscope.cli.options import Quiet, RankMap, TraceDir, parse_rank_map, start_log_workers, tuning
from ncclscope.cli.select import FailOn, FailOnOption, Ignore, Select, chosen_ids, exit_code, filtered
from ncclscope.cli.unusable import says_something, what_was_read
from ncclscope.errors import InputError, StrictModeError

if TYPE_CHECKING:
    from ncclscope.session import Session


class Format(str, Enum):
    text = "text"
    json = "json"


@app.command()
def analyze(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Log files, globs, directories, archives (.tar*, .zip), compressed files, '-' for stdin; traces and dumps too.",
            show_default=False,
        ),
    ] = None,
    trace: TraceDir = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    rank_map: RankMap = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail (exit 1) when some lines match no grammar family.")
    ] = False,
    quiet: Quiet = False,
    select: Select = None,
    ignore: Ignore = None,
    fail_on: FailOnOption = FailOn.error,
) -> None:
    """Diagnose a job from its logs (and traces): exit 0 no error finding, 1 error finding, 2 unusable input,
    3 a bug in ncclscope (`--fail-on` picks the severity that exits 1)."""
    if not paths and not trace:
        raise InputError("nothing to analyze: give log paths and/or --trace DIR")
    ids = chosen_ids(select, ignore)  # a pattern naming no rule fails before any reading
    knobs = tuning()
    start_log_workers(paths or [], trace or [], knobs)
    _stdin_notice(paths or [])

    from ncclscope.report import document_for, json_report
    from ncclscope.session import analyze as run

    s = run(
        paths or [],
        trace_paths=trace or [],
        rank_map=parse_rank_map(rank_map),
        progress=progress_printer(not quiet),
        tuning=knobs,
    )
    if not _read_anything(s):  # every input was skipped (a cap, damage): say why, as unusable input
        warn(s.notes)
        raise InputError("nothing to analyze: no input could be read (see the warnings above)")
    if not says_something(s):  # read, but not one line ncclscope knows: unusable input, not "no problems"
        warn(s.notes)
        raise InputError(what_was_read(s))
    s = filtered(s, ids)
    doc = document_for(s)  # one document, whichever renderer lays it out
    if fmt is Format.json:
        echo(json_report.render_doc(doc))
    else:
        from ncclscope.report import terminal  # Rich: only for the terminal

        terminal.render(doc, stdout_console())
    warn(s.notes)
    if strict and s.logs.coverage.unknown:
        raise StrictModeError(f"--strict: {s.logs.coverage.unknown} line(s) matched no grammar family")
    raise typer.Exit(exit_code(s, fail_on))


def _stdin_notice(paths: list[str]) -> None:
    """`-` typed at a terminal: say that the log is read from the keyboard, or the run seems to hang."""
    import sys

    try:
        at_terminal = "-" in paths and sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # a closed stdin
        return
    if at_terminal:
        say("ncclscope: reading the log from stdin (a terminal): paste it, then Ctrl-D; or pipe it in")


def _read_anything(s: Session) -> bool:
    flight = s.flight is not None and s.flight.dumps.height > 0
    own = bool(s.reports.ras) or s.reports.inspector.height > 0 or s.reports.params.height > 0
    return bool(s.logs.inputs) or s.traces is not None or flight or not s.nccltests.is_empty or own
