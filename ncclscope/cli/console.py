"""CLI stage: the Rich consoles (data to stdout, progress and warnings to stderr).

Every string a console renders goes through `safe_text.printable` first, whoever built it: an ESC or
C1 control from a log never reaches the terminal raw. Rich's emoji codes are off (`host:100:1234` must
not become a 💯). Piped output is never hard-wrapped (grep and paste see whole lines). `--no-color` and
a non-empty NO_COLOR turn colours and styles off. A reader that closes the pipe early (`| head`) stops
the output quietly: the command still exits with its own status.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ncclscope.cli.options import GLOBALS
from ncclscope.report.safe_text import escape, printable

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 160  # tables piped into a ticket read better wider than Rich's 80 columns off a terminal


def stdout_gone() -> None:
    """The reader of stdout went away (`| head`): later writes go to /dev/null, quietly."""
    GLOBALS.stdout_closed = True
    try:  # later writes (and the final flush) go nowhere instead of failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test's capture): drop the writes
        pass


@functools.cache
def _safe_console_class() -> type[Console]:
    """Rich is imported on first use (~20 ms): `--format json --quiet` with no warning never needs it."""
    from rich.console import Console
    from rich.text import Text

    class SafeConsole(Console):
        """A Console that makes control characters visible in every string it renders (cells included)."""

        def render_str(self, text: str, **kwargs: Any) -> Text:
            return super().render_str(printable(text), **kwargs)

        def on_broken_pipe(self) -> None:
            """Rich's own raises SystemExit(1), which would read as 'an error finding'."""
            self.quiet = True
            stdout_gone()

    return SafeConsole


def safe_console(**kwargs: Any) -> Console:
    """A Rich Console whose every rendered string goes through `printable` first; no emoji codes."""
    kwargs.setdefault("emoji", False)
    return _safe_console_class()(**kwargs)


def _plain() -> bool:
    return not GLOBALS.color or bool(os.environ.get("NO_COLOR"))


def _console(**kwargs: Any) -> Console:
    if _plain():
        kwargs.update(color_system=None, no_color=True)
    return safe_console(highlight=False, **kwargs)


def stdout_console() -> Console:
    """Data on stdout: wrapped at the terminal's width on a terminal, never when piped."""
    con = _console(soft_wrap=False)
    if not con.is_terminal:
        con.soft_wrap = True  # text lines whole; tables still laid out to a width
        con.width = max(con.width, PIPE_WIDTH)
    if GLOBALS.stdout_closed:
        con.quiet = True
    return con


def echo(text: str) -> None:
    """`text` on stdout as is (JSON, a report); a closed pipe ends the output quietly."""
    if GLOBALS.stdout_closed:
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()


def stderr_console() -> Console:
    return _console(stderr=True)


def say(line: str) -> None:
    """One line on stderr, log text in it made inert."""
    stderr_console().print(line, markup=False, soft_wrap=True)


def warn(notes: tuple[str, ...] | list[str]) -> None:
    """Each note as one `warning:` line on stderr (log text in it made inert)."""
    for note in notes:
        say(f"warning: {note}")


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
