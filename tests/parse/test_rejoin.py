"""Wrapped and re-flowed pastes: continuation lines are folded into their NCCL line, real lines never are."""

from __future__ import annotations

import textwrap
from pathlib import Path

import polars as pl
import pytest

from ncclscope.frames import LogFrames
from ncclscope.parse import read_logs
from ncclscope.parse.logs import reduce
from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
from ncclscope.parse.logs.lines import rejoin
from ncclscope.parse.logs.lines.prepare import prepare
from ncclscope.parse.logs.lines.transform import TABLES as FAMILY_TABLES
from ncclscope.tuning import Tuning

P = "node-00:12:34 [0] NCCL INFO "
W = "node-00:12:34 [0] misc/socket.cc:1 NCCL WARN "
SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"
# Frames compared between a paste and its wrapped copy (line numbers and evidence text differ).
TABLES = tuple(FAMILY_TABLES)


def _read(tmp_path: Path, text: str, name: str = "paste.log") -> LogFrames:
    path = tmp_path / name
    path.write_text(text)
    return read_logs([str(path)])


def _folded(lf: LogFrames) -> int:
    """Lines re-joined, read off the note."""
    notes = [n for n in lf.notes if "re-joined" in n]
    return int(notes[0].split(": ")[-1].split()[0]) if notes else 0


def _rows(lf: LogFrames) -> dict[str, list[tuple[str, ...]]]:
    out = {}
    for name in TABLES:
        df: pl.DataFrame = getattr(lf, name)
        df = df.drop([c for c in ("path", "line", "text") if c in df.columns])
        out[name] = sorted((tuple(str(v) for v in r) for r in df.iter_rows()), key=str)
    return out


def _lines_seen(lf: LogFrames) -> set[int]:
    """Line numbers that are rows of some frame (recognised, torch, catalog-named or unknown)."""
    return {n for name in (*TABLES, "torch", "known", "unknown") for n in getattr(lf, name)["line"].to_list()}


def _fold(text: str, width: int) -> str:
    """What a terminal of `width` columns makes of the text (like `fold -w`)."""
    out = []
    for line in text.splitlines():
        out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
    return "\n".join(out) + "\n"


# --- wrapped pastes are re-joined ------------------------------------------------------------------------


def test_wrap_inside_a_word(tmp_path: Path) -> None:
    lf = _read(tmp_path, f"{P}Channel 00/0 : 0[0] -> 1[1] vi\na P2P/IPC/read\n{P}Connected all rings\n")
    conn = lf.connections.row(0, named=True)
    assert (conn["line"], conn["transport"], conn["detail"]) == (1, "P2P", "IPC/read")
    assert conn["text"] == f"{P}Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"
    assert _folded(lf) == 1 and lf.unknown.height == 0


def test_coll_line_cut_mid_pointer(tmp_path: Path) -> None:
    coll = (
        "AllReduce: opCount 1a sendbuff 0x7f01 recvbuff 0x7f02 count 1024 datatype 7 op 0 root 0 comm 0x7f0",
        "0 [nranks=2] stream 0x7f03",
    )
    lf = _read(tmp_path, f"{P}{coll[0]}\n{coll[1]}\n")
    row = lf.collectives.row(0, named=True)
    assert (row["line"], row["comm_ptr"], row["nranks"]) == (1, "0x7f00", 2)
    assert _folded(lf) == 1


@pytest.mark.parametrize(
    "pasted",
    [
        f"{P}Bootstrap : Using \neth0:10.0.0.1<0>\n",  # the space stays at the end of the first line
        f"{P}Bootstrap : Using\n eth0:10.0.0.1<0>\n",  # or starts the next one
        f"{P}Bootstrap : Using\neth0:10.0.0.1<0>\n",  # or was dropped by an editor's re-flow
    ],
)
def test_wrap_at_a_space(tmp_path: Path, pasted: str) -> None:
    lf = _read(tmp_path, pasted)
    row = lf.network.row(0, named=True)
    assert (row["line"], row["kind"], row["iface"], row["address"]) == (1, "bootstrap", "eth0", "10.0.0.1")
    assert lf.coverage.to_json() == {"lines": 2, "nccl_lines": 2, "recognized": 2, "unknown": 0}


def test_interface_list_reflowed_one_item_per_line(tmp_path: Path) -> None:
    lf = _read(
        tmp_path,
        f"{P}NET/IB : Using [0]mlx5_0:1/IB\n[1]mlx5_1:1/IB\n[2]mlx5_2:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
        f"{P}Using network IB\n",
    )
    ib = lf.network.filter(pl.col("kind") == "ib_dev")
    assert ib["hca"].drop_nulls().to_list() == ["mlx5_0", "mlx5_1", "mlx5_2"]
    assert set(ib["line"]) == {1}
    assert _folded(lf) == 2
    assert lf.coverage.to_json() == {"lines": 4, "nccl_lines": 4, "recognized": 4, "unknown": 0}


def test_terminal_width_joins_free_text_tails(tmp_path: Path) -> None:
    """Lines cut at the same column (the longest of the file) are joined even where the tail is free text."""
    lines = [f"{P}Channel {c:02d}/0 : 0[0] -> 1[1] via P2P/IPC/read" for c in range(4)]
    lines += [f"{W}NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument"]
    width = len(lines[0]) - 3
    lf = _read(tmp_path, _fold("\n".join(lines), width))
    assert lf.connections["detail"].to_list() == ["IPC/read"] * 4
    assert lf.warnings["message"].to_list()[-1].endswith("ERROR: Invalid argument")
    assert lf.unknown.height == 0


# --- real lines are never joined -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pasted",
    [
        f"{P}Bootstrap : Using\n{P}Bootstrap : Using eth0:10.0.0.1<0>\n",  # two real prefixed lines
        f"{P}comm 0x7f rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\nUsing device: 5\n",  # app output
        f"{P}NET/IB: [1] mlx5_2:1/IB\nUsing device: 5\n",  # NCCL 2.3 one HCA per line, an app line between
        f"{W}NET/OFI Couldn't open AV.\nRC: -22 from the app\n",  # a free-text tail accepts anything
        f"{P}Ring 04 : 1[1] -> 0[0] via P2P/IPC\nRing 04 : 6[6] -> 5[5] via P2P/IPC\n",  # a message of its own
        f"{P}Bootstrap : Using\nTraceback (most recent call last):\n",  # a traceback
        f"{P}Bootstrap : Using\n[rank1]:eth0:10.0.0.1<0>\n",  # a launcher's rank wrapper
        f"{P}Bootstrap : Using\n[2025-04-06 22:31:56] eth0:10.0.0.1<0>\n",  # a timestamp
        f"{P}Bootstrap : Using\nnode01: eth0:10.0.0.1<0>\n",  # a pdsh host tag
        f"{P}Bootstrap : Using\n\neth0:10.0.0.1<0>\n",  # a blank line between
    ],
)
def test_real_lines_are_never_joined(tmp_path: Path, pasted: str) -> None:
    lf = _read(tmp_path, pasted)
    last = pasted.count("\n")
    assert _folded(lf) == 0 and lf.coverage.lines == last
    assert last in _lines_seen(lf), "the second line is still a row of its own"


def test_one_cut_line_is_no_terminal(tmp_path: Path) -> None:
    """A single long line cut at the file's widest column is no evidence of a terminal: its free-text tail stays."""
    lf = _read(
        tmp_path,
        _fold(f"{W}NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument\n{P}Using network IB", 60),
    )
    assert _folded(lf) == 0


# --- block boundaries ------------------------------------------------------------------------------------


def _chunk(lines: list[str], first: int) -> pl.DataFrame:
    return pl.DataFrame(
        {"path": ["b.log"] * len(lines), "line": range(first, first + len(lines)), "raw": lines},
        schema={"path": pl.Utf8, "line": pl.Int64, "raw": pl.Utf8},
    )


def test_run_across_a_block_boundary() -> None:
    """The general path is flushed every `pending_lines` lines; a run open at the end of a block waits for the next."""
    lines = [
        f"{P}Using network IB",
        f"{P}cudaDriverVersion 12010",
        f"{P}NET/IB : Using [0]mlx5_0:1/IB",
        "[1]mlx5_1:1/IB",
        "[2]mlx5_2:1/IB ; OOB eth0:10.0.0.1<0>",
        f"{P}Using network IB",
    ]
    acc = reduce._Acc(reduce.Keep(unknown=True), Tuning(pending_lines=3))
    acc.batch(_chunk(lines[:4], 1))  # flushed here: the NET/IB run is held back
    acc.batch(_chunk(lines[4:], 5))
    acc.flush()
    net = pl.concat(acc.tables["network"].parts)
    assert net.filter(pl.col("kind") == "ib_dev")["hca"].drop_nulls().to_list() == [
        "mlx5_0",
        "mlx5_1",
        "mlx5_2",
    ]
    assert acc.rejoined == {"b.log": 2}
    assert acc.cov == [6, 6, 6, 0]


def test_open_tail() -> None:
    df = pl.DataFrame({"prefixed": [True, False, True, False, False]})
    assert rejoin.open_tail(df) == 2
    assert (
        rejoin.open_tail(pl.DataFrame({"prefixed": [True] + [False] * (rejoin.MAX_RUN + 1)}))
        == rejoin.MAX_RUN + 2
    )
    assert rejoin.open_tail(pl.DataFrame({"prefixed": [False, False]})) == 2


# --- golden: real samples --------------------------------------------------------------------------------


def test_real_app_output_between_hca_lines_stays_apart() -> None:
    """NVIDIA/nccl#147: NCCL 2.3 prints one HCA per line; the application's `Using device: N` lines in between
    are not continuations."""
    lf = read_logs([str(SAMPLES / "nccl147_nccl_2_3_5_ib_init_app_interleaved.log")])
    assert _folded(lf) == 0
    assert lf.network.filter(pl.col("kind") == "ib_dev")["hca"].to_list() == [
        "mlx5_3",
        "mlx5_2",
        "mlx5_1",
        "mlx5_0",
    ]
    # the application's line reads like PyTorch's own `Using device: {}`, so the torch catalog may name it
    apart = (
        pl.concat([lf.unknown.select("text", "line"), lf.known.select("text", "line")])
        .filter(pl.col("text") == "Using device: 5")["line"]
        .to_list()
    )
    assert apart == [15]
    assert lf.coverage.to_json() == {"lines": 21, "nccl_lines": 10, "recognized": 10, "unknown": 0}


def test_real_wrapped_torch_paste_is_left_to_the_torch_reader() -> None:
    """mila-iqia/milabench#269: torch watchdog lines hard-wrapped after `timeout: `; no NCCL prefix, no join."""
    lf = read_logs([str(SAMPLES / "milabench269_stream_prefix_wrapped_watchdog_reduce.log")])
    assert _folded(lf) == 0
    assert lf.torch.height == 10
    assert lf.coverage.to_json() == {"lines": 10, "nccl_lines": 10, "recognized": 10, "unknown": 0}


@pytest.mark.parametrize(
    "name",
    [
        "nccl687_2node_ib_gdrdma_p2p_read_healthy",
        "nccl952_ib_no_device_socket_fallback_16r",
        "nccl529_ip6tnl_veth_ipv6_bootstrap_2_5_6",
    ],
)
@pytest.mark.parametrize("width", [60, 80])
def test_real_samples_folded_by_a_terminal(tmp_path: Path, name: str, width: int) -> None:
    """A real sample cut at `width` columns reads as the sample itself, every cut line folded back."""
    text = (SAMPLES / f"{name}.log").read_text()
    lf = _read(tmp_path, _fold(text, width))
    assert _rows(lf) == _rows(read_logs([str(SAMPLES / f"{name}.log")]))
    n_cut = sum((len(line) - 1) // width for line in text.splitlines() if line)
    assert _folded(lf) == n_cut
    assert lf.coverage.unknown == 0


def test_prepare_then_rejoin_keeps_columns() -> None:
    raw = pl.concat(
        list(read_chunks(str(SAMPLES / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log"), ReadStats()))
    )
    df = prepare(raw)
    out, folded = rejoin.rejoin(df)
    assert folded == {} and out.columns == df.columns and out.equals(df)


# --- the corpus: no join in complete healthy runs or in the issue pastes --------------------------------


@pytest.mark.parametrize("folder", ["complete", "issues"])
def test_corpus_has_no_join(shared_dir: Path, folder: str) -> None:
    paths = sorted(str(p) for p in (shared_dir / "corpus" / folder).glob("*.log"))
    lf = read_logs(paths)
    assert [n for n in lf.notes if "re-joined" in n] == []


def test_fold_helper() -> None:
    assert _fold(textwrap.dedent("abcdef\n\nab"), 4) == "abcd\nef\n\nab\n"
