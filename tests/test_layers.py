"""Imports only go forward: grammar → parse → frames → align → hang → findings → diagnosis → session → report
→ diff → notebook → run → capture → cli. A module may import its own stage, the shared records (records, schema,
tuning, errors, version) and earlier stages, never a later one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ncclscope"
ORDER = [
    "base",
    "grammar",
    "parse",
    "frames",
    "align",
    "hang",
    "findings",
    "diagnosis",
    "session",
    "report",
    "diff",
    "notebook",
    "run",
    "capture",
    "cli",
]
BASE = {"records", "schema", "tuning", "errors", "version", "py", "prebuilt"}
# Known exception, until issue 30 gives the reader its own output type: the log reader builds `LogFrames`,
# whose declaration lives in frames.py.
ALLOWED = {("parse", "frames")}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "ncclscope" or len(parts) == 1:
        return None
    head = parts[1]
    if head in ("frames", "frames_coll"):
        return "frames"
    return "base" if head in BASE else head if head in ORDER else None


def _imports(path: Path) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
    return out


def test_imports_only_go_forward() -> None:
    backward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = _stage(".".join(("ncclscope", *path.relative_to(PACKAGE).with_suffix("").parts)))
        if me is None:
            continue  # the package facade and __main__ may import anything
        for module, line in _imports(path):
            them = _stage(module)
            if them and ORDER.index(them) > ORDER.index(me) and (me, them) not in ALLOWED:
                backward.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
    assert not backward, backward


def test_the_check_sees_a_backward_import(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from ncclscope.report import document\n")
    assert _imports(bad) == [("ncclscope.report", 1)] and _stage("ncclscope.report") == "report"
    assert ORDER.index("report") > ORDER.index("diagnosis")
