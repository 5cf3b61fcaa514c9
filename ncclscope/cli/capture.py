"""CLI stage, `ncclscope capture`: `ncclscope run` applied to the bundled torchrun job (optionally with
injected faults): per-rank logs, traces, Flight Recorder dumps, manifests, run's console.log, node
snapshot and run.json in one directory, then the diagnosis (report.md/.html/.json) as `run` makes it.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncclscope.capture import CaptureResult, Fault
from ncclscope.capture.config import DEFAULT_TIMEOUT_S
from ncclscope.cli import app
from ncclscope.cli.console import stderr_console, stdout_console
from ncclscope.cli.options import Quiet
from ncclscope.cli.run import diagnose_and_say, say_plan
from ncclscope.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError

if TYPE_CHECKING:
    from ncclscope.run import Prepared

PREFIX = "ncclscope capture: "


class BackendChoice(str, Enum):
    auto = "auto"
    nccl = "nccl"
    gloo = "gloo"


INJECT_HELP = (
    "Fault to inject (repeatable): straggler:rank=R,delay_ms=D | hang:rank=R | mismatch:rank=R | "
    "crash:rank=R[,code=C] | oom:rank=R[,extra=yes] | cuda-error:rank=R[,extra=yes] | gil:rank=R | "
    "iface:rank=R,name=lo | no-ib | no-p2p (every rank; rank=R,asymmetric=yes: a transport mismatch). "
    "hang (a sleep) / mismatch / crash / oom / cuda-error / gil (the GIL held in a C call) take at=STEP; "
    "extra=yes: the error path calls a 1-element all_reduce; rank=1+3 names several ranks."
)


@app.command(no_args_is_help=False)
def capture(
    torchrun_args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Extra torchrun arguments, after `--` (e.g. -- --rdzv-endpoint host:29500).",
            show_default=False,
        ),
    ] = None,
    nproc_per_node: Annotated[
        int | None,
        typer.Option(
            "--nproc-per-node",
            help="Ranks per node [default: 2, or the --layout's world size on one node].",
            show_default=False,
        ),
    ] = None,
    nnodes: Annotated[str, typer.Option("--nnodes", help="Nodes: N or MIN:MAX (torchrun's form).")] = "1",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="New or empty output directory [default: ./ncclscope-capture-<UTC time>].",
            show_default=False,
        ),
    ] = None,
    inject: Annotated[
        list[str] | None, typer.Option("--inject", "-i", help=INJECT_HELP, show_default=False)
    ] = None,
    backend: Annotated[
        BackendChoice,
        typer.Option("--backend", help="nccl (GPUs) or gloo (CPU); auto picks nccl when a GPU is visible."),
    ] = BackendChoice.auto,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Process-group (collective) timeout in seconds; a hang ends after it. Keep it "
            "well under torchrun's 30 s SIGTERM-to-SIGKILL grace.",
        ),
    ] = DEFAULT_TIMEOUT_S,
    run_timeout: Annotated[
        float | None,
        typer.Option(
            "--run-timeout",
            help="Outer bound on the whole run, in seconds [default: 2 × timeout + 120].",
            show_default=False,
        ),
    ] = None,
    coll: Annotated[
        bool, typer.Option("--coll", help="Add COLL to NCCL_DEBUG_SUBSYS (one line per collective).")
    ] = False,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            help="Extra KEY=VALUE for every rank (repeatable); wins over capture's own settings and "
            "over the variables a fault sets.",
            show_default=False,
        ),
    ] = None,
    allow_shared_gpu: Annotated[
        bool,
        typer.Option(
            "--allow-shared-gpu",
            help="NCCL with more ranks per node than GPUs: run it anyway (ranks share GPUs), "
            "to capture NCCL's duplicate-GPU failure on purpose.",
        ),
    ] = False,
    node_per_rank: Annotated[
        bool,
        typer.Option(
            "--node-per-rank",
            help="Give every rank a host id of its own (NCCL_HOSTID=ncclscope-node<R>): NCCL sees one "
            "node per rank and connects ranks over its network transport, as between nodes; with "
            "--allow-shared-gpu, several ranks then run on one GPU on any NCCL release.",
        ),
    ] = False,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            help="Process groups, Megatron-style: tp=2,dp=2[,cp=N][,ep=N][,etp=yes]. World size = the product; "
            "every step runs collectives in every group.",
            show_default=False,
        ),
    ] = None,
    snapshot: Annotated[
        bool,
        typer.Option(
            "--snapshot/--no-snapshot",
            help="Record versions, topology and interfaces into snapshot.md beside the job (as `run`).",
        ),
    ] = True,
    do_analyze: Annotated[
        bool,
        typer.Option(
            "--analyze/--no-analyze",
            help="Diagnose the capture and write report.md/.html/.json when it ends.",
        ),
    ] = True,
    quiet: Quiet = False,
) -> None:
    """Run a small DDP + collectives job under torchrun through `ncclscope run` (the same evidence
    variables, console.log, node snapshot and diagnosis) and capture its evidence. Exit 0: evidence
    captured (a job that fails under an injected fault counts); 1: the job failed with no fault
    injected; 2: bad options, torch missing, a machine that cannot run the job (no NCCL, no GPU,
    fewer GPUs than ranks), or no evidence at all."""
    from ncclscope.capture import CaptureOptions, parse_faults, resolve_backend, run_capture
    from ncclscope.capture.mesh import parse_mesh

    faults = parse_faults(inject or [])
    mesh = parse_mesh(layout) if layout is not None else None
    if nproc_per_node is None:
        nproc_per_node = mesh.world_size if mesh is not None and nnodes == "1" else 2
    opts = CaptureOptions(
        out_dir=out or Path(f"ncclscope-capture-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"),
        nproc_per_node=nproc_per_node,
        nnodes=nnodes,
        backend=resolve_backend(backend.value),
        faults=faults,
        timeout_s=timeout,
        run_timeout_s=run_timeout,
        coll=coll,
        extra_env=_parse_env(env or []),
        torchrun_args=tuple(torchrun_args or ()),
        allow_shared_gpu=allow_shared_gpu,
        node_per_rank=node_per_rank,
        mesh=mesh,
        snapshot=snapshot,
    )
    err = stderr_console()

    def say(text: str) -> None:
        err.print(PREFIX + text, markup=False, highlight=False, soft_wrap=True)

    def announce(p: Prepared) -> None:
        say(f"recording into {p.layout.node_dir}")
        if not quiet:
            say_plan(p, say, kept_only=True)
        sys.stdout.flush()

    echo = None if quiet else getattr(sys.stderr, "buffer", None)  # the job's output; stdout: the summary
    res = run_capture(opts, echo_out=echo, echo_err=echo, announce=announce)
    _summary(res, faults, opts.out_dir)
    for note in res.notes:
        err.print(f"warning: {note}", markup=False, soft_wrap=True)
    if not res.files.get("manifest"):
        raise typer.Exit(EXIT_BAD_INPUT)
    if do_analyze and res.record is not None:
        diagnose_and_say(res.record.layout, say)
    raise typer.Exit(EXIT_FINDINGS if res.returncode != 0 and not faults else EXIT_OK)


def _parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not key.strip().replace("_", "").isalnum():
            raise InputError(f"--env: expected KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return tuple(sorted(out.items()))


def _summary(res: CaptureResult, faults: tuple[Fault, ...], top: Path) -> None:
    out = stdout_console()
    state = "timed out (killed)" if res.timed_out else f"exit status {res.returncode}"
    out.print(f"capture: {res.out_dir}  ({state}, {res.elapsed_s:.1f} s)", markup=False)
    for kind, files in res.files.items():
        out.print(f"  {kind:9s} {len(files)} file(s)", markup=False)
    if faults:
        out.print("  injected " + "; ".join(f.spec for f in faults), markup=False)
    if res.settled:
        out.print(
            f"  rank(s) {', '.join(map(str, res.settled))} died without a word: the launcher wrote "
            "how torchrun saw them end into their manifests",
            markup=False,
        )
    out.print(f"next: ncclscope analyze {top}", markup=False)
