"""A small C/C++ lexer for the catalog extractor: tokens, `#define`s, calls, string literals.

Only what the extractor needs: comments are dropped, preprocessor directives are split off (their
`#define`s are returned separately), `#if 0` blocks are skipped, and calls `NAME(args...)` are found
with their arguments split at top-level commas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOKEN_RE = re.compile(
    r"""
     (?P<com>//[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*")
    |(?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*')
    |(?P<id>[A-Za-z_]\w*)
    |(?P<num>\.?\d(?:[eEpP][-+]|[\w.])*)
    |(?P<nl>\n)
    |(?P<ws>[ \t\r\f\v]+|\\\r?\n)
    |(?P<p>\#\#|->|::|&&|\|\||<<|>>|[<>=!]=|.)
    """,
    re.VERBOSE | re.DOTALL,
)

# <inttypes.h> macros that sit between literals, as glibc (LP64) expands them.
PRI: dict[str, str] = {}
for _kind in "diouxX":
    PRI[f"PRI{_kind}8"] = "hh" + _kind
    PRI[f"PRI{_kind}16"] = "h" + _kind
    PRI[f"PRI{_kind}32"] = _kind
    PRI[f"PRI{_kind}64"] = "l" + _kind
    PRI[f"PRI{_kind}PTR"] = "l" + _kind
    PRI[f"PRI{_kind}MAX"] = "l" + _kind
    for _n in ("8", "16", "32", "64"):
        PRI[f"PRI{_kind}LEAST{_n}"] = PRI[f"PRI{_kind}{_n}"]
        PRI[f"PRI{_kind}FAST{_n}"] = PRI[f"PRI{_kind}{_n}"] if _n in ("8",) else "l" + _kind

_ESC = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "e": "\x1b",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ESC_RE = re.compile(r"\\(x[0-9a-fA-F]+|[0-7]{1,3}|.)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # str chr id num p  (and `param` / `strparam` for macro placeholders)
    text: str
    line: int
    file: str = ""
    pos: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class Define:
    name: str
    params: tuple[str, ...] | None  # None: object-like macro
    body: tuple[Tok, ...]
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[tuple[Tok, ...], ...]
    line: int
    file: str


def decode_literal(text: str) -> str:
    """A C string literal token (with quotes and optional prefix) -> its characters."""
    body = text[text.index('"') + 1 : -1]

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16) & 0x10FFFF)
        if e[0] in "01234567":
            return chr(int(e, 8))
        return _ESC.get(e, e)

    return _ESC_RE.sub(one, body)


def render(toks: tuple[Tok, ...] | list[Tok]) -> str:
    """Tokens back to compact source text (one space between word-like tokens)."""
    out: list[str] = []
    prev = ""
    for t in toks:
        text = f"#{t.text}" if t.kind == "strparam" else t.text
        if prev and (prev[-1].isalnum() or prev[-1] in '_"') and (text[0].isalnum() or text[0] in '_"'):
            out.append(" ")
        out.append(text)
        prev = text
    return "".join(out)


def _directive(toks: list[Tok], file: str, defines: list[Define]) -> None:
    """Record a `#define` (toks excludes the leading `#`)."""
    if len(toks) < 2 or toks[0].text != "define" or toks[1].kind != "id":
        return
    name = toks[1]
    rest = toks[2:]
    params: tuple[str, ...] | None = None
    if rest and rest[0].text == "(" and rest[0].pos == name.end:
        close = next((i for i, t in enumerate(rest) if t.text == ")"), None)
        if close is None:
            return
        names = [t.text for t in rest[1:close] if t.text != ","]
        params = tuple("__VA_ARGS__" if p == "..." else p for p in _join_dots(names))
        rest = rest[close + 1 :]
    defines.append(Define(name.text, params, tuple(rest), file, name.line))


def _join_dots(names: list[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        if n == "." and out and out[-1] in (".", ".."):
            out[-1] += "."
        else:
            out.append(n)
    return ["..." if n == "..." else n for n in out]


def _if_zero(toks: list[Tok]) -> bool:
    return len(toks) == 2 and toks[0].text == "if" and toks[1].text == "0"


def lex(text: str, file: str, first_line: int = 1) -> tuple[list[Tok], list[Define]]:
    """Code tokens (directives, comments and `#if 0` blocks removed) and the `#define`s."""
    code: list[Tok] = []
    defines: list[Define] = []
    line = first_line
    bol = True  # at beginning of a line (only whitespace seen)
    directive: list[Tok] | None = None
    skip = 0  # depth inside `#if 0`
    for m in TOKEN_RE.finditer(text):
        kind = m.lastgroup or "p"
        s = m.group()
        if kind in ("com", "ws", "nl"):
            if kind == "nl" or (kind != "ws" and "\n" in s):
                if kind == "nl" and directive is not None:
                    skip = _end_directive(directive, file, defines, skip)
                    directive = None
                bol = bol or kind == "nl"
            line += s.count("\n")
            continue
        tok = Tok(kind, s, line, file, m.start(), m.end())
        if bol and s == "#":
            directive = []
        elif directive is not None:
            directive.append(tok)
        elif not skip:
            code.append(tok)
        bol = False
    if directive is not None:
        _end_directive(directive, file, defines, skip)
    return code, defines


def _end_directive(toks: list[Tok], file: str, defines: list[Define], skip: int) -> int:
    word = toks[0].text if toks else ""
    if skip:
        if word.startswith("if"):
            return skip + 1
        if word == "endif" or (skip == 1 and word in ("else", "elif")):
            return skip - 1
        return skip
    if _if_zero(toks):
        return 1
    _directive(toks, file, defines)
    return 0


def find_calls(toks: list[Tok] | tuple[Tok, ...], names: set[str] | frozenset[str]) -> list[Call]:
    """Every `NAME(...)` with NAME in names; nested calls inside arguments are found too."""
    out: list[Call] = []
    n = len(toks)
    for i, t in enumerate(toks):
        if t.kind != "id" or t.text not in names or i + 1 >= n or toks[i + 1].text != "(":
            continue
        args = split_args(toks, i + 2)
        if args is not None:
            out.append(Call(t.text, args, t.line, t.file))
    return out


def split_args(toks: list[Tok] | tuple[Tok, ...], start: int) -> tuple[tuple[Tok, ...], ...] | None:
    """Arguments of a call whose `(` is just before toks[start]; None if unbalanced."""
    depth = 0
    args: list[tuple[Tok, ...]] = []
    cur: list[Tok] = []
    for t in toks[start:]:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            if depth == 0:
                if cur or args:
                    args.append(tuple(cur))
                return tuple(args)
            depth -= 1
        elif t.text == "," and depth == 0:
            args.append(tuple(cur))
            cur = []
            continue
        cur.append(t)
    return None


def split_commas(toks: tuple[Tok, ...]) -> list[tuple[Tok, ...]]:
    """Split a flat token list at top-level commas."""
    res = split_args((*toks, Tok("p", ")", 0)), 0)
    return list(res or ())
