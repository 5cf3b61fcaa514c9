"""Regex runner: group names read off a pattern's text match what Python's `re` compiles."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclscope import grammar as G
from ncclscope.parse.logs.lines import peel, rx


def _all_patterns() -> list[str]:
    pats = [
        rf"^(?:{G.rule_regex(r, capture=c)})$"
        for r in G.rule_names()
        if r != "message"
        for c in (True, False)
    ]
    pats += [p for _, p in peel.prefix_patterns()] + [peel.wrapper_pattern(), peel.nested_pattern()]
    return pats


def test_group_names_match_re_on_every_grammar_pattern() -> None:
    pats = _all_patterns()
    assert len(pats) > 150
    for p in pats:
        assert rx.group_names(p) == tuple(re.compile(p).groupindex), p


@pytest.mark.parametrize(
    "pattern",
    [
        r"\(?P<no>x\)",
        r"[(?P<no>]",
        r"[]](?P<a>x)",
        r"[^]](?P<a>x)",
        r"\\(?P<a>x)",
        r"[\]](?P<a>y)(?P<b>z)",
        r"(?:a|(?P<x>b))(?P<y>[^>]+)",
    ],
)
def test_group_names_skip_escapes_and_classes(pattern: str) -> None:
    assert rx.group_names(pattern) == tuple(re.compile(pattern).groupindex)


_atoms = st.sampled_from([r"a", r"\(", r"\[", r"[(?P<]", r"[]x]", r"[^]]", r"\\", r"(?:b)", r"[\]]", "x+"])


@settings(deadline=None)  # a shared box stalls now and then: no timing in tests
@given(st.lists(st.one_of(_atoms, st.just("NAMED")), max_size=12))
def test_group_names_on_generated_patterns(parts: list[str]) -> None:
    k = 0
    out = []
    for part in parts:
        if part == "NAMED":
            out.append(f"(?P<g{k}>c)")
            k += 1
        else:
            out.append(part)
    pattern = "".join(out)
    assert rx.group_names(pattern) == tuple(re.compile(pattern).groupindex)


def test_thresholds_are_per_thread_not_process_wide() -> None:
    """Issue 30: `rx.configured` sets the thresholds for its own thread only (a context variable), so two
    reductions with two `Tuning`s in two threads do not see each other's."""
    import threading

    from ncclscope.parse.logs.lines import rx
    from ncclscope.tuning import DEFAULT, Tuning

    inside = threading.Event()
    done = threading.Event()
    seen: list[int] = []

    def other() -> None:
        with rx.configured(Tuning(polars_regex_min_rows=7)):
            seen.append(rx.small())
            inside.set()
            done.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    assert rx.small() == DEFAULT.polars_regex_min_rows  # this thread keeps its own
    done.set()
    t.join()
    assert seen == [7]
    with rx.configured(Tuning(dispatch_polars_min_rows=3)):
        assert rx.dispatch_small() == 3
    assert rx.dispatch_small() == DEFAULT.dispatch_polars_min_rows
