"""CLI stage: the Typer app. The only place that prints, reads the terminal or picks exit codes."""

from __future__ import annotations

import os
import sys

import typer

from ncclscope.errors import EXIT_BAD_INPUT, NcclscopeError

app = typer.Typer(
    name="ncclscope",
    help="Why is my multi-GPU PyTorch/NCCL job slow, hung or broken? Reads NCCL_DEBUG logs, "
    "PyTorch watchdog lines, Flight Recorder dumps and torch.profiler traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Importing a command module attaches its command to `app`.
    from ncclscope.cli import analyze, capture, coverage, diff, report, rules  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; domain errors become one line on stderr, no traceback."""
    _register()
    try:
        # Non-standalone click returns the code of a typer.Exit instead of raising it.
        rc = app(args=argv, standalone_mode=False)
    except NcclscopeError as e:
        print(f"ncclscope: error: {e}", file=sys.stderr)
        return e.exit_code
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except SystemExit as e:  # click's own usage errors
        return int(e.code or 0) if isinstance(e.code, int) else EXIT_BAD_INPUT
    except (typer.Abort, KeyboardInterrupt):
        print("ncclscope: aborted", file=sys.stderr)
        return 130
    except Exception as e:
        # Usage errors from Typer's click (vendored as typer._click in newer Typer): duck-typed.
        show, code = getattr(e, "show", None), getattr(e, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            return EXIT_BAD_INPUT
        raise
    return rc if isinstance(rc, int) else 0


def run() -> None:
    """Console entry point: `main()`, then exit without tearing the interpreter down.

    Freeing every frame of a large analysis one object at a time costs ~0.2 s after the output is
    already written; the OS reclaims the memory at once. Output streams are flushed first.
    """
    from ncclscope import configure_process

    configure_process()
    rc = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a closed pipe (`| head`): nothing more can be said
        rc = rc or 1
    os._exit(rc)
