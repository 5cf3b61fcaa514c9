"""After `--redact`, no host name, address, user name or pointer of a corpus log appears in any of
the three formats. The identifying values are found in the raw input independently of the
redactor (the corpus README: machines are `node-NN` / `ip-host-NN`), plus every host the
analysis itself names."""

from __future__ import annotations

import ipaddress
import multiprocessing
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ncclscope.report import html as H
from ncclscope.report import render
from ncclscope.report.redact import GENERIC_USERS, session_frames
from ncclscope.session import analyze

pytestmark = pytest.mark.corpus

_CORPUS_HOST = re.compile(r"(?<![\w-])(?:ip-host|node)-\d\d(?!\d)")
_PREFIX_HOST = re.compile(r"([A-Za-z][\w.-]*):\d+:\d+ \[\d+\]")
_IP4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d]|\.\d)")
_IP6 = re.compile(r"[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){3,8}")
_USER = re.compile(r"(?:/home|/Users)/([A-Za-z0-9._-]+)/")
_PTR = re.compile(r"0x[0-9a-fA-F]{6,}")


def identifying(text: str, hosts: set[str]) -> dict[str, set[str]]:
    """What must not survive redaction, by kind (loopback/unspecified addresses identify nobody)."""
    ip4 = set()
    for v in _IP4.findall(text):
        try:
            a = ipaddress.IPv4Address(v)
        except ValueError:
            continue
        if not (a.is_loopback or a.is_unspecified):
            ip4.add(v)
    # IPv6: the last two groups of each address-like token with a hex letter are its signature.
    ip6 = {
        ":".join(m.split(":")[-2:]).lower()
        for m in _IP6.findall(text)
        if re.search("[a-fA-F]", m) and "::" not in m[-6:] and len(m) >= 14 and all(m.split(":")[-2:])
    }
    users = set(_USER.findall(text))
    return {
        "host": set(_CORPUS_HOST.findall(text)) | set(_PREFIX_HOST.findall(text)) | hosts,
        "ip4": ip4,
        "ip6": ip6,
        "user": users,
        "ptr": {p.lower() for p in _PTR.findall(text)},
    }


def leaks(out: str, bad: dict[str, set[str]]) -> list[str]:
    found = []
    low = out.lower()
    for h in bad["host"]:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(h)}(?![A-Za-z0-9])", out):
            found.append(f"host {h}")
    found += [f"ip {v}" for v in bad["ip4"] if re.search(rf"(?<![\d.]){re.escape(v)}(?!\d)", out)]
    found += [f"ip6 …{v}" for v in bad["ip6"] if v in low]
    found += [f"ptr {v}" for v in bad["ptr"] if v in low]
    for u in bad["user"]:
        if f"/home/{u}/" in out or f"/Users/{u}/" in out:
            found.append(f"user path {u}")
        elif u.lower() not in GENERIC_USERS and len(u) >= 3 and re.search(rf"\b{re.escape(u)}\b", out):
            found.append(f"user {u}")
    return found


def _hosts(s: object) -> set[str]:
    out: set[str] = set()
    for df in session_frames(s):
        if "host" in df.columns:
            out |= {h for h in df["host"].drop_nulls().unique().to_list() if h and h != "localhost"}
    return out


def check_file(path: str) -> tuple[int, dict[str, list[str]]]:
    """(identifying values found in the input, leaks per format) for one corpus log."""
    f = Path(path)
    s = analyze([path])
    bad = identifying(f.read_text(encoding="utf-8", errors="replace"), _hosts(s))
    problems: dict[str, list[str]] = {}
    for fmt in ("json", "markdown", "html"):
        out = render(s, fmt, command=f"ncclscope report {f} -o r", redact=True)
        if fmt == "html":
            out = out.replace(H._plotly_js(), "")
        found = leaks(out, bad)
        if found:
            problems[f"{f.name} ({fmt})"] = found[:5]
    return sum(len(v) for v in bad.values()), problems


def test_redaction_on_the_corpus(corpus_dir: Path) -> None:
    files = [str(f) for f in sorted(corpus_dir.glob("*.log"))]
    assert len(files) > 50
    workers = max(1, min(4, os.cpu_count() or 1))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(check_file, files, chunksize=4))
    checked = sum(n for n, _ in results)
    problems = {k: v for _, p in results for k, v in p.items()}
    assert checked > 100  # the corpus does hold identifying values to redact
    assert problems == {}
