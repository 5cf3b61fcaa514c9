"""CLI stage: the Rich consoles (data to stdout, progress and warnings to stderr).

Every string a console renders goes through `safe_text.printable` first, whoever built it: an ESC or
C1 control from a log never reaches the terminal raw. `--no-color` and a non-empty NO_COLOR turn
colours and styles off.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ncclscope.cli.options import GLOBALS
from ncclscope.report.safe_text import escape, printable

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 160  # Rich assumes 80 columns off a terminal; reports piped into a ticket read better wider


@functools.cache
def _safe_console_class() -> type[Console]:
    """Rich is imported on first use (~20 ms): `--format json --quiet` with no warning never needs it."""
    from rich.console import Console
    from rich.text import Text

    class SafeConsole(Console):
        """A Console that makes control characters visible in every string it renders (cells included)."""

        def render_str(self, text: str, **kwargs: Any) -> Text:
            return super().render_str(printable(text), **kwargs)

    return SafeConsole


def safe_console(**kwargs: Any) -> Console:
    """A Rich Console whose every rendered string goes through `printable` first."""
    return _safe_console_class()(**kwargs)


def _plain() -> bool:
    return not GLOBALS.color or bool(os.environ.get("NO_COLOR"))


def _console(**kwargs: Any) -> Console:
    if _plain():
        kwargs.update(color_system=None, no_color=True)
    return safe_console(highlight=False, **kwargs)


def stdout_console() -> Console:
    con = _console(soft_wrap=False)
    if not con.is_terminal:
        con.width = max(con.width, PIPE_WIDTH)
    return con


def stderr_console() -> Console:
    return _console(stderr=True)


def warn(notes: tuple[str, ...] | list[str]) -> None:
    """Each note as one `warning:` line on stderr (log text in it made inert)."""
    if not notes:
        return
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
