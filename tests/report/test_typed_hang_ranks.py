"""The hang and ranks sections hold typed data (issue 31 item 9): msgspec Structs built from the session,
stored in the document as its JSON-like tree (what redaction maps and the HTML embeds), read back typed
by every layout, also after redaction; the folded rows are typed too."""

from __future__ import annotations

from pathlib import Path

import msgspec
import polars as pl
import pytest

from ncclscope import schema as S
from ncclscope.cli import main
from ncclscope.report import (
    RENDERERS,
    Options,
    document_for,
    fold,
    section_hang,
    section_ranks,
    views,
    views_hang,
)
from ncclscope.report.section import Provenance
from ncclscope.report.views_hang import HANG_SCHEMA, HangRank
from ncclscope.report.views_ranks import RankCells, RankRow, RanksTable
from ncclscope.session import analyze

from .conftest import HOSTS, make_session

REPO = Path(__file__).resolve().parents[2]


def test_hang_rows_are_typed_and_survive_the_document_and_redaction() -> None:
    s = make_session()
    typed = views_hang.ranks(views_hang.hang(s))
    assert typed and all(isinstance(r, HangRank) for r in typed)
    assert section_hang.of(document_for(s)) == typed  # stored as a tree, read back typed, nothing lost
    doc = document_for(s)
    assert isinstance(doc["hang"], list) and all(isinstance(r, dict) for r in doc["hang"])
    redacted = section_hang.of(document_for(s, Options(redact=True)))
    assert [r.rank for r in redacted] == [r.rank for r in typed]
    assert {r.host for r in redacted} <= {"host-1", "host-2"} and not {r.host for r in redacted} & set(HOSTS)


def test_the_hang_row_type_is_the_frames_schema() -> None:
    """HangRank lists the hang frame's columns in its order: a column added to one and not the other fails."""
    assert HangRank.__struct_fields__ == tuple(HANG_SCHEMA)
    assert section_hang.SECTION.schema == tuple[HangRank, ...]


def test_the_ranks_cells_are_the_configuration_columns() -> None:
    assert RankCells.__struct_fields__ == tuple(views.CONFIG_COLUMNS)
    kinds = {pl.Int64: int, pl.Utf8: str, pl.Boolean: bool}
    for name, field in zip(RankCells.__struct_fields__, msgspec.structs.fields(RankCells), strict=True):
        assert field.type == (kinds[S.RANKS[name]] | None), name  # type: ignore[index]
    assert section_ranks.SECTION.schema is RanksTable


def test_ranks_table_is_typed_and_survives_the_document_and_redaction() -> None:
    s = make_session()
    data = section_ranks.build(s, Provenance())
    assert isinstance(data, RanksTable) and len(data.rows) == s.ranks.height
    assert section_ranks.of(document_for(s)) == data
    odd = {(r.cells.rank, c) for r in data.rows for c in r.odd}
    assert (7, "nccl_version") in odd and (6, "address") in odd  # the conftest's odd rank and subnet
    red = section_ranks.of(document_for(s, Options(redact=True)))
    assert red.columns == data.columns and [r.odd for r in red.rows] == [r.odd for r in data.rows]
    assert not {r.cells.host for r in red.rows} & set(HOSTS)


def test_a_document_that_lost_or_renamed_a_field_is_refused() -> None:
    doc = document_for(make_session())
    bad = dict(doc, hang=[{**doc["hang"][0], "surprise": 1}, *doc["hang"][1:]])
    with pytest.raises(msgspec.ValidationError):
        section_hang.of(bad)
    rows = doc["ranks"]["rows"]
    bad = dict(doc, ranks={**doc["ranks"], "rows": [{"cells": rows[0]["cells"], "odd": []}]})
    with pytest.raises(msgspec.ValidationError):
        section_ranks.of(bad)


def _rank(rank: int, op_count: int, **flags: bool) -> HangRank:
    return HangRank(
        rank=rank,
        host=f"node-{rank // 8:02d}",
        group="0",
        last_op="AllReduce",
        last_op_count=op_count,
        timed_out_seq=None,
        last_enqueued=op_count,
        last_completed=op_count,
        detector=flags.get("detector", False),
        culprit=flags.get("culprit", False),
        behind=flags.get("behind", flags.get("culprit", False)),
        silent=False,
        path=None,
        line=None,
    )


def test_folding_typed_rows_culprit_then_detector_then_states() -> None:
    rows = [_rank(r, 0xC7) for r in range(64)]
    rows[17] = _rank(17, 0xC6, culprit=True)
    rows[18] = _rank(18, 0xC7, detector=True)
    folded = fold.fold_hang(rows)
    assert [h.flag for h in folded] == ["culprit", "detected the timeout", ""]
    assert folded[0].ranks == (17,) and folded[1].ranks == (18,) and len(folded[2].ranks) == 62
    assert folded[0].state[fold.hang_columns(rows).index("last_op_count")] == "0xc6"  # hex, as the log
    assert folded[2].who == "0-16, 19-63 (62 ranks)" and folded[2].where == "8 hosts"
    assert all(isinstance(h, fold.HangRow) for h in folded)
    assert msgspec.convert(msgspec.to_builtins(folded[0]), fold.HangRow) == folded[0]


def test_folding_typed_ranks_keeps_the_odd_ones() -> None:
    rows = tuple(RankRow(RankCells(rank=i, nccl_version="2.21.5"), (), ("x",)) for i in range(100))
    odd = RankRow(RankCells(rank=42, nccl_version="2.19.3"), ("nccl_version",), ("x",))
    table = RanksTable(("rank", "nccl_version"), rows[:42] + (odd,) + rows[43:], ("nccl_version",))
    f = fold.fold_ranks(table)
    assert f.rows == (odd,) and f.hidden == 99 and f.common == ("x",)


def test_hosts_named_like_fields_neither_crash_nor_rename_them(tmp_path: Path) -> None:
    """A host called `host` or `rank` is a word of the typed sections' field names: replacing it renamed
    those fields (the document's keys are redacted too) and the redacted report crashed reading them back
    (KeyError 'host' in the hang view). Such a name identifies nobody and is kept; a real host name beside
    it is still replaced, also where it is a key (a finding's `per_host`)."""
    src = REPO / "samples" / "hang" / "torch26_class_a_8ranks"
    hosts = ["host", "host", "host", "rank", "rank", "rank", "gpu-a17", "gpu-a17"]
    logs = tmp_path / "logs"
    logs.mkdir()
    for r, h in enumerate(hosts):
        text = (src / f"rank{r}.log").read_text(encoding="utf-8")
        (logs / f"rank{r}.log").write_text(text.replace("node-00:", f"{h}:"), encoding="utf-8")
    for fmt in ("md", "html", "json"):
        out = tmp_path / f"r.{fmt}"
        assert main(["report", "-q", "--redact", str(logs), "-o", str(out)]) == 0, fmt
        body = out.read_text(encoding="utf-8")
        assert "gpu-a17" not in body and "host-1" in body, fmt
    s = analyze([str(logs)])
    doc = document_for(s, Options(redact=True))
    hang = section_hang.of(doc)
    assert [r.host for r in hang] == ["host"] * 3 + ["rank"] * 3 + ["host-1"] * 2
    assert [r.cells.host for r in section_ranks.of(doc).rows] == [r.host for r in hang]


def test_the_reserved_words_are_the_typed_fields() -> None:
    from ncclscope.report import redact, sections

    words = redact.schema_words(sec.schema for sec in sections.SECTIONS if sec.schema is not None)
    assert {"host", "rank", "last_op_count", "count", "cells", "cuda_dev", "dev"} <= words
    assert "gpu-node-b" not in words and "per_host" not in words  # data keys are not field names


def test_an_odd_boolean_reads_as_its_column_does() -> None:
    """GPUDirect RDMA off on one rank of four: its odd cell said `⚠ False` beside `yes` (Markdown)."""
    from .conftest import ranks_frame

    ranks = ranks_frame().head(4).with_columns(pl.Series("gdr", [True, True, True, False]))
    md = RENDERERS["markdown"].render(make_session(ranks=ranks, with_traces=False), Options())
    table = md.split("## Ranks × configuration", 1)[1].split("\n## ", 1)[0]
    gdr = [
        [c.strip() for c in ln.strip("|").split("|")][9] for ln in table.splitlines() if ln.startswith("| ")
    ]
    assert gdr == ["gdr", "yes", "yes", "yes", "**⚠ no**"]
