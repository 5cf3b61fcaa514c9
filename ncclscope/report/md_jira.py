"""Report stage, Jira flavour of the Markdown report (`report --format md --flavor jira`).

The sections' Markdown layouts are not copied: they run as they are, their inline text escaped for Jira
by `md_text` (`inline` below), and the report's few Markdown blocks are then set in Jira's wiki markup
(`blocks`): `## x` → `h2. x`, `**x**` → `*x*`, a table's header row → `||a||b||`, a fenced block →
`{noformat}`, `> ` lines → `{quote}`, `<details>`/`<summary>` → a plain bold line (Jira Cloud has no
`{expand}`). Those blocks can only come from the layouts: escaped log text never holds a raw `|`, `>`,
`<`, `*` pair or a leading `#`.

Log text stays inert: `{ } [ ] | \\ & < >` become entities (`{noformat}`, `[link]`, `|cell|`, `\\\\` line
breaks can't form); Jira's phrase marks `* _ - + ^ ~` are backslash-escaped where Jira reads them (at a
word's edge: `-gone-` would strike through, `node-07` is left alone); `!` (images), `??` (citations), a
leading `#`, `hN.`, `bq.`, emoticons (`(x)`, `:)`) and a URL's scheme (autolinks) are broken up. In a
`{noformat}` block nothing is read but the closing `{noformat}`, which a log line can't spell (a
zero-width space is put after its brace).
"""

from __future__ import annotations

import re

_ENTITY = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "\\": "&#92;",
    "{": "&#123;",
    "}": "&#125;",
    "[": "&#91;",
    "]": "&#93;",
    "|": "&#124;",
}
# One pass over the text, the first alternative that matches at a position wins.
_READ = re.compile(
    r"(?P<ent>[&<>\\{}\[\]|])"
    # a URL's scheme (Jira links `https://…` by itself), `www.`, and any other `x://` (a scheme Jira may know)
    r"|(?P<scheme>(?i:\b(?:https?|s?ftp|file|mailto|irc|news|nntp|ssh|telnet):|\bwww\.)|:(?=//))"
    # emoticons: `(x)`, `(!)`, `(on)`, … and `:)`, `;P`, …
    r"|(?P<emo>\((?=(?:y|n|i|/|x|!|\+|-|\?|on|off|\*[rgby]?|flag|flagoff)\))|[:;](?=[()PpDd]))"
    # phrase marks (*strong*, _emphasis_, -deleted-, +inserted+, ^sup^, ~sub~): Jira reads one only where
    # it opens a word (not after a letter or digit) or closes one (not before a letter or digit)
    r"|(?P<mark>(?<![0-9A-Za-z])[*_\-+^~]|[*_\-+^~](?![0-9A-Za-z])|!|\?(?=\?)|(?<=\?)\?)"
    # a line's start: `hN.` heading, `bq.` quote, `#` numbered list
    r"|(?P<start>^(?:h(?=[1-6]\.)|b(?=q\.)|#))"
)
_NOFORMAT = re.compile(r"(?i)\{(?=noformat\})")


def _read(m: re.Match[str]) -> str:
    s = m.group()
    if m.lastgroup == "ent":
        return _ENTITY[s]
    if m.lastgroup == "scheme":
        return s[:-1] + f"&#{ord(s[-1])};"
    if m.lastgroup == "mark":
        return "\\" + s
    return f"&#{ord(s[0])};" + s[1:]  # emo, start


def inline(t: str) -> str:
    """Text (already printable, one line) that Jira shows as it is."""
    return _READ.sub(_read, t)


def monospace(t: str) -> str:
    """An inline code span: `{{…}}` (Jira still reads markup inside, so the text is escaped too)."""
    return "{{" + inline(t) + "}}" if t else ""


_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_FENCE = re.compile(r"^(`{3,})[\w-]*$")
_RULE = re.compile(r"^\|(?:-{3,}\|)+$")  # a Markdown table's header separator
_STRONG = re.compile(r"\*\*(.+?)(?<!\\)\*\*")
_SUMMARY = re.compile(r"^<summary>(.*)</summary>$")


def _header_row(row: str) -> str:
    cells = row.strip().removeprefix("|").removesuffix("|").split("|")
    return "||" + "||".join(f" {c.strip()} " for c in cells) + "||"


def blocks(md: str) -> str:
    """The report's Markdown blocks (as the layouts write them, inline text already Jira-escaped) set in
    Jira wiki markup."""
    out: list[str] = []
    fence: str | None = None
    quoted = False
    for ln in md.split("\n"):
        if fence is not None:
            out.append("{noformat}" if ln == fence else _NOFORMAT.sub("{\u200b", ln))
            fence = None if ln == fence else fence
            continue
        if ln.startswith(">") != quoted:
            out.append("{quote}")
            quoted = not quoted
        if quoted:
            ln = ln[1:].removeprefix(" ")
        if m := _FENCE.match(ln):
            fence = m.group(1)
            out.append("{noformat}")
        elif _RULE.match(ln) and out:
            out[-1] = _header_row(out[-1])
        elif ln in ("<details>", "</details>"):
            continue
        elif m := _SUMMARY.match(ln):
            out.append("*" + _STRONG.sub(r"\1", m.group(1)) + "*")
        elif m := _HEADING.match(ln):
            out.append(f"h{len(m.group(1))}. " + _STRONG.sub(r"*\1*", m.group(2)))
        else:
            out.append(_STRONG.sub(r"*\1*", ln))
    if quoted:
        out.append("{quote}")
    return "\n".join(out)
