"""Report stage, ranks view: the ranks × configuration table, typed, with its odd cells decided once.

One `RankRow` per process of `Session.ranks` (its configuration cells, the columns where it holds a
minority's value, the error/warning findings that name it); `RanksTable` is the report's ranks section
data (`report.section_ranks`), stored in the document as its JSON-like tree and read back typed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ncclscope.report import views

if TYPE_CHECKING:
    from ncclscope.session import Session


class RankCells(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A process's configuration: the `views.CONFIG_COLUMNS` of `schema.RANKS`, same names and order
    (None: not printed)."""

    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    cuda_dev: int | None = None
    nccl_version: str | None = None
    cuda_driver: str | None = None
    iface: str | None = None
    address: str | None = None
    net: str | None = None
    gdr: bool | None = None

    def value(self, column: str) -> str | int | bool | None:
        v: str | int | bool | None = getattr(self, column)
        return v


class RankRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One process: its cells, the columns where its value is a minority's (odd), its findings' ids."""

    cells: RankCells
    odd: tuple[str, ...]
    findings: tuple[str, ...]


class RanksTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The ranks × configuration table: the columns shown, a row per process, the columns with odd cells."""

    columns: tuple[str, ...]
    rows: tuple[RankRow, ...]
    odd_columns: tuple[str, ...]


def ranks_table(s: Session) -> RanksTable:
    """Rows of the ranks × configuration table, which cells are odd ones out, and each rank's findings."""
    cols = [c for c in views.CONFIG_COLUMNS if c in s.ranks.columns]
    odd = views.outliers(s.ranks)
    flagged = views.rank_findings(s.findings)
    rows = []
    for r in s.ranks.select(cols).to_dicts():
        rank = r.get("rank")
        rows.append(
            RankRow(
                cells=RankCells(**{c: r.get(c) for c in views.CONFIG_COLUMNS}),
                odd=tuple(c for c in cols if c in odd and r[c] is not None and str(r[c]) in odd[c]),
                findings=tuple(flagged.get(rank, [])) if isinstance(rank, int) else (),
            )
        )
    return RanksTable(columns=tuple(cols), rows=tuple(rows), odd_columns=tuple(sorted(odd)))
