"""Archives and compressed inputs (issue 30, item 4): every format read by its bytes, each archive member its
own input cited as `archive!member`, the expansion caps per member and in total, nothing written outside."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from ncclscope.cli import main
from ncclscope.parse import classify_inputs, read_logs
from ncclscope.tuning import Tuning

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"
# A real log directory: one folder per node, as logs are attached to tickets.
LAYOUT = {
    "node0/rank_0.log": "nccl529_ip6tnl_veth_ipv6_bootstrap_2_5_6.log",
    "node0/rank_1.log": "nccl687_2node_ib_gdrdma_p2p_read_healthy.log",
    "node1/rank_2.log": "nccl952_ib_no_device_socket_fallback_16r.log",
    "node1/rank_3.log": "torchrun_tee_cpu_alloc_fail_gloo_4r.log",
}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("job") / "logs"
    for name, sample in LAYOUT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLES / sample, root / name)
    return root


def _tar(logdir: Path, dest: Path, mode: str) -> Path:
    with tarfile.open(dest, mode) as tf:
        for name in LAYOUT:
            tf.add(logdir / name, arcname=name)
    return dest


def _tar_zst(logdir: Path, dest: Path) -> Path:
    import zstandard

    plain = _tar(logdir, dest.with_suffix(".plain"), "w")
    dest.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    return dest


def _zip(logdir: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in LAYOUT:
            zf.write(logdir / name, name)
    return dest


ARCHIVES = {
    "logs.tar": lambda d, p: _tar(d, p, "w"),
    "logs.tar.gz": lambda d, p: _tar(d, p, "w:gz"),
    "logs.tgz": lambda d, p: _tar(d, p, "w:gz"),
    "logs.tar.xz": lambda d, p: _tar(d, p, "w:xz"),
    "logs.tar.bz2": lambda d, p: _tar(d, p, "w:bz2"),
    "logs.tar.zst": _tar_zst,
    "logs.zip": _zip,
    "attachment.bin": lambda d, p: _tar(d, p, "w:gz"),  # told by its bytes, not its name
}


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    rc = main(["analyze", *args, "-f", "json", "-q"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(ARCHIVES))
def test_archive_reads_as_its_directory(
    name: str, logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = ARCHIVES[name](logdir, tmp_path / name)
    rc_dir, want = _json([str(logdir)], capsys)
    rc, got = _json([str(archive)], capsys)
    text = json.dumps(got, sort_keys=True).replace(f"{archive}!", f"{logdir}/")
    assert rc == rc_dir and json.loads(text) == json.loads(json.dumps(want, sort_keys=True))
    inputs = [i["path"] for i in got["inputs"]]  # type: ignore[index, union-attr]
    assert inputs == [f"{archive}!{n}" for n in sorted(LAYOUT)]
    cited = {e["path"] for f in got["findings"] for e in f["evidence"]}  # type: ignore[attr-defined, index]
    assert f"{archive}!node1/rank_2.log" in cited  # evidence cites the member


def test_archive_in_a_walked_directory_is_expanded(logdir: Path, tmp_path: Path) -> None:
    (tmp_path / "ticket").mkdir()
    _tar(logdir, tmp_path / "ticket" / "logs.tar.gz", "w:gz")
    logs = classify_inputs([str(tmp_path / "ticket")]).logs
    assert [p.split("!")[1] for p in logs] == sorted(LAYOUT)


def test_member_names_never_climb_out(tmp_path: Path) -> None:
    line = (SAMPLES / LAYOUT["node0/rank_0.log"]).read_bytes()
    p = tmp_path / "evil.tar"
    with tarfile.open(p, "w") as tf:
        for name in ("../../escaped.log", "/abs/escaped.log", "ok/rank.log"):
            info = tarfile.TarInfo(name)
            info.size = len(line)
            tf.addfile(info, io.BytesIO(line))
        link = tarfile.TarInfo("ok/link.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    logs = classify_inputs([str(p)]).logs
    assert [q.split("!")[1] for q in logs] == ["abs/escaped.log", "ok/rank.log"]
    assert not (tmp_path.parent / "escaped.log").exists()


def test_caps_apply_per_member_and_in_total(logdir: Path, tmp_path: Path) -> None:
    big = tmp_path / "big"
    (big / "a").mkdir(parents=True)
    for k in range(3):  # three members of ~1.3 MB each, of highly repetitive NCCL lines
        (big / "a" / f"rank_{k}.log").write_bytes((SAMPLES / LAYOUT["node0/rank_1.log"]).read_bytes() * 1000)
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted((big / "a").iterdir()):
            zf.write(f, f"a/{f.name}")
    ratio = Tuning(expansion_floor_bytes=1 << 16, max_expansion_ratio=5)
    inp = classify_inputs([str(tmp_path / "bomb.zip")], ratio)
    assert len(inp.logs) == 3 and sum("expands more than 5x" in n for n in inp.notes) == 3
    with tarfile.open(tmp_path / "total.tar", "w") as tf:
        tf.add(big / "a", arcname="a")
    total = Tuning(max_decompressed_bytes=2 << 20)
    inp = classify_inputs([str(tmp_path / "total.tar")], total)
    assert [p.split("!")[1] for p in inp.logs] == ["a/rank_0.log", "a/rank_1.log"]
    assert any("in all at" in n for n in inp.notes)
    lf = read_logs(inp.logs)
    assert lf.coverage.nccl_lines > 0


PLAIN = (SAMPLES / LAYOUT["node1/rank_2.log"]).read_bytes()


def _zstd(b: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(b)


COMPRESSED = {
    "r.log.gz": gzip.compress,
    "r.log.zst": _zstd,
    "r.log.xz": lzma.compress,
    "r.log.bz2": bz2.compress,
    "xz-named.log": lzma.compress,
    "bz2-named.log": bz2.compress,
    "zlib-named.log": zlib.compress,
    "gzip-in-gzip.log": lambda b: gzip.compress(gzip.compress(b)),
    "two-bz2-streams.log": lambda b: bz2.compress(b[:500]) + bz2.compress(b[500:]),
    "two-xz-streams.log.xz": lambda b: lzma.compress(b[:500]) + lzma.compress(b[500:]),
}


@pytest.mark.parametrize("name", sorted(COMPRESSED))
def test_compressed_file_reads_as_the_plain_one(name: str, tmp_path: Path) -> None:
    (tmp_path / "plain.log").write_bytes(PLAIN)
    (tmp_path / name).write_bytes(COMPRESSED[name](PLAIN))
    want, got = read_logs([str(tmp_path / "plain.log")]), read_logs([str(tmp_path / name)])
    assert got.inputs[0].lines == want.inputs[0].lines == PLAIN.count(b"\n")
    assert got.network.drop("path").equals(want.network.drop("path"))
    assert classify_inputs([str(tmp_path)]).logs == tuple(
        sorted(str(tmp_path / n) for n in (name, "plain.log"))
    )


@pytest.mark.parametrize("name", ["r.log.xz", "bz2-named.log", "zlib-named.log", "gzip-in-gzip.log"])
def test_compressed_file_bigger_than_a_piece_is_never_cut(name: str, tmp_path: Path) -> None:
    (tmp_path / "plain.log").write_bytes(PLAIN * 50)
    (tmp_path / name).write_bytes(COMPRESSED[name](PLAIN * 50))
    small = Tuning(piece_bytes=512)  # every input is bigger than a piece
    want = read_logs([str(tmp_path / "plain.log")], tuning=small)
    got = read_logs([str(tmp_path / name)], tuning=small)
    assert got.inputs[0].lines == want.inputs[0].lines and got.network.height == want.network.height


def test_utf16_file_bigger_than_a_piece_is_never_cut(tmp_path: Path) -> None:
    (tmp_path / "plain.log").write_bytes(PLAIN * 50)
    (tmp_path / "w.log").write_bytes((PLAIN * 50).decode().encode("utf-16"))
    small = Tuning(piece_bytes=512)
    want = read_logs([str(tmp_path / "plain.log")], tuning=small)
    got = read_logs([str(tmp_path / "w.log")], tuning=small)
    assert got.inputs[0].lines == want.inputs[0].lines and got.network.height == want.network.height


def test_archive_inside_an_archive(logdir: Path, tmp_path: Path) -> None:
    inner = _zip(logdir, tmp_path / "node_logs.zip")
    with tarfile.open(tmp_path / "ticket.tar.gz", "w:gz") as tf:
        tf.add(inner, arcname="attachments/node_logs.zip")
    logs = classify_inputs([str(tmp_path / "ticket.tar.gz")]).logs
    assert [p.split("!", 1)[1] for p in logs] == [f"attachments/node_logs.zip!{n}" for n in sorted(LAYOUT)]
    lf = read_logs(list(logs))
    assert [i.lines for i in lf.inputs] == [(logdir / n).read_bytes().count(b"\n") for n in sorted(LAYOUT)]


def test_a_walk_leaves_wheels_and_office_files_alone(logdir: Path, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    _zip(logdir, tmp_path / "d" / "tool-1.0-py3-none-any.whl")
    _zip(logdir, tmp_path / "d" / "notes.docx")
    _zip(logdir, tmp_path / "d" / "logs.zip")
    logs = classify_inputs([str(tmp_path / "d")]).logs
    assert {p.split("!")[0].rsplit("/", 1)[1] for p in logs} == {"logs.zip"}
    assert classify_inputs([str(tmp_path / "d" / "notes.docx")]).logs  # named: read by its bytes


def test_a_planted_unpack_folder_is_refused(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import tempfile

    shared = tmp_path / "tmp"
    (shared / "elsewhere").mkdir(parents=True)
    (shared / f"ncclscope-{os.getuid()}").symlink_to(shared / "elsewhere")  # made by someone else
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    archive = _zip(logdir, tmp_path / "logs.zip")
    (tmp_path / "plain.log").write_bytes(PLAIN)
    inp = classify_inputs([str(archive), str(tmp_path / "plain.log")])
    assert inp.logs == (str(tmp_path / "plain.log"),)
    assert any("not this user's private folder" in n for n in inp.notes)
    assert not any((shared / "elsewhere").iterdir())


def test_the_unpack_cache_is_pruned(logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpacked archives do not pile up under the temp dir: a new unpack removes entries unused for a day,
    then the least recently used idle ones while the cache is over its size; a used entry is kept."""
    import os
    import tempfile
    import time

    from ncclscope.parse import archive as A

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    first = _tar(logdir, tmp_path / "a.tar", "w")
    second = _zip(logdir, tmp_path / "b.zip")
    third = _tar(logdir, tmp_path / "c.tar.gz", "w:gz")
    assert classify_inputs([str(first)]).logs
    root = A._folder(str(first)).parent
    old = A._folder(str(first))
    day_ago = time.time() - A.CACHE_MAX_AGE_S - 60
    os.utime(old / "index.json", (day_ago, day_ago))
    os.utime(old, (day_ago, day_ago))
    assert classify_inputs([str(second)]).logs  # a new unpack: the day-old entry goes
    assert not old.exists() and A._folder(str(second)).exists()
    hour_ago = time.time() - A.CACHE_MIN_IDLE_S - 60
    used = A._folder(str(second))
    os.utime(used / "index.json", (hour_ago, hour_ago))
    os.utime(used, (hour_ago, hour_ago))
    monkeypatch.setattr(A, "CACHE_MAX_BYTES", 1)
    assert classify_inputs([str(second)]).logs  # a use marks it (no unpack, so no pruning)
    assert classify_inputs([str(third)]).logs  # over the size, but `second` was just used: kept
    assert used.exists() and sorted(p.name for p in root.iterdir()) == sorted(
        [used.name, A._folder(str(third)).name]
    )
    os.utime(used / "index.json", (hour_ago, hour_ago))
    os.utime(used, (hour_ago, hour_ago))
    os.utime(third, None)  # a changed archive is unpacked again: the idle entry over the size goes
    assert classify_inputs([str(third)]).logs
    assert not used.exists()
