"""Report stage, folding: tables sized by what differs, not by rank count (issue 31).

A 1,024-rank report lists each rank once only where it stands out. The hang view folds ranks in the
same state into one row ("1,022 ranks: AllReduce, opCount 0xc7, …") and lists the culprits, the rank
that detected the timeout and every distinct state first; the ranks table keeps the ranks with an odd
value or uncommon findings and counts the rest; the inputs are summarised per directory past a cap.
Renderers (Markdown, HTML, terminal) lay these rows out; they never decide what is shown. The rows
folded are the sections' typed data (`views_hang.HangRank`, `views_ranks.RanksTable`), and so are the
folded rows (`HangRow`, `RanksFold`).

Numbers are shown as the log prints them: NCCL prints opCount in hexadecimal (`opCount 27` is 0x27),
PyTorch prints SeqNum in decimal; the labels say which is which.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Sequence

import msgspec

from ncclscope.report.facts import ranks_summary
from ncclscope.report.views_hang import HangRank
from ncclscope.report.views_ranks import RankRow, RanksTable

# The hang view's state columns: two ranks in the same state agree on all of them.
HANG_STATE = ("group", "last_op", "last_op_count", "timed_out_seq", "last_enqueued", "last_completed")
# Column labels as a user greps for them: NCCL's opCount is hexadecimal in the log, PyTorch's SeqNum decimal.
HANG_LABELS = {
    "group": "process group",
    "last_op": "last collective",
    "last_op_count": "NCCL opCount (hex)",
    "timed_out_seq": "timed-out SeqNum",
    "last_enqueued": "enqueued SeqNum",
    "last_completed": "completed SeqNum",
}
# The order of the folded hang rows: who the verdict names, who noticed, who lags, then the rest.
FLAG_ORDER = {"culprit": 0, "detected the timeout": 1, "behind": 2, "no lines": 3, "": 4}
MAX_SINGLES = 16  # culprits and detectors listed one by one, at most (more are folded like the others)
MAX_INPUTS = 32  # inputs listed one by one, at most; past it, one row per directory


def op_count(v: object) -> str:
    """NCCL's opCount as the log prints it (hexadecimal), with `0x` so it cannot pass for decimal."""
    return f"0x{v:x}" if isinstance(v, int) and not isinstance(v, bool) else ("" if v is None else str(v))


class HangRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row of the folded hang view: one rank, or every rank in the same state."""

    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    state: tuple[str, ...]  # the shown HANG_STATE columns' values, formatted (opCount in hex)
    flag: str
    behind: bool

    @property
    def who(self) -> str:
        n = len(self.ranks)
        return ranks_summary(list(self.ranks), limit=6) + (f" ({n:,} ranks)" if n > 1 else "")

    @property
    def where(self) -> str:
        return self.hosts[0] if len(self.hosts) == 1 else f"{len(self.hosts):,} hosts"


def state_cell(r: HangRank, column: str) -> str:
    """A state column's value as the tables print it: opCount in hex, sequence numbers in decimal."""
    v = getattr(r, column)
    return op_count(v) if column == "last_op_count" else ("" if v is None else str(v))


def hang_columns(rows: Sequence[HangRank]) -> list[str]:
    """The state columns any row has a value in."""
    return [c for c in HANG_STATE if any(getattr(r, c) is not None for r in rows)]


def culprits_first(rows: Iterable[HangRank]) -> list[HangRank]:
    """Culprits, then who detected the timeout, who lags, who printed nothing, the rest; by rank within."""
    return sorted(rows, key=lambda r: (FLAG_ORDER.get(r.flag, 9), r.rank is None, r.rank or 0))


def fold_hang(rows: Sequence[HangRank], singles: int = MAX_SINGLES) -> list[HangRow]:
    """The hang view's rows folded by state: culprits and the detector one by one (up to `singles`),
    then each distinct state, smallest group first; ranks without a rank number are kept apart."""
    cols = hang_columns(rows)
    groups: dict[tuple[str, tuple[str, ...], int | None], list[HangRank]] = {}
    shown_alone = 0
    for r in culprits_first(rows):
        flag = r.flag
        alone = flag in ("culprit", "detected the timeout") and shown_alone < singles
        shown_alone += alone
        key = (flag, tuple(state_cell(r, c) for c in cols), r.rank if alone else None)
        groups.setdefault(key, []).append(r)
    out = [
        HangRow(
            ranks=tuple(sorted(r.rank for r in g if r.rank is not None)),
            hosts=tuple(sorted({r.host for r in g if r.host is not None})),
            state=key[1],
            flag=key[0],
            behind=any(r.behind for r in g),
        )
        for key, g in groups.items()
    ]
    return sorted(out, key=lambda h: (FLAG_ORDER.get(h.flag, 9), len(h.ranks), h.ranks[:1]))


class RanksFold(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The ranks table cut to what stands out: `rows` are shown; `hidden` more share `common`."""

    rows: tuple[RankRow, ...]
    hidden: int
    common: tuple[str, ...]  # the findings most ranks have


def fold_ranks(table: RanksTable, cap: int = 48, examples: int = 4) -> RanksFold:
    """Ranks with an odd value or uncommon findings (up to `cap`), else a few examples of the common
    configuration; the rest counted. Small tables are shown whole."""
    rows = table.rows
    if len(rows) <= cap:
        return RanksFold(rows, 0, ())
    common = Counter(r.findings for r in rows).most_common(1)[0][0]
    standout = tuple(r for r in rows if r.odd or r.findings != common)[:cap]
    if not standout:
        standout = rows[:examples]
    return RanksFold(standout, len(rows) - len(standout), common)


class InputRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row of the inputs list: a file, or a directory standing for the files under it."""

    path: str  # a file, or a directory ending in `/` standing for `files` files
    files: int
    amount: int  # lines (logs) or events (traces)
    what: str  # "lines" | "events"
    rank: int | None = None  # a trace's rank


def fold_inputs(
    logs: Iterable[tuple[str, int | None]],
    traces: Iterable[tuple[str, int | None, int | None]],
    cap: int = MAX_INPUTS,
) -> list[InputRow]:
    """Every input (logs as (path, lines), traces as (path, rank, events)) when there are at most `cap`;
    else one row per directory (largest first)."""
    files = [InputRow(str(path), 1, int(lines or 0), "lines") for path, lines in logs]
    files += [InputRow(str(path), 1, int(events or 0), "events", rank) for path, rank, events in traces]
    if len(files) <= cap:
        return files
    dirs: dict[tuple[str, str], list[InputRow]] = {}
    for f in files:
        dirs.setdefault((posixpath.dirname(f.path.replace("\\", "/")) + "/", f.what), []).append(f)
    out = [InputRow(d, len(g), sum(f.amount for f in g), what) for (d, what), g in dirs.items()]
    return sorted(out, key=lambda r: (-r.files, r.path))
