"""The log reader reads as three packages behind one seam each (issue 30): `lines/` never imports `engine/`,
`engine/` imports neither `lines/` nor `keep/` nor the modules that bind them (it knows nothing about NCCL)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LOGS = Path(__file__).resolve().parents[2] / "ncclscope" / "parse" / "logs"
PKG = "ncclscope.parse.logs"


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (function-level imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("lines", (f"{PKG}.engine",)),
        ("keep", (f"{PKG}.engine",)),
        ("engine", (f"{PKG}.lines", f"{PKG}.keep", f"{PKG}.reduce", f"{PKG}.merge", f"{PKG}.read")),
    ],
)
def test_package_imports(package: str, forbidden: tuple[str, ...]) -> None:
    files = sorted((LOGS / package).glob("*.py"))
    assert len(files) >= 4
    bad = {
        f.name: sorted(m for m in _imports(f) if m.startswith(forbidden))
        for f in files
        if any(m.startswith(forbidden) for m in _imports(f))
    }
    assert bad == {}


def test_the_reader_is_the_three_packages() -> None:
    """No module of the reader lies beside the three packages but the binding ones."""
    top = sorted(p.name for p in LOGS.glob("*.py"))
    assert top == ["__init__.py", "merge.py", "read.py", "reduce.py"]


def test_engine_names_no_nccl() -> None:
    """The engine's code (docstrings aside) never names NCCL, PyTorch or a schema table."""
    for f in sorted((LOGS / "engine").glob("*.py")):
        tree = ast.parse(f.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not {n for n in names if "nccl" in n.lower() or "torch" in n.lower()}, f.name
        assert "ncclscope.schema" not in _imports(f), f.name
