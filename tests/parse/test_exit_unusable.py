"""CLI exit codes for inputs that say nothing (issue 30, item 6): exit 2 and one line saying what was read;
readable logs, healthy or not, keep 0 / 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.errors import EXIT_BAD_INPUT, EXIT_OK

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
HEALTHY = SAMPLES / "logs" / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log"
TESTS_ONLY = SAMPLES / "nccltests" / "ebpf_rtx5090_2rank_socket_tests2_18_0.log"  # no NCCL line at all


def _chatter(tmp_path: Path) -> Path:
    """An application's output with no NCCL, PyTorch, launcher or nccl-tests line."""
    p = tmp_path / "train.log"
    p.write_text("".join(f"epoch {i} loss {1 / (i + 1):.4f} lr 0.001\n" for i in range(50)))
    return p


def test_text_without_a_known_line_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(_chatter(tmp_path))]) == EXIT_BAD_INPUT
    err = capsys.readouterr()
    assert "No problems found" not in err.out
    (line,) = [ln for ln in err.err.splitlines() if ln.startswith("ncclscope: error:")]
    assert "read 50 line(s) in 1 file(s)" in line


def test_report_on_text_without_a_known_line_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    assert main(["report", str(_chatter(tmp_path)), "-o", str(out), "-q"]) == EXIT_BAD_INPUT
    assert not out.exists()


def test_json_format_is_exit_2_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(_chatter(tmp_path)), "-f", "json", "-q"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().out == ""


def test_healthy_log_keeps_exit_0() -> None:
    assert main(["analyze", str(HEALTHY), "-q"]) == EXIT_OK


def test_chatter_beside_a_readable_log_keeps_exit_0(tmp_path: Path) -> None:
    assert main(["analyze", str(_chatter(tmp_path)), str(HEALTHY), "-q"]) == EXIT_OK


def test_nccl_tests_table_alone_is_readable() -> None:
    assert main(["analyze", str(TESTS_ONLY), "-q"]) in (0, 1)


def test_launcher_tags_alone_are_readable(tmp_path: Path) -> None:
    p = tmp_path / "launch.log"
    p.write_text("".join(f"[default{r}]:step 10 loss 0.5\n" for r in range(4)))
    assert main(["analyze", str(p), "-q"]) == EXIT_OK


def test_pytorch_watchdog_line_alone_is_readable(tmp_path: Path) -> None:
    p = tmp_path / "w.log"
    p.write_text(
        "[rank1]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, "
        "Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.\n"
    )
    assert main(["analyze", str(p), "-q"]) != EXIT_BAD_INPUT
