"""Report stage, Markdown text: escaping for inline text, code spans and fenced blocks, in a flavour.

Every log-derived string that reaches a Markdown report goes through one of these. The flavour
(`flavor("jira")` around the layouts) picks the inline escaping: GitHub/GitLab Markdown by default,
Jira wiki markup for `--flavor jira` (`report.md_jira`, which then sets the blocks in Jira's markup).
Tables and fenced blocks are written in Markdown either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ncclscope.report import md_jira
from ncclscope.report.facts import printable

FLAVORS = ("markdown", "jira")
_FLAVOR: ContextVar[str] = ContextVar("ncclscope_md_flavor", default="markdown")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# What GitHub's Markdown turns into a link by itself (GFM autolinks): a scheme URL or `www.` word. Log
# text is data, never a live link: such a run is set as a code span, where nothing is linked.
_AUTOLINK = re.compile(r"(?i)(?:\b(?:https?|ftp|file)://|\bwww\.)[^\s<>`]*")


@contextmanager
def flavor(name: str) -> Iterator[None]:
    """Inline text escaped for `name` (one of FLAVORS) while the block runs (this thread/context only)."""
    if name not in FLAVORS:
        raise ValueError(f"unknown Markdown flavour {name!r}; choose one of {', '.join(FLAVORS)}")
    token = _FLAVOR.set(name)
    try:
        yield
    finally:
        _FLAVOR.reset(token)


def _jira() -> bool:
    return _FLAVOR.get() == "jira"


def _inline(t: str) -> str:
    t = t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
    return _MD_SPECIAL.sub(r"\\\1", t)


def text(value: object) -> str:
    """Inline text: HTML entities for <, >, &, @ (no mentions), backslashes for Markdown syntax, and
    URLs as code spans (no autolink). Jira: `md_jira.inline`."""
    t = printable("" if value is None else str(value), limit=2000).replace("\n", " ")
    if _jira():
        return md_jira.inline(t)
    out, last = [], 0
    for m in _AUTOLINK.finditer(t):
        out += [_inline(t[last : m.start()]), code(m.group()).replace("|", "\\|")]
        last = m.end()
    return "".join([*out, _inline(t[last:])])


def code(value: object) -> str:
    """An inline code span (contents are never interpreted), for text that holds no pipe."""
    t = printable(str(value), limit=2000).replace("\n", " ")
    if _jira():
        return md_jira.monospace(t)
    longest = max((len(m) for m in re.findall(r"`+", t)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{tick}{pad}{t}{pad}{tick}"


def fenced(lines: list[str], lang: str = "text") -> str:
    """A fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for ln in lines for m in re.findall(r"`+", ln)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + lang, *lines, fence])


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of cells already escaped."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(r) + " |" for r in rows
    ]
