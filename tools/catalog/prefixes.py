"""Per-release prefix formats (the text ncclDebugLog puts before each message) and licence notices."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from clex import decode_literal, lex
from gitsrc import Repo

_PREFIX_LIT = re.compile(r"NCCL (?:WARN|INFO|TRACE|CALL)|^%s:%d:%d |^\[%F %T\] $|^\n$")
_WARN_NL_RE = re.compile(r"level == NCCL_LOG_WARN\)\s*\{?\s*buffer\[len\+\+\] = '\\n'")
_LEVELS_RE = re.compile(r"TIMESTAMP_LEVELS.{0,300}?\(\s*1u?\s*<<\s*NCCL_LOG_(\w+)\s*\)", re.DOTALL)


def _norm(s: str) -> str:
    s = s.replace("\n", "")
    s = re.sub(r"%s$", "", s)
    for a, b in (
        ("%s:%d:%d", "host:pid:tid"),
        ("[%d]", "[dev]"),
        ("%f %s:%d", "ms func:line"),
        ("%s:%d (%s)", "file:line (func)"),
        ("%s:%d", "file:line"),
    ):
        s = s.replace(a, b)
    return s


def _files(repo: Repo, tag: str) -> list[str]:
    try:
        out = repo.git("grep", "-l", "-E", "NCCL (WARN|INFO)", tag, "--", "src")
    except subprocess.CalledProcessError:
        return []
    return sorted(p.split(":", 1)[1] for p in out.decode().split())


def _level(lits: list[str], word: str) -> list[str]:
    return [s for s in lits if f"NCCL {word}" in s]


def prefix_of(repo: Repo, tag: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = []
    text_all = ""
    for path in _files(repo, tag):
        text = repo.show(tag, path) or ""
        code, _defs = lex(text, path)
        lits = [(t.line, decode_literal(t.text)) for t in code if t.kind == "str"]
        hits = [(ln, s) for ln, s in lits if _PREFIX_LIT.search(s)]
        if any("NCCL" in s for _ln, s in hits):
            found.extend({"file": path, "line": ln, "literal": s} for ln, s in hits)
            text_all += text
    lits = [f["literal"] for f in found]
    host = "host:pid:tid " if any(s.startswith("%s:%d:%d ") and "NCCL" not in s for s in lits) else ""
    warns = _level(lits, "WARN")
    debug_h = repo.show(tag, "src/include/debug.h") or ""

    def one(word: str, prefer_plain: bool = True) -> str | None:
        cands = [s for s in _level(lits, word) if not (prefer_plain and "(%s)" in s)] or _level(lits, word)
        if not cands:
            return None
        n = _norm(cands[0])
        return n if n.startswith("host:pid:tid") else host + n

    levels = _LEVELS_RE.search(text_all)
    ts = "NCCL_DEBUG_TIMESTAMP_FORMAT" in text_all
    desc = {
        "warn": one("WARN"),
        "warn_func": any("(%s) NCCL WARN" in s for s in warns),
        "warn_leading_newline": any(s.startswith("\n") for s in warns)
        or "\n" in lits
        or bool(_WARN_NL_RE.search(text_all)),
        "info": one("INFO"),
        "trace": one("TRACE"),
        "call": one("CALL"),
        "version_level": bool(re.search(r"#\s*define\s+VERSION\(", debug_h)),
        "info_loc": bool(re.search(r"#\s*define\s+INFO_LOC\(", debug_h)),
        "timestamp": ts,
        "timestamp_format_default": "[%F %T] " if ts and "[%F %T] " in lits else None,
        "timestamp_levels_default": [levels.group(1)] if ts and levels else ([] if not ts else None),
    }
    return {"literals": found, "descriptor": desc}


def _licence_kind(text: str) -> str:
    apache = "Apache License" in text
    bsd = "Redistribution and use" in text
    bsd_kind = "BSD-3-Clause" if "Neither the name" in text or "names of its" in text else "BSD-2-Clause"
    if apache and bsd:
        return f"Apache-2.0 (parts {bsd_kind})"
    if apache:
        return "Apache-2.0"
    if bsd:
        return bsd_kind
    if "Permission is hereby granted" in text:
        return "MIT"
    return "unknown"


def licence(repo: Repo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag in dict.fromkeys([repo.tags[0], repo.tags[-1]]):
        names = [
            p
            for p in repo.git("ls-tree", "--name-only", tag).decode().split()
            if re.match(r"(?i)licen[cs]e", p)
        ]
        if not names:
            continue
        text = repo.show(tag, names[0]) or ""
        lines = sorted(dict.fromkeys(ln.strip() for ln in text.splitlines() if "Copyright (c)" in ln))
        out[tag] = {"file": names[0], "license": _licence_kind(text), "copyright": lines}
    return out
