"""Findings stage, NCCL's result code as PyTorch raises it, when nothing else in the evidence says why.

`RuntimeError: NCCL error in: …/ProcessGroupNCCL.cpp:1190, invalid usage, NCCL version 2.10.3` (and the
`DistBackendError` form, and the `ncclInvalidUsage: This usually reflects …` line after it) is often all a
user pastes. The result code alone has a meaning (the `nccl-result-*` families of
grammars/catalog/meanings.json, read from NCCL's ncclGetErrorString and PyTorch's getNcclErrorDetailStr),
and the absence of the WARN that would name the reason is itself the advice: rerun with NCCL's log on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from ncclscope.findings.meanings import family_of
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import make
from ncclscope.records import Finding, Severity

# Where PyTorch raised it (`ProcessGroupNCCL.cpp:1190`, `NCCLUtils.hpp:121`): names the call that failed.
RAISED_AT = re.compile(r"((?:ProcessGroupNCCL|NCCLUtils)\.[ch]pp:\d+)")
# The families a result-code line can belong to, and the severity of each when it stands alone. A remote
# error says a peer failed first: an echo whose cause is not in the evidence (warning, not the failure).
RESULTS: dict[str, Severity] = {
    "nccl-result-system": "error",
    "nccl-result-usage": "error",
    "nccl-result-internal": "error",
    "nccl-result-cuda": "error",
    "nccl-result-remote": "warning",
}
RERUN = (
    " The evidence holds no NCCL line that names the reason: rerun with NCCL_DEBUG=INFO (or at least WARN) "
    "so the failing rank prints the WARN that does."
)


@rule(
    "nccl-result",
    "error",
    "PyTorch raised an NCCL result code that no other finding explains",
    "errors",
    post=True,
)
def nccl_result(ctx: Context) -> Iterable[Finding]:
    """PyTorch `NCCL error in: <where>, <result>, NCCL version <v>` lines (kind `backend_error`) whose result
    string belongs to an `nccl-result-*` meaning family and that name no rank (a rank's own exception is
    rank-exited's or rank-exception's), when no other rule found an error or warning and no NCCL WARN is
    left to read (those name the reason, and this line is their echo). One finding per result code, with
    that family's meaning; error, except ncclRemoteError (a peer failed first: warning)."""
    if any(f.severity in ("error", "warning") for f in ctx.prior):
        return []
    if not ctx.logs.warnings.filter(~pl.col("benign").fill_null(False)).is_empty():
        return []  # a WARN names the reason (nccl-warn, unexplained-warn read it)
    # A line naming its rank is that rank's exception: rank-exited / rank-exception report it.
    t = ctx.logs.torch.filter(
        (pl.col("kind") == "backend_error") & pl.col("rank").is_null() & pl.col("rank_hint").is_null()
    )
    out: list[Finding] = []
    seen: set[str] = set()
    for row in t.iter_rows(named=True):
        fam = family_of(str(row["detail"] or ""))
        if fam is None or fam.id not in RESULTS or fam.id in seen:
            continue
        seen.add(fam.id)
        rows = t.filter(pl.col("detail") == row["detail"])
        at = RAISED_AT.search(str(row["text"] or ""))
        version = f", NCCL {row['nccl_version']}" if row["nccl_version"] else ""
        title = f"NCCL returned '{row['detail']}' to PyTorch" + (f" at {at.group(1)}" if at else "") + version
        out.append(
            make(
                "nccl-result",
                RESULTS[fam.id],
                title,
                fam.why,
                fam.fix + RERUN,
                rows,
                ctx,
                metrics={"family": fam.id, "cause_class": fam.cause, "result": row["detail"]},
            )
        )
    return out
