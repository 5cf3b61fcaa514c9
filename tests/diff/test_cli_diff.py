"""CLI, `ncclscope diff`: exit codes, the three formats, redaction and escaping (samples/ only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.cli import main

NT = Path(__file__).resolve().parents[2] / "samples" / "nccltests"
SWITCH = str(NT / "dgxspark_roce_switch_ok_nccl2_28_9.log")
DIRECT = str(NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["diff", "-q", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_exit_1_when_something_relevant_differs(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, SWITCH, DIRECT)
    assert rc == 1
    assert "6 relevant differences" in out and "NCCL_SOCKET_IFNAME" in out and "21.99 GB/s" in out


def test_exit_0_for_the_same_run(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, SWITCH, SWITCH)
    assert rc == 0 and "No relevant difference" in out


def test_exit_2_on_unusable_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert _run(capsys, str(tmp_path / "missing.log"), SWITCH)[0] == 2
    junk = tmp_path / "app.log"
    junk.write_text("epoch 1 loss 0.3\nepoch 2 loss 0.2\n")
    rc, _, err = _run(capsys, SWITCH, str(junk))
    assert rc == 2 and f"run B ({junk}): no NCCL line, nccl-tests table or trace to compare" in err


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--format", "json", SWITCH, DIRECT)
    doc = json.loads(out)
    assert rc == 1 and doc["schema"] == "ncclscope.diff/1" and doc["relevant"] == 6
    first = doc["differences"][0]
    assert (first["category"], first["key"], first["a"], first["b"]) == (
        "environment",
        "NCCL_SOCKET_IFNAME",
        "enp1s0f1np1",
        "enp1s0f0np0",
    )
    assert first["evidence_a"][0]["line"] == 9 and first["change"] == "changed"
    res = next(d for d in doc["differences"] if d["category"] == "results")
    assert res["details"][0] == {"label": "1,073,741,824 B", "a": "21.99 GB/s", "b": "2.83 GB/s"}


def test_markdown_to_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "ticket.md"
    rc, stdout, _ = _run(capsys, "--format", "md", "-o", str(out), SWITCH, DIRECT)
    md = out.read_text()
    assert rc == 1 and stdout == ""
    assert "| 1 | environment | NCCL\\_SOCKET\\_IFNAME | all ranks | enp1s0f1np1 | enp1s0f0np0 |" in md
    assert "```text\nA " in md and "<details><summary>6. nccl-tests all\\_gather busbw" in md


@pytest.mark.parametrize("fmt", ["json", "md", "text"])
def test_redact(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    rc, out, _ = _run(capsys, "--redact", "--format", fmt, SWITCH, DIRECT)
    assert rc == 1
    for secret in ("spark-fb97", "spark-4440", "192.168.100.15", "10.0.1.2", "0xbca554388f70"):
        assert secret not in out
    if fmt != "text":  # the terminal table shows no evidence text, only file:line
        assert "host-" in out and "ip-" in out


def test_markup_in_log_values_is_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An env value that reads like Rich markup (`[bold]`) or HTML is printed as written."""
    text = Path(DIRECT).read_text()
    b = tmp_path / "odd.log"
    b.write_text(
        text.replace("NCCL_SOCKET_IFNAME set to enp1s0f0np0", "NCCL_SOCKET_IFNAME set to [bold]eth<0>", 1)
    )
    rc, out, _ = _run(capsys, DIRECT, str(b))
    assert rc == 1 and "[bold]eth<0>" in out
    rc, md, _ = _run(capsys, "--format", "md", DIRECT, str(b))
    assert "\\[bold\\]eth&lt;0&gt;" in md


def test_comma_separated_side(capsys: pytest.CaptureFixture[str]) -> None:
    """A side can list several inputs: the two DGX runs together against the first alone."""
    rc, out, _ = _run(capsys, "--format", "json", SWITCH, f"{SWITCH},{DIRECT}")
    doc = json.loads(out)
    sub = next(d for d in doc["differences"] if d["key"] == "subnet")
    assert rc == 1 and sub["a"] == "192.168.100.0/24" and sub["b"] == "10.0.1.0/24 | 192.168.100.0/24"
