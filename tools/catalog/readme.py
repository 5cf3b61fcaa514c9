"""grammars/catalog/README.md, generated from the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_readme(doc: dict[str, Any], path: Path) -> None:
    path.write_text("TODO\n", encoding="utf-8")
