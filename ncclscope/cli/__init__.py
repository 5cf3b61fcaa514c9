"""CLI stage: the Typer app. The only place that prints, reads the terminal or picks exit codes.

Exit codes (`ncclscope.errors`): 0 no error finding, 1 an error finding, 2 unusable input or a usage
error, 3 a bug in ncclscope or memory ran out (one line on stderr; `--debug` shows the traceback; a
panic inside Polars, pyo3's `PanicException`, is a `BaseException` and is caught as well), 130
interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import Annotated

import typer

from ncclscope.cli.options import GLOBALS, command_name, hoist_globals, parse_size
from ncclscope.errors import EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED, EXIT_OK, NcclscopeError

app = typer.Typer(
    name="ncclscope",
    help="Why is my multi-GPU PyTorch/NCCL job slow, hung or broken? Reads NCCL_DEBUG logs, "
    "PyTorch watchdog lines, Flight Recorder dumps and torch.profiler traces. "
    "Exit 0: no error finding; 1: an error finding; 2: unusable input; 3: a bug in ncclscope.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from ncclscope import __version__

        typer.echo(f"ncclscope {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colour or style (NO_COLOR=1 too).")
    ] = False,
    max_expansion_ratio: Annotated[
        int | None,
        typer.Option(
            "--max-expansion-ratio",
            min=1,
            help="Decompressed bytes per compressed byte a .gz/.zst input may "
            "reach (default 200; real logs ~10-50).",
            show_default=False,
        ),
    ] = None,
    max_decompressed_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-decompressed-bytes",
            help="Bytes one .gz/.zst input may expand to, e.g. 64G (default 16G).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Options for every command (also accepted after the command's name)."""
    GLOBALS.debug = GLOBALS.debug or debug
    GLOBALS.color = GLOBALS.color and not no_color
    if max_expansion_ratio is not None:
        GLOBALS.overrides["max_expansion_ratio"] = max_expansion_ratio
    if max_decompressed_bytes is not None:
        GLOBALS.overrides["max_decompressed_bytes"] = parse_size(
            max_decompressed_bytes, "--max-decompressed-bytes"
        )


COMMANDS = ("analyze", "capture", "coverage", "diff", "report", "rules", "run")  # one module each, same name


def _register(args: list[str]) -> None:
    """Attach the commands to `app` (importing a command's module attaches it). Only the one `args` name
    when they name one (its siblings' imports, Rich tables and the capture launcher, cost ~15 ms a run);
    every command for help, completion or a mistyped name, so that Typer lists them all."""
    import importlib

    first = command_name(args)
    named = first if first in COMMANDS and "--help" not in args else None
    for name in (named,) if named else COMMANDS:
        importlib.import_module(f"ncclscope.cli.{name}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code: domain errors are one line on stderr; any other exception
    is a bug, one line too (`--debug`: its traceback); never a traceback for bad input."""
    args = hoist_globals(list(sys.argv[1:] if argv is None else argv))
    GLOBALS.reset(debug="--debug" in args, color="--no-color" not in args)
    try:
        _register(args)
        with warnings.catch_warnings():
            if not GLOBALS.debug:  # a library's UserWarning on odd input is noise to a user; --debug shows it
                warnings.simplefilter("ignore")
            # Non-standalone click returns the code of a typer.Exit instead of raising it.
            rc = app(args=args, prog_name="ncclscope", standalone_mode=False)
    except NcclscopeError as e:
        _say(f"ncclscope: error: {e}")
        return e.exit_code
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except SystemExit as e:  # click's own usage errors, shell completion
        return int(e.code or 0) if isinstance(e.code, int) else EXIT_BAD_INPUT
    except (typer.Abort, KeyboardInterrupt):
        _say("ncclscope: aborted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `| head` closed the pipe: nobody reads what is left
        _quiet_stdout()
        return EXIT_OK
    except MemoryError as e:
        return _out_of_memory(e)
    except Exception as e:  # noqa: BLE001 - the one place a bug becomes an exit code
        # Usage errors from Typer's click (vendored as typer._click in newer Typer): duck-typed.
        show, code = getattr(e, "show", None), getattr(e, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            return EXIT_BAD_INPUT
        return _bug(e)
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException (a panic inside Polars) is no Exception
        return _out_of_memory(e) if _is_oom(e) else _bug(e)
    return rc if isinstance(rc, int) else 0


def _is_oom(e: BaseException) -> bool:
    """A Rust panic that says memory ran out (`capacity overflow`, a failed allocation)."""
    text = str(e).lower()
    return "capacity overflow" in text or "memory allocation" in text or "out of memory" in text


def _out_of_memory(e: BaseException) -> int:
    """Memory ran out (a `MemoryError`, or a panic inside Polars saying so): one line, exit 3."""
    if GLOBALS.debug:
        traceback.print_exception(e, file=sys.stderr)
    _say(
        "ncclscope: error: out of memory; analyze fewer inputs at a time, or raise the memory limit "
        "(rerun with --debug for the traceback)"
    )
    return EXIT_BUG


def _bug(e: BaseException) -> int:
    if GLOBALS.debug:
        traceback.print_exception(e, file=sys.stderr)
    first = next((ln for ln in str(e).splitlines() if ln.strip()), "")
    _say(f"ncclscope hit a bug: {type(e).__name__}: {first[:300]}; rerun with --debug for the traceback")
    return EXIT_BUG


def _say(line: str) -> None:
    from ncclscope.report.safe_text import one_line

    try:
        print(one_line(line), file=sys.stderr)
    except (BrokenPipeError, ValueError):
        pass


def _quiet_stdout() -> None:
    try:  # later writes (and the final flush) go nowhere instead of failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


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
        pass
    os._exit(rc)
