"""Error hierarchy shared by every stage; only the CLI turns these into exit codes and messages.

Exit codes: 0 no error finding, 1 an error finding (or `--strict` with unknown lines), 2 unusable
input, 3 a bug in ncclscope (one line; `--debug` shows the traceback), 130 interrupted.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130
EXIT_CODES = (EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED)


class NcclscopeError(Exception):
    """Base class: a one-line, user-facing message; never shown with a traceback."""

    exit_code: int = EXIT_BAD_INPUT


class InputError(NcclscopeError):
    """The input cannot be used at all (missing path, not text, unreadable archive)."""


class TraceError(InputError):
    """A profiler trace cannot be read (not JSON, not a Chrome trace, rank unknown)."""


class UnsafePickleError(InputError):
    """A Flight Recorder dump holds something other than plain containers and scalars."""


class LimitError(InputError):
    """An input asks for more than a cap of `ncclscope.tuning.Tuning` allows (a decompression bomb,
    nesting thousands deep, a pickle memo of a billion slots); the message names the cap."""


class StrictModeError(NcclscopeError):
    """`--strict` was given and some lines matched no grammar family."""

    exit_code = EXIT_FINDINGS


class MissingExtraError(NcclscopeError):
    """An optional dependency (torch for capture, nbclient for notebooks) is not installed."""
