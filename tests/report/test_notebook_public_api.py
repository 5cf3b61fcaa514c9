"""The notebook API as a user meets it: `dir(ncclscope)` lists `load`, every public `Analysis`
attribute has a docstring, the tutorials use only the public API, a trace-only analysis counts its
ranks, and the packaging ships the licence (issue 31)."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest

import ncclscope
from ncclscope.notebook import Analysis

REPO = Path(__file__).resolve().parents[2]


def test_dir_lists_the_lazy_public_names() -> None:
    assert {"load", "Analysis", "analyze", "render", "write_report"} <= set(dir(ncclscope))


def test_every_public_attribute_has_a_docstring() -> None:
    missing = [n for n in dir(Analysis) if not n.startswith("_") and not inspect.getdoc(getattr(Analysis, n))]
    assert not missing
    assert "connections" in (Analysis.__doc__ or "")  # help(s) names the tables __getattr__ serves


def test_trace_only_analysis_counts_its_ranks() -> None:
    s = ncclscope.load(trace=REPO / "samples" / "traces" / "param_dlrm_8rank")
    assert s.n_ranks == 8 and " 8 ranks" in repr(s)


def test_tutorials_use_only_the_public_api() -> None:
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        code = "\n".join(
            "".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
        )
        assert "from ncclscope." not in code and "import ncclscope." not in code, path.name
        assert ".session." not in code, path.name


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_packaging_metadata() -> None:
    import tomllib

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]  # PEP 639
    assert (REPO / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert (
        any(c.startswith("License") for c in project.get("classifiers", [])) is False
    )  # PEP 639: no licence classifier
    assert "Typing :: Typed" in project["classifiers"]
    assert {"pandas", "pyarrow"} <= {d.split(">")[0] for d in project["optional-dependencies"]["pandas"]}
    assert ".hypothesis" in meta["tool"]["hatch"]["build"]["targets"]["sdist"]["exclude"]
