"""CLI stage: the Rich consoles (data to stdout, progress and warnings to stderr).

Every string a console renders goes through `safe_text.printable` first, whoever built it: an ESC or
C1 control from a log never reaches the terminal raw. `--no-color` and a non-empty NO_COLOR turn
colours and styles off.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from ncclscope.cli.options import GLOBALS
from ncclscope.report.safe_text import escape, printable

PIPE_WIDTH = 160  # Rich assumes 80 columns off a terminal; reports piped into a ticket read better wider


class SafeConsole(Console):
    """A Console that makes control characters visible in every string it renders (cells included)."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


def _plain() -> bool:
    return not GLOBALS.color or bool(os.environ.get("NO_COLOR"))


def _console(**kwargs: Any) -> Console:
    if _plain():
        kwargs.update(color_system=None, no_color=True)
    return SafeConsole(highlight=False, **kwargs)


def stdout_console() -> Console:
    con = _console(soft_wrap=False)
    if not con.is_terminal:
        con.width = max(con.width, PIPE_WIDTH)
    return con


def stderr_console() -> Console:
    return _console(stderr=True)


def warn(notes: tuple[str, ...] | list[str]) -> None:
    """Each note as one `warning:` line on stderr (log text in it made inert)."""
    err = stderr_console()
    for note in notes:
        err.print(f"warning: {note}", markup=False, soft_wrap=True)


def progress_printer(enabled: bool) -> Callable[[str], None] | None:
    """Progress lines on stderr, shown only once the run has taken more than a second."""
    if not enabled:
        return None
    err = stderr_console()
    t0 = time.monotonic()

    def emit(msg: str) -> None:
        if time.monotonic() - t0 > 1.0:
            err.print(f"[dim]… {escape(msg)}[/dim]")

    return emit
