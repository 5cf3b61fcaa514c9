"""Build grammars/catalog/nccl_messages.json: every NCCL log format, from NCCL's own sources.

Reads bare git mirrors of NVIDIA/nccl, ROCm/rccl, aws/aws-ofi-nccl and Mellanox/nccl-rdma-sharp-plugins,
finds every WARN/INFO/TRACE/VERSION/TRACE_CALL call (and aws-ofi-nccl's NCCL_OFI_* macros, and every
wrapper macro such as SYSCHECK or CUDACHECK, expanded from its definition at that release) at every
chosen tag, and writes one entry per distinct (level, format). Also writes grammars/catalog/README.md.
When grammars/catalog/nccl_binary_strings.json exists (tools/catalog/binary.py: the new strings of NCCL
releases newer than the newest tag, from their libraries), its strings are merged in as `binary` entries.

    python tools/catalog/extract.py --out grammars/catalog/nccl_messages.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from binary import load as load_binary
from binary import merge as merge_binary
from clex import Call, Define, find_calls, lex
from composed import Composed, composed_in
from fmtspec import recognisable
from gitsrc import Repo, choose_tags, resolve_commits
from ids import message_id, runs
from macros import Emit, MacroTable, resolve
from prefixes import licence, prefix_of
from readme import write_readme

MIRRORS = "/work/.mirror"
DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\r?\n)*[^\n]*", re.MULTILINE)
COMPOSE_RE = re.compile(r"\b(?:s|sn)printf\s*\(|\bstrn?cat\s*\(")
OFI_RE = re.compile(r"\(\s*\*\s*(ofi_log_function)\s*\)")


@dataclass
class Acc:
    level: str
    fmt: str | None
    expr: str
    reason: str | None
    subsys: set[str] = field(default_factory=set)
    releases: dict[str, set[str]] = field(default_factory=dict)
    sites: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    wrappers: set[str] = field(default_factory=set)
    composed: bool = False  # built in a buffer by sprintf/snprintf/strcat and logged as "%s" (composed.py)
    indent: bool = False  # a composed line may start with spaces
    functions: set[str] = field(default_factory=set)


class Extractor:
    def __init__(self, repos: list[Repo]) -> None:
        self.repos = repos
        self.acc: dict[tuple[str, str | None, str], Acc] = {}
        self._defines: dict[tuple[str, str], list[Define]] = {}
        self._calls: dict[tuple[str, str], list[Call]] = {}
        self._composed: dict[tuple[str, str], list[Composed]] = {}

    def text(self, repo: Repo, sha: str) -> str:
        return OFI_RE.sub(r"\1", repo.blob(sha))

    def defines(self, repo: Repo, path: str, sha: str) -> list[Define]:
        key = (sha, path)
        if key not in self._defines:
            text = self.text(repo, sha)
            out: list[Define] = []
            for m in DEFINE_RE.finditer(text):
                if "(" in m.group():
                    out.extend(lex(m.group(), path, text.count("\n", 0, m.start()) + 1)[1])
            self._defines[key] = out
        return self._defines[key]

    def calls(
        self, repo: Repo, path: str, sha: str, names: frozenset[str], quick: re.Pattern[str]
    ) -> list[Call]:
        key = (sha, path)
        if key not in self._calls:
            text = self.text(repo, sha)
            toks = lex(text, path)[0] if quick.search(text) else []
            self._calls[key] = find_calls(toks, names) if toks else []
            self._composed[key] = composed_in(toks) if toks and COMPOSE_RE.search(text) else []
        return self._calls[key]

    def composed(self, path: str, sha: str) -> list[Composed]:
        """Composed formats of a file (filled by `calls`)."""
        return self._composed.get((sha, path), [])

    def run(self) -> None:
        for repo in self.repos:
            trees = {t: repo.tree(t) for t in repo.tags}
            repo.load_blobs({sha for files in trees.values() for _p, sha in files})
            tables = {
                t: MacroTable([d for p, s in files for d in self.defines(repo, p, s)])
                for t, files in trees.items()
            }
            names = frozenset().union(
                *(
                    tb.dependent_names()
                    | {"WARN", "INFO", "TRACE", "VERSION", "TRACE_CALL", "ofi_log_function"}
                    for tb in tables.values()
                )
            )
            quick = re.compile(r"\b(?:" + "|".join(sorted(names)) + r")\s*\(")
            for tag, files in trees.items():
                table = tables[tag]
                for path, sha in files:
                    for call in self.calls(repo, path, sha, names, quick):
                        if call.name in table.names:
                            for e in table.emits_of_call(call, ()):
                                self.record(repo.key, tag, e)
                    for c in self.composed(path, sha):
                        self.record_composed(repo.key, tag, c)
                for e in table.independent():
                    self.record(repo.key, tag, e)
            print(f"{repo.key}: {len(repo.tags)} tags, {len(self.acc)} formats so far", file=sys.stderr)

    def record(self, repo: str, tag: str, e: Emit) -> None:
        for r in resolve(e):
            key = (r.level, r.fmt, "" if r.fmt is not None else r.expr)
            a = self.acc.get(key)
            if a is None:
                a = self.acc[key] = Acc(r.level, r.fmt, r.expr, r.reason)
            a.subsys.update(r.subsys)
            a.releases.setdefault(repo, set()).add(tag)
            lines = a.sites.setdefault((repo, e.file), {})
            lines[tag] = min(lines.get(tag, e.line), e.line)
            if e.chain:
                a.wrappers.add(e.chain[0])

    def record_composed(self, repo: str, tag: str, c: Composed) -> None:
        key = (c.level, c.fmt, "\0composed")
        a = self.acc.get(key)
        if a is None:
            a = self.acc[key] = Acc(c.level, c.fmt, "", None, composed=True)
        a.indent = a.indent or c.lead
        a.functions.add(c.function)
        a.subsys.update(c.subsys)
        a.releases.setdefault(repo, set()).add(tag)
        lines = a.sites.setdefault((repo, c.file), {})
        lines[tag] = min(lines.get(tag, c.line), c.line)

    def drop_duplicate_composed(self) -> None:
        """A composed format that is also logged as it is (same level) is kept once, as the plain entry."""
        plain = {(a.level, a.fmt) for a in self.acc.values() if not a.composed}
        for k in [k for k, a in self.acc.items() if a.composed and (a.level, a.fmt) in plain]:
            del self.acc[k]


def to_message(a: Acc, order: dict[str, list[str]], used: set[str]) -> dict[str, Any]:
    ok, why = recognisable(a.fmt)
    key = "composed:" + (a.fmt or "") if a.composed else a.fmt if a.fmt is not None else "expr:" + a.expr
    msg: dict[str, Any] = {
        "id": message_id(a.level, key, used),
        "level": a.level,
        "subsys": sorted(a.subsys),
        "format": a.fmt,
    }
    if a.fmt is None:
        msg["expr"] = a.expr
        msg["reason"] = a.reason
    if a.composed:
        msg["composed"] = True
        msg["indent"] = a.indent
        msg["functions"] = sorted(a.functions)
    msg["recognisable"] = ok
    if not ok:
        msg["unrecognisable_reason"] = why
    msg["sources"] = [r for r in order if r in a.releases]
    msg["wrapper"] = min(a.wrappers) if a.wrappers else None
    msg["wrappers"] = sorted(a.wrappers)
    msg["releases"] = {r: runs(order[r], a.releases[r]) for r in order if r in a.releases}
    sites = []
    for (repo, file), lines in sorted(
        a.sites.items(), key=lambda kv: (list(order).index(kv[0][0]), kv[0][1])
    ):
        tags = [t for t in order[repo] if t in lines]
        sites.append(
            {
                "repo": repo,
                "file": file,
                "line": lines[tags[-1]],
                "first": tags[0],
                "last": tags[-1],
                "first_line": lines[tags[0]],
            }
        )
    msg["sites"] = sites
    return msg


def dump(doc: dict[str, Any]) -> str:
    """Stable JSON: top level indented, one message per line."""
    head = {k: v for k, v in doc.items() if k != "messages"}
    body = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    msgs = ",\n".join("  " + json.dumps(m, ensure_ascii=False) for m in doc["messages"])
    return f'{body},\n "messages": [\n{msgs}\n ]\n}}\n'


def build_repos(args: argparse.Namespace) -> list[Repo]:
    return [
        Repo("nccl", "NVIDIA/nccl", args.nccl, ("src",), "nccl"),
        Repo("rccl", "ROCm/rccl", args.rccl, ("src",), "rccl"),
        Repo("aws-ofi-nccl", "aws/aws-ofi-nccl", args.aws, ("src", "include"), "aws"),
        Repo(
            "nccl-rdma-sharp-plugins",
            "Mellanox/nccl-rdma-sharp-plugins",
            args.sharp,
            ("src", "include"),
            "sharp",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--nccl", default=f"{MIRRORS}/NVIDIA+nccl/repo")
    ap.add_argument("--rccl", default=f"{MIRRORS}/ROCm+rccl/repo")
    ap.add_argument("--aws", default=f"{MIRRORS}/aws+aws-ofi-nccl/repo")
    ap.add_argument("--sharp", default=f"{MIRRORS}/Mellanox+nccl-rdma-sharp-plugins/repo")
    ap.add_argument("--out", default="grammars/catalog/nccl_messages.json")
    ap.add_argument("--readme", default=None, help="default: README.md next to --out")
    ap.add_argument(
        "--binary",
        default=None,
        help="strings from released libraries (tools/catalog/binary.py), merged when the file exists; "
        "default: nccl_binary_strings.json next to --out",
    )
    args = ap.parse_args(argv)
    repos = build_repos(args)
    for r in repos:
        r.tags = choose_tags(r)
        resolve_commits(r)
    ex = Extractor(repos)
    ex.run()
    ex.drop_duplicate_composed()
    order = {r.key: r.tags for r in repos}
    used: set[str] = set()
    accs = sorted(ex.acc.values(), key=lambda a: (a.level, a.fmt is None, a.fmt or "", a.expr, a.composed))
    doc: dict[str, Any] = {
        "generated_by": "tools/catalog/extract.py",
        "licenses": {r.github: licence(r) for r in repos},
        "sources": {
            r.key: {"github": r.github, "dirs": list(r.dirs), "tags": r.tags, "commit_per_tag": r.commits}
            for r in repos
        },
        "prefixes": {f"{r.key}:{t}": prefix_of(r, t) for r in repos[:2] for t in r.tags},
        "messages": [to_message(a, order, used) for a in accs],
    }
    out = Path(args.out)
    binary = load_binary(Path(args.binary) if args.binary else out.with_name("nccl_binary_strings.json"))
    if binary is not None:  # formats of releases newer than the newest tag, from their libraries
        doc = merge_binary(doc, binary)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump(doc), encoding="utf-8")
    write_readme(doc, Path(args.readme) if args.readme else out.with_name("README.md"))
    print(f"wrote {out}: {len(doc['messages'])} messages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
