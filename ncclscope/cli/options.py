"""CLI stage: option aliases shared by several subcommands, the global options and their state."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from ncclscope.errors import InputError
from ncclscope.tuning import DEFAULT, Tuning

Paths = Annotated[
    list[str],
    typer.Argument(
        help="Log files, globs, directories, .gz/.zst files, '-' for stdin; traces and dumps too.",
        show_default=False,
    ),
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

RANK_MAX = (1 << 31) - 1  # torch keeps ranks in int32
_FLAGS = ("--debug", "--no-color", "--version")
_VALUED = ("--max-expansion-ratio", "--max-decompressed-bytes")


@dataclass
class Globals:
    """What the global options said, for this run of `main()`."""

    debug: bool = False
    color: bool = True
    overrides: dict[str, int] = field(default_factory=dict)
    stdout_closed: bool = False  # the reader of stdout went away (`| head`)

    def reset(self, *, debug: bool, color: bool) -> None:
        self.debug, self.color, self.overrides, self.stdout_closed = debug, color, {}, False


GLOBALS = Globals()


def hoist_globals(argv: list[str]) -> list[str]:
    """The global options moved before the command's name, wherever they were typed (not after `--`)."""
    head: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest += argv[i:]
            break
        if a in _FLAGS or a.split("=", 1)[0] in _VALUED and "=" in a:
            head.append(a)
        elif a in _VALUED:
            head += argv[i : i + 2]
            i += 1
        else:
            rest.append(a)
        i += 1
    return head + rest


def command_name(args: list[str]) -> str | None:
    """The command `args` (global options hoisted first) name: the first word that is neither an option
    nor a global option's value; None if there is none."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if not a.startswith("-"):
            return a
        i += 2 if a in _VALUED else 1
    return None


def tuning() -> Tuning:
    """The run's Tuning: the defaults, the global options, NCCLSCOPE_TRACE_WORKERS (0: no workers) and
    NCCLSCOPE_PIN_CPUS (1: log workers and the caller are kept to a CPU each; 0 or unset: not)."""
    over: dict[str, Any] = dict(GLOBALS.overrides)  # int-valued fields only; Tuning checks them
    workers = os.environ.get("NCCLSCOPE_TRACE_WORKERS", "").strip()
    if workers.isascii() and workers.isdigit() and len(workers) <= 3:
        over["trace_max_workers"] = int(workers)
    pin = os.environ.get("NCCLSCOPE_PIN_CPUS", "").strip()
    if pin in ("0", "1"):
        over["pin_log_processes"] = pin == "1"
    return dataclasses.replace(DEFAULT, **over) if over else DEFAULT


def parse_size(text: str, option: str) -> int:
    """'16G', '512M', '1000000' → bytes."""
    m = re.fullmatch(r"\s*([0-9]{1,15})\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        raise InputError(f"{option}: expected a size like 16G, 512M or 1000000, got {text!r}")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def parse_rank_map(spec: str | None) -> dict[str, int] | None:
    """'a.json=0,b.json=1' → {'a.json': 0, 'b.json': 1}; a rank is a decimal number below 2^31."""
    if not spec:
        return None
    out: dict[str, int] = {}
    for part in spec.split(","):
        name, sep, rank = part.partition("=")
        rank = rank.strip()
        # ASCII digits only: str.isdigit() admits '²', which int() refuses
        ok = sep and name.strip() and rank.isascii() and rank.isdigit() and len(rank) <= 10
        if not ok or int(rank) > RANK_MAX:
            raise InputError(f"--rank-map: expected FILE=RANK with RANK a number below 2^31, got {part!r}")
        out[name.strip()] = int(rank)
    return out


def start_log_workers(paths: list[str], trace: list[str], run: Tuning) -> None:
    """Start the log reader's worker processes now, before this process imports Polars and the reader,
    so that their start-up (~0.4 s each) and ours overlap (`parse.logs.engine.spawn`). Best effort: any input
    this cannot classify is left to the analysis, which reports it."""
    from ncclscope.parse.archive import locate
    from ncclscope.parse.inputs import classify_inputs
    from ncclscope.parse.logs.engine.spawn import polars_threads, prestart, workers_for

    try:
        logs = classify_inputs([*paths, *trace], run).logs
        size = sum(os.stat(locate(p)).st_size for p in logs if p != "-")
    except (OSError, ValueError, InputError):
        return
    prestart(run, size)
    threads = polars_threads(workers_for(run, size))  # this process reads pieces too: its share of the cores
    if threads is not None and "polars" not in sys.modules:
        os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
