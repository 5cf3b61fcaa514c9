"""Parse stage, needles: literal text every match of a regex must contain, read off the regex itself.

A line without an NCCL prefix matters to the reader only if some pattern could match it: a grammar
family (NCCL's banner and `Last error:` texts print without a prefix), the PyTorch line anchor, a
format of PyTorch's message catalog, or a pattern the rules look for in unknown lines. Each of those
regexes is parsed (`rxtree`, the subset of Python's syntax the search needs) into the set of literals one of which every match
contains; one Polars pass with all of them as alternatives (literal search, no per-line Python) tells
which lines to offer to the patterns at all. A necessary condition only: a line it keeps may still
match nothing, a line it drops matches none of the patterns, so results do not change.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ncclscope import prebuilt
from ncclscope.parse.logs.lines import rxtree

_META = "()[]{}.*+?|^$\\#&-~"  # escaped for Rust's regex (it rejects escapes of other characters)
MAX_ALTS = 16  # strings a multiplied-out needle set may hold
VERSION = 5  # bump when the extraction changes (cached results are keyed by it)


@functools.cache
def literals(pattern: str) -> frozenset[str] | None:
    """Literals one of which every match of `pattern` contains; None when no such set is found.

    Case-insensitive parts (`(?i)`) give lowercase literals prefixed with `(?i)` (see `regex`)."""
    try:
        tree = rxtree.parse(pattern)
    except ValueError:  # syntax `rxtree` does not follow (or not a regex): no needles
        return None
    best = _best(tree.items, tree.ignorecase)
    return frozenset(best) if best else None


def _exact(node: rxtree.Node, ci: bool) -> set[str] | None:
    """The few strings a node matches when it matches exactly one of them (`PG|Rank`, `[Ww]`), else None."""
    if isinstance(node, rxtree.Lit):
        return {node.char}
    if isinstance(node, rxtree.Set):
        return set(node.chars) if node.chars is not None and 0 < len(node.chars) <= MAX_ALTS else None
    if isinstance(node, rxtree.Group):
        return None if node.ignorecase and not ci else _seq_exact(node.items, ci)
    if isinstance(node, rxtree.Branch):
        out: set[str] = set()
        for branch in node.alternatives:
            b = _seq_exact(branch, ci)
            if b is None:
                return None
            out |= b
        return out if len(out) <= MAX_ALTS else None
    return None


def _seq_exact(items: Sequence[rxtree.Node], ci: bool) -> set[str] | None:
    cur = {""}
    for node in items:
        e = _exact(node, ci)
        if e is None:
            return None
        cur = {a + b for a in cur for b in e}
        if len(cur) > MAX_ALTS:
            return None
    return cur


def _best(items: Sequence[rxtree.Node], ci: bool) -> set[str] | None:
    """The candidate set of a sequence whose shortest literal is longest (each candidate is required).
    Adjacent nodes that match one of a few exact strings are multiplied out (`\\[(?:PG|Rank) ` gives
    `[PG ` and `[Rank `), so that needles are long."""
    cands: list[set[str]] = []
    cur = {""}

    def flush() -> None:
        nonlocal cur
        if cur != {""}:
            cands.append({("(?i)" + t.lower()) if ci else t for t in cur})
        cur = {""}

    for node in items:
        if isinstance(node, rxtree.Repeat) and node.lo >= 1:
            one = _seq_exact(node.items, ci)
            if one is not None and len(one) == 1 and node.lo <= 64:  # `\\.{3,}`: three dots at least
                cur = {a + next(iter(one)) * node.lo for a in cur}
                if node.hi != node.lo:
                    flush()
                continue
        e = _exact(node, ci)
        if e is not None and len(cur) * len(e) <= MAX_ALTS:
            cur = {a + b for a in cur for b in e}
            continue
        flush()
        if e is not None:
            cur = e
            continue
        found: set[str] | None = None
        if isinstance(node, rxtree.Group):
            found = _best(node.items, ci or node.ignorecase)
        elif isinstance(node, rxtree.Branch):
            union: set[str] = set()
            for branch in node.alternatives:
                sub = _best(branch, ci)
                if not sub:
                    union = set()
                    break
                union |= sub
            found = union
        elif isinstance(node, rxtree.Repeat) and node.lo >= 1:
            found = _best(node.items, ci)
        if found:
            cands.append(found)
    flush()
    if not cands:
        return None
    return max(cands, key=lambda s: min(len(_bare(x)) for x in s))


def _bare(needle: str) -> str:
    return needle.removeprefix("(?i)")


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _META else c for c in text)


def regex(needles: Iterable[str]) -> str:
    """One alternation of the needles for Polars (literal search; `(?i)` needles case-insensitively)."""
    plain = sorted({n for n in needles if not n.startswith("(?i)")})
    folded = sorted({_bare(n) for n in needles if n.startswith("(?i)")})
    alts = [_escape(n) for n in plain]
    if folded:
        alts.append("(?i:" + "|".join(_escape(n) for n in folded) + ")")
    return "|".join(alts)


def of_all(patterns: Iterable[str]) -> frozenset[str] | None:
    """Needles of a set of patterns together (a line any of them matches holds one); None if one has none."""
    out: set[str] = set()
    for p in patterns:
        lits = literals(p)
        if not lits or any(len(_bare(n)) < 1 for n in lits):
            return None
        out |= lits
    return frozenset(out)


def _on_disk(kind: str, parts: Sequence[str], build: Callable[[], Any]) -> Any:
    """`build()` (JSON data), kept on disk under the cache directory by the hash of VERSION and `parts`."""
    key = hashlib.sha256("\n".join([str(VERSION), *parts]).encode()).hexdigest()[:16]
    path = (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncclscope" / f"{kind}-{key}.json"
    )
    for found in (prebuilt.shipped(path.name), path):  # the wheel's prebuilt table first
        with contextlib.suppress(OSError, ValueError):
            if found is not None:
                return json.loads(found.read_text())
    out = build()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(path)
        prebuilt.saved(path)
    return out


@functools.cache
def cached(patterns: tuple[str, ...]) -> tuple[frozenset[str] | None, ...]:
    """`literals` of each pattern, kept on disk by the patterns' hash (parsing ~90 big patterns costs ~0.4 s)."""
    found = _on_disk(
        "needles", patterns, lambda: [None if f is None else sorted(f) for f in map(literals, patterns)]
    )
    if not isinstance(found, list) or len(found) != len(patterns):  # not this version's data: build again
        return tuple(literals(p) for p in patterns)
    return tuple(None if f is None else frozenset(f) for f in found)


def minimal(needles: frozenset[str]) -> frozenset[str]:
    """The needles without those that hold another (a line holding one holds the other: the same test with
    fewer alternatives; 877 -> 584 for the reader's candidate test, its Polars regex compiled in 6.5 instead
    of 18 ms). A folded (`(?i)`) needle makes ASCII ones holding it, in any case, redundant. Kept on disk
    (the quadratic search costs ~13 ms)."""

    def build() -> list[str]:
        plain = sorted((n for n in needles if not n.startswith("(?i)")), key=lambda n: (len(n), n))
        folded = sorted((_bare(n) for n in needles if n.startswith("(?i)")), key=lambda n: (len(n), n))
        low: list[str] = []  # kept folded needles, lowercased, where ASCII
        keep_f: list[str] = []
        for f in folded:
            if not (f.isascii() and any(k in f.lower() for k in low)):
                keep_f.append(f)
                if f.isascii():
                    low.append(f.lower())
        keep: list[str] = []
        for n in plain:
            if any(k in n for k in keep) or (n.isascii() and any(k in n.lower() for k in low)):
                continue
            keep.append(n)
        return keep + ["(?i)" + f for f in keep_f]

    out = _on_disk("minimal", sorted(needles), build)
    return frozenset(out) if isinstance(out, list) else frozenset(build())


def contains_one(text: str, lits: frozenset[str]) -> bool:
    """Python check that `text` holds one of the needles (`(?i)` ones case-insensitively)."""
    folded = None
    for n in lits:
        if n.startswith("(?i)"):
            folded = text.lower() if folded is None else folded
            if n[4:] in folded:
                return True
        elif n in text:
            return True
    return False
