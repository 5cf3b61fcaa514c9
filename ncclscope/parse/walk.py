"""Parse stage, directory walks that end: regular files only, symlinks never followed, every skip counted.

A log directory may hold a named pipe (a `mkfifo` tee), a socket, a device node, a stale `latest.log`
symlink or `up -> ..`: opening a FIFO blocks forever and following `up` walks the tree again (or the
whole disk). The walk looks at each entry without following it (`lstat`), yields regular files in
sorted order, skips hidden names, and counts the rest into one note per kind; a folder it cannot
list is a note too, never the end of the run.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

# What each skipped kind is, for the note (and why it is not read).
_WHY = {
    "fifo": "named pipe(s) (never opened: reading one blocks until a writer comes)",
    "socket": "socket(s)",
    "device": "device node(s)",
    "symlink": "symlink(s) (not followed: out of the tree, or back into it; name the target to read it)",
    "dangling": "dangling symlink(s)",
    "unlistable": "folder(s) that could not be listed",
}


@dataclass
class Found:
    """What a walk skipped, by kind, with the first few names of each."""

    counts: Counter[str] = field(default_factory=Counter)
    names: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, kind: str, name: str) -> None:
        self.counts[kind] += 1
        shown = self.names.setdefault(kind, [])
        if len(shown) < 3:
            shown.append(_shown(name))

    def notes(self, root: str) -> list[str]:
        out = []
        for kind, why in _WHY.items():
            if n := self.counts[kind]:
                more = ", …" if n > len(self.names[kind]) else ""
                out.append(f"skipped {n} {why} in {_shown(root)} ({', '.join(self.names[kind])}{more})")
        return out


def _shown(path: str) -> str:
    """A path as text (bytes of a name that are not UTF-8 as `\\xNN`, as `archive.shown_name` writes them)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def walk(root: str, found: Found) -> Iterator[str]:
    """Regular files under `root`, depth first in name order; nothing but `root` itself is followed."""
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        found.skip("unlistable", root)
        return
    for e in entries:
        if e.name.startswith("."):
            continue
        kind = _kind(e)
        if kind == "dir":
            yield from walk(e.path, found)
        elif kind == "file":
            yield e.path
        else:
            found.skip(kind, e.path)


def _kind(e: os.DirEntry[str]) -> str:
    try:
        mode = e.stat(follow_symlinks=False).st_mode
    except OSError:
        return "dangling"
    if stat.S_ISLNK(mode):
        return "symlink" if os.path.exists(e.path) else "dangling"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"
