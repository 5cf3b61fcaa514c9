"""Parse stage, catalog: formats of NCCL releases newer than the newest source tag, from the released library.

tools/catalog/binary.py lists the printable NUL-terminated strings of libnccl.so.2's `.rodata`, keeps the
printf-like ones that the newest source release's library (2.30.7) does not hold, and merges them into the
catalog as `binary` entries. No wheel is needed here: the scanner and the release diff run on synthetic
bytes, and the generated catalog (committed) must name the lines of the NCCL 2.32.3 captures.
"""

from __future__ import annotations

import json
import struct
import sys
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines import catalog as C

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "catalog"))
import binary as B

NCCL232 = ROOT / "samples" / "gpu" / "nccl232"


def _elf(sections: list[tuple[str, bytes]]) -> bytes:
    """A minimal 64-bit little-endian ELF file: a null section, `sections`, then `.shstrtab`."""
    names = b"\x00"
    offsets = []
    for name, _ in [*sections, (".shstrtab", b"")]:
        offsets.append(len(names))
        names += name.encode() + b"\x00"
    body = b""
    placed = []
    pos = 64
    for _name, data in [*sections, (".shstrtab", names)]:
        placed.append((pos + len(body), len(data)))
        body += data
    shoff = 64 + len(body)
    head = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    head += struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections) + 2, len(sections) + 1
    )
    assert len(head) == 64
    table = bytes(64)
    for (off, size), name_off, typ in zip(placed, offsets, [1] * len(sections) + [3], strict=True):
        table += struct.pack("<IIQQQQIIQQ", name_off, typ, 0, 0, off, size, 0, 0, 1, 0)
    return head + body + table


RODATA = (
    b"\x00\x01\x02\x00Best tuning, algorithm, %s, protocol, %s\x00"
    b"symmetricSupport %d, cuMemEnable %d\x00"
    b"short\x00"  # under MIN_LEN characters
    b"\x00NCCL_RMA_EAGER_INIT\x00"  # not a format: no conversion
    b"\x7f\x45junk-before %d items\x00"  # not after a NUL: the start of the string is unknown
    b"RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available\x00"
)
TEXT = b"\x00\x00Found in .text %d times\x00\x00"


def test_scanner_reads_the_rodata_strings_of_an_elf_file() -> None:
    blob = _elf([(".text", TEXT), (".rodata", RODATA)])
    assert set(B.elf_sections(blob) or {}) >= {".text", ".rodata", ".shstrtab"}
    found = B.scan_strings(blob)
    assert "Best tuning, algorithm, %s, protocol, %s" in found
    assert "symmetricSupport %d, cuMemEnable %d" in found
    assert "NCCL_RMA_EAGER_INIT" in found
    assert "short" not in found and not any("junk-before" in s for s in found)
    assert "Found in .text %d times" not in found  # only .rodata is read
    assert B.formats(found) == {
        "Best tuning, algorithm, %s, protocol, %s",
        "symmetricSupport %d, cuMemEnable %d",
        "RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available",
    }


def test_scanner_reads_the_whole_blob_when_it_is_not_elf() -> None:
    assert B.elf_sections(RODATA) is None
    assert "Best tuning, algorithm, %s, protocol, %s" in B.scan_strings(RODATA)
    assert "Found in .text %d times" in B.scan_strings(TEXT)


@pytest.mark.parametrize(
    ("s", "ok"),
    [
        ("%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d} cgaClusterSize %d", True),
        ("Comm config nvlsHostMode set to %d", True),
        ("nranks %d", True),
        ("[Proxy Service] rejecting Init from localRank %d: reqSize=%d (expected %d)", True),
        ("%s:%d NCCL DIAG [INFO] p2p: check returned %d\n", True),  # a trailing newline is allowed
        ("Usage: %s [options]\n  -h  help\n", False),  # a newline in the middle
        ("%d.%d.%d", False),  # no word
        ("%s/%lx-%lx", False),
        ("100%% done", False),  # no conversion but %%
        ("rate 50%x", True),
        ("bad %y conversion %d", False),  # a % that starts no conversion
        ('"host": "%s",', False),  # JSON
        ('{ "rank": %d }', False),
        (".reg .b32 %r<%d>;", False),  # PTX
        ("ld.global.u32 %0, [%1]; count %d", False),
        ("_ZN4ncclKernelEv%d", False),  # mangled name
        ("/sys/class/net/%s/device", False),  # a path
        ("timeout -k %d %d stdbuf -oL %s </dev/null 2>&1", False),  # a shell command
        ("ib_write_bw -d %s -i %d -s %d --report_gbits", False),
        ("NCCL_RMA_EAGER_INIT", False),  # no conversion, not a tagged message
        ("NET/IB: Resiliency context is NULL", True),  # a tagged message without a conversion
        ("NET/IB: none", False),  # too few words
        ("%s %s", False),  # not recognisable
    ],
)
def test_what_looks_like_a_format(s: str, ok: bool) -> None:
    assert B.looks_like_format(s) is ok


def test_release_diff_keeps_what_the_base_library_lacks_with_its_releases() -> None:
    base = {"old format %d", "kept in every release %s"}
    releases = {
        "v2.31.2-1": {"old format %d", "kept in every release %s", "new in 2.31 %d", "new in both %s"},
        "v2.32.3-1": {"kept in every release %s", "new in both %s", "new in 2.32 %d"},
    }
    assert B.new_strings(releases, base) == {
        "new in 2.31 %d": ["v2.31.2-1"],
        "new in 2.32 %d": ["v2.32.3-1"],
        "new in both %s": ["v2.31.2-1", "v2.32.3-1"],
    }


def test_merge_adds_binary_entries_once_and_not_a_source_format_again() -> None:
    src = {"id": "m1", "level": "INFO", "subsys": ["INIT"], "format": "Same text %d", "recognisable": True}
    doc = {"sources": {"nccl": {"tags": ["v2.30.7-1"]}}, "messages": [src]}
    binary = {
        "package": "nvidia-nccl-cu13",
        "tags": ["v2.31.2-1", "v2.32.3-1"],
        "wheel_per_tag": {},
        "base": {"tag": "v2.30.7-1"},
        "strings": [
            {"format": "Same text %d", "releases": ["v2.32.3-1"]},  # a source format: not added
            {"format": "Same text %d\n", "releases": ["v2.32.3-1"]},  # the same with NCCL's newline
            {"format": "Brand new %s", "releases": ["v2.31.2-1", "v2.32.3-1"]},
            {"format": "Only 2.32 %d", "releases": ["v2.32.3-1"]},
        ],
    }
    merged = B.merge(doc, binary)
    again = B.merge(merged, binary)
    assert again == merged  # a second merge replaces the first
    new = [m for m in merged["messages"] if m.get("binary")]
    assert [(m["format"], m["releases"]) for m in new] == [
        ("Brand new %s", {"nccl-binary": ["v2.31.2-1..v2.32.3-1"]}),
        ("Only 2.32 %d", {"nccl-binary": ["v2.32.3-1"]}),
    ]
    assert all(m["level"] == "UNKNOWN" and m["sources"] == ["nccl-binary"] and m["recognisable"] for m in new)
    assert len({m["id"] for m in merged["messages"]}) == 3
    assert merged["sources"]["nccl-binary"]["tags"] == ["v2.31.2-1", "v2.32.3-1"]
    assert doc["messages"] == [src]  # the input is left alone


@cache
def _binary_entries() -> dict[str, dict[str, object]]:
    doc = json.loads((ROOT / "grammars" / "catalog" / "nccl_messages.json").read_text())
    return {m["id"]: m for m in doc["messages"] if m.get("binary")}


def test_the_catalog_records_binary_entries_per_release() -> None:
    entries = _binary_entries()
    assert len(entries) > 500
    by_release = {t: 0 for t in ("v2.31.2-1", "v2.32.3-1")}
    for m in entries.values():
        for span in m["releases"]["nccl-binary"]:  # type: ignore[index]
            first, _, last = span.partition("..")
            for t in {first, last or first}:
                by_release[t] += 1
    assert by_release["v2.31.2-1"] > 300 and by_release["v2.32.3-1"] > 600
    doc = json.loads((ROOT / "grammars" / "catalog" / "nccl_binary_strings.json").read_text())
    assert doc["base"]["tag"] == "v2.30.7-1" and len(doc["base"]["sha256"]) == 64
    assert doc["wheel_per_tag"]["v2.32.3-1"]["library_sha256"].startswith(
        "651cf05af289"
    )  # samples/gpu/nccl232


@pytest.mark.parametrize(
    ("msg", "fmt"),
    [
        ("Best tuning, algorithm, RING, protocol, LL", "Best tuning, algorithm, %s, protocol, %s"),
        (
            "AllGather: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0} cgaClusterSize 4",
            "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d} cgaClusterSize %d",
        ),
        (
            (
                "symmetricSupport 0, cuMemEnable 1, globalGinSupport 0, cuMemGdrSupport 1, contiguousRanksPerHost 1, "
                "crossNicSupport 1"
            ),
            (
                "symmetricSupport %d, cuMemEnable %d, globalGinSupport %d, cuMemGdrSupport %d, "
                "contiguousRanksPerHost %d, crossNicSupport %d"
            ),
        ),
        (
            "RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available",
            "RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available",
        ),
    ],
)
def test_nccl_2_32_lines_are_named_by_binary_entries(msg: str, fmt: str) -> None:
    rid = C.identify_one(msg)
    assert rid in _binary_entries(), (msg, rid)
    assert _binary_entries()[rid]["format"] == fmt
    assert "v2.32.3-1" in " ".join(_binary_entries()[rid]["releases"]["nccl-binary"])  # type: ignore[index]


def test_a_2_32_line_with_its_prefix_is_a_known_record(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text(
        "[2026-11-23 08:08:26.980871] vm:853:853 [0] NCCL INFO Best tuning, algorithm, RING, protocol, LL\n"
        "[2026-11-23 08:08:26.980871] vm:853:853 [0] transport/rma_socket.cc:32 (ncclRmaSocketProxyInit) NCCL WARN "
        "RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available\n"
    )
    lf = read_logs([str(log)])
    assert lf.unknown.height == 0
    rows = lf.known.to_dicts()
    assert [r["level"] for r in rows] == ["INFO", "WARN"]  # the level is the line's, not the catalog's
    assert all(r["catalog_id"] in _binary_entries() for r in rows)


# NCCL lines of the 2.32.3 captures that no grammar family and no catalog rule names. None remain: every
# new 2.31/2.32 format they print is a string of libnccl.so.2 (three formats with conversions and the
# conversion-less `RMA/Socket : rma_socket requires GDRCopy; ...` WARN, kept as a subsystem-tagged message).
EXPECTED_UNKNOWN_2_32: dict[str, int] = {}


def test_the_nccl_2_32_captures_are_recognised() -> None:
    logs = sorted(str(p) for p in NCCL232.glob("*/logs/nccl_rank*.log"))
    assert len(logs) == 12
    lf = read_logs(logs)
    unknown = lf.unknown.filter(pl.col("is_nccl"))
    got: dict[str, int] = {}
    for text in unknown["text"].to_list():
        msg = text.split(" NCCL ", 1)[-1]  # `INFO …` / `WARN …`, without the host and time
        got[msg] = got.get(msg, 0) + 1
    assert lf.coverage.nccl_lines > 3000
    assert got == EXPECTED_UNKNOWN_2_32, sorted(got.items(), key=lambda kv: -kv[1])[:20]
