"""HTML report: self-contained, deterministic, escaped; figures embedded as safe JSON."""

from __future__ import annotations

import json
import re

import pytest

from ncclscope.report import html as H
from ncclscope.report import render

from .conftest import make_session


@pytest.fixture(scope="module")
def page() -> str:
    return render(make_session(), "html", command="ncclscope report a.log -o r.html")


def _without_plotly(text: str) -> str:
    return text.replace(H._plotly_js(), "")


def _json_block(text: str, element_id: str) -> object:
    m = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', text, re.DOTALL)
    assert m, element_id
    return json.loads(m.group(1))


def test_same_input_same_bytes(page: str) -> None:
    assert render(make_session(), "html", command="ncclscope report a.log -o r.html") == page


def test_self_contained(page: str) -> None:
    assert H._plotly_js() in page  # inlined, not fetched
    rest = _without_plotly(page)
    assert not re.search(r"<(?:script|img|link|iframe)[^>]*\s(?:src|href)=", rest)
    assert "http://" not in rest and "https://" not in rest
    assert "default-src 'none'" in rest  # and the page forbids fetching anything


def test_log_text_is_escaped(page: str) -> None:
    rest = _without_plotly(page)
    assert "<script>window.__xss" not in rest and "<img" not in rest
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=" in rest
    # Only our four scripts: the two JSON blocks, plotly.js and the bootstrap.
    assert rest.count("<script") == 4


def test_embedded_json_round_trips(page: str) -> None:
    doc = _json_block(page, "ncclscope-report")
    assert isinstance(doc, dict)
    texts = [e["text"] for f in doc["findings"] for e in f["evidence"]]
    assert any("<script>window.__xss=1</script>" in t for t in texts)
    figs = _json_block(page, "ncclscope-figures")
    assert isinstance(figs, dict) and sorted(figs) == sorted(fid for fid, _ in H.FIGURES)


def test_script_json_cannot_close_the_tag() -> None:
    out = H.script_json({"k": "</script><!-- ]]> & \u2028"})
    assert "</" not in out and "<!--" not in out and "\u2028" not in out and "&" not in out
    assert json.loads(out) == {"k": "</script><!-- ]]> & \u2028"}


def test_sections_and_tables(page: str) -> None:
    for sid in ("findings", "hang", "ranks", "topology", "traces", "environment", "provenance"):
        assert f'<section class="block" id="{sid}">' in page
    assert "<td class=odd>⚠ 2.14.3</td>" in page  # marked by a symbol, not by colour alone
    assert "<tr class=behind><td>5</td>" in page


def test_empty_session_figures_say_why(empty_session) -> None:  # type: ignore[no-untyped-def]
    figs = _json_block(render(empty_session, "html"), "ncclscope-figures")
    assert isinstance(figs, dict)
    notes = {k: v["layout"]["annotations"][0]["text"] for k, v in figs.items()}
    assert "no trace given" in notes["fig-arrivals"] and "no trace given" in notes["fig-timeline"]
    assert "no ring" in notes["fig-topology"] and "nothing says how far" in notes["fig-hang"]
