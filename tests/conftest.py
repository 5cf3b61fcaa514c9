"""Shared fixtures: paths to bundled samples and to the optional ../shared data set."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check behaviour, not speed: a per-example deadline only makes them fail on a busy machine
# (CI's 2 cores), which says nothing about the code.
settings.register_profile("ncclscope", deadline=None)
settings.load_profile("ncclscope")

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (corpus, traces, reference); tests that need it skip when it is absent."""
    if not (SHARED / "corpus" / "issues").is_dir():
        pytest.skip("../shared is not present on this machine")
    return SHARED


@pytest.fixture(scope="session")
def corpus_dir(shared_dir: Path) -> Path:
    return shared_dir / "corpus" / "issues"


@pytest.fixture(scope="session")
def traces_dir(shared_dir: Path) -> Path:
    return shared_dir / "traces"
