"""Report stage, Markdown text: escaping for inline text, code spans and fenced blocks.

Every log-derived string that reaches a Markdown report goes through one of these.
"""

from __future__ import annotations

import re

from ncclscope.report.facts import printable

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# What GitHub's Markdown turns into a link by itself (GFM autolinks): a scheme URL or `www.` word. Log
# text is data, never a live link: such a run is set as a code span, where nothing is linked.
_AUTOLINK = re.compile(r"(?i)(?:\b(?:https?|ftp|file)://|\bwww\.)[^\s<>`]*")


def _inline(t: str) -> str:
    t = t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
    return _MD_SPECIAL.sub(r"\\\1", t)


def text(value: object) -> str:
    """Inline text: HTML entities for <, >, &, @ (no mentions), backslashes for Markdown syntax, and
    URLs as code spans (no autolink)."""
    t = printable("" if value is None else str(value), limit=2000).replace("\n", " ")
    out, last = [], 0
    for m in _AUTOLINK.finditer(t):
        out += [_inline(t[last : m.start()]), code(m.group()).replace("|", "\\|")]
        last = m.end()
    return "".join([*out, _inline(t[last:])])


def code(value: object) -> str:
    """An inline code span (contents are never interpreted), for text that holds no pipe."""
    t = printable(str(value), limit=2000).replace("\n", " ")
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
