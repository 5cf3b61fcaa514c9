"""Markdown report: layout for a ticket, and log text that can never become HTML or Markdown syntax."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from ncclscope.report import markdown as M
from ncclscope.report import render
from ncclscope.report.document import verdict

from .conftest import XSS, make_session


def _md(redact: bool = False) -> str:
    return render(make_session(), "markdown", command="ncclscope report a.log -o r.md", redact=redact)


def _as_github_would_render(md: str) -> str:
    # GitHub renders raw HTML blocks (<details>) and GFM tables; html=True is the strict case.
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def test_verdict_comes_first_then_findings_by_severity() -> None:
    md = _md()
    lines = md.splitlines()
    assert lines[0] == "# ncclscope report"
    assert lines[2] == f"> 🔴 **{M.text(verdict(make_session()))}**"
    assert md.index("### Errors (2)") < md.index("### Warnings (1)") < md.index("## Hang view")
    assert md.index("`version-mismatch`") < md.index("`collective-hang`") < md.index("`iface-mismatch`")


def test_evidence_is_quoted_with_file_line_inside_details() -> None:
    md = _md()
    block = md[md.index("<details>") : md.index("</details>")]
    assert "<summary>Evidence: 2 lines</summary>" in block
    assert (
        "```text\n/home/alice/jobs/run7/gpu-node-a.log:3  gpu-node-b:1007:1090 [3] NCCL INFO NCCL version"
        in block
    )


def test_ranks_table_marks_outliers_and_findings() -> None:
    md = _md()
    md = md[md.index("## Ranks") : md.index("## Environment")]
    row7 = next(ln for ln in md.splitlines() if ln.startswith("| 7 |"))
    assert "**⚠ 2.14.3**" in row7 and "version-mismatch" in row7
    row6 = next(ln for ln in md.splitlines() if ln.startswith("| 6 |"))
    assert "**⚠ 10.99.1.5**" in row6  # another subnet
    row0 = next(ln for ln in md.splitlines() if ln.startswith("| 0 |"))
    assert "⚠" not in row0


def test_environment_and_provenance() -> None:
    md = _md()
    assert "| NCCL | ⚠ 2.19.3 (7), 2.14.3 (1) |" in md
    assert "| transports (connections) | P2P (12), NET/IB GDR (4) |" in md
    assert "`NCCL_IB_HCA`" in md and "mlx5\\_0 (4)" in md
    assert "- command: `ncclscope report a.log -o r.md`" in md
    assert "- coverage: 2300 lines, 2000 NCCL lines, 99.5% recognized, 10 unknown" in md


def test_log_html_is_text_never_markup() -> None:
    html = _as_github_would_render(_md())
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;img src=x onerror=" in html


def test_inline_text_escapes_markdown_and_html() -> None:
    t = M.text(f"a|b *c* _d_ [x](http://e) `f` @team {XSS}")
    rendered = _as_github_would_render(f"| h |\n|---|\n| {t} |\n")
    assert "<script" not in rendered and "<img" not in rendered and "<a " not in rendered
    assert "<em>" not in rendered and re.findall("<code>.*?</code>", rendered) == [
        "<code>http://e)</code>"
    ]  # a URL: code, never a link
    assert "@team" not in t  # no mention notifications from quoted logs
    assert rendered.count("<td>") == 1  # the pipe did not split the cell


def test_fence_outgrows_backticks_in_evidence() -> None:
    block = M.fenced(["```` not a fence", "x"])
    assert block.startswith("`````text\n") and block.endswith("\n`````")
    assert M.code("a`b") == "``a`b``"


def test_empty_session(empty_session) -> None:  # type: ignore[no-untyped-def]
    md = render(empty_session, "markdown")
    assert "No findings" in md and "## Ranks" not in md and re.search(r"0 ranks", md)


@pytest.mark.parametrize(
    "url",
    ["https://evil.example/x?a=1", "HTTP://evil.example", "www.evil.example/path", "ftp://files.example/a"],
)
def test_urls_from_logs_never_become_links(url: str) -> None:
    """GitHub autolinks bare URLs (GFM's extension); log text is data, so a URL is set as a code span."""
    from markdown_it import MarkdownIt

    from ncclscope.report.md_text import text

    md = text(f"NCCL WARN fetch {url} failed")
    assert f"`{url}`" in md
    html = MarkdownIt("commonmark").render(md)
    assert "<a " not in html and f"<code>{url}</code>" in html
