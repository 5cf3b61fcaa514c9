"""CLI stage: option aliases shared by several subcommands."""

from __future__ import annotations

from typing import Annotated

import typer

Paths = Annotated[
    list[str],
    typer.Argument(help="Log files, globs, directories, .gz files, '-' for stdin; traces and dumps too.",
                   show_default=False),
]
TraceDir = Annotated[
    list[str] | None,
    typer.Option("--trace", "-t", help="torch.profiler trace file or directory (repeatable)."),
]
RankMap = Annotated[
    str | None,
    typer.Option("--rank-map", help="Trace file → rank, as 'file=rank,file=rank' when files carry no rank."),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")]


def parse_rank_map(spec: str | None) -> dict[str, int] | None:
    """'a.json=0,b.json=1' → {'a.json': 0, 'b.json': 1}."""
    from ncclscope.errors import InputError

    if not spec:
        return None
    out: dict[str, int] = {}
    for part in spec.split(","):
        name, sep, rank = part.partition("=")
        if not sep or not rank.strip().isdigit():
            raise InputError(f"--rank-map: expected FILE=RANK, got {part!r}")
        out[name.strip()] = int(rank)
    return out
