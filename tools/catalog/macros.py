"""Log calls and the wrapper macros that build them (SYSCHECK, CUDACHECK, NCCLCHECK, INFO_LOC, ...).

A *base* is a call that prints one line: NCCL's WARN/INFO/TRACE/VERSION/TRACE_CALL macros and
aws-ofi-nccl's `ofi_log_function(level, flags, func, line, fmt, ...)`. A *wrapper* is any `#define`
whose body (through other wrappers) contains a base call. Each wrapper is expanded once per release
into templates whose tokens may be placeholders for its parameters; a template whose format or flags
need a parameter is *dependent* and is expanded again at each invocation, with the actual arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from clex import PRI, Call, Define, Tok, decode_literal, find_calls, render, split_args, split_commas


@dataclass(frozen=True)
class Base:
    level: str | None  # None: from the first argument (NCCL_LOG_WARN ...)
    fmt: int
    flags: int | None


BASES: dict[str, Base] = {
    "WARN": Base("WARN", 0, None),
    "INFO": Base("INFO", 1, 0),
    "TRACE": Base("TRACE", 1, 0),
    "VERSION": Base("VERSION", 0, None),
    "TRACE_CALL": Base("CALL", 0, None),
    "ofi_log_function": Base(None, 4, 1),
}
LOG_LEVELS = {
    "NCCL_LOG_WARN": "WARN",
    "NCCL_LOG_INFO": "INFO",
    "NCCL_LOG_TRACE": "TRACE",
    "NCCL_LOG_VERSION": "VERSION",
    "NCCL_LOG_ABORT": "ABORT",
}


@dataclass(frozen=True)
class Emit:
    base: str
    args: tuple[Tok, ...]  # the call's arguments, commas included
    chain: tuple[str, ...]  # wrapper macros, outermost first
    file: str
    line: int

    def dependent(self) -> bool:
        spec = BASES[self.base]
        args = split_commas(self.args)
        idx = [spec.fmt] + ([spec.flags] if spec.flags is not None else [])
        if len(args) <= spec.fmt:
            return any(t.kind in ("param", "strparam") for t in self.args)
        return any(t.kind in ("param", "strparam") for i in idx for t in args[i])


@dataclass(frozen=True)
class Resolved:
    level: str
    subsys: tuple[str, ...]
    fmt: str | None
    expr: str
    reason: str | None


def placeholders(d: Define) -> tuple[Tok, ...]:
    """The body with parameter names replaced by placeholders; `#p` -> strparam; `##` dropped."""
    params = set(d.params or ())
    out: list[Tok] = []
    body = d.body
    i = 0
    while i < len(body):
        t = body[i]
        if t.text == "#" and i + 1 < len(body) and body[i + 1].text in params:
            out.append(Tok("strparam", body[i + 1].text, t.line, t.file))
            i += 2
            continue
        if t.text == "##":
            i += 1
            continue
        out.append(Tok("param", t.text, t.line, t.file) if t.kind == "id" and t.text in params else t)
        i += 1
    return tuple(out)


def substitute(
    toks: tuple[Tok, ...],
    params: tuple[str, ...],
    args: tuple[tuple[Tok, ...], ...],
    site: tuple[str, int] | None = None,
) -> tuple[Tok, ...]:
    """Replace placeholders for `params` with the call's arguments."""
    named = [p for p in params if p != "__VA_ARGS__"]
    env: dict[str, tuple[Tok, ...]] = {p: args[i] if i < len(args) else () for i, p in enumerate(named)}
    if "__VA_ARGS__" in params:
        rest = args[len(named) :]
        va: list[Tok] = []
        for j, a in enumerate(rest):
            if j:
                va.append(Tok("p", ",", 0))
            va.extend(a)
        env["__VA_ARGS__"] = tuple(va)
    out: list[Tok] = []
    for t in toks:
        if t.kind == "param" and t.text in env:
            out.extend(env[t.text])
        elif t.kind == "strparam" and t.text in env:
            text = render(env[t.text]).replace("\\", "\\\\").replace('"', '\\"')
            out.append(Tok("str", f'"{text}"', t.line, t.file))
        else:
            out.append(t)
    return tuple(out)


class MacroTable:
    """The wrapper macros of one release."""

    def __init__(self, defines: list[Define]) -> None:
        self.defs: dict[str, list[Define]] = {}
        seen: set[str] = set()
        for d in defines:
            if d.name in BASES:
                continue
            key = json.dumps([d.name, d.params, [t.text for t in d.body]])
            if key not in seen:
                seen.add(key)
                self.defs.setdefault(d.name, []).append(d)
        self.names = frozenset(BASES) | frozenset(
            n for n, ds in self.defs.items() if ds[0].params is not None
        )
        self._memo: dict[str, list[tuple[Define, list[Emit]]]] = {}
        self._busy: set[str] = set()

    def templates(self, name: str) -> list[tuple[Define, list[Emit]]]:
        if name in self._memo:
            return self._memo[name]
        if name in self._busy:
            return []
        self._busy.add(name)
        res = [(d, self.expand(placeholders(d), ())) for d in self.defs.get(name, [])]
        self._busy.discard(name)
        self._memo[name] = [(d, e) for d, e in res if e]
        return self._memo[name]

    def expand(self, toks: tuple[Tok, ...], chain: tuple[str, ...]) -> list[Emit]:
        out: list[Emit] = []
        for call in find_calls(toks, self.names):
            out.extend(self.emits_of_call(call, chain))
        return out

    def emits_of_call(self, call: Call, chain: tuple[str, ...]) -> list[Emit]:
        if call.name in BASES:
            flat: list[Tok] = []
            for j, a in enumerate(call.args):
                if j:
                    flat.append(Tok("p", ",", 0))
                flat.extend(a)
            return [Emit(call.name, tuple(flat), chain, call.file, call.line)]
        out: list[Emit] = []
        for d, emits in self.templates(call.name):
            for e in emits:
                if not e.dependent():
                    continue  # reported once, at the definition
                args = substitute(e.args, d.params or (), call.args)
                out.append(Emit(e.base, args, (call.name, *e.chain), call.file, call.line))
        return out

    def independent(self) -> list[Emit]:
        """Emits of every wrapper that need no argument: reported at the macro definition."""
        out = []
        for name in sorted(self.defs):
            for _d, emits in self.templates(name):
                out.extend(
                    Emit(e.base, e.args, (name, *e.chain), e.file, e.line) for e in emits if not e.dependent()
                )
        return out

    def dependent_names(self) -> frozenset[str]:
        return frozenset(
            n for n in self.defs if any(e.dependent() for _d, es in self.templates(n) for e in es)
        )


def _strip_parens(toks: tuple[Tok, ...]) -> tuple[Tok, ...]:
    while len(toks) >= 2 and toks[0].text == "(" and split_args(toks, 1) is not None:
        inner = split_args(toks, 1)
        if inner is None or len(inner) != 1 or len(inner[0]) != len(toks) - 2:
            break
        toks = toks[1:-1]
    return toks


def _ternary(toks: tuple[Tok, ...]) -> tuple[tuple[Tok, ...], tuple[Tok, ...]] | None:
    depth, q = 0, -1
    for i, t in enumerate(toks):
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        elif depth == 0 and t.text == "?" and q < 0:
            q = i
        elif depth == 0 and t.text == ":" and q >= 0:
            return toks[q + 1 : i], toks[i + 1 :]
    return None


def literal_formats(toks: tuple[Tok, ...]) -> list[tuple[str | None, str | None]]:
    """The format(s) a format argument can be: literals, PRI macros, `c ? "a" : "b"`."""
    toks = _strip_parens(toks)
    tern = _ternary(toks)
    if tern is not None:
        return literal_formats(tern[0]) + literal_formats(tern[1])
    parts: list[str] = []
    for t in toks:
        if t.kind == "str":
            parts.append(decode_literal(t.text))
        elif t.kind == "id" and t.text in PRI:
            parts.append(PRI[t.text])
        elif t.kind == "id" and len(toks) == 1:
            return [(None, "variable")]
        elif t.kind == "id" and t.text.isupper():
            return [(None, f"macro constant {t.text} in format")]
        else:
            return [(None, "expression")]
    if not parts:
        return [(None, "empty")]
    return [("".join(parts), None)]


def flag_names(toks: tuple[Tok, ...]) -> tuple[str, ...]:
    names = sorted({t.text[5:] for t in toks if t.kind == "id" and t.text.startswith("NCCL_")})
    return tuple(names) if names else (render(toks) or "?",)


def resolve(e: Emit) -> list[Resolved]:
    spec = BASES[e.base]
    args = split_commas(e.args)
    level = spec.level or LOG_LEVELS.get(render(args[0]) if args else "", "INFO")
    if spec.flags is None:
        subsys: tuple[str, ...] = ("CALL",) if level == "CALL" else ("ALL",)
    else:
        subsys = flag_names(args[spec.flags]) if len(args) > spec.flags else ("?",)
    if level == "WARN":
        subsys = ("ALL",)
    if len(args) <= spec.fmt:
        return [Resolved(level, subsys, None, render(e.args), "no format argument")]
    fa = args[spec.fmt]
    expr = render(fa)
    return [Resolved(level, subsys, f, expr, r) for f, r in literal_formats(fa)]
