"""The fast path and the grammar agree: regexes compiled from the grammar vs Lark, Polars vs Python `re`.

Checked on every distinct message of the corpus and on generated bench logs: the family chosen and
the text of every field are the same whether Lark parses the message or the compiled regex matches
it; prefixes and wrappers likewise; and the Polars engine gives the same frames as Python `re`.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ncclscope import grammar as G
from ncclscope.parse import read_logs
from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
from ncclscope.parse.logs.lines import match, peel, rx
from ncclscope.parse.logs.lines.reference import field_text, lark_family
from ncclscope.tuning import Tuning

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import gen_logs


def _regex_fields(pattern: str, text: str) -> dict[str, str] | None:
    m = rx.compiled(pattern).match(text)
    if m is None:
        return None
    out: dict[str, str] = {}
    for k, v in m.groupdict().items():
        if v is not None:
            out.setdefault(G.base_field(k), v)
    return out


def _messages(paths: list[str]) -> list[str]:
    raw = pl.concat([c for p in paths for c in read_chunks(p, ReadStats())])
    df = peel.split(peel.clean(raw.with_columns(pl.int_range(pl.len()).alias("_row"))))
    return sorted({m for m in df["msg"].to_list() if m})


def _check_messages(msgs: list[str]) -> list[tuple[str, object, object]]:
    bad = []
    for m in msgs:
        i = match.first_family(m)
        lark = lark_family(m)
        if i is None:
            if lark is not None:
                bad.append((m, None, lark))
            continue
        fam, pat, _ = match.family_patterns()[i]
        fast = (fam, _regex_fields(pat, m))
        if lark != fast:
            bad.append((m, fast, lark))
    return bad


@pytest.fixture(scope="module")
def bench_logs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("gen")
    ns = argparse.Namespace(
        ranks=12,
        coll=6,
        gpus_per_node=4,
        out=str(out),
        combined=False,
        stall=["5:3"],
        torch=True,
        seed=3,
        buffers="line",
    )
    return [str(p) for p in gen_logs.generate(ns)]


@pytest.mark.corpus
@pytest.mark.slow
def test_lark_and_regex_agree_on_every_corpus_message(corpus_dir: Path) -> None:
    msgs = _messages(sorted(str(p) for p in corpus_dir.glob("*.log")))
    assert len(msgs) > 500
    assert _check_messages(msgs) == []


def test_lark_and_regex_agree_on_generated_logs(bench_logs: list[str]) -> None:
    assert _check_messages(_messages(bench_logs)) == []


@pytest.mark.parametrize(
    "line",
    [
        "node-00:1234:1240 [3] NCCL INFO ",
        "node-00:1234:1240 [3] misc/socket.cc:49 NCCL WARN ",
        "node-00:1234:1240 [3] transport/net_ib/p2p.cc:412 (ncclIbCompletion) NCCL WARN ",
        ":1234:1240 [3] NCCL INFO ",
        "node-00:1234:1240 NCCL CALL ",
        "ip-10-0-0-1:1:2 [0] INFO ",
    ],
)
def test_prefix_regex_and_lark_agree(line: str) -> None:
    pat = rf"^(?:{G.rule_regex('prefix_std')})$"
    assert _regex_fields(pat, line) == field_text(line, "prefix_std")


@pytest.mark.parametrize(
    "wrapper",
    [
        "[rank3]:",
        "[default12]:",
        "[1,7]<stdout>:",
        "5: ",
        "[2] ",
        "node-01: ",
        "10.1.2.3: ",
        "(RayWorkerWrapper pid=1234, ip=10.0.0.1) ",
        "  | 2025-05-16T16:39:51.208-07:00 | ",
        "2024-01-02T03:04:05.1234567Z ",
        "2025-11-12 20:41:43,851 - INFO - ",
        "[2025-04-06 22:31:56] ",
        "> ",
        "451 ",
        "│ ",
        "host-1 [stderr] ",
    ],
)
def test_wrapper_regex_and_lark_agree(wrapper: str) -> None:
    pat = rf"^(?:{G.rule_regex('wrapper')})$"
    assert _regex_fields(pat, wrapper) == field_text(wrapper, "wrapper")


@pytest.mark.corpus
def test_polars_and_python_engines_give_the_same_frames(corpus_dir: Path) -> None:
    paths = sorted(str(p) for p in corpus_dir.glob("*.log"))
    py = read_logs(paths, tuning=Tuning(polars_regex_min_rows=10**9, dispatch_polars_min_rows=10**9))
    polars = read_logs(paths, tuning=Tuning(polars_regex_min_rows=0, dispatch_polars_min_rows=0))
    assert py.coverage == polars.coverage
    for name in py.table_names():
        assert_frame_equal(getattr(py, name), getattr(polars, name), check_row_order=False)


def test_coll_dedup_path_equals_plain_matching(
    bench_logs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """COLL lines deduplicated around opCount (general path) give the same rows as matching every line."""
    general = Tuning(polars_regex_min_rows=0, dispatch_polars_min_rows=0, fast_paths=False)
    fast = read_logs(bench_logs, tuning=general)
    monkeypatch.setattr(match, "VARYING", {})
    plain = read_logs(bench_logs, tuning=general)
    assert fast.collectives.height == 12 * 6 - 3
    assert_frame_equal(fast.collectives, plain.collectives, check_row_order=False)


def _random_lines(rng: random.Random, n: int) -> list[str]:
    """Seeded lines of the families a big log holds many of, with the values real jobs vary."""

    def ptr() -> str:
        return rng.choice(["(nil)", f"0x{rng.getrandbits(rng.randrange(8, 48)):x}"])

    def ranks() -> int:
        return rng.choice([1, 2, 8, 64, 1024, 16384])

    makers = [
        lambda: (
            f"{rng.choice(['AllReduce', 'AllGather', 'Send', 'Recv', 'ReduceScatter'])}: opCount "
            f"{rng.getrandbits(rng.randrange(1, 70)):x} sendbuff {ptr()} recvbuff {ptr()} count {rng.randrange(10**12)} "
            f"datatype {rng.randrange(12)} op {rng.randrange(6)} root {rng.randrange(-1, 9)} comm {ptr()} "
            f"[nranks={ranks()}] stream {ptr()}"
        ),
        lambda: (
            f"Channel {rng.randrange(64):02d}/{rng.randrange(4)} : {rng.randrange(2048)}[{rng.randrange(8)}] -> "
            f"{rng.randrange(2048)}[{rng.randrange(8)}]{rng.choice(['', ' [send]', ' [receive]'])} via "
            f"{rng.choice(['P2P/CUMEM/read', 'P2P/IPC', 'NET/IB/0/GDRDMA', 'NET/Socket/1', 'SHM/direct/direct'])}"
        ),
        lambda: (
            f"Ring {rng.randrange(64):02d} : {rng.randrange(2048)} -> {rng.randrange(2048)} -> {rng.randrange(2048)}"
        ),
        lambda: (
            "Trees"
            + "".join(
                f" [{c}] {rng.randrange(-1, 99)}/{rng.randrange(-1, 99)}/-1->{rng.randrange(99)}->"
                f"{rng.randrange(-1, 99)}"
                for c in range(rng.randrange(1, 5))
            )
        ),
        lambda: (
            f"ncclCommInitRank comm {ptr()} rank {rng.randrange(2048)} nranks {ranks()} cudaDev {rng.randrange(8)} "
            f"nvmlDev {rng.randrange(8)} busId {rng.getrandbits(20):x} commId 0x{rng.getrandbits(64):x} - Init "
            f"{rng.choice(['START', 'COMPLETE'])}"
        ),
        lambda: (
            f"comm {ptr()} rank {rng.randrange(2048)} nRanks {ranks()} nNodes {rng.randrange(1, 512)} "
            f"localRanks {rng.randrange(1, 9)} localRank {rng.randrange(8)} MNNVL {rng.randrange(2)}"
        ),
        lambda: (
            f"{rng.randrange(1, 33)} coll channels, {rng.randrange(33)} collnet channels, {rng.randrange(33)} nvls "
            f"channels, {rng.randrange(1, 33)} p2p channels, {rng.randrange(1, 9)} p2p channels per peer"
        ),
        lambda: (
            f"NET/IB : Got completion from peer 10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}"
            f"<{rng.randrange(65536)}> with status={rng.randrange(22)} opcode={rng.randrange(256)} len={rng.randrange(10**6)} "
            f"vendor err {rng.randrange(256)} (Recv)"
        ),
        lambda: (
            f"{rng.choice(['init.cc', 'transport/net.cc', 'group.cc'])}:{rng.randrange(5000)} -> {rng.randrange(8)}"
        ),
    ]
    return [rng.choice(makers)() for _ in range(n)]


def test_lark_and_regex_agree_on_random_high_volume_lines() -> None:
    """Seeded random lines of every high-volume family: the compiled regexes give Lark's family and fields."""
    msgs = sorted(set(_random_lines(random.Random(11), 3000)))
    assert _check_messages(msgs) == []
    fams = {match.family_patterns()[i][0] for m in msgs if (i := match.first_family(m)) is not None}
    assert {
        "coll",
        "conn",
        "ring_neighbors",
        "trees",
        "init",
        "comm_topo",
        "channel_summary",
        "ib_completion",
        "trail",
    } <= fams


def test_fast_paths_agree_on_random_high_volume_lines(tmp_path: Path) -> None:
    """The same lines as a log (prefixes, launcher tags): field by field and inert rejection change no frame."""
    rng = random.Random(12)
    tags = ["", "[rank3]:", "17: ", "[1,5]<stdout>:"]
    lines = []
    for msg in _random_lines(rng, 3000):
        level = "WARN" if msg.startswith("NET/IB") else "INFO"
        lines.append(
            f"{rng.choice(tags)}host-{rng.randrange(4)}:{rng.randrange(1, 9)}:{rng.randrange(1, 9)} "
            f"[{rng.randrange(8)}] NCCL {level} {msg}"
        )
        if rng.random() < 0.3:
            lines.append(
                f"{rng.choice(tags)}epoch {rng.randrange(9)} step {rng.randrange(10**5)} loss {rng.random():.4f}"
            )
    path = tmp_path / "random.log"
    path.write_text("\n".join(lines) + "\n")
    fast, plain = read_logs([str(path)]), read_logs([str(path)], tuning=Tuning(fast_paths=False))
    assert fast.coverage == plain.coverage and fast.coverage.unknown == 0
    for name in fast.table_names():
        assert_frame_equal(getattr(fast, name), getattr(plain, name))


def test_family_dispatch_in_polars_equals_the_python_loop(bench_logs: list[str]) -> None:
    """`match.family_index`: one Polars pass of every family's pattern (from `dispatch_polars_min_rows` rows)
    picks the same family as the Python loop with needle prefilters, on the sample logs' messages, generated
    logs' and random high-volume lines, and application text that matches no family."""
    samples = sorted(str(p) for p in (REPO / "samples" / "logs").glob("*.log"))
    msgs = _messages(samples + bench_logs) + sorted(set(_random_lines(random.Random(5), 2000)))
    msgs += ["Traceback (most recent call last):", ":::MLLOG {'key': 'eval_accuracy'}", "epoch 3:  45%|####5"]
    df = pl.DataFrame({"msg": msgs})
    with rx.configured(Tuning(dispatch_polars_min_rows=0)):
        polars = match.family_index(df)
    with rx.configured(Tuning(dispatch_polars_min_rows=10**9)):
        python = match.family_index(df)
    assert polars.null_count() < len(msgs) and python.null_count() > 0
    assert_frame_equal(pl.DataFrame({"f": polars}), pl.DataFrame({"f": python}))
