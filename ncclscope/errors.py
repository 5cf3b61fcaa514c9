"""Error hierarchy shared by every stage; only the CLI turns these into exit codes and messages."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2


class NcclscopeError(Exception):
    """Base class: a one-line, user-facing message; never shown with a traceback."""

    exit_code: int = EXIT_BAD_INPUT


class InputError(NcclscopeError):
    """The input cannot be used at all (missing path, not text, unreadable archive)."""


class TraceError(InputError):
    """A profiler trace cannot be read (not JSON, not a Chrome trace, rank unknown)."""


class UnsafePickleError(InputError):
    """A Flight Recorder dump holds something other than plain containers and scalars."""


class StrictModeError(NcclscopeError):
    """`--strict` was given and some lines matched no grammar family."""

    exit_code = EXIT_FINDINGS


class MissingExtraError(NcclscopeError):
    """An optional dependency (torch for capture, nbclient for notebooks) is not installed."""
