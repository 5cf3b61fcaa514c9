"""Parse stage, archives: a `.tar` (plain, gzip, zstd, xz, bzip2) or `.zip` is a directory of inputs.

Each regular member is its own input, named `archive!member` (`logs.tar.gz!node3/rank_12.log`), the
name evidence cites. Members are unpacked once, when the inputs are sorted, into a folder keyed by the
archive's identity (real path, size, mtime, inode) under the temp dir, so that every later reader (a
worker process, a second look) opens a member by its name alone (`open_input`). The decompression caps
of `Tuning` apply to each member and to the archive in total; links, devices and names that climb out
(`../x`, `/etc/x`) are never written. The stdlib (`tarfile`, `zipfile`) reads the formats.

The folder is a cache, and it is kept small: each use marks its archive's entry, and each new unpack first
removes entries unused for `CACHE_MAX_AGE_S`, then the least recently used ones idle for `CACHE_MIN_IDLE_S`
while the cache holds more than `CACHE_MAX_BYTES` (`_prune`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from ncclscope.parse.unpack import _DAMAGE, open_stream
from ncclscope.tuning import DEFAULT, Tuning

SEP = "!"
MAX_MEMBERS = 20_000  # members unpacked from one archive (real: one file per rank, a few hundred)
_CHUNK = 1 << 20
_INDEX = "index.json"
CACHE_MAX_AGE_S = 24 * 3600  # an entry unused this long goes (a ticket's logs are read again within hours)
CACHE_MAX_BYTES = 2 << 30  # the cache beyond this loses its least recently used entries...
CACHE_MIN_IDLE_S = 600  # ...those idle this long only (a run of ours may still be reading a newer one)


def archive_kind(head: bytes) -> str | None:
    """'zip' | 'tar' | None from an input's first (decompressed) bytes."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[257:262] == b"ustar":  # POSIX and GNU tar headers
        return "tar"
    return None


def open_input(path: str) -> BinaryIO:
    """A file by its name, or an archive member by its `archive!member` name (raises OSError if neither)."""
    return open(locate(path), "rb")


def shown_name(path: str) -> str:
    """A path as text a column can hold: bytes of a file name that are not UTF-8 written as `\\xNN`
    (`caf\\xe9.log`); `locate` finds the file again from it."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _unescaped(path: str) -> str:
    raw = re.sub(rb"\\x([0-9a-fA-F]{2})", lambda m: bytes([int(m[1], 16)]), os.fsencode(path))
    return os.fsdecode(raw)


def locate(path: str) -> str:
    """The file on disk that holds `path`: itself, the file `shown_name` wrote it for, or an archive
    member unpacked by `expand`."""
    if os.path.lexists(path):
        return path
    if "\\x" in path and os.path.lexists(real := _unescaped(path)):
        return real
    if SEP not in path:
        return path
    at = path.find(SEP)
    while at >= 0:
        archive, member = path[:at], path[at + 1 :]
        if os.path.isfile(archive):
            try:
                folder = _folder(archive)
            except OSError:
                return path
            if (folder / _INDEX).is_file():
                return locate(str(folder / "m" / member))
        at = path.find(SEP, at + 1)
    return path  # (open() raises the usual "no such file")


def expand(path: str, kind: str, tuning: Tuning = DEFAULT) -> tuple[list[str], list[str]]:
    """(members as `path!member` names, notes): unpacked once, reused while the archive is unchanged."""

    real = locate(path)  # (an archive inside an archive: the member unpacked from the outer one)
    try:
        folder = _folder(real)
        index = folder / _INDEX
        saved = _saved(index)
        if saved is None or saved.get("caps") != _caps(tuning):  # (unpacked under other caps: again)
            _prune(folder.parent, keep=folder.name)
            _unpack(path, real, kind, folder, tuning)
            saved = _saved(index)
        else:
            os.utime(index)  # used now: the last to go
    except OSError as e:
        return [], [f"{path}: archive not read ({e.strerror or e})"]
    try:
        names, notes = list(saved["members"]), list(saved["notes"])  # type: ignore[index, arg-type]
    except (KeyError, TypeError) as e:
        return [], [f"{path}: archive not read ({e})"]
    return [f"{path}{SEP}{n}" for n in sorted(names)], notes


def _prune(root: Path, keep: str, now: float | None = None) -> None:
    """Remove cache entries (and half-written ones of dead runs) unused for `CACHE_MAX_AGE_S`, then the
    least recently used, idle for `CACHE_MIN_IDLE_S`, while the rest holds more than `CACHE_MAX_BYTES`."""
    import shutil
    import time

    now = time.time() if now is None else now
    entries: list[tuple[float, int, Path]] = []
    try:
        children = list(root.iterdir())
    except OSError:
        return
    for d in children:
        if d.name == keep or d.is_symlink() or not d.is_dir():
            continue
        try:
            used = max((d / _INDEX).stat().st_mtime if (d / _INDEX).is_file() else 0.0, d.stat().st_mtime)
            size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file() and not f.is_symlink())
        except OSError:
            continue
        entries.append((used, size, d))
    total = sum(size for _, size, _ in entries)
    for used, size, d in sorted(entries, key=lambda e: e[0]):
        idle = now - used
        if idle > CACHE_MAX_AGE_S or (total > CACHE_MAX_BYTES and idle > CACHE_MIN_IDLE_S):
            shutil.rmtree(d, ignore_errors=True)
            total -= size


def _saved(index: Path) -> dict[str, object] | None:
    import json

    try:
        saved = json.loads(index.read_text(encoding="utf-8", errors="surrogateescape"))
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def _caps(t: Tuning) -> list[int]:
    return [t.max_decompressed_bytes, t.max_expansion_ratio, t.expansion_floor_bytes]


def _folder(archive: str) -> Path:
    import hashlib
    import tempfile

    st = os.stat(archive)
    ident = f"{os.path.realpath(archive)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}"
    key = hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    base = Path(tempfile.gettempdir()) / f"ncclscope-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    own = base.lstat()
    # The temp dir is shared: a folder of this name made by someone else could feed us their "members".
    if not base.is_dir() or base.is_symlink() or own.st_uid != os.getuid():
        raise OSError(f"{base} is not this user's private folder; archives are not unpacked there")
    if own.st_mode & 0o077:
        base.chmod(0o700)
    return base / "archives" / key


def _unpack(path: str, real: str, kind: str, folder: Path, tuning: Tuning) -> None:
    import json
    import shutil
    import tarfile
    import zipfile

    work = folder.with_name(f"{folder.name}.{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    (work / "m").mkdir(parents=True, mode=0o700)
    budget = _Budget(path, tuning)
    names: list[str] = []
    try:
        members = _zip_members(real) if kind == "zip" else _tar_members(real, path, tuning, budget)
        for name, src, packed in members:
            if len(names) >= MAX_MEMBERS:
                budget.notes.append(f"{path}: more than {MAX_MEMBERS} members; the rest were not read")
                break
            if _write(work / "m" / name, src, packed, budget, f"{path}{SEP}{name}"):
                names.append(name)
            if budget.spent:
                break
    except (*_DAMAGE, tarfile.TarError, zipfile.BadZipFile, ValueError) as e:
        budget.notes.append(f"{path}: archive damaged or cut ({e}); kept the {len(names)} member(s) before")
    body = {"members": names, "notes": budget.notes, "caps": _caps(tuning)}
    (work / _INDEX).write_text(json.dumps(body), encoding="utf-8", errors="surrogateescape")
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.replace(work, folder)
    except OSError:  # another run unpacked it first: theirs is the same
        shutil.rmtree(work, ignore_errors=True)


class _Budget:
    """The caps of one archive: bytes out per member and in all, and out per packed byte of a member."""

    def __init__(self, path: str, tuning: Tuning) -> None:
        self.path, self.tuning = path, tuning
        self.total = 0
        self.spent = False
        self.notes: list[str] = []

    def allows(self, name: str, wrote: int, packed: int | None) -> bool:
        t = self.tuning
        if self.total > t.max_decompressed_bytes:
            self.spent = True
            self.notes.append(
                f"{self.path}: members passed {t.max_decompressed_bytes} bytes in all at {name}; the rest "
                "was not read (cap max_decompressed_bytes: --max-decompressed-bytes raises it)"
            )
            return False
        if packed is not None and wrote > max(t.expansion_floor_bytes, t.max_expansion_ratio * packed):
            self.notes.append(
                f"{name}: expands more than {t.max_expansion_ratio}x ({wrote} bytes out of {packed}), a "
                "decompression bomb?; the rest was not read (cap max_expansion_ratio: --max-expansion-ratio "
                "raises it)"
            )
            return False
        return True


def _write(dest: Path, src: IO[bytes], packed: int | None, budget: _Budget, name: str) -> bool:
    """Copy one member within the caps; False if it could not be written at all."""
    import tarfile
    import zipfile

    try:
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with src, open(dest, "xb") as out:
            wrote = 0
            while chunk := src.read(_CHUNK):
                out.write(chunk)
                wrote += len(chunk)
                budget.total += len(chunk)
                if not budget.allows(name, wrote, packed):
                    break
    except FileExistsError:
        budget.notes.append(f"{name}: a second member of that name, skipped")
        return False
    except (OSError, zipfile.BadZipFile, tarfile.TarError) as e:
        budget.notes.append(f"{name}: member not read ({e})")
        return dest.is_file()
    return True


def _safe(name: str) -> str | None:
    """A member's name as a relative path that stays inside the folder; None for one that cannot."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".", "/")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _zip_members(path: str) -> Iterator[tuple[str, IO[bytes], int | None]]:
    import zipfile

    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = _safe(info.filename)
            if name is not None and not info.is_dir():
                yield name, zf.open(info), info.compress_size


def _tar_members(
    real: str, path: str, tuning: Tuning, budget: _Budget
) -> Iterator[tuple[str, IO[bytes], int | None]]:
    """Streamed in order (`r|`): a compressed tar is decompressed once, through the caps of `unpack`."""
    import tarfile

    with open(real, "rb") as raw:
        stream = open_stream(raw, path, tuning)
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tf:  # type: ignore[call-overload]
                for m in tf:
                    name = _safe(m.name)
                    src = tf.extractfile(m) if m.isreg() and name is not None else None
                    if name is not None and src is not None:
                        yield name, src, None
        finally:
            budget.notes.extend(getattr(stream, "notes", ()))
