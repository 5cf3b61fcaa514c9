"""CLI stage: the Rich consoles (data to stdout, progress and warnings to stderr)."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

PIPE_WIDTH = 160  # Rich assumes 80 columns off a terminal; reports piped into a ticket read better wider


def stdout_console() -> Console:
    con = Console(soft_wrap=False, highlight=False)
    if not con.is_terminal:
        con.width = max(con.width, PIPE_WIDTH)
    return con


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


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
