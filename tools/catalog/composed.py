"""Composed lines: text NCCL builds in a char buffer with sprintf/snprintf/strcat, then logs as `"%s"`.

A log call whose format is too short to recognise (`"%s"`, `"%s (%f)"`, `"%s: %s"`) but passes a plain
identifier for a `%s` is followed to the writes into that identifier in the same function (the
outermost function body around the call): `sprintf(buf, fmt, ...)`, `snprintf(buf, n, fmt, ...)`,
`strcpy(buf, "lit")` write at the buffer's start (*heads*); the same with `buf + off`, `&buf[off]`, and
`strcat`/`strncat(buf, "lit")` write after text already there (*tails*). Every write is a *piece*.

A composed line starts, after optional indentation (spaces written by the code at an offset), with
one piece and may continue with more, so each piece P gives the format `L + P` (L: the log format's
text before the buffer's `%s`, `__func__` replaced by the function's name) matched as
`[spaces] L P <anything>`. A head too short to be safe alone is also combined with each tail written
after it in the same function (repeated up to MAX_REPEAT times, as loops append): `L + H + T (+ T ...)`.
A combination is an over-approximation of the control flow: it may name a sequence that never runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from clex import Tok, render, split_args
from fmtspec import CONV_RE, Conv, literal_chars, match_line, recognisable, segments
from macros import BASES, Emit, literal_formats, resolve

MAX_REPEAT = 3
HEAD_WRITERS = {"sprintf": 1, "snprintf": 2}  # name -> index of the format argument
COPY_WRITERS = {"strcpy", "strncpy"}  # head, literal source
CAT_WRITERS = {"strcat", "strncat"}  # tail, literal source
WRITERS = frozenset(HEAD_WRITERS) | COPY_WRITERS | CAT_WRITERS
FUNC_NAMES = {"__func__", "__FUNCTION__", "__PRETTY_FUNCTION__"}
NOT_FUNCS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof"}


@dataclass(frozen=True)
class Piece:
    fmt: str  # printf format of the write (a literal copy has its % doubled)
    head: bool  # written at the buffer's start
    line: int
    pos: int  # token index: source order


@dataclass(frozen=True)
class Composed:
    level: str
    subsys: tuple[str, ...]
    fmt: str  # L + pieces
    lead: bool  # the buffer's %s starts the log format: the line may be indented
    line: int  # the (first) piece's write
    file: str
    log_line: int
    function: str
    buffer: str


def functions(toks: list[Tok]) -> list[tuple[int, int, str, int]]:
    """(index of `{`, index of matching `}`, name, index of the name) of each outermost function body."""
    out: list[tuple[int, int, str, int]] = []
    depth = 0
    start = -1
    name = ""
    at = 0
    for i, t in enumerate(toks):
        if t.text == "{":
            if start < 0:
                fn = _function_name(toks, i)
                if fn:
                    start, (name, at), depth = i, fn, 0
            if start >= 0:
                depth += 1
        elif t.text == "}" and start >= 0:
            depth -= 1
            if depth == 0:
                out.append((start, i, name, at))
                start = -1
    return out


def _function_name(toks: list[Tok], i: int) -> tuple[str, int] | None:
    j = i - 1
    while j >= 0 and toks[j].kind == "id" and toks[j].text in ("const", "override", "noexcept", "final"):
        j -= 1
    if j < 0 or toks[j].text != ")":
        return None
    depth = 0
    while j >= 0:  # back to the matching `(`
        if toks[j].text == ")":
            depth += 1
        elif toks[j].text == "(":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if j <= 0 or toks[j - 1].kind != "id" or toks[j - 1].text in NOT_FUNCS:
        return None
    return toks[j - 1].text, j - 1


def scope(toks: list[Tok], at: int, lo: int, hi: int, q: int, buf: str) -> tuple[int, int]:
    """The token range where `buf`, as seen by the log call at q, lives: from its nearest declaration
    (`char buf[..]`, `char* buf`, a parameter) whose block holds q, to that block's end; else the function."""
    for d in range(q - 1, at, -1):
        t = toks[d]
        if t.text != buf or t.kind != "id":
            continue
        k = d - 1
        while k > at and toks[k].text in ("*", "const", "unsigned", "signed"):
            k -= 1
        if toks[k].text != "char" or toks[d + 1].text not in ("[", "=", ";", ",", ")"):
            continue
        if d < lo:
            return lo, hi  # a parameter
        # the block the declaration is in: its unmatched `{` before, then that block's `}` after
        open_ = _unmatched(toks, range(d - 1, lo - 1, -1), nest="}", end="{", default=lo)
        close = _unmatched(toks, range(open_ + 1, hi + 1), nest="{", end="}", default=hi)
        if close > q:
            return d, close
    return lo, hi


def _unmatched(toks: list[Tok], order: range, *, nest: str, end: str, default: int) -> int:
    """The first `end` token in `order` not closed by a `nest` token met before it, else `default`."""
    depth = 0
    for k in order:
        if toks[k].text == nest:
            depth += 1
        elif toks[k].text == end:
            if depth == 0:
                return k
            depth -= 1
    return default


def _calls(
    toks: list[Tok], lo: int, hi: int, names: frozenset[str]
) -> list[tuple[str, tuple[tuple[Tok, ...], ...], int, int]]:
    out = []
    for i in range(lo, hi):
        t = toks[i]
        if t.kind == "id" and t.text in names and i + 1 < hi and toks[i + 1].text == "(":
            if i > 0 and toks[i - 1].text in (".", "->", "::") and toks[i - 2].text != "std":
                continue
            args = split_args(toks, i + 2)
            if args is not None:
                out.append((t.text, args, t.line, i))
    return out


def _strip(toks: tuple[Tok, ...]) -> tuple[Tok, ...]:
    while len(toks) >= 2 and toks[0].text == "(" and toks[-1].text == ")":
        toks = toks[1:-1]
    if toks and toks[0].text == "(" and any(t.text == ")" for t in toks):  # (char*)buf
        close = next(k for k, t in enumerate(toks) if t.text == ")")
        if all(t.kind == "id" or t.text == "*" for t in toks[1:close]) and close + 1 < len(toks):
            toks = toks[close + 1 :]
    return toks


def destination(toks: tuple[Tok, ...]) -> tuple[str, bool] | None:
    """(buffer name, at start) of a write's destination argument, None if not a plain buffer."""
    toks = _strip(toks)
    if len(toks) == 1 and toks[0].kind == "id":
        return toks[0].text, True
    if len(toks) >= 3 and toks[0].kind == "id" and toks[1].text == "+":
        return toks[0].text, False
    if len(toks) >= 4 and toks[0].text == "&" and toks[1].kind == "id" and toks[2].text == "[":
        zero = len(toks) == 5 and toks[3].text == "0"
        return toks[1].text, zero
    return None


def _literal(toks: tuple[Tok, ...]) -> list[str]:
    return [f for f, _r in literal_formats(toks) if f is not None]


def pieces(toks: list[Tok], lo: int, hi: int) -> dict[str, list[Piece]]:
    """Buffer name -> its writes, in source order."""
    out: dict[str, list[Piece]] = {}
    for name, args, line, pos in _calls(toks, lo, hi, WRITERS):
        if not args:
            continue
        dest = destination(args[0])
        if dest is None:
            continue
        buf, start = dest
        if name in HEAD_WRITERS:
            k = HEAD_WRITERS[name]
            fmts = _literal(args[k]) if len(args) > k else []
        else:
            fmts = [f.replace("%", "%%") for f in _literal(args[1])] if len(args) > 1 else []
            start = start and name in COPY_WRITERS
        for f in fmts:
            out.setdefault(buf, []).append(Piece(f, start, line, pos))
    return out


def _conv_args(fmt: str) -> list[tuple[int, int, str]]:
    """(start, end, conversion) of each argument-taking conversion, `*` widths counted as their own."""
    out = []
    for m in CONV_RE.finditer(fmt):
        c = m.group()
        if c == "%%":
            continue
        for _ in range(c.count("*")):
            out.append((m.start(), m.start(), "*"))
        out.append((m.start(), m.end(), c[-1]))
    return out


def safe(fmt: str) -> bool:
    """Enough literal text to name a line that may continue with anything: at least 4 literal non-space
    characters, and a leading conversion must be followed at once by literal text holding punctuation."""
    line = match_line(fmt).lstrip(" ")
    if literal_chars(line) < 4:
        return False
    segs = segments(line)
    if segs and isinstance(segs[0], Conv):
        nxt = segs[1] if len(segs) > 1 else None
        if not isinstance(nxt, str) or not any(not c.isalnum() and not c.isspace() for c in nxt):
            return False
    return True


def composed_in(toks: list[Tok]) -> list[Composed]:
    """Every composed format of one file's tokens (code tokens, as `clex.lex` returns them)."""
    out: list[Composed] = []
    for lo, hi, fname, at in functions(toks):
        logs = [c for c in _calls(toks, lo, hi, frozenset(BASES)) if c[0] != "ofi_log_function"]
        if not logs:
            continue
        for base, args, line, q in logs:
            spec = BASES[base]
            if len(args) <= spec.fmt:
                continue
            for fmt in _literal(args[spec.fmt]):
                if recognisable(fmt)[0]:
                    continue
                flat: list[Tok] = []
                for j, a in enumerate(args):
                    if j:
                        flat.append(Tok("p", ",", 0))
                    flat.extend(a)
                res = resolve(Emit(base, tuple(flat), (), toks[lo].file, line))
                level, subsys = res[0].level, res[0].subsys
                rest = args[spec.fmt + 1 :]
                convs = _conv_args(fmt)
                before = ""
                pos = 0
                for k, (s, e, c) in enumerate(convs):
                    arg = _strip(rest[k]) if k < len(rest) else ()
                    lit = fmt[pos:s]
                    pos = e
                    if c != "s" or not arg:
                        before += lit + fmt[s:e]
                        continue
                    word = render(arg)
                    if word in FUNC_NAMES:
                        before += lit + fname.replace("%", "%%")
                        continue
                    if len(arg) == 1 and arg[0].kind == "id":
                        ps = pieces(toks, *scope(toks, at, lo, hi, q, word)).get(word, [])
                        out.extend(
                            _compose(ps, before + lit, level, subsys, line, fname, word, toks[lo].file)
                        )
                    before += lit + fmt[s:e]
    return out


def _compose(
    ps: list[Piece],
    prefix: str,
    level: str,
    subsys: tuple[str, ...],
    log_line: int,
    fname: str,
    buf: str,
    file: str,
) -> list[Composed]:
    out = []
    lead = prefix == ""

    def add(fmt: str, line: int) -> None:
        if safe(fmt):
            out.append(Composed(level, subsys, fmt, lead, line, file, log_line, fname, buf))

    seen_head = False
    for i, p in enumerate(ps):
        # a tail starts a line only where nothing is known to be written before it: no head precedes it,
        # and (with text before the buffer's %s) it is the buffer's first write
        starts = p.head or (not seen_head and (lead or i == 0))
        seen_head = seen_head or p.head
        if not starts:
            continue
        full = prefix + p.fmt
        if safe(full) or not p.head:
            add(full, p.line)
            continue
        for t in ps[i + 1 :]:
            if t.head or not CONV_RE.search(t.fmt.replace("%%", "")):
                continue  # a fixed append ("...") is not repeated by a loop
            for n in range(1, MAX_REPEAT + 1):
                fmt = full + t.fmt * n
                if safe(fmt):
                    add(fmt, p.line)
                    break
    return out
