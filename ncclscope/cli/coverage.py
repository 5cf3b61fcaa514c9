"""CLI stage, `ncclscope coverage`: how much of a log corpus the grammar recognises."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ncclscope.cli import app
from ncclscope.cli.console import stdout_console
from ncclscope.cli.options import Paths, tuning
from ncclscope.report.safe_text import escape


@app.command()
def coverage(
    paths: Paths,
    show_unknown: Annotated[
        int, typer.Option("--show-unknown", help="Print up to N unrecognised NCCL lines.")
    ] = 0,
) -> None:
    """Per input: lines, NCCL lines, recognised, unknown; and the total recognised share."""
    from ncclscope.parse import classify_inputs, read_logs

    inputs = classify_inputs(list(paths))
    out = stdout_console()
    t = Table("input", "lines", "nccl lines", "recognized", "unknown")
    tot = [0, 0, 0, 0]
    unknown_rows: list[str] = []
    for p in inputs.logs:
        lf = read_logs([p], tuning=tuning())
        c = lf.coverage
        for i, v in enumerate((c.lines, c.nccl_lines, c.recognized, c.unknown)):
            tot[i] += v
        t.add_row(escape(p), str(c.lines), str(c.nccl_lines), str(c.recognized), str(c.unknown))
        if show_unknown:
            unk = lf.unknown.filter(lf.unknown["is_nccl"])
            unknown_rows += [
                f"{r['path']}:{r['line']}: {r['text']}" for r in unk.head(show_unknown).to_dicts()
            ]
    t.add_row("[b]total[/b]", *(str(v) for v in tot))
    out.print(t)
    share = 100.0 * tot[2] / tot[1] if tot[1] else 100.0
    out.print(f"recognized {tot[2]} of {tot[1]} NCCL lines ({share:.2f}%)")
    for row in unknown_rows[:show_unknown]:
        out.print(row, markup=False, highlight=False)
