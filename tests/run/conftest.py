"""Fixtures for tests/run: run `python -m ncclscope run …` as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

HERE = Path(__file__).parent
FAKE = HERE / "fake_launcher.py"
REPO = HERE.parent.parent


def node_dir(out: Path) -> Path:
    """The one host directory a single wrapper writes under `out`."""
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def manifest(out: Path) -> dict[str, object]:
    data = json.loads((node_dir(out) / "run.json").read_text())
    assert isinstance(data, dict)
    return data


RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> RunCli:
    def go(
        args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "ncclscope", "run", *args],
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return go
