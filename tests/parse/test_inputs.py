"""Input discovery and reading: files, globs, directories, `.gz`, stdin, traces and dumps sorted out."""

from __future__ import annotations

import gzip
import io
import pickle
import sys
from pathlib import Path

import pytest

from ncclscope.errors import InputError
from ncclscope.frames_coll import KEY
from ncclscope.parse import classify_inputs, read_logs

LINES = [
    "node-00:100:100 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>",
    "node-00:100:110 [0] NCCL INFO comm 0x55aa rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE",
    (
        "node-00:100:100 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f01 recvbuff 0x7f02 count 8 datatype 7 op 0 "
        "root 0 comm 0x55aa [nranks=2] stream 0x55bb"
    ),
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "logs" / "node-01").mkdir(parents=True)
    _write(tmp_path / "logs" / "node-00.12345", LINES)  # NCCL_DEBUG_FILE=%h.%p
    _write(tmp_path / "logs" / "node-01" / "rank1.log", [ln.replace("node-00", "node-01") for ln in LINES])
    with gzip.open(tmp_path / "logs" / "rank2.log.gz", "wt") as fh:
        fh.write("\n".join(LINES) + "\n")
    (tmp_path / "logs" / "rank0.pt.trace.json").write_text('{"traceEvents": []}')
    (tmp_path / "logs" / "job.meta.json").write_text('{"title": "not a trace"}')
    (tmp_path / "logs" / "nccl_trace_rank_0").write_bytes(pickle.dumps({"entries": []}, protocol=4))
    (tmp_path / "logs" / "train.py").write_text("print('hi')\n")
    (tmp_path / "logs" / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    return tmp_path / "logs"


def test_directory_is_walked_and_sorted(tree: Path) -> None:
    inp = classify_inputs([str(tree)])
    assert sorted(Path(p).name for p in inp.logs) == ["node-00.12345", "rank1.log", "rank2.log.gz"]
    assert [Path(p).name for p in inp.traces] == ["rank0.pt.trace.json"]
    assert [Path(p).name for p in inp.dumps] == ["nccl_trace_rank_0"]
    assert len(inp.notes) == 1 and "skipped 3 file(s)" in inp.notes[0]


def test_globs_and_explicit_files(tree: Path) -> None:
    inp = classify_inputs([str(tree / "*.log.gz"), str(tree / "node-01" / "rank1.log")])
    assert sorted(Path(p).name for p in inp.logs) == ["rank1.log", "rank2.log.gz"]


def test_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        classify_inputs([str(tmp_path / "nope.log")])


def test_directory_without_anything_usable(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(InputError, match="no log, trace or dump"):
        classify_inputs([str(tmp_path)])


def test_gz_and_one_file_per_rank_read_alike(tree: Path) -> None:
    lf = read_logs([str(tree / "rank2.log.gz"), str(tree / "node-01" / "rank1.log")])
    assert [i.lines for i in lf.inputs] == [3, 3]
    assert lf.collectives["op_count"].to_list() == [0x1F, 0x1F]
    assert sorted(lf.streams["host"].to_list()) == ["node-00", "node-01"]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ("\n".join(LINES) + "\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    lf = read_logs(["-"])
    assert lf.inputs[0].path == "-" and lf.inputs[0].lines == 3
    assert lf.coverage.recognized == 3


def test_interleaved_file_keeps_processes_apart(tmp_path: Path) -> None:
    lines = []
    for k in range(4):
        for r in range(3):
            lines.append(
                f"node-0{r}:{100 + r}:{100 + r} [{r}] NCCL INFO AllReduce: opCount {k:x} sendbuff 0x1 "
                f"recvbuff 0x2 count 8 datatype 7 op 0 root 0 comm 0x5{r} [nranks=3] stream 0x6"
            )
    lf = read_logs([str(_write(tmp_path / "all.log", lines))])
    assert lf.streams.height == 3
    assert lf.streams.sort("pid")["n_lines"].to_list() == [4, 4, 4]
    assert lf.streams.sort("pid")["last_line"].to_list() == [10, 11, 12]


def test_stdin_is_read_like_the_same_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Piped lines are spooled to a private file as they are read once: stdin keeps no COLL row in memory
    (the facts, as for a file), the second look and the full frames read the spool again, cited as `-`,
    and the spool goes with the frames."""
    import gc
    import os

    lines = [
        f"node-00:100:100 [0] NCCL INFO AllReduce: opCount {k:x} sendbuff 0x1 recvbuff 0x2 count 8 "
        "datatype 7 op 0 root 0 comm 0x50 [nranks=2] stream 0x6"
        for k in range(40)
    ]
    path = _write(tmp_path / "rank0.log", lines)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    piped, plain = read_logs(["-"]), read_logs([str(path)])
    assert piped.coll.frame is None and piped.coll.lines == plain.coll.lines == 40
    keys = plain.collectives.select(KEY).unique()
    at = piped.coll_lines_at(keys, [3, 5])
    assert at["op_count"].to_list() == [3, 5] and set(at["path"]) == {"-"}
    assert piped.collectives.drop("path").equals(plain.collectives.drop("path"))
    spool = piped.rebuild.args[2].name  # type: ignore[union-attr]
    assert os.path.exists(spool) and oct(os.stat(spool).st_mode & 0o077) == "0o0"
    del piped, at
    gc.collect()
    assert not os.path.exists(spool)
