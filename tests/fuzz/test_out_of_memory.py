"""Issue 30: when memory runs out (a `MemoryError`, or a panic inside Polars, pyo3's `PanicException`, which
is a `BaseException` that `except Exception` misses) the CLI says so in one line and exits 3, never 1 (the
code of an error finding) and never with a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from polars.exceptions import PanicException

from ncclscope.cli import main

from .hostile import GOOD


def _run(
    exc: BaseException, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    import ncclscope.session

    def broken(*_: object, **__: object) -> None:
        raise exc

    monkeypatch.setattr(ncclscope.session, "analyze", broken)
    log = tmp_path / "r.log"
    log.write_text(GOOD)
    rc = main(["analyze", str(log)])
    return rc, capsys.readouterr().err


def test_memory_error_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rc, err = _run(MemoryError(), tmp_path, capsys, monkeypatch)
    assert rc == 3
    assert err.count("\n") == 1 and err.startswith("ncclscope: error: out of memory"), err


def test_a_polars_panic_is_exit_3_not_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not issubclass(PanicException, Exception)  # why `except Exception` is not enough
    rc, err = _run(PanicException("assertion failed: i < self.len()"), tmp_path, capsys, monkeypatch)
    assert rc == 3 and "Traceback" not in err and err.count("\n") == 1, err
    assert "PanicException: assertion failed" in err
    rc, err = _run(PanicException("capacity overflow"), tmp_path, capsys, monkeypatch)
    assert rc == 3 and err.startswith("ncclscope: error: out of memory"), err
