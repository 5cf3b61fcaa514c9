"""Bad input never tracebacks: binary junk, empty files, a 100 MB line, truncated gzip, mixed directories."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.parse import read_logs

GOOD = "node-00:100:100 [0] NCCL INFO Using network Socket\n"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["analyze", *args, "--quiet"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def test_binary_junk_file_is_unusable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "core.log"
    junk.write_bytes(bytes(range(256)) * 64)  # every "line" holds NUL bytes
    rc, _, err = _run([str(junk)], capsys)
    assert rc == 2 and "nothing to analyze" in err and err.count("\n") == 1


def test_binary_run_inside_a_log_is_skipped_and_counted(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_bytes(GOOD.encode() + b"\x00\x01\x02garbage\xff\xfe\n" * 5 + b"caf\xe9 \xff\n" + GOOD.encode())
    lf = read_logs([str(log)])
    assert lf.network.height == 2
    assert lf.inputs[0].lines == 8
    assert any("skipped 5 line(s) of binary data" in n for n in lf.notes)
    assert lf.unknown.filter(~lf.unknown["is_nccl"])["text"].to_list() == ["caf\ufffd \ufffd"]


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.log"
    empty.touch()
    rc, _, err = _run([str(empty)], capsys)
    assert rc == 2 and "empty" in err


def test_100mb_single_line(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as fh:
        fh.write(GOOD.encode())
        block = b"x" * (1 << 20)
        for _ in range(100):
            fh.write(block)
        fh.write(b"\n" + GOOD.encode())
    assert big.stat().st_size > 100e6
    lf = read_logs([str(big)])
    assert lf.inputs[0].lines == 3
    assert lf.network.height == 2
    assert lf.unknown["text"].str.len_chars().max() <= 2000  # evidence text is capped
    assert any("longer than" in n for n in lf.notes)


def test_truncated_gzip_keeps_the_lines_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = gzip.compress(("".join(GOOD.replace("0]", f"{i % 8}]") for i in range(20000))).encode())
    cut = tmp_path / "rank0.log.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    lf = read_logs([str(cut)])
    assert 0 < lf.network.height < 20000
    assert any("ends early" in n for n in lf.notes)
    rc, _, err = _run([str(cut)], capsys)
    assert rc in (0, 1) and "ends early" in err


def test_directory_with_unrelated_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rank0.log").write_text(GOOD)
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "model.bin").write_bytes(b"\x7fELF" + bytes(range(256)) * 16)
    (tmp_path / "config.yaml").write_text("a: 1\n")
    rc, out, err = _run([str(tmp_path), "--format", "json"], capsys)
    assert rc == 0 and '"ncclscope"' in out
    assert "skipped 3 file(s)" in err


def test_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run([str(tmp_path / "nope.log")], capsys)
    assert rc == 2 and "no such file" in err


# --- compressed inputs (issue 12): by magic number, bounded, every line kept ---------------------------


def _lines(n: int) -> bytes:
    return "".join(GOOD.replace("[0]", f"[{i % 8}]") for i in range(n)).encode()


@pytest.mark.parametrize(
    "tail, note",
    [
        (b"", None),
        (b"\0" * 4096, "zero padding"),
        (b"junk\n", "plain text after the last of 1 gzip member(s), read as text"),  # issue 30: kept
        (bytes(range(256)) * 4, "not gzip"),
        (gzip.compress(_lines(3)), "2 concatenated gzip members"),
    ],
    ids=["plain", "zero-padding", "text", "junk", "two-members"],
)
def test_gzip_tail_keeps_every_line(tmp_path: Path, tail: bytes, note: str | None) -> None:
    p = tmp_path / "rank0.log.gz"
    p.write_bytes(gzip.compress(_lines(500)) + tail)
    lf = read_logs([str(p)])
    assert lf.network.height == 500 + (3 if tail.startswith(b"\x1f\x8b") else 0)
    assert (note is None and not lf.notes) or any(note in n for n in lf.notes if note)


def test_compression_is_told_by_magic_not_name(tmp_path: Path) -> None:
    zstd = pytest.importorskip("zstandard")
    (tmp_path / "a.log").write_bytes(gzip.compress(_lines(10)))  # gzip named .log
    (tmp_path / "b.txt").write_bytes(zstd.ZstdCompressor().compress(_lines(20)))  # zstd named .txt
    (tmp_path / "c.log").write_bytes(b"x^ a text line that starts like zlib\n" + _lines(5))
    lf = read_logs([str(tmp_path / n) for n in ("a.log", "b.txt", "c.log")])
    assert lf.network.height == 35 and lf.inputs[2].lines == 6


def test_decompression_caps_cut_with_a_note(tmp_path: Path) -> None:
    from ncclscope.tuning import Tuning

    p = tmp_path / "bomb.log.gz"
    p.write_bytes(gzip.compress(_lines(100_000), 9))  # ~5 MB of lines, highly repetitive (pieces of 1 MiB)
    ratio = Tuning(expansion_floor_bytes=1 << 16, max_expansion_ratio=5)
    lf = read_logs([str(p)], tuning=ratio)
    assert 0 < lf.network.height < 100_000
    assert any("max_expansion_ratio" in n and "--max-expansion-ratio" in n for n in lf.notes)
    lf = read_logs([str(p)], tuning=Tuning(max_decompressed_bytes=100_000))
    assert 0 < lf.network.height < 100_000 and any("max_decompressed_bytes" in n for n in lf.notes)


def test_gzip_on_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(_lines(300)))))
    rc, out, _ = _run(["-", "--format", "json"], capsys)
    assert rc == 0 and '"recognized": 300' in out
