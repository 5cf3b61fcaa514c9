"""nccl-tests rows that NCCL INFO lines cut in two are read whole (parse.nccltests.rejoin).

Built from the real samples/nccltests awstutorial run (2 × A10G, NCCL 2.11.4, INFO lines already
interleaved with its table): one of its rows is cut the way nccl-tests' piecewise printf and NCCL's
lines on the same stdout cut rows (the row's head runs into an INFO line's prefix, the rest follows alone),
with that run's own INFO lines between the pieces. No public log with such a cut row whole was found.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ncclscope.parse.nccltests import read_nccltests
from ncclscope.parse.nccltests.rejoin import cut_glued, rejoin
from ncclscope.parse.nccltests.text import lines_frame

AWS = (
    Path(__file__).resolve().parents[2]
    / "samples"
    / "nccltests"
    / "awstutorial_a10g_2node_socket_nccl2_11_4.log"
)
SIZE = 134217728


def _cut(tmp_path: Path, at: int, infos: int, tail_glued: bool = False) -> tuple[Path, int]:
    """The sample with its 128 MiB row cut after character `at`, `infos` of the run's INFO lines between the
    pieces (the first run onto the head); `tail_glued`: the second piece also runs into an INFO line and the
    in-place side comes alone after it."""
    lines = AWS.read_text().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(f"{SIZE} "))
    info = [ln for ln in lines if " NCCL INFO " in ln][:infos]
    row = lines[k].rstrip("\n")
    head, rest = row[:at], row[at:]
    mid = [head + info[0], *info[1:]]
    if tail_glued:
        half = rest.index("   174589")  # where the in-place side starts
        oop, ip = rest[:half], rest[half:]
        mid += [oop + info[0], ip + "\n"]
    else:
        mid += [rest + "\n"]
    out = tmp_path / "cut.log"
    out.write_text("".join([*lines[:k], *mid, *lines[k + 1 :]]))
    return out, k + 1


def _row(path: Path) -> pl.DataFrame:
    r = read_nccltests([str(path)]).results
    return r.filter(pl.col("size_bytes") == SIZE)


def test_a_row_cut_after_its_head_is_read_on_the_heads_line(tmp_path: Path) -> None:
    path, line = _cut(tmp_path, 44, infos=3)  # `   134217728      33554432     float     sum` | INFO…
    r = _row(path)
    assert r["line"].to_list() == [line, line]
    assert r["busbw_gbps"].to_list() == [0.73, 0.77] and r["time_us"].to_list() == [183560.0, 174589.0]
    assert read_nccltests([str(path)]).results.height == read_nccltests([str(AWS)]).results.height


def test_a_row_cut_twice_is_read_whole(tmp_path: Path) -> None:
    path, _ = _cut(tmp_path, 44, infos=2, tail_glued=True)
    assert _row(path)["busbw_gbps"].to_list() == [0.73, 0.77]


def test_a_whole_row_glued_to_an_info_line_is_read() -> None:
    lines = AWS.read_text().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(f"{SIZE} "))
    info = next(ln for ln in lines if "ip-host-01" in ln and "Init COMPLETE" in ln)
    text = "".join([*lines[:k], lines[k].rstrip("\n") + info, *lines[k + 1 :]])
    df = rejoin(cut_glued(lines_frame(text)))
    body = df.filter(pl.col("line") == k + 1)["body"].item()
    assert body.endswith("0e+00") and "ip-host-01" not in body


def test_a_host_name_starting_with_digits_is_cut_at_the_known_name() -> None:
    """`-1` (the root column) glued to `10-4-3-3:…` (NVIDIA/nccl#1773's host name) gives `-110-4-3-3`."""
    text = (
        "10-4-3-3:97095:97196 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer\n"
        "    67108864      16777216     float     sum      -110-4-3-3:97095:97196 [0] NCCL INFO Connected all trees\n"
        "    825.4   81.31  142.28      0    824.7   81.38  142.41      0\n"
    )
    df = rejoin(cut_glued(lines_frame(text)))
    assert df["body"].to_list()[1].split()[-9:-8] == ["-1"]
    assert df["body"].to_list()[2] == ""


def test_lines_that_only_look_like_pieces_stay_as_they_are() -> None:
    text = "2026 11 boot\n   12.5 0.1 0.2 tail of something else\n"
    df = lines_frame(text)
    assert rejoin(cut_glued(df)).equals(df)
