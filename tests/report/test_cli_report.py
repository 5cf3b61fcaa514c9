"""`ncclscope report`: format by suffix, stdout, redaction, traces, progress, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MISMATCH = [str(p) for p in sorted((SAMPLES / "logs").glob("nccl1267_*.log"))]
TRACES = str(SAMPLES / "traces" / "param_dlrm_8rank")


@pytest.mark.parametrize(
    "suffix, head", [(".md", "# ncclscope report"), (".html", "<!DOCTYPE html>"), (".json", "{")]
)
def test_format_from_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, head: str
) -> None:
    out = tmp_path / f"r{suffix}"
    assert main(["report", *MISMATCH, "-o", str(out), "-q"]) == 0
    assert out.read_text(encoding="utf-8").startswith(head)
    assert capsys.readouterr().out == ""  # the report goes to the file, nothing to stdout


def test_markdown_names_the_finding_and_the_command(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    assert main(["report", *MISMATCH, "-o", str(out), "-q"]) == 0
    md = out.read_text(encoding="utf-8")
    assert "`version-mismatch`" in md and "- command: `ncclscope report " in md


def test_stdout_needs_a_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", *MISMATCH, "-o", "-", "-q"]) == 2
    assert "needs --format" in capsys.readouterr().err
    assert main(["report", *MISMATCH, "-o", "-", "-f", "json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["ncclscope"]


def test_unknown_suffix_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", *MISMATCH, "-o", str(tmp_path / "r.txt")]) == 2
    err = capsys.readouterr().err
    assert "cannot tell the report format" in err and "Traceback" not in err


def test_redact_every_format(tmp_path: Path) -> None:
    for suffix in (".md", ".html", ".json"):
        out = tmp_path / f"r{suffix}"
        assert main(["report", *MISMATCH, "-o", str(out), "--redact", "-q"]) == 0
        text = out.read_text(encoding="utf-8")
        assert "node-00" not in text and "node-01" not in text and "10.0.60.33" not in text
        assert "host-1" in text


def test_traces_feed_the_arrival_heatmap(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", MISMATCH[0], "--trace", TRACES, "-o", str(out), "-q"]) == 0
    page = out.read_text(encoding="utf-8")
    start = page.index('id="ncclscope-figures">') + len('id="ncclscope-figures">')
    figs = json.loads(page[start : page.index("</script>", start)])
    heat = figs["fig-arrivals"]["data"][0]
    assert heat["type"] == "heatmap" and len(heat["y"]) == 8


class _Clock:
    """A monotonic clock that jumps 2 s per reading, so progress shows at once."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        self.t += 2.0
        return self.t


def test_progress_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ncclscope.cli import console

    monkeypatch.setattr(console, "time", _Clock())
    assert main(["report", *MISMATCH, "--trace", TRACES, "-o", str(tmp_path / "r.md")]) == 0
    captured = capsys.readouterr()
    assert "rendering the markdown report" in captured.err and "wrote " in captured.err
    assert "ranks, " in captured.err and "read 2/2 files" in captured.err
    assert "trace " in captured.err  # the trace reader's own progress
    assert captured.out == ""


@pytest.mark.slow
def test_same_input_same_bytes_across_processes(tmp_path: Path) -> None:
    """Two separate runs (different hash seeds) write byte-identical reports."""
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "2"):
        run_dir = tmp_path / seed
        run_dir.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed}
        cmd = [
            sys.executable,
            "-m",
            "ncclscope",
            "report",
            *MISMATCH,
            "--trace",
            TRACES,
            "-o",
            "r.html",
            "--redact",
            "-q",
        ]
        subprocess.run(cmd, check=True, env=env, cwd=run_dir, capture_output=True, timeout=300)
        outs.append((run_dir / "r.html").read_bytes())
    assert outs[0] == outs[1]
