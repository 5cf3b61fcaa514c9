"""Extract the vocabulary of PyTorch's distributed messages from PyTorch sources at several releases.

    python tools/catalog/extract_torch.py --src /tmp/torchsrc --out grammars/catalog/torch_messages.json

`--src` holds one folder per torch release (`1.13.1/`, `2.6.0/`, …), each with files at their paths in
the pytorch repository (`torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp`, `torch/multiprocessing/spawn.py`,
…) plus `torch/version.py` (its `git_version` names the release commit) and, in one of them, PyTorch's
`LICENSE`. grammars/catalog/TORCH.md says where each file came from.

C++: `LOG(LEVEL) << …;`, `VLOG(n) << …;`, `TORCH_WARN[_ONCE](…)`, `TORCH_CHECK[_WITH](cond, …)`,
`TORCH_INTERNAL_ASSERT(cond, …)`, `C10_THROW_ERROR(E, …)`, `C10D_THROW_ERROR(E, …)`,
`C10D_{DEBUG,INFO,WARNING,ERROR}(fmt, …)`, `c10::str(…)`, `fmt::format("…", …)` and
`std::string x = "…" + …;`. Python (through `ast`): `logger.<level>(…)` with %-format, f-strings or
`.format`, `warnings.warn(…)`, `raise X(…)`, message variables (`msg = …`) that those use, and
module-level `*TEMPLATE*` strings (one entry per line: the ChildFailedError table).

Formats use one placeholder syntax: `{}` marks a value; a literal brace is written `{{` / `}}`.
`placeholders` lists one type per `{}`: `int`, `float` or `any`. A leading `logPrefix()` (or the
hand-written `"[Rank ", rank_, "] "` of older releases) is dropped from the format and recorded in
`has_log_prefix` / `prefix`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GENERATED_BY = "tools/catalog/extract_torch.py"
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cu")
MIN_LITERAL = 4  # fewer literal non-space characters than this: not recognisable on its own

Part = tuple[str, str]  # ("lit", text) | ("ph", type) | ("prefix", kind)


@dataclass
class Found:
    kind: str
    parts: list[Part]
    path: str
    line: int


@dataclass
class Entry:
    kind: str
    fmt: str
    placeholders: list[str]
    prefix: str | None
    sites: dict[str, str] = field(default_factory=dict)
    versions: list[str] = field(default_factory=list)


# --- shared ------------------------------------------------------------------------------------------


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.+-]", v))


def esc_braces(s: str) -> str:
    return s.replace("{", "{{").replace("}", "}}")


def normalise(parts: list[Part]) -> tuple[str, list[str], str | None]:
    """Parts -> (format, placeholder types, prefix). Merges literals, strips a leading prefix."""
    merged: list[Part] = []
    for p in parts:
        if p[0] == "lit" and merged and merged[-1][0] == "lit":
            merged[-1] = ("lit", merged[-1][1] + p[1])
        elif p[0] == "lit" and not p[1]:
            continue
        else:
            merged.append(p)
    prefix: str | None = None
    if merged and merged[0][0] == "prefix":
        prefix = merged[0][1]
        merged = merged[1:]
    elif (
        len(merged) >= 3
        and merged[0] == ("lit", "[Rank ")
        and merged[1][0] == "ph"
        and merged[2][0] == "lit"
        and merged[2][1].startswith("] ")
    ):
        prefix = "[Rank {}] "
        rest = merged[2][1][2:]
        merged = ([("lit", rest)] if rest else []) + merged[3:]
    fmt = "".join(esc_braces(p[1]) if p[0] == "lit" else "{}" for p in merged)
    types = [p[1] for p in merged if p[0] == "ph"]
    return fmt, types, prefix


def literal_chars(fmt: str) -> int:
    text = fmt.replace("{}", "").replace("{{", "{").replace("}}", "}")
    return sum(1 for c in text if not c.isspace())


# --- C++ ---------------------------------------------------------------------------------------------

_CPP_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "?": "?", "a": "\a"}


def strip_cpp_comments(src: str) -> str:
    """Blank out comments (offsets and newlines kept) without touching string literals."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == '"' or (c == "'" and not (i > 0 and (src[i - 1].isalnum()))):
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        else:
            i += 1
    return "".join(out)


def match_paren(s: str, i: int) -> int:
    """Index just past the bracket that closes the one at s[i]."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
        elif c == "'":
            i += 1
            while i < n and s[i] != "'":
                i += 2 if s[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def split_top(s: str, sep: str) -> list[str]:
    """Split on `sep` (',' '+' or '<<') outside brackets and strings."""
    out: list[str] = []
    depth, i, start, n = 0, 0, 0, len(s)
    while i < n:
        c = s[i]
        if c == '"' or c == "'":
            q = c
            i += 1
            while i < n and s[i] != q:
                i += 2 if s[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            if sep == "+" and (s.startswith("++", i) or (i > 0 and s[i - 1] in "+eE")):
                pass
            else:
                out.append(s[start:i])
                i += len(sep)
                start = i
                continue
        i += 1
    out.append(s[start:])
    return [x.strip() for x in out]


_STR_RUN = re.compile(r'^(?:u8|L|u|U)?"((?:[^"\\]|\\.)*)"\s*')


def string_literal(expr: str) -> str | None:
    """`"a" "b"` (adjacent literals, optionally wrapped in std::string(...)) -> text; else None."""
    e = expr.strip()
    m = re.fullmatch(r"(?:std::)?string\s*\((.*)\)", e, re.DOTALL) or re.fullmatch(
        r"std::string_view\s*\((.*)\)", e, re.DOTALL
    )
    if m:
        e = m.group(1).strip()
    if not e.startswith('"') and not re.match(r'(?:u8|L|u|U)"', e):
        return None
    text = []
    while e:
        m2 = _STR_RUN.match(e)
        if not m2:
            return None
        text.append(unescape_cpp(m2.group(1)))
        e = e[m2.end() :]
    return "".join(text)


def unescape_cpp(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append(_CPP_ESC.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


_INT_HINT = re.compile(
    r"(?:^std::to_string\(|\.count\(\)$|\.size\(\)$|^(?:rank_?|size_?|globalRank\(\)|getRank\(\)|getSize\(\)|"
    r"local_id_|deviceIndex|device_index|port|pid|getpid\(\)|numRanks|worldSize|world_size|nRanks|"
    r"seq_?|seqCollective_|seqP2P_|opId_?|retries|attempt)$)"
)


def cpp_placeholder(expr: str) -> str:
    e = expr.strip()
    if _INT_HINT.search(e):
        return "int"
    return "any"


def cpp_parts(expr: str) -> list[Part]:
    """One expression of a message (a stream operand, a c10::str argument) -> parts."""
    e = expr.strip()
    while e.startswith("(") and match_paren(e, 0) == len(e) and string_literal(e[1:-1]) is not None:
        e = e[1:-1].strip()
    lit = string_literal(e)
    if lit is not None:
        return [("lit", lit)]
    if re.fullmatch(r"(?:this->)?logPrefix\(\)", e):
        return [("prefix", "logPrefix()")]
    m = re.match(r"(?:c10::)?str\s*\(", e)
    if m and match_paren(e, m.end() - 1) == len(e):
        inner = e[m.end() : -1]
        return [p for a in split_top(inner, ",") if a for p in cpp_parts(a)]
    m = re.match(r"fmt::format\s*\(", e)
    if m and match_paren(e, m.end() - 1) == len(e):
        return fmt_parts(split_top(e[m.end() : -1], ","))
    pieces = split_top(e, "+")
    if len(pieces) > 1 and any(string_literal(p) is not None for p in pieces):
        return [p for piece in pieces for p in cpp_parts(piece)]
    return [("ph", cpp_placeholder(e))]


_FMT_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


def fmt_parts(args: list[str]) -> list[Part]:
    """fmt::format / C10D_* logging: a literal format with `{}` fields."""
    if not args:
        return []
    fmt = string_literal(args[0])
    if fmt is None:
        return [p for a in args for p in cpp_parts(a)]
    args_left = iter(args[1:])

    def typed(spec: str) -> Part:
        arg = next(args_left, "")
        if spec and spec[-1:] in "fFeEgG%":
            return ("ph", "float")
        if spec and spec[-1:] in "dxXbo":
            return ("ph", "int")
        return ("ph", cpp_placeholder(arg))

    return brace_fields(fmt, typed)


def brace_fields(fmt: str, field: Callable[[str], Part]) -> list[Part]:
    """`{}`-field text (fmt::format, str.format) -> parts; `field(spec)` types each field in order."""
    parts: list[Part] = []
    pos = 0
    for m in _FMT_FIELD.finditer(fmt):
        parts.append(("lit", fmt[pos : m.start()]))
        tok = m.group(0)
        if tok in ("{{", "}}"):
            parts.append(("lit", tok[0]))
        else:
            parts.append(field(tok[1:-1].split(":", 1)[1] if ":" in tok else ""))
        pos = m.end()
    parts.append(("lit", fmt[pos:]))
    return parts


_CPP_CALL = re.compile(
    r"\b(?P<name>LOG|VLOG|LOG_FIRST_N|C10_LOG_FIRST_N|TORCH_WARN_ONCE|TORCH_WARN|TORCH_CHECK_WITH|TORCH_CHECK|"
    r"TORCH_INTERNAL_ASSERT|C10_THROW_ERROR|C10D_THROW_ERROR|C10D_DEBUG|C10D_INFO|C10D_WARNING|C10D_ERROR|"
    r"C10D_CRITICAL|c10::str|fmt::format)\s*\("
)
_STRING_DECL = re.compile(r"\b(?:const\s+)?(?:std::string|auto)\s+\w+\s*=\s*(?=\")")
_LOG_LEVEL = {"INFO": "info", "WARNING": "warning", "ERROR": "error", "FATAL": "fatal"}
_C10D_LEVEL = {
    "C10D_DEBUG": "debug",
    "C10D_INFO": "info",
    "C10D_WARNING": "warning",
    "C10D_ERROR": "error",
    "C10D_CRITICAL": "fatal",
}


def scan_cpp(path: str, src: str) -> list[Found]:
    text = strip_cpp_comments(src)
    # join macro continuation lines (keep offsets: the backslash becomes a space)
    text = re.sub(r"\\\n", " \n", text)
    found: list[Found] = []
    covered: list[tuple[int, int]] = []

    def inside(i: int) -> bool:
        return any(a <= i < b for a, b in covered)

    def line_of(i: int) -> int:
        return src.count("\n", 0, i) + 1

    def add(kind: str, parts: list[Part], start: int, end: int) -> None:
        found.append(Found(kind, parts, path, line_of(start)))
        covered.append((start, end))

    for m in _CPP_CALL.finditer(text):
        if inside(m.start()) or (m.start() > 0 and text[m.start() - 1] in "_#"):
            continue
        if re.search(r"#\s*define\s+\w*\s*$", text[max(0, m.start() - 60) : m.start()]):
            continue  # the macro's own definition
        name = m.group("name")
        open_i = m.end() - 1
        close = match_paren(text, open_i)
        args = split_top(text[open_i + 1 : close - 1], ",")
        if name in ("LOG", "VLOG", "LOG_FIRST_N", "C10_LOG_FIRST_N"):
            semi = statement_end(text, close)
            rest = text[close:semi].strip()
            if not rest.startswith("<<"):
                continue
            operands = split_top(rest[2:], "<<")
            parts = [p for o in operands for p in cpp_parts(o)]
            level = args[0].strip() if args else ""
            kind = "vlog" if name == "VLOG" else _LOG_LEVEL.get(level, "info")
            add(kind, parts, m.start(), semi)
        elif name in ("TORCH_WARN", "TORCH_WARN_ONCE"):
            add(
                "warn" if name == "TORCH_WARN" else "warn_once",
                [p for a in args for p in cpp_parts(a)],
                m.start(),
                close,
            )
        elif name in ("TORCH_CHECK", "TORCH_INTERNAL_ASSERT"):
            if len(args) > 1:
                add("check", [p for a in args[1:] for p in cpp_parts(a)], m.start(), close)
        elif name == "TORCH_CHECK_WITH":
            if len(args) > 2:
                add("check", [p for a in args[2:] for p in cpp_parts(a)], m.start(), close)
        elif name in ("C10_THROW_ERROR", "C10D_THROW_ERROR"):
            if len(args) > 1:
                add("exception", [p for a in args[1:] for p in cpp_parts(a)], m.start(), close)
        elif name in _C10D_LEVEL:
            add(_C10D_LEVEL[name], fmt_parts(args), m.start(), close)
        elif name == "c10::str":
            add("string", [p for a in args if a for p in cpp_parts(a)], m.start(), close)
        elif name == "fmt::format":
            add("string", fmt_parts(args), m.start(), close)
    for m in _STRING_DECL.finditer(text):
        if inside(m.end()):
            continue
        semi = statement_end(text, m.end())
        expr = text[m.end() : semi]
        pieces = split_top(expr, "+")
        if len(pieces) > 1:
            add("string", [p for piece in pieces for p in cpp_parts(piece)], m.end(), semi)
    return found


def statement_end(text: str, i: int) -> int:
    """Index of the `;` ending the statement that continues at i (outside brackets and strings)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            i = match_paren(text, i)
            continue
        if c == ";":
            return i
        i += 1
    return n


# --- Python ------------------------------------------------------------------------------------------

_PY_LEVELS = {
    "debug": "py_debug",
    "info": "py_info",
    "warning": "py_warning",
    "warn": "py_warning",
    "error": "py_error",
    "exception": "py_exception",
    "critical": "py_critical",
    "fatal": "py_critical",
}
_PCT = re.compile(
    r"%(?:\((?P<key>\w+)\))?(?P<flags>[#0 +-]*)(?P<width>\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?"
    r"(?P<conv>[diouxXeEfFgGcrsa%])"
)
_MSG_VAR = re.compile(r"(?:^|_)(?:msg|message|title|err|error_str|reason)(?:$|_)", re.IGNORECASE)


def pct_parts(fmt: str) -> list[Part]:
    parts: list[Part] = []
    pos = 0
    for m in _PCT.finditer(fmt):
        parts.append(("lit", fmt[pos : m.start()]))
        conv = m.group("conv")
        if conv == "%":
            parts.append(("lit", "%"))
        elif conv in "diouxX":
            parts.append(("ph", "int"))
        elif conv in "eEfFgG":
            parts.append(("ph", "float"))
        else:
            parts.append(("ph", "any"))
        pos = m.end()
    parts.append(("lit", fmt[pos:]))
    return parts


def brace_parts(fmt: str, dollar: bool = False) -> list[Part]:
    """str.format / string.Template text -> parts."""
    if dollar:
        pat = re.compile(r"\$\$|\$\{\w+\}|\$\w+")
        parts: list[Part] = []
        pos = 0
        for m in pat.finditer(fmt):
            parts.append(("lit", fmt[pos : m.start()]))
            parts.append(("lit", "$") if m.group(0) == "$$" else ("ph", "any"))
            pos = m.end()
        parts.append(("lit", fmt[pos:]))
        return parts
    return brace_fields(fmt, lambda spec: ("ph", spec_type(spec)))


def spec_type(spec: str) -> str:
    if spec[-1:] in ("d", "x", "X", "o", "b", "n"):
        return "int"
    if spec[-1:] in ("f", "F", "e", "E", "g", "G", "%"):
        return "float"
    return "any"


def py_parts(node: ast.expr, env: dict[str, ast.expr], depth: int = 0) -> list[Part] | None:
    """A message expression -> parts; None when it holds no text we can see."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [("lit", node.value)]
    if isinstance(node, ast.JoinedStr):
        parts: list[Part] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(("lit", v.value))
            elif isinstance(v, ast.FormattedValue):
                spec = ""
                if isinstance(v.format_spec, ast.JoinedStr):
                    spec = "".join(
                        c.value
                        for c in v.format_spec.values
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    )
                parts.append(("ph", spec_type(spec)))
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return pct_parts(node.left.value)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = py_parts(node.left, env, depth + 1)
        right = py_parts(node.right, env, depth + 1)
        if left is None and right is None:
            return None
        return (left or [("ph", "any")]) + (right or [("ph", "any")])
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return brace_parts(node.func.value.value)
    if isinstance(node, ast.Name) and node.id in env and depth < 3:
        return py_parts(env[node.id], env, depth + 1)
    return None


def log_parts(first: ast.expr, has_args: bool, env: dict[str, ast.expr]) -> list[Part] | None:
    """A logging call's message: %-conversions are placeholders only when arguments follow it."""
    node = env.get(first.id, first) if isinstance(first, ast.Name) else first
    if has_args and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return pct_parts(node.value)
    return py_parts(first, env)


def _is_logger(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id.lower().lstrip("_") in ("log", "logger", "logging", "default_logger")
    if isinstance(node, ast.Attribute):
        return node.attr.lower().lstrip("_") in ("log", "logger")
    if isinstance(node, ast.Call):  # logging.getLogger(...).info / get_logger().info
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        return name.lower() in ("getlogger", "get_logger", "_get_logger")
    return False


def _scopes(tree: ast.Module) -> list[ast.AST]:
    return [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """Nodes of a scope, not descending into nested functions."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        out.append(n)
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))
    return out


def scan_py(path: str, src: str) -> list[Found]:
    tree = ast.parse(src)
    found: list[Found] = []
    seen: set[int] = set()

    def add(kind: str, parts: list[Part] | None, node: ast.AST) -> None:
        if parts is not None and id(node) not in seen:
            seen.add(id(node))
            found.append(Found(kind, parts, path, getattr(node, "lineno", 0)))

    for scope in _scopes(tree):
        nodes = _own_nodes(scope)
        env: dict[str, ast.expr] = {}
        assigns: list[tuple[str, ast.expr, int]] = []
        stmts = [a for a in nodes if isinstance(a, (ast.Assign, ast.AnnAssign))]
        for a in sorted(stmts, key=lambda a: (a.lineno, a.col_offset)):
            targets = a.targets if isinstance(a, ast.Assign) else [a.target]
            if a.value is None:
                continue
            for t in targets:
                if isinstance(t, ast.Name):
                    env.setdefault(t.id, a.value)
                    assigns.append((t.id, a.value, a.lineno))
        used_names: set[str] = set()
        for n in nodes:
            if isinstance(n, ast.Call):
                f = n.func
                first = n.args[0] if n.args else None
                if isinstance(f, ast.Attribute) and f.attr in _PY_LEVELS and _is_logger(f.value) and first:
                    if isinstance(first, ast.Name):
                        used_names.add(first.id)
                    add(_PY_LEVELS[f.attr], log_parts(first, len(n.args) > 1, env), n)
                elif (
                    (
                        isinstance(f, ast.Attribute)
                        and f.attr == "warn"
                        and isinstance(f.value, ast.Name)
                        and f.value.id == "warnings"
                    )
                    or (isinstance(f, ast.Name) and f.id == "warn")
                ) and first:
                    if isinstance(first, ast.Name):
                        used_names.add(first.id)
                    add("py_warn", py_parts(first, env), n)
            elif isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call) and n.exc.args:
                first = n.exc.args[0]
                if isinstance(first, ast.Name):
                    used_names.add(first.id)
                add("py_raise", py_parts(first, env), n)
        for name, value, lineno in assigns:
            if name in used_names and not (isinstance(value, ast.Constant) and scope is tree):
                continue  # already taken through the call that uses it
            if (
                scope is tree
                and "TEMPLATE" in name.upper()
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                dollar = "${" in value.value
                for k, line in enumerate(value.value.split("\n")):
                    parts = brace_parts(line, dollar)
                    if any(p[0] == "lit" and p[1].strip() for p in parts):
                        found.append(Found("py_template", parts, path, lineno + k))
            elif _MSG_VAR.search(name) and not isinstance(value, ast.Constant):
                add("py_string", py_parts(value, env), value)
    return found


# --- driver ------------------------------------------------------------------------------------------


def scan_file(rel: str, src: str) -> list[Found]:
    if rel.endswith(".py"):
        return scan_py(rel, src)
    if rel.endswith(CPP_SUFFIXES):
        return scan_cpp(rel, src)
    return []


def source_files(vdir: Path) -> list[Path]:
    return sorted(
        p
        for p in vdir.rglob("*")
        if p.is_file()
        and p.suffix in (".py", *CPP_SUFFIXES)
        and p.relative_to(vdir).as_posix() != "torch/version.py"
    )


def git_version(vdir: Path) -> str | None:
    vp = vdir / "torch" / "version.py"
    if vp.is_file():
        m = re.search(r"git_version\s*=\s*'([0-9a-f]{40})'", vp.read_text(encoding="utf-8"))
        if m:
            return m.group(1)
    return None


def license_notice(src: Path, versions: list[str]) -> dict[str, str]:
    for v in reversed(versions):
        lic = src / v / "LICENSE"
        if lic.is_file():
            text = lic.read_text(encoding="utf-8")
            line = next((x.strip() for x in text.splitlines() if "Copyright (c) 2016-" in x), "")
            return {
                "license": "BSD-3-Clause",
                "copyright": line,
                "from": f"{v}/LICENSE",
                "note": "Message texts are quoted from PyTorch's sources under its BSD-3-Clause licence; "
                "the full licence text is PyTorch's LICENSE file.",
            }
    return {"license": "BSD-3-Clause", "copyright": "", "from": "", "note": "LICENSE not found under --src"}


def build(src: Path) -> dict[str, Any]:
    versions = sorted(
        (d.name for d in src.iterdir() if d.is_dir() and re.match(r"\d+\.\d+", d.name)), key=version_key
    )
    entries: dict[tuple[str, str], Entry] = {}
    sources: list[dict[str, Any]] = []
    for v in versions:
        vdir = src / v
        files = source_files(vdir)
        sources.append(
            {
                "version": v,
                "commit": git_version(vdir),
                "files": [p.relative_to(vdir).as_posix() for p in files],
            }
        )
        for p in files:
            rel = p.relative_to(vdir).as_posix()
            for f in scan_file(rel, p.read_text(encoding="utf-8", errors="replace")):
                fmt, types, prefix = normalise(f.parts)
                if not fmt.strip():
                    continue
                key = (f.kind, fmt)
                e = entries.get(key)
                if e is None:
                    e = entries[key] = Entry(f.kind, fmt, types, prefix)
                    e.sites["first"] = f"{f.path}:{f.line}@{v}"
                if v not in e.versions:
                    e.versions.append(v)
                    e.sites["last"] = f"{f.path}:{f.line}@{v}"
                if prefix and not e.prefix:
                    e.prefix = prefix
    messages = []
    for e in entries.values():
        mid = "t" + hashlib.sha1((e.kind + e.fmt).encode("utf-8")).hexdigest()[:8]
        n = literal_chars(e.fmt)
        rec: dict[str, Any] = {
            "id": mid,
            "kind": e.kind,
            "format": e.fmt,
            "placeholders": e.placeholders,
            "has_log_prefix": e.prefix is not None,
        }
        if e.prefix:
            rec["prefix"] = e.prefix
        rec["sites"] = e.sites
        rec["versions"] = e.versions
        rec["recognisable"] = n >= MIN_LITERAL
        if n < MIN_LITERAL:
            rec["unrecognisable_reason"] = (
                f"only {n} literal non-space character(s); the rest is placeholders"
            )
        messages.append(rec)
    messages.sort(key=lambda r: (r["kind"], r["format"], r["id"]))
    return {
        "generated_by": f"{GENERATED_BY} --src <dir> (see grammars/catalog/TORCH.md)",
        "license_notice": license_notice(src, versions),
        "placeholder_syntax": "{} marks one value (types in `placeholders`: int, float, any); "
        "{{ and }} are literal braces",
        "sources": sources,
        "counts": counts(messages, versions),
        "messages": messages,
    }


def counts(messages: list[dict[str, Any]], versions: list[str]) -> dict[str, Any]:
    by_kind: dict[str, int] = {}
    for m in messages:
        by_kind[m["kind"]] = by_kind.get(m["kind"], 0) + 1
    return {
        "total": len(messages),
        "unrecognisable": sum(1 for m in messages if not m["recognisable"]),
        "by_kind": dict(sorted(by_kind.items())),
        "by_version": {v: sum(1 for m in messages if v in m["versions"]) for v in versions},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--src", type=Path, required=True, help="folder of <version>/<repo path> source files")
    ap.add_argument("--out", type=Path, required=True, help="JSON catalogue to write")
    args = ap.parse_args(argv)
    data = build(args.src)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8"
    )
    c = data["counts"]
    print(f"{c['total']} messages ({c['unrecognisable']} unrecognisable) -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
