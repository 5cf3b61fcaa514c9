"""CLI stage, `ncclscope report`: write a Markdown, HTML or JSON report for a bug ticket."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from ncclscope.cli import app
from ncclscope.cli.console import echo, progress_printer, stderr_console, warn
from ncclscope.cli.options import Paths, Quiet, RankMap, TraceDir, parse_rank_map, start_log_workers, tuning
from ncclscope.cli.select import FailOn, FailOnOption, Ignore, Select, chosen_ids, exit_code, filtered
from ncclscope.cli.unusable import says_something, what_was_read
from ncclscope.errors import InputError
from ncclscope.report.safe_text import printable


def _command_line(
    paths: list[str],
    output: Path,
    trace: list[str],
    fmt: str | None,
    redact: bool,
    rank_map: str | None,
    chosen: list[str] | None = None,
    flavor: str = "markdown",
) -> str:
    """The command as a user would type it (rebuilt from the options, whatever the entry point)."""
    args = ["ncclscope", "report", *paths]
    for t in trace:
        args += ["--trace", t]
    args += ["-o", str(output)]
    if fmt:
        args += ["--format", fmt]
    if flavor != "markdown":
        args += ["--flavor", flavor]
    if rank_map:
        args += ["--rank-map", rank_map]
    if redact:
        args.append("--redact")
    return shlex.join(args + (chosen or []))


@app.command()
def report(
    paths: Paths,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Report file: .md, .html, .json or .perfetto.json "
            "(the suffix picks the format); '-' for stdout with --format.",
        ),
    ],
    trace: TraceDir = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="markdown, html, json or perfetto (default: from the output suffix)."
        ),
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace host names, IP/MAC addresses, user names in "
            "paths and pointers by consistent pseudonyms.",
        ),
    ] = False,
    flavor: Annotated[
        str,
        typer.Option(
            "--flavor",
            help="Markdown flavour: markdown (GitHub/GitLab) or jira (Jira wiki markup: h2., ||head||, "
            "{noformat}).",
        ),
    ] = "markdown",
    rank_map: RankMap = None,
    quiet: Quiet = False,
    select: Select = None,
    ignore: Ignore = None,
    fail_on: FailOnOption = FailOn.never,
) -> None:
    """Write a report for a bug ticket (Markdown), a self-contained offline page (HTML), JSON or a Perfetto
    trace. Exit 0 once written (`--fail-on` error|warning: 1 when such a finding is reported)."""
    ids = chosen_ids(select, ignore)
    knobs = tuning()
    start_log_workers(paths, trace or [], knobs)
    from ncclscope.report import render, renderer_for, write_report
    from ncclscope.session import analyze as run

    to_stdout = str(output) == "-"
    if to_stdout and not fmt:
        raise InputError(
            "writing the report to stdout (-o -) needs --format markdown, html, json or perfetto"
        )
    renderer = renderer_for(fmt, None if to_stdout else output)  # a bad format fails before any reading
    flavor = _flavor(flavor, renderer.name)
    if not to_stdout:  # `-o rank1.log` naming an input (or a directory) fails before any reading too
        from ncclscope.report.write import check_target

        check_target(output, [*paths, *(trace or [])])
    progress = progress_printer(not quiet)
    s = run(
        paths, trace_paths=trace or [], rank_map=parse_rank_map(rank_map), progress=progress, tuning=knobs
    )
    if not says_something(s):  # exit 2, and no report that would call the job healthy
        warn(s.notes)
        raise InputError(what_was_read(s))
    s = filtered(s, ids)
    chosen = [f"--select={v}" for v in select or []] + [f"--ignore={v}" for v in ignore or []]
    command = _command_line(paths, output, trace or [], fmt, redact, rank_map, chosen, flavor)
    if progress:
        progress(f"{s.ranks.height} ranks, {len(s.findings)} findings; rendering the {renderer.name} report")
    if to_stdout:
        text = render(s, renderer.name, command=command, redact=redact, flavor=flavor)
        # Log text reaches a terminal inert (\uXXXX is also a valid JSON escape); HTML embeds it escaped already.
        echo(text if renderer.name == "html" else printable(text))
    else:
        out = write_report(s, output, fmt=renderer.name, command=command, redact=redact, flavor=flavor)
        if not quiet:
            stderr_console().print(
                f"wrote {out} ({out.stat().st_size:,} bytes)", markup=False, highlight=False
            )
    warn(s.notes)
    raise typer.Exit(exit_code(s, fail_on))


def _flavor(name: str, fmt: str) -> str:
    """The Markdown flavour asked for, checked before any reading (only Markdown has flavours)."""
    from ncclscope.report.md_text import FLAVORS

    key = name.lower()
    if key not in FLAVORS:
        raise InputError(f"unknown --flavor {name!r}; choose one of {', '.join(FLAVORS)}")
    if key != "markdown" and fmt != "markdown":
        raise InputError(f"--flavor {key} applies to Markdown reports only (this one is {fmt})")
    return key
