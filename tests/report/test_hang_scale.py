"""Report: a 1,024-rank hang (bench/bench_hang.py's generator, rank 517 stalled, 518 detects) fits a
ticket: the Markdown stays under GitHub's 65,536-character limit with the verdict, the culprit and
the detector in the hang view; the HTML folds the hang table (culprits first), collapses the inputs
and draws no empty figure panel for logs-only inputs; opCount is shown in hex, as NCCL prints it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ncclscope.cli import main

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import bench_hang

GITHUB_MAX = 65_536
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hang1024")
    logs = bench_hang.ensure_logs(1024, 40, 517, root=root)  # opCounts 0..0x27 (0x26 on rank 517)
    out = {}
    for fmt in ("md", "html"):
        path = root / f"r.{fmt}"
        assert main(["report", "-q", str(logs), "-o", str(path)]) == 0
        out[fmt] = path.read_text(encoding="utf-8")
    path = root / "r.jira.md"
    assert main(["report", "-q", str(logs), "-o", str(path), "--flavor", "jira"]) == 0
    out["jira"] = path.read_text(encoding="utf-8")
    return out


def _hang_section(md: str) -> str:
    return md.split("## Hang view", 1)[1].split("\n## ", 1)[0]


def test_markdown_fits_a_github_issue(reports: dict[str, str]) -> None:
    md = reports["md"]
    assert len(md) <= GITHUB_MAX
    first_screen = md[:2500]
    assert "collective-hang" in first_screen and "517" in first_screen
    assert "rank 518 only detected it first" in first_screen  # the detector too, beside the culprit


def test_jira_report_fits_and_folds_the_same(reports: dict[str, str]) -> None:
    jira = reports["jira"]
    assert len(jira) <= GITHUB_MAX and "rank 518 only detected it first" in jira[:2500]
    hang = jira.split("h2. Hang view", 1)[1].split("\nh2. ", 1)[0]
    rows = [ln for ln in hang.splitlines() if ln.startswith("| ")]
    assert rows[0].startswith("| 517 |") and "*culprit*" in rows[0] and "| 0x26 |" in rows[0]
    assert rows[1].startswith("| 518 |") and "detected the timeout" in rows[1]
    assert rows[2].startswith("| 0-516, 519-1023 (1,022 ranks) | 128 hosts |") and len(rows) == 3


def test_hang_view_shows_culprit_and_detector_first(reports: dict[str, str]) -> None:
    rows = [ln for ln in _hang_section(reports["md"]).splitlines() if ln.startswith("| ")][1:]
    assert rows[0].startswith("| 517 |") and "culprit" in rows[0]
    assert rows[1].startswith("| 518 |") and "detected the timeout" in rows[1]
    assert re.search(r"\| 0-516, 519-1023 \(1,022 ranks\) \| 128 hosts \|", rows[2])
    assert len(rows) == 3  # every other rank is in the same state


def test_opcount_is_hex_as_the_log_prints_it(reports: dict[str, str]) -> None:
    hang = _hang_section(reports["md"])
    assert "NCCL opCount (hex)" in hang and "SeqNum" in hang
    head = [c.strip() for c in hang.split("\n| ", 1)[1].split("\n", 1)[0].split("|")]
    assert "enqueued SeqNum" in head and "completed SeqNum" in head  # decimal counters, columns of their own
    table = [[c.strip() for c in ln.strip("|").split("|")] for ln in hang.splitlines() if ln.startswith("| ")]
    col = table[0].index("NCCL opCount (hex)")
    assert [r[col] for r in table[1:]] == ["0x26", "0x27", "0x27"]  # the log's `opCount 27`, never `39`


def test_ranks_and_inputs_are_summarised(reports: dict[str, str]) -> None:
    md = reports["md"]
    ranks = md.split("## Ranks × configuration", 1)[1].split("\n## ", 1)[0]
    assert sum(ln.startswith("| ") for ln in ranks.splitlines()) < 20
    assert "1,023 more ranks" in ranks
    assert "(1,024 files)" in md and md.count("nccl.node-") < 40


def test_html_is_compact(reports: dict[str, str]) -> None:
    page = reports["html"]
    hang = page.split('id="hang"', 1)[1].split("</section>", 1)[0]
    folded = hang.split("<details>", 1)[0]
    assert folded.count("<tr") == 4 and folded.index(">517<") < folded.index(">518<")
    every = hang.split("<details>", 1)[1]
    first_cells = re.findall(r"<tr[^>]*><td>([^<]*)</td>", every)
    assert first_cells[:4] == ["517", "518", "0", "1"]  # culprit, detector, then the rest by rank
    assert '<table class="sortable">' in every and '<input class="filter"' in every  # sortable, filterable
    assert every.count("<tr") == 1 + 1024 and "<td>0x26</td>" in every and "<td>0x27</td>" in every
    prov = page.split('id="provenance"', 1)[1].split("</section>", 1)[0]
    assert "<details><summary>Inputs: 1,024 logs" in prov and prov.count("nccl.node-") < 40
    for fid in ("fig-arrivals", "fig-timeline"):  # logs only: no trace, so one line each, no panel
        assert f'id="{fid}"' not in page.split("<script", 1)[0]
    assert 'class="figure" id="fig-hang"' in page
