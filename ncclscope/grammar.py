"""Grammar stage: load `grammars/nccl.lark` once, and derive from it both a Lark parser and regexes.

The `.lark` file is the single source of truth for line shapes. `lark_parser()` parses one piece of
text per start rule (a prefix, a wrapper, one message family); `rule_regex()` compiles the same rule
into a regular expression whose named groups are the rule's field rules, which the fast path runs
vectorised in Polars. Tests check that the two agree field for field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lark import Lark, Token

# Lark is imported where a grammar is loaded (a table missing from the on-disk cache, `lark_parser()`),
# not with this module: the readers use the cached tables, and Lark's import costs ~14 ms a process.

GRAMMAR_FILE = "nccl.lark"
CATALOG_FILE = "nccl_catalog.lark"  # generated from NCCL's sources by tools/catalog (one rule per format)
_REPO_GRAMMARS = Path(__file__).resolve().parent.parent / "grammars"
_META = "()[]{}.*+?|^$\\"
COMPILER_VERSION = 5  # bump when the regex compiler changes (the on-disk cache is keyed by it)


def grammar_bytes(*parts: str) -> bytes:
    """A file under `grammars/`: the wheel's `ncclscope/grammars` copy when installed, else the repo's.

    The one loader for every grammar and catalog file (the log, torch and nccl-tests readers use it).
    """
    try:
        pkg = resources.files("ncclscope").joinpath("grammars", *parts)
        if pkg.is_file():
            return pkg.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):  # pragma: no cover - defensive
        pass
    return _REPO_GRAMMARS.joinpath(*parts).read_bytes()


def grammar_text(name: str = GRAMMAR_FILE) -> str:
    """The grammar source `grammars/<name>` as text."""
    return grammar_bytes(name).decode("utf-8")


@dataclass(frozen=True)
class _Defs:
    rules: dict[str, Any]  # name -> EBNF tree (Lark's own grammar-of-grammars output)
    terms: dict[str, Any]


@functools.cache
def _defs(name: str = GRAMMAR_FILE) -> _Defs:
    from lark.load_grammar import load_grammar

    g, _ = load_grammar(grammar_text(name), name, [], False)  # type: ignore[no-untyped-call]
    rules = {str(n): tree for n, _params, tree, _opts in g.rule_defs}
    terms = {str(n): tree for n, (tree, _prio) in g.term_defs}
    return _Defs(rules, terms)


def _families_from_defs(defs: _Defs) -> list[str]:
    tree = defs.rules["message"]
    return [str(nt.name) for nt in tree.scan_values(lambda v: hasattr(v, "name") and not v.is_term)]


def families() -> tuple[str, ...]:
    """Message family names in the order the grammar's `message` rule lists them (the match order)."""
    return tuple(_table()["families"])


def rule_names() -> frozenset[str]:
    return frozenset(_table()["rules"])


@functools.cache
def lark_parser() -> Lark:
    """An Earley parser with every prefix, wrapper and family rule as a start symbol (tests, notebooks)."""
    starts = ["prefix_std", "prefix_dev", "prefix_bare", "wrapper", *families()]
    starts += [r for r in ("iface_entry", "hca_entry", "tree_entry") if r in rule_names()]
    from lark import Lark

    return Lark(
        grammar_text(),
        start=starts,
        parser="earley",
        lexer="dynamic_complete",
        propagate_positions=True,
        maybe_placeholders=False,
        keep_all_tokens=True,
    )


# --- compiling rules to regular expressions ---------------------------------------------------------


def _escape(s: str) -> str:
    # Escape only regex metacharacters: Rust's regex (Polars) rejects escapes Python adds (`\ `).
    return "".join("\\" + c if c in _META else c for c in s)


def _literal(tok: Token) -> str:
    from lark.load_grammar import _literal_to_pattern

    pat = _literal_to_pattern(tok)  # type: ignore[no-untyped-call]
    body = _escape(pat.value) if type(pat).__name__ == "PatternStr" else pat.value
    flags = "".join(sorted(pat.flags))
    return f"(?{flags}:{body})" if flags else f"(?:{body})"


class _Compiler:
    """EBNF tree -> regex. Field rules (lowercase, not `_`-prefixed) become named groups, outermost only."""

    def __init__(self, defs: _Defs, capture: bool) -> None:
        self.defs = defs
        self.capture = capture
        self.seen: dict[str, int] = {}
        self.stack: list[str] = []

    def rule(self, name: str, capture_self: bool = False) -> str:
        if name in self.stack:
            raise ValueError(f"grammar rule {name!r} is recursive; the fast path needs regular rules")
        self.stack.append(name)
        body = self.node(self.defs.rules[name], inside_field=capture_self)
        self.stack.pop()
        return body

    def group(self, name: str, body: str) -> str:
        name = base_field(name)
        n = self.seen.get(name, 0)
        self.seen[name] = n + 1
        gname = name if n == 0 else f"{name}__{n}"
        return f"(?P<{gname}>{body})"

    def node(self, t: Any, inside_field: bool = False) -> str:
        from lark import Token, Tree

        if isinstance(t, Token):
            if t.type in ("STRING", "REGEXP"):
                return _literal(t)
            raise ValueError(f"unexpected token {t!r}")
        if not isinstance(t, Tree):  # NonTerminal / Terminal symbols
            name = str(t.name)
            if t.is_term:
                return "(?:" + self.node(self.defs.terms[name], True) + ")"
            if name.startswith("_") or inside_field or not self.capture:
                return "(?:" + self.rule(name, inside_field) + ")"
            return self.group(name, self.rule(name, True))
        kind = t.data
        if kind == "expansions":
            return "(?:" + "|".join(self.node(c, inside_field) for c in t.children) + ")"
        if kind in ("expansion", "alias"):
            kids = t.children if kind == "expansion" else t.children[:1]
            return "".join(self.node(c, inside_field) for c in kids)
        if kind in ("value", "literal"):
            return "".join(self.node(c, inside_field) for c in t.children)
        if kind == "expr":
            inner, op = t.children[0], t.children[1]
            body = "(?:" + self.node(inner, inside_field) + ")"
            if str(op) in ("?", "*", "+"):
                return body + str(op)
            if str(op) == "~":  # x ~ n  or  x ~ n..m
                lo = int(str(t.children[2]))
                hi = int(str(t.children[3])) if len(t.children) > 3 else lo
                return body + f"{{{lo},{hi}}}"
        if kind == "maybe":
            return "(?:" + self.node(t.children[0], inside_field) + ")?"
        raise ValueError(f"grammar construct {kind!r} is not supported by the regex compiler")


def _neighbours(defs: _Defs, rule: str) -> dict[str, list[str]]:
    """Field -> [literal before, literal after] for fields that sit between two literals in `rule`."""
    from lark import Token, Tree
    from lark.load_grammar import _literal_to_pattern

    out: dict[str, list[str]] = {}
    tree = defs.rules[rule]
    if len(tree.children) != 1:  # alternatives: no fixed neighbours
        return out
    items = tree.children[0].children

    def lit(node: Any) -> str | None:
        if isinstance(node, Tree) and node.data == "value" and isinstance(node.children[0], Tree):
            tok = node.children[0].children[0]
            if isinstance(tok, Token) and tok.type == "STRING":
                return str(_literal_to_pattern(tok).value)  # type: ignore[no-untyped-call]
        return None

    for i in range(1, len(items) - 1):
        node = items[i]
        if isinstance(node, Tree) and node.data == "value" and not isinstance(node.children[0], Tree):
            before, after = lit(items[i - 1]), lit(items[i + 1])
            if before and after:
                out[str(node.children[0].name)] = [before, after]
    return out


def _cache_path(name: str = GRAMMAR_FILE) -> Path:
    import hashlib
    import os

    key = f"{COMPILER_VERSION}\n{name}\n{grammar_text(name)}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ncclscope" / f"{Path(name).stem}-{digest}.json"


def _cached(name: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`build()`'s table for grammar `name`, kept on disk by grammar hash (Lark's loader costs 0.5-2 s)."""
    import json
    import uuid

    from ncclscope import prebuilt

    path = _cache_path(name)
    for found in (prebuilt.shipped(path.name), path):  # the wheel's prebuilt table first
        try:
            if found is not None:
                return dict(json.loads(found.read_text()))
        except (OSError, ValueError):
            pass
    table = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps(table))
        tmp.replace(path)
        prebuilt.saved(path)
    except OSError:
        pass
    return table


def _build_table() -> dict[str, Any]:
    defs = _defs()
    fams = _families_from_defs(defs)
    return {
        "families": fams,
        "rules": sorted(defs.rules),
        "regex": {
            f"{n}|{c:d}": _Compiler(defs, c).rule(n)
            for n in defs.rules
            if n != "message"
            for c in (True, False)
        },
        "neighbours": {f: _neighbours(defs, f) for f in fams},
    }


@functools.cache
def _table() -> dict[str, Any]:
    """Every rule compiled to regex (with and without captures), cached on disk by grammar hash."""
    return _cached(GRAMMAR_FILE, _build_table)


def _leading(defs: _Defs, name: str) -> str:
    """The literal text a rule starts with (after optional leading terminals), '' when it starts with a value."""
    from lark import Token, Tree
    from lark.load_grammar import _literal_to_pattern

    items = defs.rules[name].children[0].children
    out = []
    for node in items:
        tok = (
            node.children[0].children[0]
            if isinstance(node, Tree) and isinstance(node.children[0], Tree)
            else None
        )
        if isinstance(tok, Token) and tok.type == "STRING":
            out.append(str(_literal_to_pattern(tok).value))  # type: ignore[no-untyped-call]
        elif not out and isinstance(node, Tree) and node.data == "expr" and "LEAD" in str(node.children[0]):
            continue  # optional leading spaces (`CV_LEAD?`) before the text
        else:
            break
    return "".join(out)


TORCH_CATALOG_FILE = "torch_catalog.lark"  # PyTorch's distributed messages, generated the same way
_CATALOG_TOP = {CATALOG_FILE: "catalog", TORCH_CATALOG_FILE: "torch_catalog"}


def _build_catalog(name: str = CATALOG_FILE) -> dict[str, Any]:
    defs = _defs(name)
    top = defs.rules[_CATALOG_TOP[name]]
    order = [str(nt.name) for nt in top.scan_values(lambda v: hasattr(v, "name") and not v.is_term)]
    return {
        "rules": order,
        "regex": {n: _Compiler(defs, False).rule(n) for n in order},
        "leading": {n: _leading(defs, n) for n in order},
        "needle": {n: _needle(defs, n) for n in order},
    }


def _needle(defs: _Defs, name: str) -> str:
    """The longest literal of a rule: text every line it matches contains."""
    from lark import Token
    from lark.load_grammar import _literal_to_pattern

    lits = [
        str(_literal_to_pattern(t).value)  # type: ignore[no-untyped-call]
        for t in defs.rules[name].scan_values(lambda v: isinstance(v, Token) and v.type == "STRING")
    ]
    return max(lits, key=len, default="")


@functools.cache
def catalog_table(name: str = CATALOG_FILE) -> dict[str, Any]:
    """A catalog grammar (`nccl_catalog.lark`, `torch_catalog.lark`): its rules in match order (most literal
    text first), each compiled to a regex without captures, with the literal it starts with and its longest."""
    return _cached(name, lambda: _build_catalog(name))


def rule_regex(name: str, *, capture: bool = True) -> str:
    """The regex (unanchored source) for one rule; fields are named groups `name`, `name__1`, …"""
    return str(_table()["regex"][f"{name}|{capture:d}"])


def neighbours(family: str) -> dict[str, list[str]]:
    """For one family: field -> (literal before, literal after) where both are fixed text."""
    return dict(_table()["neighbours"].get(family, {}))


@functools.cache
def rule_pattern(name: str) -> re.Pattern[str]:
    """The Python-compiled, fully anchored pattern for one rule (used by tests and the Python paths)."""
    return re.compile(rf"^(?:{rule_regex(name)})$")


def group_names(name: str) -> tuple[str, ...]:
    return tuple(rule_pattern(name).groupindex)


def base_field(group: str) -> str:
    """`rank__1` -> `rank`: duplicate fields of one rule are numbered by the compiler."""
    return group.split("__", 1)[0]
