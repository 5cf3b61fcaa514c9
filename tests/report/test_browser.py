"""The HTML report in headless Chromium: figures render, the console stays clean, nothing is
fetched from the network, and the script payloads in the log text never run. Saves screenshots
to tests/artifacts/. Skips when no Chromium is installed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.report import html as H
from ncclscope.report import write_report

from .cdp import Browser, Page, find_chromium
from .conftest import make_session

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
OFFLINE_SCHEMES = ("file:", "data:", "about:", "blob:")


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with Browser(binary) as b:
        yield b


def _check_page(browser: Browser, report: Path, shot: str) -> Page:
    page = browser.open(report.resolve().as_uri())
    rendered = page.wait_for("document.body && document.body.getAttribute('data-rendered')", timeout=90)
    assert int(rendered) == len(H.FIGURES)
    # Every figure with data drew its SVG (an empty one is a line saying why, not a blank panel).
    svgs = page.evaluate(
        "Array.from(document.querySelectorAll('.figure')).map(d => d.querySelectorAll('.main-svg').length)"
    )
    notes = page.evaluate("document.querySelectorAll('p.empty-figure').length")
    assert len(svgs) + notes == len(H.FIGURES) and svgs and all(n > 0 for n in svgs)
    # Log text never became elements: nothing ran, no image was created.
    assert page.evaluate("window.__xss === undefined")
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    page.screenshot(ARTIFACTS / shot)
    browser.pump(1.0)
    log = page.log()
    assert log.errors() == []
    assert [c for c in log.console if c["type"] == "warning"] == []
    fetched = [u for u in log.requests if not u.startswith(OFFLINE_SCHEMES)]
    assert fetched == [], f"network requests: {fetched}"
    assert [u for u in log.requests if u.startswith("file:")] == [report.resolve().as_uri()]
    return page


@pytest.mark.parametrize("name, traces, redact", [("full", True, False), ("redacted-no-traces", False, True)])
def test_report_renders_offline_without_errors(
    browser: Browser, tmp_path: Path, name: str, traces: bool, redact: bool
) -> None:
    report = write_report(make_session(with_traces=traces), tmp_path / f"report-{name}.html", redact=redact)
    page = _check_page(browser, report, f"report-{name}.png")
    findings = page.evaluate("document.getElementById('findings').textContent")
    assert '<script>window.__xss=1</script>"><img src=x onerror=' in findings  # shown, as text
    page_text = report.read_text(encoding="utf-8")
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in page_text
    panels, notes = page_text.count('<div class="figure"'), page_text.count('class="muted empty-figure"')
    assert panels + notes == len(H.FIGURES) and (notes == 0) == traces  # no trace: no blank trace panels


def test_report_on_the_bundled_samples(browser: Browser, tmp_path: Path) -> None:
    """Real logs (NCCL version mismatch) and real traces (8-rank DLRM) through the CLI."""
    samples = Path(__file__).resolve().parents[2] / "samples"
    logs = [str(p) for p in sorted((samples / "logs").glob("nccl1267_*.log"))]
    out = tmp_path / "samples.html"
    assert (
        main(["report", *logs, "--trace", str(samples / "traces" / "param_dlrm_8rank"), "-o", str(out), "-q"])
        == 0
    )
    _check_page(browser, out, "report-samples.png")


def test_the_checks_can_fail(browser: Browser, tmp_path: Path) -> None:
    """Control: a page that fetches and throws is caught by the same checks."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        # Errors repeat after load: under load Chromium may swap the renderer during navigation, and
        # events of the very first script run can be lost before the session sees the new context.
        '<html><body><img src="http://127.0.0.1:9/x.png"><script>'
        'setInterval(() => { console.error("boom"); setTimeout(() => { throw new Error("bang"); }); }, 250);'
        "</script></body></html>"
    )
    page = browser.open(bad.resolve().as_uri())
    page.wait_for("document.readyState === 'complete'")
    deadline = time.monotonic() + 30
    while True:  # events may trail the load on a busy machine
        log = page.log()
        errors = log.errors()
        seen = (
            "http://127.0.0.1:9/x.png" in log.requests,
            any("boom" in e for e in errors),
            any("bang" in e for e in errors),
        )
        if all(seen) or time.monotonic() > deadline:
            break
        browser.pump(0.5)
    assert seen == (True, True, True)


@pytest.mark.slow
def test_a_1024_rank_hang_shows_the_culprit_on_the_first_screen(browser: Browser, tmp_path: Path) -> None:
    """bench/bench_hang.py's 1,024-rank hang (rank 517 stalled, 518 detects): the verdict naming the
    culprit is on the first screen, the hang table lists 517 and 518 first, and the page is short."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_hang

    logs = bench_hang.ensure_logs(1024, 10, 517, root=tmp_path)
    out = tmp_path / "hang1024.html"
    assert main(["report", "-q", str(logs), "-o", str(out)]) == 0
    page = _check_page(browser, out, "report-hang1024.png")
    top = page.evaluate(
        "(() => { const v = document.querySelector('.verdict');"
        " return [v.textContent, v.getBoundingClientRect().bottom, window.innerHeight]; })()"
    )
    assert "517" in top[0] and top[1] <= top[2]  # the culprit, named above the fold
    first = page.evaluate(
        "Array.from(document.querySelectorAll('#hang table')[0].rows).slice(1, 3).map(r => r.cells[0].textContent)"
    )
    assert first == ["517", "518"]
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 6000  # was 31,455 px: the input list and 1,024 hang rows in the page
