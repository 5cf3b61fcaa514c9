"""Parse stage, fast path: match messages against the grammar's families, vectorised in Polars.

Each family of the grammar's `message` rule is compiled to an anchored regex (`grammar.rule_regex`)
and tried in the grammar's order on the messages no earlier family took: `str.contains` picks the
rows, `str.extract_groups` pulls the fields. Bulk logs are mostly one family (COLL lines), which the
grammar lists first, so the other ~90 patterns only ever see the few rows left over.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import polars as pl

from ncclscope import grammar as G
from ncclscope.parse.families import FAMILIES
from ncclscope.parse.transform import to_table, warning_rows


@functools.cache
def family_patterns() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(family, anchored regex, group names) in match order."""
    out = []
    for fam in G.families():
        if fam not in FAMILIES:
            raise KeyError(f"grammar family {fam!r} has no entry in parse/families.py")
        pat = rf"^(?:{G.rule_regex(fam)})$"
        out.append((fam, pat, tuple(re.compile(pat).groupindex)))
    return tuple(out)


def fields_frame(df: pl.DataFrame, pat: str, names: tuple[str, ...]) -> pl.DataFrame:
    """Add one `f_<field>` Utf8 column per field of the pattern (numbered duplicates coalesced)."""
    df = df.with_columns(pl.col("msg").str.extract_groups(pat).alias("_g"))
    bases: dict[str, list[str]] = {}
    for n in names:
        bases.setdefault(G.base_field(n), []).append(n)
    cols = [pl.coalesce([pl.col("_g").struct.field(n) for n in ns]).alias(f"f_{b}") for b, ns in bases.items()]
    return df.with_columns(cols).drop("_g")


@dataclass
class Matched:
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    lines: int = 0  # lines recognised by a family
    bare_lines: int = 0  # of which had no NCCL prefix (banner, `Last error:` texts)

    def add(self, name: str, df: pl.DataFrame) -> None:
        if df.height == 0:
            return
        prev = self.tables.get(name)
        self.tables[name] = df if prev is None else pl.concat([prev, df], how="vertical_relaxed")

    @staticmethod
    def unknown_warnings(df: pl.DataFrame) -> pl.DataFrame:
        """WARN lines whose message matched no family still belong in the warnings frame."""
        return warning_rows(df.filter(pl.col("level") == "WARN"), None)


@functools.cache
def dispatch_pattern() -> str:
    """All families as one anchored alternation of named groups `_fN` (N = match order).

    With leftmost-first alternation the first family that matches the whole message wins, which
    is exactly the grammar's order; one pass tells every row its family.
    """
    alts = "|".join(f"(?P<_f{i}>{G.rule_regex(fam, capture=False)})" for i, fam in enumerate(G.families()))
    return rf"^(?:{alts})$"


def family_index(msg: pl.Expr) -> pl.Expr:
    """Index (in `family_patterns()`) of the first family matching each message, null if none."""
    g = msg.str.extract_groups(dispatch_pattern())
    n = len(family_patterns())
    return pl.coalesce([pl.when(g.struct.field(f"_f{i}").is_not_null()).then(pl.lit(i, pl.Int32))
                        for i in range(n)])


def match_families(live: pl.DataFrame) -> tuple[Matched, pl.DataFrame]:
    """Split rows into per-frame tables (matched) and the rest (no family); `msg` is the input."""
    out = Matched()
    pats = family_patterns()
    # Bulk logs are nearly all one family (COLL): take it with its own, cheaper pattern first.
    _, first_pat, _ = pats[0]
    head = live["msg"].str.contains(first_pat)
    live = live.with_columns(pl.when(head).then(pl.lit(0, pl.Int32)).alias("_fam"))
    rest = live.filter(~head)
    if rest.height:
        live = pl.concat([live.filter(head), rest.with_columns(family_index(pl.col("msg")).alias("_fam"))])
    pending = live.clear()
    for idx, part in live.partition_by("_fam", as_dict=True, include_key=False).items():
        if idx[0] is None:
            pending = part
            continue
        fam, pat, names = pats[int(idx[0])]  # type: ignore[call-overload]
        hit = fields_frame(part, pat, names)
        out.lines += hit.height
        out.bare_lines += hit.height - int(hit["prefixed"].sum())
        table, rows = to_table(fam, hit)
        out.add(table, rows)
        if table != "warnings":
            warn = hit.filter(pl.col("level") == "WARN")
            if warn.height:
                out.add("warnings", warning_rows(warn, fam))
    return out, pending.drop("_fam", strict=False)
