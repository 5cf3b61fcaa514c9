"""Findings stage, WARN accounting: no WARN goes unexplained, and each one read carries its meaning.

Runs after every other rule (`post`). A WARN line is explained when a finding cites it or a line of the
same shape (digits, hex and addresses masked) or of the same grammar family (not `other`: the rule that
cites one socket/IB/CUDA WARN read them all), when it is known-benign (`parse.families.BENIGN_WARNS`,
benign grammar families and meaning families of cause `benign`, each with its reason) or when it was
printed during a clean teardown (align.phase). What is left is given the meaning of its message family
(findings.meanings, grammars/catalog/meanings.toml): one `nccl-warn` finding per family, with the cause
class in its metrics. Only lines no family claims become `unexplained-warn`, so the verdict never reads
"no problems" over a WARN nobody read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import polars as pl

from ncclscope.findings import meanings as M
from ncclscope.findings import quoted as Q
from ncclscope.findings.context import in_context
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import CITE, hosts_of, make, ranks_of
from ncclscope.findings.trail_fatal import fatal_trail
from ncclscope.parse.logs.lines import BENIGN_WARNS
from ncclscope.records import Finding, Severity
from ncclscope.schema import ORIGIN

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
    """WARN rows with their shape, teardown flag and meaning family (`meaning`, null when none); a line
    of a family whose cause is `benign` counts as benign."""
    w = ctx.logs.warnings.filter(pl.col("level") == "WARN")
    # `lines`: the lines a row stands for (a flood of one WARN keeps its first and last rows, the rest counted)
    w = w.with_columns(
        shape=shape(), teardown=ctx.phase.benign_teardown(w), lines=ctx.logs.lines_of("warnings", w)
    )
    w = w.join(_meanings(w), on="shape", how="left")
    benign_family = pl.col("meaning").is_in([f.id for f in M.families() if f.cause == "benign"])
    return w.with_columns(benign=pl.col("benign").fill_null(False) | benign_family.fill_null(False))


def _meanings(w: pl.DataFrame) -> pl.DataFrame:
    """shape -> meaning family id, from the first line of each shape (its text and printed source file)."""
    firsts = w.unique("shape", keep="first", maintain_order=True).select("shape", "message", "src_file")
    ids = []
    for msg, src in zip(firsts["message"].to_list(), firsts["src_file"].to_list(), strict=True):
        fam = M.family_of(msg or "", src)
        ids.append(fam.id if fam is not None else None)
    return pl.DataFrame({"shape": firsts["shape"], "meaning": pl.Series(ids, dtype=pl.Utf8)})


def _cited(ctx: Context) -> pl.DataFrame:
    rows = [(e.path, e.line) for f in ctx.prior for e in f.evidence if e.line > 0]
    return pl.DataFrame(rows, schema={"path": pl.Utf8, "line": pl.Int64}, orient="row")


def _unread(ctx: Context) -> pl.DataFrame:
    """Live WARN rows (not benign, not teardown) that no finding cites by line, shape or grammar family."""
    w = _warns(ctx)
    live = w.filter(~pl.col("benign") & ~pl.col("teardown"))
    if live.is_empty():
        return live
    cited = w.join(_cited(ctx), on=["path", "line"], how="semi")
    read = cited.filter(pl.col("family") != "other")[
        "family"
    ].unique()  # a rule that cites one reads them all
    return live.filter(
        ~pl.col("shape").is_in(cited["shape"].unique().implode()) & ~pl.col("family").is_in(read.implode())
    )


def _quoted(ctx: Context) -> pl.DataFrame:
    """NCCL errors quoted by PyTorch (`Last error:`) or nccl-tests (findings.quoted) that no finding cites
    (the line or, for `Last error:`, the next) and a family claims, with their shape and meaning."""
    schema = {**ORIGIN, "message": pl.Utf8, "shape": pl.Utf8, "meaning": pl.Utf8, "lines": pl.Int64}
    rows = Q.quoted(ctx)
    cited = _cited(ctx)
    rows = rows.join(cited, on=["path", "line"], how="anti").join(
        cited.with_columns(pl.col("line") - 1), on=["path", "line"], how="anti"
    )
    if rows.is_empty():
        return pl.DataFrame(schema=schema)
    rows = rows.with_columns(shape=shape(), src_file=pl.lit(None, dtype=pl.Utf8), lines=pl.lit(1, pl.Int64))
    rows = rows.join(_meanings(rows), on="shape", how="left").filter(pl.col("meaning").is_not_null())
    return rows.select(list(schema))


def _kinds(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.group_by("shape", maintain_order=True).agg(
        pl.col("lines").sum().alias("n"), pl.col("message").first()
    )


def _lines(rows: pl.DataFrame) -> int:
    """Input lines `rows` stand for (`LogFrames.lines_of`)."""
    return int(rows["lines"].sum() or 0)


@rule(
    "unexplained-warn",
    "warning",
    "A WARN that no rule explains and no meaning family claims",
    "warnings",
    post=True,
)
def unexplained_warn(ctx: Context) -> Iterable[Finding]:
    """Every NCCL WARN line that is not benign (BENIGN_WARNS, benign families), not part of a clean
    teardown, not of the same shape as a line some finding cites, and whose message no meaning family
    (grammars/catalog/meanings.toml) claims. Warning: NCCL prints WARN for conditions it considers wrong,
    so one that nothing interprets must at least be read."""
    left = _unread(ctx).filter(pl.col("meaning").is_null())
    if left.is_empty():
        return []
    kinds = _kinds(left)
    first = kinds.row(0, named=True)
    title = f"{_lines(left)} WARN line(s) of {kinds.height} kind(s) that no rule explains, first: {first['message']}"
    examples = left.unique("shape", keep="first", maintain_order=True).head(MAX_SHAPES)
    return [
        make(
            "unexplained-warn",
            "warning",
            title[:200],
            "NCCL prints WARN when something it did not expect happened; ncclscope has no rule and no "
            "meaning for these, so it cannot say whether they matter here.",
            "Read the cited lines with the NCCL version in hand (search them in NVIDIA/nccl issues); if they "
            "come before a failure or hang, they are likely its first sign.",
            examples,
            ctx,
            metrics={
                "lines": _lines(left),
                "kinds": [{"message": m, "count": n} for _, n, m in kinds.head(MAX_SHAPES).iter_rows()],
            },
        )
    ]


@rule(
    "nccl-warn",
    "error",
    "WARNs no specific rule reads, with the meaning of their family",
    "warnings",
    post=True,
)
def nccl_warn(ctx: Context) -> Iterable[Finding]:
    """WARN lines left after every other rule (not benign, not teardown, not cited) whose message a meaning
    family claims: one finding per family, in order of first appearance, with that family's cause class
    (metrics.cause_class: configuration, resource, network, hardware/driver, peer-failure, internal,
    teardown), severity, NCCL variables and why/try; the advice is the family's variant that matches the
    first line's text. Severity is the family's (error, warning or info), and error when a warning-weight
    WARN's own error trail reaches the API boundary (findings.trail_fatal: the call failed). Also NCCL errors
    other programs quote (findings.quoted: PyTorch's `Last error:` text, nccl-tests' `Test CUDA|NCCL failure`)
    when no finding cites them."""
    cols = [*CITE, "message", "shape", "meaning", "lines"]
    left = pl.concat(
        [_unread(ctx).filter(pl.col("meaning").is_not_null()).select(cols), _quoted(ctx).select(cols)],
        how="vertical_relaxed",
    )
    if left.is_empty():
        return []
    fams = M.by_id()
    out = []
    for (fid,), rows in left.partition_by("meaning", as_dict=True, maintain_order=True).items():
        fam = fams[str(fid)]
        kinds = _kinds(rows)
        first = str(kinds["message"][0] or "")
        why, fix = fam.advice(first)
        cause = fam.cause_of(first)
        sev: Severity = (
            "error" if fam.severity == "error" else "warning" if fam.severity == "warning" else "info"
        )
        title = f"{cause.capitalize()} ({fam.id}): {first}"
        seen = in_context(fam.id, first, ctx)  # the job's other lines may change what the line means
        if seen is not None:
            why, fix, cause = seen.why, seen.fix, seen.cause
            sev = "warning" if seen.severity == "warning" else "info" if seen.severity == "info" else sev
            title = f"{seen.label}: {first}"
        # A warning-weight WARN whose error left NCCL through the API (its trail reaches group.cc/init.cc)
        # failed the call: an error, whatever the family's usual weight (findings.trail_fatal).
        fatal = (
            fatal_trail(ctx, rows) if sev == "warning" and cause not in ("peer-failure", "benign") else None
        )
        if fatal is not None:
            sev = "error"
            title += f" ({fatal.words()})"
        if _lines(rows) > 1:
            title += f" (+{_lines(rows) - 1} line(s), {kinds.height} kind(s))"
        out.append(
            make(
                "nccl-warn",
                sev,
                title[:200],
                why,
                fix,
                rows.unique("shape", keep="first", maintain_order=True).head(MAX_SHAPES),
                ctx,
                metrics={
                    "family": fam.id,
                    "cause_class": cause,
                    "variables": list(fam.variables),
                    "read_from": list(fam.read),
                    "source": list(M.source_of(first)),
                    "lines": _lines(rows),
                    "kinds": [{"message": m, "count": n} for _, n, m in kinds.head(MAX_SHAPES).iter_rows()],
                    **({"context": seen.evidence()} if seen is not None else {}),
                    **({"repeats": seen.repeats} if seen is not None and seen.repeats else {}),
                    **({"fatal": fatal.words(), "result": fatal.code} if fatal is not None else {}),
                },
            )
        )
    return out


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
        .agg(
            pl.col("lines").sum().alias("n"),
            pl.col("message").first(),
            pl.col("host").n_unique().alias("hosts"),
        )
        .sort("n", descending=True, maintain_order=True)
    )
    summary = "; ".join(f"{n} × {m}" for n, m in kinds.select("n", "message").head(4).iter_rows())
    reasons = kinds["reason"].unique(maintain_order=True).to_list()
    f = make(
        "benign-warn",
        "info",
        f"{_lines(w)} known-benign WARN line(s) of {kinds.height} kind(s): {summary}"[:200],
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
        *((pl.col("meaning") == f.id, f.why) for f in M.families() if f.cause == "benign"),
    ]
    return pl.coalesce(
        [pl.when(cond).then(pl.lit(reason)) for cond, reason in cases]
        + [pl.lit("marked benign by its grammar family (parse/families.py)")]
    )
