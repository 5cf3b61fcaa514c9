"""Findings stage, WARN accounting: no WARN goes unexplained.

Runs after every other rule (`post`). A WARN line is explained when a finding cites it or a line of the
same shape (digits, hex and addresses masked) or of the same grammar family (not `other`: the rule that
cites one socket/IB/CUDA WARN read them all), when it is known-benign (`parse.families.BENIGN_WARNS`
and benign families, each with its reason) or when it was printed during a clean teardown (align.phase).
What is left becomes one `unexplained-warn` finding with its text, so the verdict never reads "no
problems" over a WARN nobody read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import polars as pl

from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import hosts_of, make, ranks_of
from ncclscope.parse.logs.families import BENIGN_WARNS
from ncclscope.records import Finding

MAX_SHAPES = 12
# Families the grammar marks benign as a whole, with why (the line-level reasons are in BENIGN_WARNS).
FAMILY_REASON = {
    "plugin": "net/tuner/profiler plugin probing: NCCL tries external plugins first and falls back to its own",
    "collnet": BENIGN_WARNS[0].reason,
    "proxy": "proxy op-id bookkeeping printed while a request is retried",
}


def shape(col: str = "message") -> pl.Expr:
    """A message with its variable parts (numbers, hex words such as GIDs and pointers) masked, so lines
    of one kind compare equal."""
    return pl.col(col).fill_null("").str.replace_all(r"0x[0-9a-fA-F]+|[0-9a-fA-F]*\d[0-9a-fA-F]*", "#")


def _warns(ctx: Context) -> pl.DataFrame:
    w = ctx.logs.warnings.filter(pl.col("level") == "WARN")
    return w.with_columns(shape=shape(), teardown=ctx.phase.benign_teardown(w))


def _cited(ctx: Context) -> pl.DataFrame:
    rows = [(e.path, e.line) for f in ctx.prior for e in f.evidence if e.line > 0]
    return pl.DataFrame(rows, schema={"path": pl.Utf8, "line": pl.Int64}, orient="row")


@rule("unexplained-warn", "warning", "A WARN that no rule explains", "warnings", post=True)
def unexplained_warn(ctx: Context) -> Iterable[Finding]:
    """Every NCCL WARN line that is not benign (BENIGN_WARNS, benign families), not part of a clean
    teardown, and not of the same shape as a line some finding cites. Warning: NCCL prints WARN for
    conditions it considers wrong, so one that no rule interprets must at least be read."""
    w = _warns(ctx)
    live = w.filter(~pl.col("benign").fill_null(False) & ~pl.col("teardown"))
    if live.is_empty():
        return []
    cited = w.join(_cited(ctx), on=["path", "line"], how="semi")
    read = cited.filter(pl.col("family") != "other")[
        "family"
    ].unique()  # a rule that cites one reads them all
    left = live.filter(
        ~pl.col("shape").is_in(cited["shape"].unique().implode()) & ~pl.col("family").is_in(read.implode())
    )
    if left.is_empty():
        return []
    kinds = left.group_by("shape", maintain_order=True).agg(pl.len().alias("n"), pl.col("message").first())
    first = kinds.row(0, named=True)
    title = f"{left.height} WARN line(s) of {kinds.height} kind(s) that no rule explains, first: {first['message']}"
    examples = left.unique("shape", keep="first", maintain_order=True).head(MAX_SHAPES)
    return [
        make(
            "unexplained-warn",
            "warning",
            title[:200],
            "NCCL prints WARN when something it did not expect happened; ncclscope has no rule that reads "
            "these, so it cannot say whether they matter here.",
            "Read the cited lines with the NCCL version in hand (search them in NVIDIA/nccl issues); if they "
            "come before a failure or hang, they are likely its first sign.",
            examples,
            ctx,
            metrics={
                "lines": left.height,
                "kinds": [{"message": m, "count": n} for _, n, m in kinds.head(MAX_SHAPES).iter_rows()],
            },
        )
    ]


@rule(
    "benign-warn", "info", "WARNs that healthy runs print, with why they are harmless", "warnings", post=True
)
def benign_warn(ctx: Context) -> Iterable[Finding]:
    """Known-benign WARN lines (net plugin not found, IB probing on a node without IB, SHARP/CollNet or
    NVLS unavailable, MSCCL++ off, proxy service-thread closures during a clean teardown), counted per
    kind with the reason each is harmless. Info."""
    w = _warns(ctx).filter(pl.col("benign").fill_null(False) | pl.col("teardown"))
    if w.is_empty():
        return []
    w = w.with_columns(reason=_reason())
    # Per message kind (reason and masked text), most frequent first: a count is that kind's own lines;
    # the finding's ranks and hosts are those of every line, not of the first cited one (issue 31).
    kinds = (
        w.group_by("reason", "shape", maintain_order=True)
        .agg(pl.len().alias("n"), pl.col("message").first(), pl.col("host").n_unique().alias("hosts"))
        .sort("n", descending=True, maintain_order=True)
    )
    summary = "; ".join(f"{n} × {m}" for n, m in kinds.select("n", "message").head(4).iter_rows())
    reasons = kinds["reason"].unique(maintain_order=True).to_list()
    f = make(
        "benign-warn",
        "info",
        f"{w.height} known-benign WARN line(s) of {kinds.height} kind(s): {summary}"[:200],
        "These WARNs appear in healthy runs: " + " ".join(f"({i + 1}) {r}." for i, r in enumerate(reasons)),
        "Nothing to do; they are listed so that a reader of the raw log knows they were read.",
        w.unique(["reason", "shape"], keep="first", maintain_order=True),
        ctx,
        metrics={
            "kinds": [
                {"reason": r, "count": n, "example": m, "hosts": h}
                for r, n, m, h in kinds.select("reason", "n", "message", "hosts").iter_rows()
            ]
        },
    )
    return [dataclasses.replace(f, ranks=ranks_of(w, ctx.ranks), hosts=hosts_of(w))]


def _reason() -> pl.Expr:
    msg = pl.col("message").fill_null("")
    teardown = (
        "printed while the processes shut down (proxy service thread and communicator teardown), with "
        "no failure before it"
    )
    cases = [
        (pl.col("teardown"), teardown),
        *((msg.str.contains(b.pattern), b.reason) for b in BENIGN_WARNS),
        *((pl.col("family") == fam, reason) for fam, reason in FAMILY_REASON.items()),
    ]
    return pl.coalesce(
        [pl.when(cond).then(pl.lit(reason)) for cond, reason in cases]
        + [pl.lit("marked benign by its grammar family (parse/families.py)")]
    )
