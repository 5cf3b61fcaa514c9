"""grammars/catalog/README.md, generated from the catalog by tools/catalog/extract.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

INTRO = """\
# NCCL message catalog (generated)

`nccl_messages.json` lists every log message format that NCCL (and its fork RCCL, and the
aws-ofi-nccl and nccl-rdma-sharp-plugins network plugins) can print through its debug logger, taken
from the projects' own sources at every release listed below. `grammars/nccl_catalog.lark` is
compiled from it (one `km_<id>` rule per recognisable format, `kc_<id>` per composed line). Both are
generated: do not edit.

Regenerate (a minute or so, from the bare git mirrors under /work/.mirror):

    .venv/bin/python tools/catalog/extract.py --out grammars/catalog/nccl_messages.json
    .venv/bin/python tools/catalog/compile_grammar.py --check

extract.py merges `nccl_binary_strings.json` (the releases newer than the newest source tag, below) when
it is there, so that step needs no wheel. To refresh that file (optional; three wheels of ~250 MB, a
minute), download the wheels of the newest release with source and of the newer ones, then run
binary.py (it rewrites nccl_binary_strings.json, merges it into nccl_messages.json and this README):

    for v in 2.30.7 2.31.2 2.32.3; do .venv/bin/python -m pip download --no-deps --only-binary=:all: \\
      --python-version 3.12 --implementation cp --platform manylinux_2_27_x86_64 \\
      --platform manylinux_2_18_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \\
      -d /tmp/whl nvidia-nccl-cu13==$v; done
    .venv/bin/python tools/catalog/binary.py --base /tmp/whl/nvidia_nccl_cu13-2.30.7-*.whl \\
      /tmp/whl/nvidia_nccl_cu13-2.31.2-*.whl /tmp/whl/nvidia_nccl_cu13-2.32.3-*.whl
    .venv/bin/python tools/catalog/compile_grammar.py --check
    .venv/bin/python tools/catalog/expect_families.py   # then review tests/parse/catalog_families.json

## What is extracted

* Every `WARN(fmt, ...)`, `INFO(flags, fmt, ...)`, `TRACE(flags, fmt, ...)`, `VERSION(fmt, ...)`,
  `TRACE_CALL(fmt, ...)` call, and aws-ofi-nccl's `(*ofi_log_function)(level, flags, func, line, fmt, ...)`,
  in every .cc/.h/.cu/.cpp/.c/.hpp/.in file under the source dirs (`src/`; plugins: `src/`, `include/`).
  Comments and `#if 0` blocks are ignored; adjacent literals are joined; `PRIu64`-style macros are expanded
  as glibc LP64 does (`PRIu64` -> `lu`, `PRIx32` -> `x`); escapes are decoded (`format` holds real
  characters, `\\n` is a newline); `c ? "a" : "b"` gives both formats.
* Wrapper macros are read from their `#define`s at each release (any macro whose body reaches a log call:
  `SYSCHECK*`, `CUDACHECK*`, `CUCHECK*`, `NCCLCHECK*`, `NVMLCHECK`, `PTHREADCHECK`, `EQCHECK`, `INFO_LOC`,
  `NCCL_OFI_WARN/INFO/TRACE`, ...). A format that does not depend on the macro's arguments (the
  `"%s:%d -> %d"` trail, `"Cuda failure '%s'"`) is listed once, at the definition; one that does
  (`"Call to " name " failed : %s"`) is expanded at every invocation with the actual argument (`wrapper`
  is the outermost macro, `wrappers` all of them).
* Formats that are not literals are kept with `"format": null`, the source `expr` and a `reason`.
* *Composed lines* (`"composed": true`, tools/catalog/composed.py): a log call whose format has no rule
  (`"%s"`, `"%s (%f)"`, `"%s: %s"`) and passes a plain identifier for a `%s` is followed to the writes into
  that buffer in the same function, within the scope of the buffer's declaration (`char line[..]`, a `char*`
  parameter): `sprintf`/`snprintf`/`strcpy` at the buffer's start (a *head*), at `buf + off`/`&buf[off]`
  or by `strcat` after text already there (a *tail*). The entry's format is the log format's text before
  the buffer's `%s` (`__func__` replaced by the function's name) followed by one piece: every head, and
  every tail no head precedes (ncclTopoPrintRec writes only at `line+offset`, indenting with spaces; with
  text before the `%s`, only the buffer's first write). Its rule matches a line that *starts* with it,
  after optional spaces when the `%s` starts the log format (`"indent": true`), and may go on with
  anything (`CV_REST?`): `+ %s[%2.1f] - ` names `                + NET[1.2] - NET/0-0 (0/0/0/1.250000)`.
  A piece needs enough fixed text to name a line that may continue with anything: at least 4 literal
  non-space characters, and a leading conversion must be followed at once by literal text holding
  punctuation (`%s/%lx-%lx (%d/%d/%d)` yes, `%s is %d` no); the rule matches a leading `%s` as one word
  (no spaces). A head too short alone (`%s/%lx-%lx :`, `%13s |`) is joined to each tail with a
  conversion written after it, repeated (as loops append) until it is long enough, at most 3 times:
  `%s/%lx-%lx :%s/%lx-%lx (%d/%.1f/%s) `, `%13s |%8.1f/%6.1f |%8.1f/%6.1f |`. This follows source order,
  not control flow, so a combination may name a sequence that never runs (it then matches nothing).
  `functions` lists where the pieces are written; `sites` point at the writes. A composed format equal
  to a plain entry of the same level is kept once, as the plain entry. Composed rules are tried after
  every whole-line rule, so a line a plain format names keeps its name.
* *Formats from released binaries* (`"binary": true`, tools/catalog/binary.py): NCCL releases newer
  than the newest source tag are read from their PyPI wheel (`nvidia-nccl-cu13`), whose
  `nvidia/nccl/lib/libnccl.so.2` holds the format strings as NUL-terminated literals. The printable
  strings of its `.rodata` (8+ characters, each right after a NUL) that look like a one-line printf
  format (every `%` a valid conversion, at least one, or else a subsystem-tagged message such as
  `RMA/Socket : rma_socket requires GDRCopy; …`; a word of 3+ letters in the literal text; no
  JSON/XML/quoted fragment, PTX, mangled name, path or shell command; recognisable) and that the library
  of the newest source release (2.30.7) does not hold are the release's new strings: a string both
  libraries hold is covered by the sources already, or is not a log format. A string equal to a source
  format is not added again. A binary string does not say how it is printed: the entries have
  `"level": "UNKNOWN"`, no `subsys`, no `sites`, and `releases["nccl-binary"]` lists the releases whose
  library holds it. Not every such string is a log message (thread names such as `NCCL UDS Svc%2d`,
  usage text, a few strings glued to the bytes before them); a string that is never logged only costs a
  rule that matches nothing. Their rules are tried after every source format (a line a source format
  names keeps its name) and before the composed lines.

## Fields

`id` (`m` + first 8 hex of sha1(level NUL format); for a null format, of `"expr:" + expr`), `level`
(INFO/WARN/TRACE/VERSION/CALL; UNKNOWN for a binary string), `subsys` (flag names without `NCCL_`;
WARN -> `["ALL"]`), `format`, `recognisable` (+ `unrecognisable_reason`), `sources`,
`wrapper`/`wrappers`, `releases` (per repo: runs over `sources[repo].tags`; `A..B` means every tag from A to B in that order, so the list is exact), `sites`
(per repo and file: `line` at the `last` release, `first_line` at the `first` release); composed lines also
have `composed`, `indent` and `functions` (their id hashes `"composed:" + format`); binary strings
have `binary`.
`prefixes` holds, per NCCL/RCCL release, the prefix literals found in the logger (`literals`, with file
and line) and a normalised `descriptor`.

A format is *recognisable* (gets a grammar rule) when the first line of it, trailing whitespace
stripped, has at least 4 literal non-space characters. Only the first line of a multi-line format is
matched (a format starting with a newline therefore gets no rule).
"""


def _table(rows: list[list[str]], head: list[str]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _expand(tags: list[str], runs: list[str]) -> set[str]:
    have: set[str] = set()
    for r in runs:
        a, _, b = r.partition("..")
        i, j = tags.index(a), tags.index(b or a)
        have.update(tags[i : j + 1])
    return have


def per_release(doc: dict[str, Any], repo: str) -> list[list[str]]:
    tags = doc["sources"][repo]["tags"]
    counts: dict[str, Counter[str]] = {t: Counter() for t in tags}
    for m in doc["messages"]:
        if repo not in m["releases"] or m["format"] is None:
            continue
        for t in _expand(tags, m["releases"][repo]):
            counts[t][m["level"]] += 1
            counts[t]["total"] += 1
            counts[t]["rec"] += m["recognisable"]
    return [
        [
            t,
            str(c["INFO"]),
            str(c["WARN"]),
            str(c["total"] - c["INFO"] - c["WARN"]),
            str(c["total"]),
            str(c["rec"]),
        ]
        for t, c in counts.items()
    ]


def _sources(doc: dict[str, Any]) -> list[str]:
    out = ["## Sources, licences and exact releases", ""]
    for repo, src in doc["sources"].items():
        if "github" not in src:
            out += _binary_source(repo, src)
            continue
        lic = doc["licenses"].get(src["github"], {})
        out.append(f"### {src['github']} (`{repo}`; dirs {', '.join(src['dirs'])})")
        out.append("")
        for tag, info in lic.items():
            out.append(
                f"* Licence at `{tag}` ({info['file']}): **{info['license']}**; "
                + "; ".join(info["copyright"])
            )
        out.append(
            "* The catalog holds format strings derived from this project's sources, with this attribution."
        )
        out.append("")
        out.append(", ".join(f"`{t}` {c[:12]}" for t, c in src["commit_per_tag"].items()))
        out.append("")
    return out


def _binary_source(repo: str, src: dict[str, Any]) -> list[str]:
    out = [f"### {src['pypi']} wheels, `{src['library']}` (`{repo}`)", ""]
    out.append(
        "* The wheels' `License.txt` is NCCL's **BSD-3-Clause** licence (Copyright (c) 2015-2020, NVIDIA "
        "CORPORATION); their metadata says `LicenseRef-NVIDIA-Proprietary`. Only format strings are "
        "derived from the library, as from the sources above; nothing else is copied."
    )
    out.append("")
    rows = [
        [
            f"`{t}`",
            "base (has source)",
            f"`{w['wheel']}`",
            w["sha256"],
            w["library_sha256"],
            str(w["formats"]),
        ]
        for t, w in [(src["base"]["tag"], src["base"])]
    ]
    rows += [
        [f"`{t}`", "new", f"`{w['wheel']}`", w["sha256"], w["library_sha256"], str(w["formats"])]
        for t, w in src["wheel_per_tag"].items()
    ]
    out += _table(rows, ["release", "role", "wheel", "wheel sha256", "library sha256", "format-like strings"])
    out.append("")
    return out


def _counts(doc: dict[str, Any]) -> list[str]:
    msgs = doc["messages"]
    lit = [m for m in msgs if m["format"] is not None]
    out = [
        "## Counts",
        "",
        (
            f"{len(msgs)} entries: {len(lit)} distinct literal formats "
            f"({sum(bool(m.get('composed')) for m in msgs)} of them composed lines), "
            f"{len(msgs) - len(lit)} non-literal; {sum(m['recognisable'] for m in msgs)} recognisable."
        ),
        "",
    ]
    lv = Counter(m["level"] for m in lit)
    out += _table([[k, str(v)] for k, v in sorted(lv.items())], ["level", "formats"]) + [""]
    src = Counter(r for m in lit for r in m["sources"])
    out += _table([[k, str(v)] for k, v in src.items()], ["source", "formats"]) + [""]
    why = Counter(m["reason"] for m in msgs if m["format"] is None)
    out += ["Non-literal formats (skipped, kept with `format: null`):", ""]
    out += [
        f"* {n} x {r}, e.g. `{next(m['expr'] for m in msgs if m.get('reason') == r)}`"
        for r, n in sorted(why.items())
    ]
    unrec = Counter(m["unrecognisable_reason"] for m in lit if not m["recognisable"])
    out += ["", "Literal formats without a grammar rule:", ""]
    out += [f"* {n} x {r}" for r, n in sorted(unrec.items())]
    for repo in doc["sources"]:
        out += ["", f"### Formats per release: {repo}", ""]
        out += _table(per_release(doc, repo), ["tag", "INFO", "WARN", "other", "total", "recognisable"])
    return out


def _prefixes(doc: dict[str, Any]) -> list[str]:
    rows = []
    for key, p in doc["prefixes"].items():
        d = p["descriptor"]
        ts = (
            f"{d['timestamp_format_default']!r} on {d['timestamp_levels_default']}" if d["timestamp"] else "-"
        )
        rows.append(
            [
                key,
                f"`{d['warn']}`",
                "y" if d["warn_func"] else "",
                f"`{d['info']}`",
                "y" if d["call"] else "",
                ts,
            ]
        )
    return ["", "## Prefix formats per release", ""] + _table(
        rows, ["release", "warn", "func", "info", "call", "timestamp default"]
    )


def write_readme(doc: dict[str, Any], path: Path) -> None:
    lines = [INTRO, *_sources(doc), *_counts(doc), *_prefixes(doc), ""]
    path.write_text("\n".join(lines), encoding="utf-8")
