"""Run stage, launchers: recognise torchrun in the user's command and ask it for its own per-rank log
files and rank-tagged console lines, never touching the user's other arguments.

torchrun's options come before the training script; ncclscope's go right after `torchrun` (or
`python -m torch.distributed.run`), so the script and its arguments are passed through unchanged.
An option the user gave, on the command line or as torchrun's `PET_<NAME>` variable, is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
# torchrun's options without a value (torch/distributed/run.py, action=check_env); every other
# option before the script takes one.
_FLAGS = frozenset(
    {"--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path"}
    | {"--virtual-local-rank", "--virtual_local_rank"}
)
# torchrun's `env` action: an option not given on the command line is read from PET_<DEST>.
_LOG_OPTIONS = {
    "log_dir": ("--log-dir", "--log_dir"),
    "tee": ("-t", "--tee"),
    "redirects": ("-r", "--redirects"),
    "local_ranks_filter": ("--local-ranks-filter", "--local_ranks_filter"),
}


@dataclass(frozen=True)
class Launch:
    """The command as run: the user's argv with ncclscope's torchrun options inserted (if any)."""

    argv: tuple[str, ...]
    torchrun: bool = False
    added: tuple[str, ...] = ()  # the options ncclscope inserted
    user_options: tuple[tuple[str, str], ...] = ()  # torchrun log options the user gave (name, value)
    torchrun_dir: Path | None = None  # where torchrun's per-rank files go, when ncclscope chose it


def torchrun_at(argv: Sequence[str]) -> int | None:
    """Index just past `torchrun` / `python -m torch.distributed.run` when argv starts with it."""
    if not argv:
        return None
    head = os.path.basename(argv[0])
    if head == "torchrun":
        return 1
    if re.fullmatch(r"python[0-9.]*", head) and len(argv) >= 3 and argv[1] == "-m":
        return 3 if argv[2] in TORCHRUN_MODULES else None
    return None


def torchrun_options(args: Sequence[str]) -> list[tuple[str, str]]:
    """(option, value) for every torchrun option before the script (the first bare word)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a == "--":
            break
        if "=" in a:
            name, _, value = a.partition("=")
            out.append((name, value))
        elif a in _FLAGS:
            out.append((a, ""))
        else:
            out.append((a, args[i + 1] if i + 1 < len(args) else ""))
            i += 1
        i += 1
    return out


def user_log_options(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The per-rank log options the user set: {dest: value}, from the command line or PET_<DEST>."""
    given = dict(torchrun_options(args))
    out: dict[str, str] = {}
    for dest, names in _LOG_OPTIONS.items():
        for n in names:
            if n in given:
                out[dest] = given[n]
        pet = f"PET_{dest.upper()}"
        if dest not in out and pet in environ:
            out[dest] = environ[pet]
    return out


def plan_launch(argv: Sequence[str], environ: Mapping[str, str], hidden: Path, visible: Path) -> Launch:
    """Insert `--log-dir` and `--tee 3` after torchrun where the user set neither.

    With `--tee 3` every rank's lines also reach the console (and console.log), so torchrun's own files
    go to the hidden directory; when the user redirects a stream or filters the console by rank,
    the files hold lines console.log lacks and go to the visible one."""
    at = torchrun_at(argv)
    if at is None:
        return Launch(tuple(argv))
    user = user_log_options(argv[at:], environ)
    added: list[str] = []
    log_dir: Path | None = None
    if "log_dir" not in user:
        partial = "redirects" in user or "local_ranks_filter" in user
        log_dir = visible if partial else hidden
        added += ["--log-dir", str(log_dir)]
    if "tee" not in user and "redirects" not in user:
        added += ["--tee", "3"]
    return Launch(
        argv=(*argv[:at], *added, *argv[at:]),
        torchrun=True,
        added=tuple(added),
        user_options=tuple(sorted(user.items())),
        torchrun_dir=log_dir,
    )


def job_python(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The interpreter the command runs: `python…` itself, or the one in the shebang of a script such as
    `torchrun` (the training environment may not be ncclscope's). None when neither tells."""
    if not argv:
        return None
    exe = shutil.which(argv[0], path=environ.get("PATH"))
    if exe is None:
        return None
    if re.fullmatch(r"python[0-9.]*", os.path.basename(argv[0])):
        return exe
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    m = re.match(rb"#!\s*(\S+)", first)
    if m is None or not re.fullmatch(rb"python[0-9.]*", os.path.basename(m[1])):
        return None
    return os.fsdecode(m[1])
