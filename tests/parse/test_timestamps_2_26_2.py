"""NCCL 2.26.2 misprints sub-second timestamps: those files keep whole seconds, with a note."""

from __future__ import annotations

from pathlib import Path

import pytest

import ncclscope

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "issues"
# The shape of a real 2.26.2 WARN line (corpus: nccl1672_nvls_invalid_argument_ts_prefix_2_26_2.log),
# with NCCL_DEBUG_TIMESTAMP_FORMAT="[%F %T.%3f] " and NCCL_DEBUG_TIMESTAMP_LEVELS=WARN,INFO.
LINES = [
    "[2025-04-06 22:31:56.{ms}] node-00:3536049:3536049 [0] NCCL INFO NCCL version {v}+cuda12.8",
    (
        "[2025-04-06 22:31:57.{ms}] node-00:3536049:3537983 [0] transport/nvls.cc:598 NCCL WARN Cuda failure 1 "
        "'invalid argument'"
    ),
]


def _log(tmp_path: Path, version: str, ms: str) -> str:
    p = tmp_path / f"rank0_{version}.log"
    p.write_text("\n".join(x.format(v=version, ms=ms) for x in LINES) + "\n", encoding="utf-8")
    return str(p)


@pytest.mark.parametrize(
    "version, ms, whole", [("2.26.2", "123", True), ("2.26.3", "123", False), ("2.26.2", "000", False)]
)
def test_subseconds_dropped_only_for_2_26_2(tmp_path: Path, version: str, ms: str, whole: bool) -> None:
    s = ncclscope.analyze([_log(tmp_path, version, ms)])
    ts = s.logs.warnings["ts_us"].to_list()
    assert len(ts) == 1 and ts[0] is not None
    assert (ts[0] % 1_000_000 == 0) is (whole or ms == "000")
    noted = [n for n in s.notes if "2.26.2 writes wrong sub-second timestamps" in n]
    assert bool(noted) is whole


def test_real_2_26_2_line_without_subseconds_is_untouched() -> None:
    log = SHARED / "nccl1672_nvls_invalid_argument_ts_prefix_2_26_2.log"
    if not log.exists():
        pytest.skip("needs ../shared")
    s = ncclscope.analyze([str(log)])
    assert not [n for n in s.notes if "2.26.2" in n]
    assert s.logs.warnings["ts_us"].drop_nulls().len() == 1
