"""Prebuilt tables (issue 31 item 7): what the wheel build ships is every table a first run would build, so a
fresh install's first analysis builds nothing; what a source checkout still caches stays bounded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncclscope import prebuilt

REPO = Path(__file__).resolve().parent.parent
# A line no family claims (the catalog's turn), a PyTorch line (the torch parser), a whole log, nccl-tests.
UNKNOWN = (
    "node1:100:200 [0] NCCL INFO zzqq: a message no release of NCCL printed 42\n"
    "node1:100:200 [0] NCCL INFO Channel 00/02 : 0 1\n"
    "[rank0]:[W1127 10:00:00.000000000 ProcessGroupNCCL.cpp:1234] frobnicated the quux 17 times\n"
)
INPUTS = [
    "samples/logs/nccl1267_version_mismatch_node4_2_19_3.log",
    "samples/hang/torch26_class_a_8ranks/rank0.log",
    "samples/nccltests/dgxspark_roce_switch_ok_nccl2_28_9.log",
]
ANALYZE = """
import sys
from pathlib import Path
import ncclscope.prebuilt as p
p.SHIPPED = Path(sys.argv[1])
from ncclscope.session import analyze
analyze(sys.argv[2:])
"""


def _analyze(tables: Path, cache: Path, inputs: list[str]) -> list[str]:
    """Run one analysis in a fresh interpreter with an empty user cache; the files it wrote there."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", ANALYZE, str(tables), *inputs], env=env, check=True, cwd=REPO)
    return sorted(p.name for p in cache.rglob("*") if p.is_file())


@pytest.mark.slow
def test_a_first_run_with_the_shipped_tables_builds_nothing(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    made = prebuilt.build(tables)
    kinds = {prebuilt.kind_of(p.name) for p in made}
    assert {"nccl", "nccl_catalog", "torch_catalog", "nccltests", "needles", "torch-lark"} <= kinds
    (tmp_path / "unknown.log").write_text(UNKNOWN)
    inputs = [str(tmp_path / "unknown.log"), *(str(REPO / p) for p in INPUTS)]
    # Without them the same first run builds its tables into the user cache (what the wheel spares)...
    assert _analyze(tmp_path / "none", tmp_path / "cold", inputs)
    # ... and with them it writes nothing: every table it needs was found under their shipped names.
    assert _analyze(tables, tmp_path / "fresh", inputs) == []


def test_kind_of_names_a_table_file() -> None:
    assert prebuilt.kind_of("nccl_catalog-173e24eccecad706.json") == "nccl_catalog"
    assert prebuilt.kind_of("torch-lark-5de68511cebf5a02.pickle") == "torch-lark"
    assert prebuilt.kind_of("torch-lark-5de68511cebf5a02.pickle.123.tmp") == "torch-lark"
    assert prebuilt.kind_of("nccl-38ccec9714761098.json.0f1e.tmp") == "nccl"


def test_the_user_cache_keeps_a_few_files_per_kind(tmp_path: Path) -> None:
    now = time.time()
    for i in range(7):
        f = tmp_path / f"nccl_catalog-{i:016x}.json"
        f.write_text("{}")
        os.utime(f, (now - 100 * (7 - i), now - 100 * (7 - i)))  # file 6 is the newest
    other = tmp_path / "nccl-0000000000000000.json"
    other.write_text("{}")
    stale = tmp_path / "nccl_catalog-0000000000000009.json.1234.tmp"
    stale.write_text("")
    os.utime(stale, (now - 2 * prebuilt.STALE_TMP_S, now - 2 * prebuilt.STALE_TMP_S))
    fresh_tmp = tmp_path / "nccl_catalog-0000000000000009.json.5678.tmp"  # a writer at work now
    fresh_tmp.write_text("")
    prebuilt.saved(tmp_path / f"nccl_catalog-{6:016x}.json")
    left = sorted(p.name for p in tmp_path.iterdir())
    kept = [f"nccl_catalog-{i:016x}.json" for i in range(7 - prebuilt.KEEP, 7)]
    assert left == sorted([*kept, other.name, fresh_tmp.name])


def test_a_table_is_found_in_the_wheel_before_the_user_cache(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(prebuilt, "SHIPPED", tmp_path)
    assert prebuilt.shipped("nccl-0123456789abcdef.json") is None
    (tmp_path / "nccl-0123456789abcdef.json").write_text("{}")
    assert prebuilt.shipped("nccl-0123456789abcdef.json") == tmp_path / "nccl-0123456789abcdef.json"
