"""Parse stage, flattened pastes: one physical line that holds several lines of one launcher task.

`srun -l` (and torchrun's `--tee`/`-l`-style tags) put `N: ` before every line a task prints. A paste that
lost its line breaks (an issue form, a chat client, a log viewer that joins lines) leaves them all on one
line, each still after its ` N: ` tag: `… in broadcast 10: work = … 10: torch.distributed.DistBackendError:
… 10: Last error: 10: socketStartConnect: …`. When one task number repeats at least MIN_TAGS times after
blanks, the line is cut back at those tags (the text before the first one is that task's line too); every
piece keeps the physical line's number, so the evidence still points at it. A number that appears once, or
several different numbers (a table, a list of ranks), is left alone.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

import polars as pl

MIN_TAGS = 2  # repeats of one ` N: ` tag after text inside a line that make it a flattened paste
_TAG = re.compile(r"(?<=\S)\s+(\d{1,5}): (?=\S)")  # a tag after text: not the line's own leading tag
_LEAD = re.compile(r"^\s*(\d{1,5}): ")
_HINT = r"\S\s+\d{1,5}: .*\S\s+\d{1,5}: \S"  # cheap vectorised pre-filter (two tags after text)


def _pieces(text: str) -> list[str] | None:
    """The lines of a flattened paste, each with its tag; None when `text` is one line (its own leading tag
    and a `node 0: ` or `RANK 7: ` in its words are no flattening: a tag must repeat after text)."""
    lead = _LEAD.match(text)
    body = text[lead.end() :] if lead else text
    tags = list(_TAG.finditer(body))
    if len(tags) < MIN_TAGS:
        return None
    task, n = Counter(m.group(1) for m in tags).most_common(1)[0]
    if n < MIN_TAGS or (lead is not None and lead.group(1) != task):
        return None
    cuts = [m.start(1) for m in tags if m.group(1) == task]
    head = body[: cuts[0]].rstrip()
    out = [f"{task}: {head}"] if head else []
    bounds = [*cuts, len(body)]
    out += [body[a:b].rstrip() for a, b in pairwise(bounds)]
    return out


def split_flattened(raw: pl.DataFrame) -> pl.DataFrame:
    """`raw` (path, line, raw, …) with each flattened line replaced by its pieces, in order; other rows as they
    are. Only rows with two tags at least (one vectorised filter) are looked at line by line."""
    hint = raw["raw"].str.contains(_HINT).fill_null(False)
    if not hint.any():
        return raw
    df = raw.with_row_index("_i")
    rows: list[dict[str, object]] = []
    for row in df.filter(hint).iter_rows(named=True):
        parts = _pieces(str(row["raw"]))
        rows.extend({**row, "raw": p, "_j": j} for j, p in enumerate(parts or [row["raw"]]))
    cut = pl.DataFrame(rows, schema={**df.schema, "_j": pl.Int64})
    rest = df.filter(~hint).with_columns(pl.lit(0, pl.Int64).alias("_j"))
    return pl.concat([rest, cut]).sort("_i", "_j").drop("_i", "_j")
