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


PACKAGE = LOGS.parents[1]  # ncclscope/
LINES = f"{PKG}.lines"
# Modules that still reach into `lines/` past its public face, and why (each entry is a debt, not a licence):
# keep/inert builds the screen `parse_batch` is handed (which lines may skip the general path): it reads the
# needles, the prefix rules and the rejoin window that lines/ holds (owned by keep/ this stop; its line
# meaning belongs in lines/).
INSIDE = {"parse/logs/keep/inert.py"}


def _reaches(path: Path, public: set[str]) -> list[str]:
    """What `path` imports from `lines/` beyond its public names (`lines.__all__`)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith(f"{LINES}.")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(f"{LINES}."):
                bad.append(node.module)
            elif node.module == LINES:
                bad += [f"{LINES}.{a.name}" for a in node.names if a.name not in public]
    return bad


def test_lines_is_reached_through_its_public_names() -> None:
    """A module outside `lines/` imports from it only `lines.__all__` (`parse_batch`, its types, the row
    schemas and the few lookups consumers share), never one of its modules."""
    from ncclscope.parse.logs import lines

    public = set(lines.__all__)
    assert {"parse_batch", "Batch", "Carry", "Context", "RawBatch", "TABLES"} <= public
    assert all(hasattr(lines, n) for n in public)
    found = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).as_posix()
        if rel.startswith("parse/logs/lines/"):
            continue
        bad = _reaches(f, public)
        if bad:
            found[rel] = sorted(set(bad))
    assert set(found) == INSIDE, found  # a new entry fails; so does an entry that no longer reaches in


# What the binding modules may take from `lines/`: the seam and the shapes of what crosses it.
SEAM = {
    "parse_batch",
    "Batch",
    "Carry",
    "Context",
    "RawBatch",
    "Screen",
    "CollPart",
    "General",
    "TABLES",
    "compact",
    "merge_streams",
    "final_streams",
    "STREAM_LINE_COLUMNS",
}


def test_reduce_knows_no_line_meaning() -> None:
    """The binding modules reach `lines/` through `parse_batch` alone: no family, matcher or catalog."""
    for name in ("reduce.py", "read.py", "merge.py"):
        taken = {m.removeprefix(f"{LINES}.") for m in _imports(LOGS / name) if m.startswith(f"{LINES}.")}
        assert taken <= SEAM, (name, taken - SEAM)
    assert f"{LINES}.parse_batch" in _imports(LOGS / "reduce.py")
