"""CLI stage, `ncclscope coverage`: how much of a log corpus the grammar recognises."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any

import typer

from ncclscope.cli import app
from ncclscope.cli.console import echo, stdout_console
from ncclscope.cli.options import Paths, tuning
from ncclscope.report.safe_text import escape
from ncclscope.report.schema_version import SCHEMA_VERSION

MAX_SHOWN = 1_000_000  # --show-unknown's ceiling: more lines than anyone reads, far below an overflow
_COUNTS = ("lines", "nccl_lines", "recognized", "unknown")


class Format(str, Enum):
    text = "text"
    json = "json"


@app.command()
def coverage(
    paths: Paths,
    show_unknown: Annotated[
        int,
        typer.Option("--show-unknown", min=0, max=MAX_SHOWN, help="Print up to N unrecognised NCCL lines."),
    ] = 0,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """Per input: lines, NCCL lines, recognised, unknown; and the total recognised share."""
    from ncclscope.parse import classify_inputs, read_logs

    inputs = classify_inputs(list(paths))
    rows: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    for p in inputs.logs:
        lf = read_logs([p], tuning=tuning())
        c = lf.coverage
        rows.append({"path": p, **{k: int(getattr(c, k)) for k in _COUNTS}})
        if show_unknown and len(unknown) < show_unknown:
            unk = lf.unknown.filter(lf.unknown["is_nccl"]).head(show_unknown - len(unknown))
            unknown += [{"path": r["path"], "line": r["line"], "text": r["text"]} for r in unk.to_dicts()]
    total = {k: sum(r[k] for r in rows) for k in _COUNTS}
    share = 100.0 * total["recognized"] / total["nccl_lines"] if total["nccl_lines"] else 100.0
    if fmt is Format.json:
        doc = {"schema_version": SCHEMA_VERSION, "inputs": rows, "total": total, "recognized_percent": share}
        if show_unknown:
            doc["unknown_lines"] = unknown
        echo(json.dumps(doc, indent=2) + "\n")
        return
    from rich.table import Table

    out = stdout_console()
    t = Table("input", "lines", "nccl lines", "recognized", "unknown")
    for r in rows:
        t.add_row(escape(r["path"]), *(str(r[k]) for k in _COUNTS))
    t.add_row("[b]total[/b]", *(str(total[k]) for k in _COUNTS))
    out.print(t)
    out.print(f"recognized {total['recognized']} of {total['nccl_lines']} NCCL lines ({share:.2f}%)")
    for u in unknown:
        out.print(f"{u['path']}:{u['line']}: {u['text']}", markup=False, highlight=False)
