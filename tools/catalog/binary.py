"""Message formats of NCCL releases newer than the newest source tag, from the released library.

NCCL publishes binaries (the PyPI wheels `nvidia-nccl-cu13`) before, or without, a source tag we can
read. The format strings NCCL logs are C string literals, so they sit NUL-terminated in the library's
read-only data. This reads `nvidia/nccl/lib/libnccl.so.2` from each wheel, lists the printable
NUL-terminated strings of its `.rodata` sections, keeps those that look like printf formats
(`looks_like_format`), and keeps only the strings the library of the newest *source* release (the
`--base` wheel) does not hold: a string both hold is covered by the source catalog already, or is not a
log format at all. What is left is each newer release's new text; every string records the releases
(of those given) whose library holds it.

    python tools/catalog/binary.py --base WHEEL_2.30.7 WHEEL_2.31.2 WHEEL_2.32.3

writes grammars/catalog/nccl_binary_strings.json (the strings, the wheels' sha256) and merges them into
grammars/catalog/nccl_messages.json as entries of their own (`"binary": true`, `"sources":
["nccl-binary"]`, `"level": "UNKNOWN"`: a string does not say whether NCCL prints it with INFO or WARN),
then rewrites the README. tools/catalog/extract.py merges the same file when it exists, so regenerating
from the sources keeps them. Only format strings are derived; no code is copied.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import struct
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fmtspec import CONV_RE, recognisable
from ids import message_id, runs

LIBRARY = "nvidia/nccl/lib/libnccl.so.2"
SOURCE_KEY = "nccl-binary"
LEVEL = "UNKNOWN"
DEFAULT_OUT = "grammars/catalog/nccl_binary_strings.json"
MIN_LEN = 8  # printable characters a string needs to be looked at
MIN_WORDS = 1  # words (3+ ASCII letters) in a format's literal text

# a run of printable ASCII (tab and newline allowed) right after a NUL (or a section's start), ended by NUL
_STRING_RE = re.compile(rb"(?:(?<=\x00)|^)([\x20-\x7e\t\n]{%d,})\x00" % MIN_LEN)
_WORD_RE = re.compile(r"[A-Za-z]{3,}")
# NCCL's subsystem-tagged messages (`NET/IB: ...`, `RMA/Socket : ...`): the only strings without a conversion kept
_TAGGED_RE = re.compile(r"[A-Z][A-Za-z0-9_]*(?:/[A-Za-z0-9_]+)+ ?: [A-Za-z]")
# not a log message: JSON/XML/quoted fragments, PTX text, C++ mangled names, file paths, shell commands
_NOISE_RE = re.compile(
    r"^\s*[{\"<]"  # JSON / XML / quoted fragments
    r"|\"\s*:"  # "key": value
    r"|^\s*\.(?:reg|param|visible|entry|func|version|target|address_size|global|shared|local)\b"
    r"|\b(?:ld|st|mov|cvt|setp|bra|atom|red)\.[a-z0-9]+\b"  # PTX instructions
    r"|_Z[A-Za-z0-9_]{4,}"  # mangled C++ symbols
    r"|^\.?/|\$[{(]"  # paths, ${...}, $(...)
    r"|^[a-z_]+ --?[A-Za-z]|2>&1|</dev/null"  # shell commands NCCL runs (`ib_write_bw -d %s`, `timeout -k %d`)
)


def elf_sections(blob: bytes) -> dict[str, tuple[int, int]] | None:
    """Section name -> (file offset, size) of a 64-bit little-endian ELF file, or None if it is not one."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1 or len(blob) < 64:
        return None
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    if not shoff or shentsize < 64 or shoff + shnum * shentsize > len(blob) or shstrndx >= shnum:
        return None
    heads = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", blob, shoff + i * shentsize)
        heads.append((name, typ, off, size))
    _n, _t, str_off, str_size = heads[shstrndx]
    names = blob[str_off : str_off + str_size]
    out: dict[str, tuple[int, int]] = {}
    for name, typ, off, size in heads:
        end = names.find(b"\x00", name)
        label = names[name:end].decode("ascii", "replace")
        if typ != 8:  # SHT_NOBITS holds no bytes in the file
            out[label] = (off, size)
    return out


def rodata(blob: bytes) -> list[bytes]:
    """The bytes of the `.rodata*` sections of an ELF file; the whole blob when it is not ELF or has none."""
    secs = elf_sections(blob)
    if not secs:
        return [blob]
    parts = [blob[o : o + n] for name, (o, n) in sorted(secs.items()) if name.startswith(".rodata")]
    return parts or [blob]


def scan_strings(blob: bytes) -> set[str]:
    """Printable NUL-terminated strings (at least MIN_LEN characters, starting after a NUL) of the read-only
    data. A string the compiler merged into the tail of a longer one shows only as the longer one."""
    return {m.group(1).decode("ascii") for part in rodata(blob) for m in _STRING_RE.finditer(part)}


def conversions(s: str) -> list[str] | None:
    """The conversion letters of `s` as a printf format (`%%` left out), or None when a `%` starts none."""
    out: list[str] = []
    pos = 0
    while (i := s.find("%", pos)) >= 0:
        m = CONV_RE.match(s, i)
        if m is None:
            return None
        if m["conv"] != "%":
            out.append(m["conv"])
        pos = m.end()
    return out


def looks_like_format(s: str) -> bool:
    """A string that may be a log message format:

    * one line: no newline except at the end (NCCL adds the line's newline itself; a `\\n` in the
      middle is a usage text, a table or a code fragment), no tab;
    * every `%` starts a valid printf conversion, and there is one that is not `%%` or `%n`, unless the
      string is one of NCCL's subsystem-tagged messages: an upper-case tag with one or more `/parts`, a
      colon, text (`RMA/Socket : rma_socket requires GDRCopy; …`, 4+ words); other text without a
      conversion is too often not a log message (option names, thread names, labels) to keep;
    * the literal text (conversions removed) holds a word of 3+ ASCII letters: a message, not
      `%d.%d.%d`, `%s/%s` or `%lx-%lx`;
    * none of the noise patterns: JSON/XML/quoted fragments, `"key": value`, PTX directives and
      instructions, mangled C++ names, paths (`/…`, `./…`), `${…}`/`$(…)`, shell command lines
      (`cmd -x …`, `2>&1`, `</dev/null`: NCCL 2.32 runs tools such as ib_write_bw and dmesg);
    * and the catalog's own rule: recognisable (4+ literal non-space characters on the line).
    """
    body = s.removesuffix("\n")
    if "\n" in body or "\t" in body or not body.strip():
        return False
    conv = conversions(body)
    if conv is None:
        return False
    if all(c == "n" for c in conv) and not (_TAGGED_RE.match(body) and len(_WORD_RE.findall(body)) >= 4):
        return False
    text = CONV_RE.sub(" ", body)
    if len(_WORD_RE.findall(text)) < MIN_WORDS:
        return False
    if _NOISE_RE.search(body):
        return False
    return recognisable(body)[0]


def formats(strings: Iterable[str]) -> set[str]:
    return {s for s in strings if looks_like_format(s)}


def new_strings(releases: dict[str, set[str]], base: set[str]) -> dict[str, list[str]]:
    """String -> the releases (in the given order) that hold it, for every string no `base` holds."""
    out: dict[str, list[str]] = {}
    for tag, strings in releases.items():
        for s in sorted(strings - base):
            out.setdefault(s, []).append(tag)
    return dict(sorted(out.items()))


def read_library(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as z:
        return z.read(LIBRARY)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def wheel_tag(wheel: Path) -> str:
    """`nvidia_nccl_cu13-2.32.3-py3-…whl` -> `v2.32.3-1` (NCCL's tag for the release)."""
    m = re.match(r"[^-]+-(\d+\.\d+\.\d+)", wheel.name)
    if not m:
        raise SystemExit(f"{wheel}: no version in the wheel's name")
    return f"v{m.group(1)}-1"


def describe(wheel: Path, lib: bytes, strings: set[str], fmts: set[str]) -> dict[str, Any]:
    return {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "library": LIBRARY,
        "library_sha256": hashlib.sha256(lib).hexdigest(),
        "strings": len(strings),
        "formats": len(fmts),
    }


def scan_wheels(base: Path, wheels: list[Path]) -> dict[str, Any]:
    """The document written to nccl_binary_strings.json."""
    info: dict[str, Any] = {}
    per: dict[str, set[str]] = {}
    for w in [base, *wheels]:
        lib = read_library(w)
        strings = scan_strings(lib)
        fmts = formats(strings)
        info[wheel_tag(w)] = describe(w, lib, strings, fmts)
        per[wheel_tag(w)] = fmts
        print(f"{w.name}: {len(strings)} strings, {len(fmts)} look like formats", file=sys.stderr)
        del lib
    base_tag = wheel_tag(base)
    base_fmts = per.pop(base_tag)
    found = new_strings(per, base_fmts)
    return {
        "generated_by": "tools/catalog/binary.py",
        "package": "nvidia-nccl-cu13",
        "base": {"tag": base_tag, **info[base_tag]},
        "tags": list(per),
        "wheel_per_tag": {t: info[t] for t in per},
        "strings": [{"format": s, "releases": r} for s, r in found.items()],
    }


def merge(doc: dict[str, Any], binary: dict[str, Any]) -> dict[str, Any]:
    """`doc` (the catalog) with the binary strings as entries of their own, replacing any from an earlier
    merge. A string equal to a format the sources give (any level, plain or composed) is not added."""
    msgs = [m for m in doc["messages"] if not m.get("binary")]
    sources = {k: v for k, v in doc["sources"].items() if k != SOURCE_KEY}
    have = {m["format"] for m in msgs if m["format"] is not None}
    used = {m["id"] for m in msgs}
    tags = list(binary["tags"])
    added = []
    for s in binary["strings"]:
        fmt = s["format"]
        if fmt in have or (fmt.endswith("\n") and fmt[:-1] in have):
            continue
        ok, why = recognisable(fmt)
        m: dict[str, Any] = {
            "id": message_id(LEVEL, fmt, used),
            "level": LEVEL,
            "subsys": [],
            "format": fmt,
            "binary": True,
            "recognisable": ok,
        }
        if not ok:
            m["unrecognisable_reason"] = why
        m.update(
            {
                "sources": [SOURCE_KEY],
                "wrapper": None,
                "wrappers": [],
                "releases": {SOURCE_KEY: runs(tags, s["releases"])},
                "sites": [],
            }
        )
        added.append(m)
    sources[SOURCE_KEY] = {
        "pypi": binary["package"],
        "library": LIBRARY,
        "tags": tags,
        "wheel_per_tag": binary["wheel_per_tag"],
        "base": binary["base"],
    }
    return {**doc, "sources": sources, "messages": msgs + added}


def load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--base", type=Path, help="wheel of the newest release with source (2.30.7)")
    ap.add_argument("wheels", nargs="*", type=Path, help="wheels of the newer releases, oldest first")
    ap.add_argument("--out", default=DEFAULT_OUT, help="the binary strings (JSON)")
    ap.add_argument("--catalog", default="grammars/catalog/nccl_messages.json", help="merged into, in place")
    ap.add_argument("--merge-only", action="store_true", help="merge --out into --catalog; read no wheel")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if not args.merge_only:
        if not args.base or not args.wheels:
            ap.error("--base and at least one wheel are needed (or --merge-only)")
        doc = scan_wheels(args.base, args.wheels)
        out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out}: {len(doc['strings'])} new strings", file=sys.stderr)
    binary = load(out)
    if binary is None:
        raise SystemExit(f"{out}: missing")
    from extract import dump
    from readme import write_readme

    cat = Path(args.catalog)
    merged = merge(json.loads(cat.read_text(encoding="utf-8")), binary)
    cat.write_text(dump(merged), encoding="utf-8")
    write_readme(merged, cat.with_name("README.md"))
    n = sum(bool(m.get("binary")) for m in merged["messages"])
    print(f"wrote {cat}: {n} binary entries", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
