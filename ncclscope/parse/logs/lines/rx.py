"""Parse stage, regex runner: apply one grammar-derived pattern to a column, Polars or Python `re`.

Polars compiles a regex for every expression that uses it, which costs more than matching a few
hundred lines; below `Tuning.polars_regex_min_rows` rows the same pattern runs through Python's `re`
(compiled once per process). The thresholds of the running reduction are read from a context variable
that `configured` sets (each thread and task has its own: no process-wide switch; two reductions in two
threads with two `Tuning`s do not see each other's). The patterns use only syntax both engines read the same way (no look-around, no
back-references; `$` never meets a newline because lines are split first).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Iterator

import polars as pl

from ncclscope.tuning import DEFAULT, Tuning

_TUNING: contextvars.ContextVar[Tuning] = contextvars.ContextVar("ncclscope_rx_tuning", default=DEFAULT)


def small() -> int:
    """Rows from which a pattern runs as a Polars pass (`Tuning.polars_regex_min_rows` of this context)."""
    return _TUNING.get().polars_regex_min_rows


def dispatch_small() -> int:
    """Rows from which the family dispatch runs as one Polars pass (`Tuning.dispatch_polars_min_rows`)."""
    return _TUNING.get().dispatch_polars_min_rows


@contextlib.contextmanager
def configured(tuning: Tuning) -> Iterator[None]:
    """Within the block (this thread or task only), the regex helpers and the family dispatch use the
    thresholds of `tuning`."""
    token = _TUNING.set(tuning)
    try:
        yield
    finally:
        _TUNING.reset(token)


@functools.cache
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@functools.cache
def group_names(pattern: str) -> tuple[str, ...]:
    """Named groups of `pattern` in order, read off its text (compiling the grammar's ~90 big
    patterns with Python's `re` only for their names cost ~0.2 s per run). Skips escapes and
    character classes; tests check it against `re.compile(pattern).groupindex`."""
    names: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):  # a leading `]` is a literal
                i += 1
            continue
        elif pattern.startswith("(?P<", i):
            end = pattern.index(">", i)
            names.append(pattern[i + 4 : end])
            i = end
        i += 1
    return tuple(names)


def contains(s: pl.Series, pattern: str) -> pl.Series:
    """Boolean mask: the pattern matches (searching, like `str.contains`); null strings are False."""
    if s.len() >= small():
        return s.str.contains(pattern).fill_null(False)
    rx = compiled(pattern)
    return pl.Series(s.name, [bool(v is not None and rx.search(v)) for v in s.to_list()], dtype=pl.Boolean)


def groups(s: pl.Series, pattern: str) -> pl.DataFrame:
    """One Utf8 column per named group of the first match (all null where there is none)."""
    names = group_names(pattern)
    if s.len() >= small():
        g = s.str.extract_groups(pattern)
        return pl.DataFrame([g.struct.field(n).alias(n) for n in names]) if names else pl.DataFrame()
    rx = compiled(pattern)
    dicts = [m.groupdict() if v is not None and (m := rx.search(v)) else {} for v in s.to_list()]
    return pl.DataFrame({n: pl.Series(n, [d.get(n) for d in dicts], dtype=pl.Utf8) for n in names})


def find_all(s: pl.Series, pattern: str) -> pl.Series:
    """Every non-overlapping match, as a list column (like `str.extract_all`)."""
    if s.len() >= small():
        return s.str.extract_all(pattern)
    rx = compiled(pattern)
    return pl.Series(
        s.name,
        [[m.group(0) for m in rx.finditer(v)] if v is not None else None for v in s.to_list()],
        dtype=pl.List(pl.Utf8),
    )
