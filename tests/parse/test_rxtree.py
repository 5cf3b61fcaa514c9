"""`rxtree` reads the regex syntax the needle search needs without Python's private parser (issue 30)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclscope.parse.logs.lines import needles, rxtree

# (pattern, the needles expected: one of them is in every match; None: no needle set)
CASES = [
    (
        r"NET/IB : (?:No device found\.|Unable to open device )",
        {"NET/IB : No device found.", "NET/IB : Unable to open device "},
    ),
    (r"(?P<op>AllReduce|Broadcast) opCount", {"AllReduce opCount", "Broadcast opCount"}),
    (r"(?<=x)Watchdog(?!y) caught", {"Watchdog"}),
    (r"(?#comment)abc", {"abc"}),
    (r"\x41\u0042\103D", {"ABCD"}),
    (r"[]x]yz", {"]yz", "xyz"}),
    (r"a{2}b", {"aab"}),
    (r"a{,2}bc", {"bc"}),
    (r"x{foo}", {"x{foo}"}),
    (r"(?:ab)+?c", {"ab"}),
    (r"(?>atomic)tail", {"tail"}),
    (r"(a)\1zz", {"zz"}),
    (r"(?i:Foo)bar", {"(?i)foo"}),  # ties keep the first
    (r"(?i)Foo\d+", {"(?i)foo"}),
    (r"[^a]bc|[^a]bd", {"bc", "bd"}),
    (r"(?x) a b", None),  # verbose patterns are not followed: no needles, every line offered
    (r"\d+", None),
    (r"\N{BULLET}x", None),
]


@pytest.mark.parametrize(("pattern", "expected"), CASES)
def test_needles_of_syntax(pattern: str, expected: set[str] | None) -> None:
    assert needles.literals(pattern) == (frozenset(expected) if expected is not None else None)


@pytest.mark.parametrize("pattern", [p for p, e in CASES if e is not None])
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_matches_hold_a_needle(pattern: str, data: st.DataObject) -> None:
    lits = needles.literals(pattern)
    assert lits is not None
    text = data.draw(st.from_regex(re.compile(pattern), fullmatch=False))
    assert needles.contains_one(text, lits), (text, sorted(lits))


@pytest.mark.parametrize("bad", ["a)", "(ab", "*a", "a**", "[z-a]", r"\q", "(?Z)", "x(?i)y", "[a"])
def test_unsupported_syntax_gives_no_needles(bad: str) -> None:
    with pytest.raises(ValueError):
        rxtree.parse(bad)
    assert needles.literals(bad) is None


def test_no_private_re_module() -> None:
    """The reader imports no private module of `re` (`re._parser` is not on every Python it may run on)."""
    root = Path(needles.__file__).resolve().parents[2]
    bad = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import | ast.ImportFrom) else []
            mod = node.module if isinstance(node, ast.ImportFrom) else ""
            if (mod or "").startswith(("re._", "sre_")) or any(n.startswith(("re._", "sre_")) for n in names):
                bad.append(str(path))
            if mod == "re" and any(n.startswith("_") for n in names):
                bad.append(str(path))
    assert bad == []
