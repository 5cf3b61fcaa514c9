"""Prebuilt tables: the grammar, catalog and needle tables and the torch-line parser, built when the wheel is.

The readers keep derived tables (rule regexes compiled from the `.lark` grammars, the NCCL message
catalog's 5,000 rules, needle sets, Lark's LALR tables) as files named by a hash of what they were
derived from. Building them costs seconds (the NCCL catalog alone ~4.4 s), which a fresh install used to
pay, silently, on its first run that met a line no family claims. The wheel build (`hatch_build.py`)
runs `build()`, which makes every table in a scratch cache and ships the files under
`ncclscope/_tables/`; at run time `shipped(name)` finds a table there before the user cache is looked
at. A name only matches when its inputs hash the same (grammar text, compiler version, Lark and Python
version for the pickled parser), so a stale table is never used: it is rebuilt into the user cache.

What is still written to the user cache (a source checkout, an editable install, another Python) is
kept there by `saved(path)`: each kind keeps its `KEEP` newest files, and leftover temporary files of
crashed writers are removed, so the directory stays bounded as grammars and versions change.

Only the standard library is imported here: the build hook runs before the package is installed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHIPPED = Path(__file__).resolve().parent / "_tables"
KEEP = 4  # files per kind kept in the user cache (a few grammar versions side by side: two checkouts)
STALE_TMP_S = 3600.0  # a writer's temporary file older than this was left by a crash
ROOT = Path(__file__).resolve().parent.parent

# Every table a first run may build, by the function that builds (or loads) it. The test that a
# fresh-cache analysis writes nothing to the user cache fails when a new table is missing here.
WARM = (
    "ncclscope.grammar:_table",
    "ncclscope.grammar:catalog_table:nccl_catalog.lark",
    "ncclscope.grammar:catalog_table:torch_catalog.lark",
    "ncclscope.parse.nccltests.patterns:_table",
    "ncclscope.parse.logs.lines.match:_needles",
    "ncclscope.parse.logs.keep.inert:candidate_pattern",
    "ncclscope.session:warm_reader_tables",  # the same test for the session's KeepPolicy
    "ncclscope.parse.logs.lines.runtime_lines:parser",
)


def shipped(name: str) -> Path | None:
    """The prebuilt table file `name` shipped in the wheel, or None (a checkout, or other inputs)."""
    path = SHIPPED / name
    return path if path.is_file() else None


def kind_of(name: str) -> str:
    """A table file's kind: its name without the trailing `-<hash>.<ext>` (`nccl_catalog`, `torch-lark`)."""
    stem = name.split(".", 1)[0]
    return stem.rsplit("-", 1)[0] if "-" in stem else stem


def saved(path: Path) -> None:
    """After writing `path` to the user cache: keep its kind's `KEEP` newest files and drop stale temp files."""
    with contextlib.suppress(OSError):
        kind = kind_of(path.name)
        now = time.time()
        same: list[tuple[float, Path]] = []
        for p in path.parent.iterdir():
            if not p.is_file():
                continue
            if p.name.endswith(".tmp"):
                if kind_of(p.name) == kind and now - p.stat().st_mtime > STALE_TMP_S:
                    p.unlink(missing_ok=True)
            elif kind_of(p.name) == kind:
                same.append((p.stat().st_mtime, p))
        same.sort(key=lambda t: (t[0], t[1].name), reverse=True)
        for _, p in same[KEEP:]:
            if p != path:
                p.unlink(missing_ok=True)


def warm() -> None:
    """Build (or load) every table in `WARM`, in this process, into `$XDG_CACHE_HOME/ncclscope`."""
    import importlib

    for spec in WARM:
        module, func, *args = spec.split(":")
        getattr(importlib.import_module(module), func)(*args)


def build(dest: Path, *, python: str | None = None) -> list[Path]:
    """Build every table into `dest` (created), in a fresh interpreter with an empty cache; the files made.

    `python` is the interpreter to build with (the build environment's by default); it imports this
    source tree, so the tables are those of the code being packaged.
    """
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ncclscope-tables-") as tmp:
        env = {
            **os.environ,
            "XDG_CACHE_HOME": tmp,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        }
        code = "from ncclscope.prebuilt import warm; warm()"
        subprocess.run([python or sys.executable, "-c", code], env=env, check=True, cwd=tmp)
        made = sorted(
            p for p in (Path(tmp) / "ncclscope").iterdir() if p.is_file() and not p.name.endswith(".tmp")
        )
        out = []
        for p in made:
            shutil.copyfile(p, dest / p.name)
            out.append(dest / p.name)
        return out
