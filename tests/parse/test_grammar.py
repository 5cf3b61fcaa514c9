"""The grammar file loads, every rule compiles for both engines, and the family table matches it."""

from __future__ import annotations

import re

import polars as pl
import pytest

from ncclscope import grammar as G
from ncclscope.parse.logs.lines.families import FAMILIES, VARYING


def test_families_and_table_agree() -> None:
    fams = G.families()
    assert len(fams) == len(set(fams)) > 80
    assert set(fams) == set(FAMILIES)
    assert fams[0] == "coll"  # bulk logs are COLL lines: tried first
    for fam, var in VARYING.items():
        assert var in G.neighbours(fam)


@pytest.mark.parametrize("rule", sorted(G.rule_names() - {"message"}))
def test_every_rule_compiles_in_python_and_polars(rule: str) -> None:
    for capture in (True, False):
        pat = rf"^(?:{G.rule_regex(rule, capture=capture)})$"
        re.compile(pat)
        pl.Series(["x"]).str.contains(pat)


def test_cached_table_equals_a_fresh_compile(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = G._table()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    G._table.cache_clear()
    try:
        fresh = G._table()
    finally:
        G._table.cache_clear()
    assert fresh == cached


def test_fields_become_named_groups_and_duplicates_are_numbered() -> None:
    names = G.group_names("prefix_std")
    assert {"host", "pid", "tid", "cuda_dev", "level", "host__1"} <= set(names)
    assert {G.base_field(n) for n in names} == {
        "host",
        "pid",
        "tid",
        "cuda_dev",
        "src_file",
        "src_line",
        "func",
        "level",
    }


def test_recursive_rules_are_refused() -> None:
    from lark.load_grammar import load_grammar

    g, _ = load_grammar('a: "x" a | "y"\n', "<t>", [], False)
    defs = G._Defs({str(n): t for n, _p, t, _o in g.rule_defs}, {})
    with pytest.raises(ValueError, match="recursive"):
        G._Compiler(defs, True).rule("a")


def test_grammar_is_sectioned_and_shipped() -> None:
    text = G.grammar_text()
    for banner in (
        "Prefix",
        "Wrappers",
        "Version, driver, environment",
        "Bootstrap and network",
        "Communicator init",
        "Graph: rings, trees",
        "Connections",
        "Collectives",
        "Error trail",
        "Warnings and errors",
    ):
        assert banner in text
