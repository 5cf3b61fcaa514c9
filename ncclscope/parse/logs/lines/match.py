"""Parse stage, family matching: match messages against the grammar's families, vectorised in Polars.

Each family of the grammar's `message` rule is compiled to an anchored regex (`grammar.rule_regex`).
A message belongs to the first family, in the grammar's order, whose regex matches it whole.

Three ways to get there, all with the same regexes (tests check they agree with each other and with
Lark): many rows -> one Polars pass with all families as named alternatives, then `extract_groups`
per family; few rows -> Python `re` (no Polars regex compilation per chunk); and for a family with a
*varying* field (COLL lines differ mostly in `opCount`), the field is cut out between its two fixed
neighbours, the rest of the message is deduplicated and each distinct rest is matched once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import polars as pl

from ncclscope import grammar as G
from ncclscope.parse.logs.lines import needles, rx
from ncclscope.parse.logs.lines.families import FAMILIES, VARYING
from ncclscope.parse.logs.lines.transform import to_table, typed_fields, warning_rows

__all__ = [
    "VARYING",
    "Matched",
    "dispatch_pattern",
    "family_index",
    "family_patterns",
    "fields_frame",
    "first_family",
    "match_families",
]  # VARYING is read here (the COLL lane, tests switch it off)


@functools.cache
def family_patterns() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(family, anchored regex, group names) in match order."""
    out = []
    for fam in G.families():
        if fam not in FAMILIES:
            raise KeyError(f"grammar family {fam!r} has no entry in parse/families.py")
        pat = rf"^(?:{G.rule_regex(fam)})$"
        out.append((fam, pat, rx.group_names(pat)))
    return tuple(out)


@functools.cache
def _py_pattern(i: int) -> re.Pattern[str]:
    """Family `i`'s pattern for Python `re`, compiled when a message first holds its needles (compiling
    all ~90 at once cost each process ~0.08 s; a run meets a few dozen)."""
    return rx.compiled(family_patterns()[i][1])


def _bases(names: tuple[str, ...]) -> dict[str, list[str]]:
    bases: dict[str, list[str]] = {}
    for n in names:
        bases.setdefault(G.base_field(n), []).append(n)
    return bases


def fields_frame(df: pl.DataFrame, fam_index: int, col: str = "msg") -> pl.DataFrame:
    """Add one `f_<field>` Utf8 column per field of family `fam_index` (numbered duplicates coalesced)."""
    _, pat, names = family_patterns()[fam_index]
    g = rx.groups(df[col], pat)
    return df.with_columns(
        [pl.coalesce([pl.lit(g[n]) for n in ns]).alias(f"f_{b}") for b, ns in _bases(names).items()]
    )


@functools.cache
def dispatch_pattern() -> str:
    """All families as one anchored alternation of named groups `_fN` (N = match order).

    With leftmost-first alternation the first family that matches the whole message wins, which
    is exactly the grammar's order; one pass tells every row its family.
    """
    alts = "|".join(f"(?P<_f{i}>{G.rule_regex(fam, capture=False)})" for i, fam in enumerate(G.families()))
    return rf"^(?:{alts})$"


@functools.cache
def _needles() -> tuple[frozenset[str] | None, ...]:
    return needles.cached(tuple(G.rule_regex(f, capture=False) for f in G.families()))


def first_family(msg: str) -> int | None:
    """Python reference of the dispatch: index of the first family whose pattern matches `msg` whole.
    A family whose needles (`needles.literals`: text every match holds) are not in `msg` is skipped."""
    lits = _needles()
    return next(
        (
            i
            for i in range(len(lits))
            if ((n := lits[i]) is None or needles.contains_one(msg, n)) and _py_pattern(i).match(msg)
        ),
        None,
    )


def family_index(df: pl.DataFrame, col: str = "msg") -> pl.Series:
    """Index (in `family_patterns()`) of the first family matching each message, null if none."""
    if df.height < rx.dispatch_small():
        return pl.Series(
            "_fam", [first_family(s) if s is not None else None for s in df[col].to_list()], dtype=pl.Int32
        )
    g = df[col].str.extract_groups(dispatch_pattern())
    n = len(family_patterns())
    return df.select(
        pl.coalesce(
            [pl.when(g.struct.field(f"_f{i}").is_not_null()).then(pl.lit(i, pl.Int32)) for i in range(n)]
        ).alias("_fam")
    ).to_series()


def _varying(df: pl.DataFrame, fam_index: int, var: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of the family with `f_` fields, other rows) by deduplicating on the message minus `var`.

    The message is cut at the first occurrence of the literals around `var` in the rule; each
    distinct (head, tail) pair is matched once with the whole family pattern (with `0`, a valid
    value, in place of `var`), and the cut-out token is checked with `var`'s own pattern.
    """
    fam = family_patterns()[fam_index][0]
    before, after = G.neighbours(fam)[var]
    m = pl.col("msg")
    a, b = m.str.find(before, literal=True), m.str.find(after, literal=True)
    start = a + len(before)
    df = df.with_columns(
        m.str.slice(start, b - start).alias("_tok"),
        m.str.slice(0, start).alias("_k1"),
        m.str.slice(b).alias("_k2"),
    )
    ok_tok = rx.contains(df["_tok"], rf"^(?:{G.rule_regex(var, capture=False)})$")
    keys = df.filter(ok_tok).select("_k1", "_k2").unique()
    keys = keys.with_columns((pl.col("_k1") + "0" + pl.col("_k2")).alias("msg"))
    keys = keys.filter(family_index(keys) == fam_index)
    keyed = fields_frame(keys, fam_index).drop("msg", f"f_{var}").with_columns(pl.lit(True).alias("_hit"))
    keyed = typed_fields(keyed, fam)  # cast once per distinct key, not once per line
    df = df.with_columns(ok_tok.alias("_ok")).join(
        keyed, on=["_k1", "_k2"], how="left", maintain_order="left"
    )
    ok = df["_hit"].fill_null(False) & df["_ok"]
    drop = ["_k1", "_k2", "_ok", "_hit"]
    if ok.all():
        return df.rename({"_tok": f"f_{var}"}).drop(drop), df.clear().drop(["_tok", *drop])
    hit = df.filter(ok).rename({"_tok": f"f_{var}"}).drop(drop)
    rest = df.filter(~ok).drop(["_tok", *drop, *keyed.columns[2:]], strict=False)
    return hit, rest


@dataclass
class Matched:
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    lines: int = 0  # lines recognised by a family
    bare_lines: int = 0  # of which had no NCCL prefix (banner, `Last error:` texts)
    overflow: list[pl.DataFrame] = field(default_factory=list)  # `transform.overflow` of each family's rows

    def add(self, name: str, df: pl.DataFrame) -> None:
        if df.height == 0:
            return
        prev = self.tables.get(name)
        self.tables[name] = df if prev is None else pl.concat([prev, df], how="vertical_relaxed")

    def take(self, fam_index: int, hit: pl.DataFrame) -> None:
        fam = family_patterns()[fam_index][0]
        self.lines += hit.height
        self.bare_lines += hit.height - int(hit["prefixed"].sum())
        table, rows, bad = to_table(fam, hit)
        self.add(table, rows)
        if bad.height:
            self.overflow.append(bad)
        if table != "warnings":
            warn = hit.filter(pl.col("level") == "WARN")
            if warn.height:
                self.add("warnings", warning_rows(warn, fam))

    @staticmethod
    def unknown_warnings(df: pl.DataFrame) -> pl.DataFrame:
        """WARN lines whose message matched no family still belong in the warnings frame."""
        return warning_rows(df.filter(pl.col("level") == "WARN"), None)


def match_families(live: pl.DataFrame) -> tuple[Matched, pl.DataFrame]:
    """Split rows into per-frame tables (matched) and the rest (no family); `msg` is the input."""
    out = Matched()
    rest = live
    for i, (fam, _, _) in enumerate(family_patterns()):
        var = VARYING.get(fam)
        if var and rest.height >= rx.small():
            hit, rest = _varying(rest, i, var)
            out.take(i, hit)
    if rest.height == 0:
        return out, rest
    rest = rest.with_columns(family_index(rest).alias("_fam"))
    pending = rest.clear().drop("_fam")
    for idx, part in rest.partition_by("_fam", as_dict=True, include_key=False).items():
        if idx[0] is None:
            pending = part
            continue
        i = int(str(idx[0]))
        out.take(i, fields_frame(part, i))
    return out, pending
