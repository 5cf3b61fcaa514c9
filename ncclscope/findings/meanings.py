"""Findings stage, meanings: what each family of NCCL WARN messages means (grammars/catalog/meanings.json).

A family groups the message formats one condition and one function emit (read from the NCCL, RCCL,
aws-ofi-nccl and SHARP-plugin sources) and carries a cause class, a severity, the NCCL variables
involved and why/try text for that code path; `variants` refine the advice by the line's own words.
Every catalog entry (grammars/catalog/nccl_messages.json) is placed in the first family whose format
regexes and source-file globs match it; a line the catalog cannot name is placed by its text and the
`file:line` NCCL printed. Loaded once; the rules read it through `family_of` and `advice`.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from ncclscope import grammar as G
from ncclscope.parse.logs.lines import identify_one

CAUSES = (
    "configuration",
    "resource",
    "network",
    "hardware/driver",
    "peer-failure",
    "internal",
    "benign",
    "teardown",
)
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Variant:
    """Advice for the lines of a family whose text matches `message`."""

    message: str
    why: str
    fix: str
    cause: str | None = None  # when the words change the cause class (a CUDA failure that is out of memory)


@dataclass(frozen=True)
class Family:
    id: str
    cause: str
    severity: str
    variables: tuple[str, ...]
    formats: tuple[str, ...]  # regexes searched in a catalog format (or a line's text)
    files: tuple[str, ...]  # fnmatch globs on "repo:path" of a catalog site
    why: str
    fix: str
    read: tuple[str, ...]  # where the meaning was read
    variants: tuple[Variant, ...] = ()

    def matches_format(self, text: str) -> bool:
        return not self.formats or any(_rx(p).search(text) for p in self.formats)

    def matches_site(self, sites: Iterable[str]) -> bool:
        return not self.files or any(fnmatch.fnmatchcase(s, g) for s in sites for g in self.files)

    def variant(self, message: str) -> Variant | None:
        """The first variant whose pattern the line's text matches."""
        return next((v for v in self.variants if _rx(v.message).search(message)), None)

    def variant_advice(self, message: str) -> tuple[str, str] | None:
        """(why, try) of the first variant whose pattern the line's text matches, else None."""
        v = self.variant(message)
        return (v.why, v.fix) if v is not None else None

    def cause_of(self, message: str) -> str:
        """The cause class of one line: its variant's when that says one, else the family's."""
        v = self.variant(message)
        return v.cause if v is not None and v.cause else self.cause

    def advice(self, message: str) -> tuple[str, str]:
        """(why, try) for one line: the first variant whose pattern its text matches, else the family's."""
        return self.variant_advice(message) or (self.why, self.fix)


class _Site(msgspec.Struct):
    repo: str
    file: str
    line: int = 0  # at the `last` release
    first: str = ""
    last: str = ""


class _Msg(msgspec.Struct):
    id: str
    level: str
    format: str | None = None
    sites: list[_Site] = []
    releases: dict[str, list[str]] = {}


class _Doc(msgspec.Struct):
    messages: list[_Msg]
    sources: dict[str, dict[str, object]]


@functools.cache
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class _VariantDoc(msgspec.Struct, forbid_unknown_fields=True):
    message: str
    why: str
    fix: str = msgspec.field(name="try")
    cause: str | None = None


class _FamilyDoc(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    cause: str
    severity: str
    why: str
    fix: str = msgspec.field(name="try")
    variables: list[str] = []
    formats: list[str] = []
    files: list[str] = []
    variants: list[_VariantDoc] = []
    read: list[str] = []


class _MeaningsDoc(msgspec.Struct):
    about: str
    families: list[_FamilyDoc]


@functools.cache
def families() -> tuple[Family, ...]:
    """The families, in precedence order (specific first, per-source-file last)."""
    doc = msgspec.json.decode(G.grammar_bytes("catalog", "meanings.json"), type=_MeaningsDoc)
    return tuple(
        Family(
            id=f.id,
            cause=f.cause,
            severity=f.severity,
            variables=tuple(f.variables),
            formats=tuple(f.formats),
            files=tuple(f.files),
            why=f.why,
            fix=f.fix,
            read=tuple(f.read),
            variants=tuple(Variant(v.message, v.why, v.fix, v.cause) for v in f.variants),
        )
        for f in doc.families
    )


@functools.cache
def by_id() -> dict[str, Family]:
    return {f.id: f for f in families()}


@functools.cache
def catalog() -> _Doc:
    return msgspec.json.decode(G.grammar_bytes("catalog", "nccl_messages.json"), type=_Doc)


def sites(m: _Msg) -> tuple[str, ...]:
    return tuple(f"{s.repo}:{s.file}" for s in m.sites)


def place(fmt: str, where: tuple[str, ...]) -> Family | None:
    """The first family matching a format string printed at `where` ("repo:path" sites)."""
    return next((f for f in families() if f.matches_format(fmt) and f.matches_site(where)), None)


@functools.cache
def family_by_catalog_id() -> dict[str, str]:
    """Catalog id -> family id, for every entry that some family claims."""
    out = {}
    for m in catalog().messages:
        fam = place(m.format or "", sites(m))
        if fam is not None:
            out[m.id] = fam.id
    return out


def _loose(message: str, src_file: str | None) -> Family | None:
    """A line the catalog did not name: its text against each family's formats, and the `file:line`
    NCCL printed (relative to src/; plugins print a bare file name) against its files; a family with
    formats and no file to compare is taken on its formats alone."""
    path = f"src/{src_file.lstrip('/')}" if src_file else None
    for f in families():
        if (not f.formats and path is None) or not f.matches_format(message):
            continue
        if not f.files or path is None or any(fnmatch.fnmatchcase(path, g.split(":", 1)[1]) for g in f.files):
            return f
    return None


@functools.lru_cache(maxsize=4096)
def family_of(message: str, src_file: str | None = None) -> Family | None:
    """The family of one WARN line's message (None when no family claims it)."""
    cid = identify_one(message)
    m = _by_catalog_id().get(cid) if cid is not None else None
    fam = _placed(m.id) if m is not None else None
    return fam if fam is not None else _loose(message, src_file)


@functools.cache
def _placed(cid: str) -> Family | None:
    """The family of one catalog entry (placing all ~5,000 at once costs seconds: done only for coverage)."""
    m = _by_catalog_id()[cid]
    return place(m.format or "", sites(m))


@functools.cache
def _by_catalog_id() -> dict[str, _Msg]:
    return {m.id: m for m in catalog().messages}


def source_of(message: str) -> tuple[str, ...]:
    """Where the catalog says a line's format is printed: `repo file:line (first..last release)` per site
    (empty when the catalog does not name the line)."""
    cid = identify_one(message)
    m = _by_catalog_id().get(cid) if cid is not None else None
    if m is None:
        return ()
    return tuple(f"{s.repo} {s.file}:{s.line} ({s.first}..{s.last})" for s in m.sites[:4])


def releases_of(m: _Msg, repo: str) -> list[str]:
    """The exact tags of `repo` an entry appears in (`A..B` runs expanded over the repo's tag list)."""
    tags = [str(t) for t in _tags(repo)]
    out: list[str] = []
    for run in m.releases.get(repo, []):
        a, _, b = run.partition("..")
        if not b:
            out.append(a)
        elif a in tags and b in tags:
            out += tags[tags.index(a) : tags.index(b) + 1]
    return out


def _tags(repo: str) -> list[object]:
    src = catalog().sources.get(repo, {})
    tags = src.get("tags", [])
    return list(tags) if isinstance(tags, list) else []


def coverage(repo: str = "nccl", level: str = "WARN") -> dict[str, tuple[int, int]]:
    """Per release of `repo`: (formats of `level` with a family, formats of `level`)."""
    fam = family_by_catalog_id()
    out: dict[str, list[int]] = {str(t): [0, 0] for t in _tags(repo)}
    for m in catalog().messages:
        if m.level != level:
            continue
        for tag in releases_of(m, repo):
            if tag in out:
                out[tag][1] += 1
                out[tag][0] += m.id in fam
    return {t: (a, b) for t, (a, b) in out.items()}
