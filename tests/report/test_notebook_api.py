"""The notebook facade: `ncclscope.load` → frames, findings, figures, reports, a safe rich repr."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import polars as pl
import pytest

import ncclscope
from ncclscope import schema as S
from ncclscope.notebook import LOG_TABLES, Analysis

from .conftest import XSS, make_session

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="module")
def loaded() -> Analysis:
    return ncclscope.load(
        SAMPLES / "logs" / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log",
        trace=SAMPLES / "traces" / "param_dlrm_8rank",
    )


def test_frames_are_polars_with_declared_schemas(loaded: Analysis) -> None:
    assert dict(loaded.connections.schema) == dict(pl.Schema(S.CONNECTIONS))
    assert loaded.connections.height > 0 and loaded.ranks.height > 0
    assert dict(loaded.warnings.schema) == dict(pl.Schema(S.WARNINGS))
    for name in LOG_TABLES:
        assert isinstance(getattr(loaded, name), pl.DataFrame)
    assert loaded.trace_collectives.height > 0 and loaded.arrivals["rank"].n_unique() == 8
    assert set(loaded.tables()) >= {"ranks", "comms", "connections", "collectives", "warnings", "hang"}
    with pytest.raises(AttributeError, match="tables: ranks"):
        _ = loaded.no_such_table


def test_findings_and_figures(loaded: Analysis) -> None:
    assert [f.id for f in loaded.findings] == loaded.findings_frame["id"].to_list()
    for build in (loaded.fig.topology, loaded.fig.arrivals, loaded.fig.timeline, loaded.fig.hang):
        assert isinstance(build(), go.Figure)
    assert loaded.fig.arrivals().data[0].type == "heatmap"


def test_reports(loaded: Analysis, tmp_path: Path) -> None:
    out = loaded.report(tmp_path / "r.md", redact=True)
    assert out.read_text(encoding="utf-8").startswith("# ncclscope report")
    assert "node-00" not in loaded.to_markdown(redact=True)


def test_rich_repr_escapes_log_text() -> None:
    html = Analysis(make_session())._repr_html_()
    assert "<script>window.__xss" not in html and "<img" not in html
    assert "version-mismatch" in html and "s.connections" in html
    assert XSS not in html


def test_load_accepts_paths_lists_and_no_logs() -> None:
    a = ncclscope.load(trace=[SAMPLES / "traces" / "param_dlrm_8rank"])
    assert a.ranks.is_empty() and a.trace_collectives.height > 0
    assert "findings" in repr(a)
