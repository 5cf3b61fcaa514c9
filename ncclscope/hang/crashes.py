"""Hang stage: the crash lines of launchers other than torchrun, as launcher exits (issue 28, item 3).

`grammars/torch.lark` reads three kinds of lines into TORCH rows of kind `launcher` whose `detail`
starts with `died`; this module turns them into the rows of `exits.EXITS`, so that `died_ranks` and
the `rank-exited` finding name the rank they report:

- OpenMPI/PRRTE `mpirun noticed that process rank R with PID P on node H exited on signal N (…)`:
  the rank is the MPI rank. OpenMPI prints `PID 0` when it does not know the pid: kept as unknown.
- Slurm `srun: error: H: task T: Killed` / `…: tasks 0-3: Exited with exit code 1`: the task id is
  SLURM_PROCID, the job's rank only when srun started the ranks themselves. When the input holds
  torchrun's own lines, srun started one torchrun agent per node, so a task id names a node: such
  lines are not read as ranks.
- UCX `[host:pid:thread(:tid)] Caught signal 11 (Segmentation fault: …)`: no rank of its own; the
  rank is the one the line's wrapper or file names (`grank`, filled from the file's rank).
- OpenMPI's `mpirun detected that one or more processes exited with non-zero status …` report:
  `Process name: [[J,1],R]` (R the rank) and, at most 3 lines later, `Exit code: N`.

A signal death gets exit code -N, as torchrun reports one, so `died_ranks` treats all alike.
"""

from __future__ import annotations

import re

import polars as pl

from ncclscope.parse.bounds import int_in

# Linux signal numbers (signal(7)), as OpenMPI and UCX print them.
SIGNALS: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    11: "SIGSEGV",
    13: "SIGPIPE",
    15: "SIGTERM",
}
# strsignal(3) texts, as srun prints a task's signal (glibc wording; `(core dumped)` may follow).
STRSIGNAL: dict[str, int] = {
    "Hangup": 1,
    "Interrupt": 2,
    "Quit": 3,
    "Illegal instruction": 4,
    "Aborted": 6,
    "Bus error": 7,
    "Floating point exception": 8,
    "Killed": 9,
    "Segmentation fault": 11,
    "Broken pipe": 13,
    "Terminated": 15,
}
# Who printed a crash line, from its text (the label the evidence carries); torchrun otherwise.
_WHO = (
    (r"^\s*(mpirun|mpiexec|orterun|prterun|prte) noticed", None),
    (r"Process name: \[\[|Exit code:", "mpirun"),
    (r"srun: error:", "srun"),
    (r"Caught signal", "UCX"),
)
MAX_TASKS = 100_000  # a task list is expanded; bigger ranges are damage, not a job
_COLS = ("rank", "exit_code", "signal", "pid", "path", "line", "text")


def launcher_name(text: str) -> str:
    """`mpirun`, `srun`, `UCX` … for a crash line; `torchrun` for torchrun's own table."""
    for pat, name in _WHO:
        hit = re.search(pat, text)
        if hit:
            return name or hit.group(1)
    return "torchrun"


def task_ids(spec: str) -> list[int]:
    """`0-3,5` -> [0, 1, 2, 3, 5] (srun's task list); empty when it is not one or too long."""
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return []
        a, b = int(lo), int(hi or lo)
        if b < a or len(out) + b - a + 1 > MAX_TASKS:
            return []
        out.extend(range(a, b + 1))
    return out


def _how(text: str) -> tuple[int | None, str | None]:
    """srun's `how` text -> (exit code, signal name): `Exited with exit code 1` -> (1, None),
    `Segmentation fault (core dumped)` -> (-11, 'SIGSEGV'); (None, None) when unknown."""
    text = text.strip()
    if text.startswith("Exited with exit code "):
        code = text.rsplit(" ", 1)[-1]
        return (int(code), None) if code.lstrip("-").isdigit() else (None, None)
    num = STRSIGNAL.get(text.removesuffix("(core dumped)").strip())
    return (-num, SIGNALS.get(num)) if num else (None, None)


def crash_exits(torch: pl.DataFrame) -> pl.DataFrame:
    """(rank, exit_code, signal, pid, path, line, text) per rank a crash line names, first line first."""
    t = torch.filter((pl.col("kind") == "launcher") & pl.col("detail").str.starts_with("died "))
    agents = torch.filter((pl.col("kind") == "launcher") & ~pl.col("detail").str.starts_with("died "))
    rows: list[dict[str, object]] = []
    first: dict[str, object] | None = None  # the last `Process name:` line of OpenMPI's exit report
    for r in t.sort("path", "line").iter_rows(named=True):
        d = str(r["detail"])
        base = {"path": r["path"], "line": r["line"], "text": r["text"], "pid": None}
        if d.endswith(" via mpirun-table"):
            if d.startswith("died first "):
                first = r
            elif first is not None and first["path"] == r["path"] and 0 < r["line"] - first["line"] <= 3:
                rows.append({**base, "rank": first["rank"], "exit_code": int(d.split()[2]), "signal": None})
                first = None
            continue
        if " via srun " in d:
            if not agents.is_empty():
                continue  # srun started torchrun agents: a task is a node, not a rank
            code, sig = _how(d.split(" how ", 1)[1] if " how " in d else "")
            for task in task_ids(d.split()[2]):
                rows.append({**base, "rank": task, "exit_code": code, "signal": sig})
            continue
        num = int(d.split()[2])
        pid = int(d.split()[4])
        rank = r["grank"] if " via ucx " in d else r["rank"]
        if rank is None:
            continue
        rows.append({**base, "rank": rank, "exit_code": -num, "signal": SIGNALS.get(num), "pid": pid or None})
    schema = {
        "rank": pl.Int64,
        "exit_code": pl.Int64,
        "signal": pl.Utf8,
        "pid": pl.Int64,
        "path": pl.Utf8,
        "line": pl.Int64,
        "text": pl.Utf8,
    }
    for row in rows:  # a forged `Exit code: -9223372036854775809` (beyond 64 bits) is read as unknown
        row.update({k: int_in(row[k]) for k in ("rank", "exit_code", "pid") if row[k] is not None})
    out = pl.DataFrame(rows, schema=schema).select(_COLS)
    return out.unique("rank", keep="first", maintain_order=True)
