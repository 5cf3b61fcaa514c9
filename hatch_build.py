"""Wheel build hook: ship the grammar, catalog and parser tables prebuilt (`ncclscope/prebuilt.py`).

A fresh install's first run then reads them instead of spending seconds building them under the user's
cache. Editable installs skip it: they run from the source tree, which keeps its tables in the user cache.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent


def _prebuilt() -> Any:
    # Load ncclscope/prebuilt.py by path: the package itself is not installed in the build environment.
    spec = importlib.util.spec_from_file_location("_ncclscope_prebuilt", ROOT / "ncclscope" / "prebuilt.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TablesHook(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        self._tmp = tempfile.TemporaryDirectory(prefix="ncclscope-wheel-tables-")
        files = _prebuilt().build(Path(self._tmp.name), python=sys.executable)
        for f in files:
            build_data["force_include"][str(f)] = f"ncclscope/_tables/{f.name}"
        self.app.display_info(f"ncclscope: {len(files)} prebuilt tables shipped in ncclscope/_tables/")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
