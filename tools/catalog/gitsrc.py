"""Reading the bare git mirrors: tag selection, trees, blobs (cached by blob id)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

EXTS = (".cc", ".h", ".cu", ".cpp", ".c", ".hpp", ".in")
HEAD = "HEAD"


@dataclass
class Repo:
    key: str  # short name used in the catalog ("nccl", "rccl", ...)
    github: str
    path: str
    dirs: tuple[str, ...]
    select: str  # tag-selection policy name
    tags: list[str] = field(default_factory=list)
    commits: dict[str, str] = field(default_factory=dict)
    _blobs: dict[str, str] = field(default_factory=dict)

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        return subprocess.run(
            ["git", "-C", self.path, *args], input=stdin, check=True, capture_output=True
        ).stdout

    def tree(self, tag: str) -> list[tuple[str, str]]:
        """(path, blob id) of every source file under the repo's source dirs at tag."""
        out = self.git("ls-tree", "-r", tag, "--", *self.dirs).decode()
        files = []
        for row in out.splitlines():
            meta, path = row.split("\t", 1)
            _mode, kind, sha = meta.split()
            if kind == "blob" and path.endswith(EXTS) and "/3rd-party/" not in f"/{path}":
                files.append((path, sha))
        return sorted(files)

    def load_blobs(self, shas: set[str]) -> None:
        """Fetch many blobs with one `git cat-file --batch`."""
        todo = sorted(s for s in shas if s not in self._blobs)
        if not todo:
            return
        raw = self.git("cat-file", "--batch", stdin="\n".join(todo).encode() + b"\n")
        pos = 0
        for sha in todo:
            nl = raw.index(b"\n", pos)
            size = int(raw[pos:nl].split()[2])
            self._blobs[sha] = raw[nl + 1 : nl + 1 + size].decode("utf-8", "replace")
            pos = nl + 1 + size + 1

    def blob(self, sha: str) -> str:
        self.load_blobs({sha})
        return self._blobs[sha]

    def show(self, tag: str, path: str) -> str | None:
        try:
            return self.git("show", f"{tag}:{path}").decode("utf-8", "replace")
        except subprocess.CalledProcessError:
            return None


def _ver(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", s))


def choose_tags(repo: Repo) -> list[str]:
    tags = repo.git("tag").decode().split()
    if repo.select == "nccl":
        sel = [t for t in tags if (m := re.fullmatch(r"v2\.(\d+)\.\d+-\d+", t)) and int(m.group(1)) >= 4]
        return sorted(sel, key=_ver)
    if repo.select == "rccl":
        best: dict[tuple[int, ...], str] = {}
        for t in tags:
            if re.fullmatch(r"rocm-\d+\.\d+(?:\.\d+)?", t):
                v = _ver(t)
                if v[:2] not in best or _ver(best[v[:2]]) < v:
                    best[v[:2]] = t
        return [best[k] for k in sorted(best)] + [HEAD]
    if repo.select == "aws":
        best = {}
        for t in tags:
            if m := re.fullmatch(r"v(\d+)\.(\d+)(?:\.(\d+))?(-?aws)?", t):
                k = (int(m.group(1)), int(m.group(2)))
                rank = (_ver(t), t)
                if k not in best or (_ver(best[k]), best[k]) < rank:
                    best[k] = t
        return [best[k] for k in sorted(best)] + [HEAD]
    dated = []
    for t in tags:
        when = int(repo.git("log", "-1", "--format=%ct", t).decode().strip())
        dated.append((when, t))
    return [t for _w, t in sorted(dated)] + [HEAD]


def resolve_commits(repo: Repo) -> None:
    for t in repo.tags:
        repo.commits[t] = repo.git("rev-parse", f"{t}^{{commit}}").decode().strip()
