"""CLI stage, `ncclscope run -- <command>`: run the user's own job (torchrun, srun, mpirun, python …)
with its evidence switched on, diagnose it when it ends, and exit with the job's own exit status.

ncclscope's own lines go to stderr, prefixed `ncclscope run:`; the job's stdout and stderr pass
through unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncclscope.cli import app
from ncclscope.cli.console import stderr_console
from ncclscope.cli.options import Quiet

if TYPE_CHECKING:
    from ncclscope.run import Prepared, RunLayout

PREFIX = "ncclscope run: "


@app.command(
    no_args_is_help=True,
    context_settings={"allow_interspersed_args": False},
)
def run(
    command: Annotated[
        list[str],
        typer.Argument(
            help="The command to run, after `--` (torchrun …, srun …, python train.py).", show_default=False
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Run directory; this node writes under DIR/<host>/ [default: ./ncclscope-run-<UTC time>].",
            show_default=False,
        ),
    ] = None,
    coll: Annotated[
        bool, typer.Option("--coll", help="Add COLL to NCCL_DEBUG_SUBSYS (one line per collective; large).")
    ] = False,
    no_fr: Annotated[
        bool, typer.Option("--no-fr", help="Leave the Flight Recorder and watchdog settings alone.")
    ] = False,
    stacks: Annotated[
        bool,
        typer.Option(
            "--stacks",
            help="When the job prints nothing for --stall-after seconds, one `py-spy dump` per Python "
            "process (rank from its RANK) into DIR/<host>/stacks/ (needs py-spy, and ptrace allowed).",
        ),
    ] = False,
    stall_after: Annotated[
        float,
        typer.Option(
            "--stall-after", min=1, help="Seconds without new output that count as a stall (--stacks)."
        ),
    ] = 120.0,
    do_analyze: Annotated[
        bool,
        typer.Option(
            "--analyze/--no-analyze", help="Diagnose the run and write report.md/.html/.json when it ends."
        ),
    ] = True,
    snapshot: Annotated[
        bool,
        typer.Option(
            "--snapshot/--no-snapshot",
            help="Record versions, topology and interfaces into DIR/<host>/snapshot.md beside the job.",
        ),
    ] = True,
    quiet: Quiet = False,
) -> None:
    """Run a job with NCCL/PyTorch evidence switched on (your own settings win), record the node, then
    diagnose it. Exits with the job's exit status (128+N when a signal N ended it)."""
    from ncclscope.run import RunOptions, prepare, record

    opts = RunOptions(
        command=tuple(command),
        out_dir=out or Path(f"ncclscope-run-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"),
        coll=coll,
        flight=not no_fr,
        stacks=stacks,
        probes=None if snapshot else (),
        stall_s=stall_after,
    )
    p = prepare(opts)
    err = stderr_console()

    def say(text: str) -> None:
        err.print(PREFIX + text, markup=False, highlight=False, soft_wrap=True)

    say(f"recording into {p.layout.node_dir}")
    if not quiet:
        say_plan(p, say)
    for note in p.notes:  # evidence that will not be in the run directory: said even with --quiet
        say(f"note: {note}")
    sys.stdout.flush()
    rec = record(p, echo_out=sys.stdout.buffer, echo_err=sys.stderr.buffer)
    e = rec.ended
    how = f"killed by {e.signal}" if e.signal else f"exited with status {e.returncode}"
    forwarded = f"; forwarded {', '.join(e.forwarded)}" if e.forwarded else ""
    say(f"the command {how} after {e.elapsed_s:.1f} s{forwarded}")
    for path in rec.stacks:
        say(f"stacks: {path}")
    for note in rec.notes[len(p.notes) :]:  # the ones said before the command started come first
        say(f"note: {note}")
    if do_analyze:
        diagnose_and_say(rec.layout, say)
    else:
        say(f"next: ncclscope analyze {opts.out_dir}")
    raise typer.Exit(e.exit_status)


def say_plan(p: Prepared, say: Callable[[str], None], *, kept_only: bool = False) -> None:
    """Each evidence variable as `set` or `kept … (yours)`, and the torchrun options added."""
    for c in p.choices:
        if c.action == "kept":
            say(f"kept {', '.join(f'{k}={v}' for k, v in c.user)} (yours)")
        elif not kept_only:
            say(f"set  {c.setting.names[0]}={c.value}" + _aliases(c.setting.names))
    if kept_only:
        n = sum(c.action == "set" for c in p.choices)
        say(f"set {n} evidence variables where you had not (listed in {p.layout.manifest})")
    elif p.launch.added:
        say("torchrun options added: " + " ".join(p.launch.added))


def diagnose_and_say(layout: RunLayout, say: Callable[[str], None]) -> None:
    """Diagnose and print the verdict. Whatever goes wrong here (Ctrl-C, unusable evidence, a bug in
    the analysis), `run` still exits with the job's status: it is a prefix in batch scripts."""
    from ncclscope.run import diagnose

    try:
        d = diagnose(layout)
    except KeyboardInterrupt:
        say(f"analysis interrupted; the evidence is in {layout.node_dir}")
        return
    except Exception as e:  # noqa: BLE001 - the job's status must reach the caller whatever the analysis did
        first = next((ln for ln in str(e).splitlines() if ln.strip()), "")[:300]
        say(f"the analysis failed ({type(e).__name__}: {first}); the evidence is in {layout.node_dir}")
        return
    say(f"verdict: {d.verdict}")
    if d.reports:
        say("reports: " + ", ".join(str(r) for r in d.reports))


def _aliases(names: tuple[str, ...]) -> str:
    return f" (and {', '.join(names[1:])})" if len(names) > 1 else ""
