"""Encodings and damaged containers users really produce (issue 30, item 3): each class keeps every readable
line of a real sample and gives the same findings as the clean file."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

from ncclscope.parse import classify_inputs
from ncclscope.session import Session, analyze

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"
# Two real logs with findings: NCCL lines only, and a torchrun tee with launcher tags and Python output.
CLEAN = [
    SAMPLES / "nccl952_ib_no_device_socket_fallback_16r.log",
    SAMPLES / "torchrun_tee_cpu_alloc_fail_gloo_4r.log",
]


def _findings(s: Session) -> list[tuple[str, str, int]]:
    return sorted((f.id, f.severity, len(f.evidence)) for f in s.findings)


def _lines(text: bytes) -> list[bytes]:
    return text.split(b"\n")[:-1] if text.endswith(b"\n") else text.split(b"\n")


def _hole(text: bytes) -> bytes:
    """A 4 KiB NUL run in front of the third line (a file hole after a node crash)."""
    ls = _lines(text)
    ls[2] = b"\0" * 4096 + ls[2]
    return b"\n".join(ls) + b"\n"


def _hole_mid_line(text: bytes) -> bytes:
    """The second line cut short by the crash, a page of NULs, then the third line written after it."""
    ls = _lines(text)
    ls[1:3] = [ls[1] + b"\0" * 4096 + ls[2]]
    return b"\n".join(ls) + b"\n"


def _tqdm(text: bytes) -> bytes:
    """A progress bar redrawn with CR before the 2nd line and after the 4th (`bar\\rline`, `line\\rbar`)."""
    ls = _lines(text)
    ls[1] = b" 10%|#         | 1/10 [00:01<00:09]\r" + ls[1]
    ls[3] = ls[3] + b"\r 20%|##        | 2/10 [00:02<00:08]"
    return b"\n".join(ls) + b"\n"


def _latin1(text: bytes) -> bytes:
    ls = _lines(text)
    ls[0] = ls[0] + b" caf\xe9"
    return b"\n".join(ls) + b"\n"


def _bad_trailer(text: bytes, where: slice) -> bytes:
    z = bytearray(gzip.compress(text))
    z[where] = bytes(b ^ 0xFF for b in z[where])
    return bytes(z)


VARIANTS: dict[str, tuple[Callable[[bytes], bytes], str | None]] = {
    "utf16-bom": (lambda t: t.decode().encode("utf-16"), None),
    "utf16le": (lambda t: t.decode().encode("utf-16-le"), None),
    "utf16be": (lambda t: t.decode().encode("utf-16-be"), None),
    "utf32-bom": (lambda t: t.decode().encode("utf-32"), None),
    "utf32le": (lambda t: t.decode().encode("utf-32-le"), None),
    "utf8-bom": (lambda t: b"\xef\xbb\xbf" + t, None),
    "lone-cr": (lambda t: t.replace(b"\n", b"\r"), None),
    "crlf": (lambda t: t.replace(b"\n", b"\r\n"), None),
    "tqdm-cr": (_tqdm, None),
    "latin1-byte": (_latin1, "1 line(s) held bytes that are not UTF-8"),
    "nul-hole": (_hole, None),
    "nul-hole-mid-line": (_hole_mid_line, None),
    "nul-first-8k": (lambda t: b"\0" * 9000 + t, None),
    "gzip-bad-crc": (lambda t: _bad_trailer(t, slice(-8, -4)), "wrong CRC trailer"),
    "gzip-bad-size": (lambda t: _bad_trailer(t, slice(-4, None)), "wrong size trailer"),
    "plain-then-gzip": (lambda t: t[: len(t) // 2 + t[len(t) // 2 :].find(b"\n") + 1], None),  # see below
    "gzip-then-plain": (lambda t: t, None),  # see below
}


def _variant(name: str, text: bytes) -> bytes:
    if name in ("plain-then-gzip", "gzip-then-plain"):
        cut = len(text) // 2 + text[len(text) // 2 :].find(b"\n") + 1
        a, b = text[:cut], text[cut:]
        return a + gzip.compress(b) if name == "plain-then-gzip" else gzip.compress(a) + b
    return VARIANTS[name][0](text)


@pytest.mark.parametrize("clean", CLEAN, ids=lambda p: p.name[:12])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_readable_line_kept_and_same_findings(name: str, clean: Path, tmp_path: Path) -> None:
    text = clean.read_bytes()
    p = tmp_path / clean.name  # (the same name: names are evidence of ranks too)
    p.write_bytes(_variant(name, text))
    want, got = analyze([str(clean)]), analyze([str(p)])
    assert _findings(got) == _findings(want)
    assert got.logs.coverage.nccl_lines == want.logs.coverage.nccl_lines
    assert got.logs.coverage.recognized == want.logs.coverage.recognized
    extra = 2 if name == "tqdm-cr" else 0  # each progress bar is a line of its own
    assert got.logs.coverage.lines == want.logs.coverage.lines + extra
    assert not any("binary" in n for n in got.notes)
    note = VARIANTS[name][1]
    assert note is None or any(note in n for n in got.notes), got.notes


def test_lone_cr_keeps_line_numbers(tmp_path: Path) -> None:
    clean = CLEAN[0]
    p = tmp_path / "mac.log"
    p.write_bytes(clean.read_bytes().replace(b"\n", b"\r"))
    want, got = analyze([str(clean)]), analyze([str(p)])
    assert [e.line for f in got.findings for e in f.evidence] == [
        e.line for f in want.findings for e in f.evidence
    ]


def test_walk_keeps_a_log_whose_first_8k_are_nuls(tmp_path: Path) -> None:
    (tmp_path / "node3").mkdir()
    (tmp_path / "node3" / "rank3.log").write_bytes(b"\0" * 8192 + CLEAN[0].read_bytes())
    (tmp_path / "node3" / "rank3.out").write_bytes(b"\0" * 8192 + CLEAN[0].read_bytes())
    logs = classify_inputs([str(tmp_path)]).logs
    assert [Path(p).name for p in logs] == ["rank3.log", "rank3.out"]


def test_utf16_log_is_found_by_a_walk(tmp_path: Path) -> None:
    (tmp_path / "nccl-debug").write_bytes(CLEAN[0].read_text().encode("utf-16"))  # no suffix: told by NCCL
    assert classify_inputs([str(tmp_path)]).logs == (str(tmp_path / "nccl-debug"),)


def test_a_short_line_in_a_legacy_encoding_is_kept(tmp_path: Path) -> None:
    text = CLEAN[0].read_bytes()
    p = tmp_path / CLEAN[0].name
    cp1251 = "NCCL INFO ранг сети".encode("cp1251")  # 11 ASCII characters, 8 bytes that are not UTF-8
    p.write_bytes(text + cp1251 + b"\n" + bytes(range(256)) + b"\n")  # and binary data after it
    got = analyze([str(p)])
    assert got.logs.coverage.lines == text.count(b"\n") + 1  # the binary line alone is dropped
    assert any("1 line(s) held bytes that are not UTF-8" in n for n in got.notes)
    assert any("skipped 2 line(s) of binary data" in n for n in got.notes)  # (it holds a line end)
