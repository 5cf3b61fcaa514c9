"""The reports' nccl-tests section: per run, the sizes with their bus bandwidth and wrong counts."""

from __future__ import annotations

from pathlib import Path

from ncclscope.report import document, views_nccltests
from ncclscope.report.markdown import render_doc
from ncclscope.session import analyze

NT = Path(__file__).resolve().parents[2] / "samples" / "nccltests"


def test_section_rows() -> None:
    s = analyze([str(NT / "inc_rtx3090_2node_wrong_results.log")])
    (run,) = views_nccltests.section(s)["runs"]
    assert (run["run"], run["op"], run["peak_busbw_gbps"], run["avg_busbw_gbps"], run["oob_values"]) == (
        1,
        None,
        7.64,
        3.02663,
        108,
    )
    assert run["sizes"] == 27 and run["rows"][0] == {
        "size_bytes": 8,
        "time_us_out": 21.33,
        "busbw_gbps_out": 0.0,
        "busbw_gbps_in": 0.0,
        "wrong": 8,
    }


def test_markdown_and_html() -> None:
    s = analyze([str(NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log")])
    doc = document.build(s)
    md = render_doc(doc)
    assert "## nccl-tests" in md
    assert "| 2,147,483,648 | 379952 | 2.83 | 2.84 | 0 |" in md
    html = views_nccltests.html(doc)
    assert (
        "<h3>dgxspark_roce_direct_degraded_nccl2_28_9.log (run 1): all_gather, peak busbw 2.84 GB/s" in html
    )


def test_no_section_without_nccltests() -> None:
    s = analyze(
        [
            str(
                Path(__file__).resolve().parents[2]
                / "samples"
                / "logs"
                / "nccl1267_version_mismatch_node4_2_19_3.log"
            )
        ]
    )
    doc = document.build(s)
    assert doc["nccltests"] == {"runs": []} and "## nccl-tests" not in render_doc(doc)
    assert views_nccltests.html(doc) == ""
