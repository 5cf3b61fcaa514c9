"""Catalog ids and release runs, shared by the source extractor and the binary reader."""

from __future__ import annotations

import hashlib
from collections.abc import Collection


def runs(tags: list[str], have: Collection[str]) -> list[str]:
    """Exact release list as runs over the repo's ordered tags: `A..B` = every tag from A to B."""
    out: list[str] = []
    i = 0
    while i < len(tags):
        if tags[i] not in have:
            i += 1
            continue
        j = i
        while j + 1 < len(tags) and tags[j + 1] in have:
            j += 1
        out.append(tags[i] if i == j else f"{tags[i]}..{tags[j]}")
        i = j + 1
    return out


def message_id(level: str, key: str, used: set[str]) -> str:
    """`m` + the shortest prefix (8 hex digits at least) of sha1(level NUL key) not yet in `used`."""
    digest = hashlib.sha1(f"{level}\0{key}".encode()).hexdigest()
    for n in range(8, 41):
        mid = "m" + digest[:n]
        if mid not in used:
            used.add(mid)
            return mid
    raise ValueError("id collision")
