"""Report stage, section: what one report section is (its data builder and its layouts), and `Provenance`.

A section module defines `SECTION = Section(...)`: the document key its data is stored under, the
pure builder of that data from a `Session`, and a layout per renderer (Markdown lines, an HTML block,
terminal output); a layout left out means the renderer does not show the section. `report.sections`
lists them in report order, and every renderer and the HTML menu loop over that list: a new section
is its own module plus one line in `report/sections.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from ncclscope.session import Session

Document = dict[str, Any]  # a JSON-like tree: str keys; str, int, float, bool, None, lists, dicts
Markdown = Callable[[Document], list[str]]
Html = Callable[[Document, dict[str, str]], str]  # the document, and each figure's panel by its id
Terminal = Callable[[Document, "Console"], None]


@dataclass(frozen=True)
class Provenance:
    """How a report was made: the command line (when run from the CLI) and whether it is redacted."""

    command: str | None = None
    redacted: bool = False


@dataclass(frozen=True)
class Section:
    """One report section: its data and its layouts.

    `build` makes the section's data, stored in the document under `key` (JSON-like: redaction maps it,
    the JSON projects it; None for a section that only lays out figures); `markdown`
    returns its lines (heading included), `html` its block's inner HTML ("" hides the block and its menu
    entry), `terminal` prints it. `title` heads the HTML block and `menu` names it in the page's menu
    (None: not in the menu); `anchor` is the block's element id.
    """

    key: str
    build: Callable[[Session, Provenance], Any] | None  # None: a layout-only section (figures)
    doc: str
    title: str = ""
    menu: str | None = None
    anchor: str = ""
    markdown: Markdown | None = None
    html: Html | None = None
    terminal: Terminal | None = None
    schema: type[Any] | None = (
        None  # the data's msgspec Struct type (None: untyped); the JSON Schema is generated from it
    )

    @property
    def element_id(self) -> str:
        return self.anchor or self.key
