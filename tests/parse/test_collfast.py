"""COLL lines field by field (`collfast`) give exactly the rows the general path gives, and hand odd lines to it."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from ncclscope import frames_coll as FC
from ncclscope.frames import LogFrames
from ncclscope.parse import read_logs
from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
from ncclscope.parse.logs.lines import collfast
from ncclscope.tuning import Tuning

P = "node-1:100:101 [0] NCCL "
MSG = (
    "AllReduce: opCount {op} sendbuff 0x7f01 recvbuff 0x7f02 count {n} datatype 7 op 0 root 0 "
    "comm 0x55aa [nranks=4] stream 0x55bb"
)
ODD = [  # (line, taken by the fast path)
    ("[rank3]:" + P + "INFO " + MSG.format(op="1a", n=8), True),
    ("[2025-04-06 22:31:56] " + P + "INFO " + MSG.format(op="0", n=8), True),
    (
        P + "INFO " + MSG.format(op="ffffffff", n=16) + "   ",
        True,
    ),  # trailing blanks: the rule's optional detail here (the general path cleans them): one row either way
    ("\x1b[36m" + P + "INFO " + MSG.format(op="2", n=8) + "\x1b[0m", False),  # ANSI colours
    ("**" + P + "INFO " + MSG.format(op="2b", n=8), False),  # markdown bold in the head
    (P + "WARN " + MSG.format(op="3", n=8), False),  # a WARN row is also a warnings row
    (P + "INFO " + MSG.format(op="zz", n=8), False),  # not a hex token
    (
        P + "INFO " + MSG.format(op="4", n=8) + " again: opCount 5 sendbuff x",
        True,
    ),  # the literals again, in the rule's optional trailing detail
    (P + "INFO " + MSG.format(op="c", n=8) + " task 0 globalrank 3", True),  # RCCL's trailing detail
    (P + "INFO " + MSG.format(op="d", n=8) + " task", True),
    (P + "INFO " + MSG.format(op="e", n=8) + "task 0", False),  # no blank: not the stream pointer's end
    (P + "INFO AllReduce: opCount 6 sendbuff 0x7f01 and then nothing the grammar knows", False),
    ("no prefix at all: opCount 7 sendbuff 0x1", False),
    (P + "INFO " + MSG.format(op="8", n="9" * 2100), False),  # longer than MAX_TEXT
    (
        P + "INFO " + MSG.format(op="1" * 30, n=8),
        False,
    ),  # opCount past 64 bits: the general path (null, counted)
    (
        "x count y " + P + "INFO " + MSG.format(op="9", n=8),
        True,
    ),  # a literal in the head (junk before a prefix)
    ("nödé-1:100:101 [0] NCCL INFO " + MSG.format(op="a", n=8), False),  # not ASCII
    ("nödé " + P + "INFO " + MSG.format(op="a1", n=8), False),  # not ASCII in junk before the prefix
    ("ü NCCL WARN x " + P + "INFO " + MSG.format(op="a2", n=8), False),  # another ` NCCL ` first
    ("a NCCL WARN x " + P + "INFO " + MSG.format(op="a3", n=8), False),  # the same, ASCII
    (P + "INFO " + MSG.format(op="a4", n=8) + " tâche 0", False),  # not ASCII in the trailing detail
    (P + "INFO " + MSG.format(op="b", n=8) + " NCCL INFO x", True),  # a second prefix: detail for both paths
]
GENERAL = Tuning(fast_paths=False)


def _write(tmp: Path, lines_a: list[str]) -> list[str]:
    a = [P + "INFO " + MSG.format(op=f"{i:x}", n=1 << (i % 5)) for i in range(40)]
    a[10:10] = lines_a
    b = ["node-2:200:201 [1] NCCL INFO " + MSG.format(op=f"{i:x}", n=4) for i in range(30)]
    paths = []
    for name, lines in (("a.log", a), ("b.log", b)):
        (tmp / name).write_text("\n".join(lines) + "\n")
        paths.append(str(tmp / name))
    return paths


def _same(paths: list[str], **kw: int) -> None:
    fast, plain = read_logs(paths, tuning=Tuning(**kw)), read_logs(paths, tuning=GENERAL)  # type: ignore[arg-type]
    assert fast.coverage == plain.coverage
    for name in fast.table_names():
        try:
            assert_frame_equal(getattr(fast, name), getattr(plain, name))
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    assert_frame_equal(fast.coll.procs.drop("seq"), plain.coll.procs.drop("seq"))
    assert_frame_equal(_sets(fast), _sets(plain))


def _sets(lf: LogFrames) -> pl.DataFrame:
    """Each process key's set of (opCount, signature) pairs (the hash naming a set may differ by path)."""
    keyed = lf.coll.procs.select(*FC.KEY, "seq").explode("seq")
    keyed = (
        keyed.join(lf.coll.seqs, on="seq", how="left").drop("seq").unique()
    )  # the union of its parts' sets
    return keyed.sort(pl.all(), nulls_last=True)


def test_fast_path_equals_general_path(tmp_path: Path) -> None:
    paths = _write(tmp_path, [line for line, _ in ODD])
    _same(paths)
    _same(paths, polars_regex_min_rows=0, dispatch_polars_min_rows=0, batch_lines=7, pending_lines=5)
    assert (
        read_logs(paths).collectives.height == 40 + 30 + len(ODD) - 4
    )  # all but the four lines of no family


def test_fast_path_takes_plain_lines_and_leaves_odd_ones(tmp_path: Path) -> None:
    paths = _write(tmp_path, [line for line, _ in ODD])
    raw = pl.concat([c for p in paths for c in read_chunks(p, ReadStats())])
    rows, heads, rest = collfast.take(raw, full=True)
    assert rows.height + rest.height == raw.height
    taken = set(rows["text"].to_list())
    for line, expected in ODD:
        assert (line in taken) == expected, line
    assert rest.select("path", "line").equals(
        raw.join(rest, on=["path", "line"], how="semi").select("path", "line")
    )
    ranked = collfast.with_heads(rows, heads).filter(pl.col("text").str.starts_with("[rank3]:"))
    assert ranked.select("rank_hint", "op_count", "count").rows() == [(3, 0x1A, 8)]


def _random_coll(rng: random.Random, n: int) -> list[str]:
    """COLL lines with the fields real jobs vary: buffers, counts, comms, streams, opCounts, datatypes, ops,
    and RCCL's trailing ` task N globalrank G`."""
    ops = ["AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv", "AllToAll"]
    wrappers = [
        "",
        "[rank7]:",
        "12: ",
        "[1,3]<stdout>:",
        "2024-01-02T03:04:05.1234567Z ",
        "(RayWorkerWrapper pid=9, ip=10.0.0.1) ",
    ]
    comms = [f"0x{rng.getrandbits(44):x}" for _ in range(3)] + ["(nil)"]

    def ptr() -> str:
        return rng.choice(
            ["(nil)", f"0x{rng.getrandbits(rng.randrange(8, 48)):x}", f"0x{rng.getrandbits(40):X}"]
        )

    out = []
    for k in range(n):
        head = (
            rng.choice(wrappers)
            + f"host-{rng.randrange(3)}:{rng.randrange(1, 99999)}:{rng.randrange(1, 99999)} [{rng.randrange(8)}] NCCL INFO "
        )
        op_count = rng.choice(
            [f"{k:x}", f"{rng.getrandbits(64):x}", f"{rng.getrandbits(80):x}", f"{k:X}", "0"]
        )
        out.append(
            head
            + f"{rng.choice(ops)}: opCount {op_count} sendbuff {ptr()} recvbuff {ptr()} count {rng.choice([0, 1, 7, 1 << 20, 10**15])} "
            f"datatype {rng.randrange(10)} op {rng.randrange(5)} root {rng.choice([-1, 0, 3])} comm {rng.choice(comms)} "
            f"[nranks={rng.choice([1, 8, 1024])}] stream {ptr()}"
            + rng.choice(["", "", f" task {rng.randrange(3)} globalrank {rng.randrange(1024)}", " x"])
        )
    return out


def test_randomized_coll_lines(tmp_path: Path) -> None:
    """Seeded random COLL lines: field by field they give the general path's rows, facts included."""
    for seed in range(3):
        rng = random.Random(seed)
        path = tmp_path / f"r{seed}.log"
        lines = _random_coll(rng, 400)
        path.write_text("\n".join(lines) + "\n")
        _same([str(path)])
        raw = pl.concat(list(read_chunks(str(path), ReadStats())))
        _, _, rest = collfast.take(raw, full=True)
        # every line is the fast path's but those with an opCount past 63 bits (null and counted there)
        big = {x for x in lines if int(x.split(" opCount ")[1].split()[0], 16) >= 1 << 63}
        assert 0 < len(big) < len(lines) and set(rest["raw"].to_list()) == big


def test_facts_of_big_inputs_equal_those_of_the_full_frame(tmp_path: Path) -> None:
    """The facts a big input keeps (no full frame) are those of the full frame."""
    rng = random.Random(5)
    path = tmp_path / "r.log"
    path.write_text("\n".join(_random_coll(rng, 3000)) + "\n")
    small = read_logs([str(path)])
    big = read_logs([str(path)], tuning=Tuning(full_frames_max_bytes=0, batch_lines=500))
    assert big.coll.frame is None and big.coll.lines == small.coll.lines == 3000
    assert big.unknown_count == 0 and small.unknown_count is None
    assert_frame_equal(big.coll.procs.drop("seq"), small.coll.procs.drop("seq"))
    assert_frame_equal(_sets(big), _sets(small))
    assert_frame_equal(big.collectives, small.collectives)  # read again on demand


def _stamped_coll(rng: random.Random, n: int) -> list[str]:
    """COLL lines behind a timestamp that changes every line (kubectl --timestamps, CloudWatch, GitHub
    Actions, Python logging, NCCL's `[%F %T] `), some also behind a rank tag, some with none."""
    procs = [f"{w}host-{i % 2}:{100 + i}:{200 + i} [{i}] NCCL INFO " for i in range(8) for w in ("", "12: ")]
    base = [rng.choice(procs) + x.split(" NCCL INFO ", 1)[1] for x in _random_coll(rng, n)]  # 16 heads
    out = []
    for k, line in enumerate(base):
        t = f"2026-11-23T10:{k // 600 % 60:02}:{k // 10 % 60:02}.{rng.getrandbits(20):06}"
        stamp = rng.choice(
            [
                f"{t}Z ",
                f"[{t.replace('T', ' ')[:19]}] ",
                f"  | {t}-07:00 | ",
                f"{t.replace('T', ' ')[:19]},{k % 1000:03} - INFO - ",
                f"{t}Z [rank{k % 8}]:",
                "",
                f"{t[:4]}-99-99T99:99:99Z ",  # a stamp that is no date: no timestamp
            ]
        )
        out.append(stamp + line)
    return out


def test_lines_behind_a_timestamp_of_their_own(tmp_path: Path) -> None:
    """Every head distinct (a per-line timestamp): the heads are parsed without it and give the general
    path's rows, timestamps, streams and facts."""
    for seed in range(3):
        rng = random.Random(100 + seed)
        path = tmp_path / f"s{seed}.log"
        path.write_text("\n".join(_stamped_coll(rng, 600)) + "\n")
        _same([str(path)])
        lf = read_logs([str(path)])
        assert lf.collectives["ts_us"].is_not_null().sum() > 300
        raw = pl.concat(list(read_chunks(str(path), ReadStats())))
        rows, heads, _ = collfast.take(raw, full=False)
        assert collfast.STAMPED in rows.columns and heads.height < rows.height / 4


def test_a_second_stamp_behind_the_first_keeps_the_whole_heads(tmp_path: Path) -> None:
    """Two stamps in front of the prefix: the rest keeps a timestamp of its own, so its whole head is
    parsed; the same rows either way."""
    lines = [
        f"2026-11-23T10:00:{k % 60:02}.{k:06}Z [2026-11-23 10:00:{k % 60:02}] "
        + P
        + "INFO "
        + MSG.format(op=f"{k:x}", n=8)
        for k in range(200)
    ]
    path = tmp_path / "two.log"
    path.write_text("\n".join(lines) + "\n")
    _same([str(path)])


def _random_ascii(rng: random.Random, n: int) -> list[str]:
    """ASCII strings built of the wrapper grammar's own pieces (stamps, rank tags, brackets, pipes) and noise."""
    pieces = [
        "2026-11-18T11:06:40.000000586Z ",
        "2024-01-02 03:04:05,123 - INFO - ",
        "[2024-01-02 03:04:05] ",
        " | 2024-01-02T03:04:05Z | ",
        "[rank12]: ",
        "[1,3]<stdout>: ",
        "12: ",
        "[7] ",
        "node-3: ",
        "10.0.0.1: ",
        "(RayWorker pid=123, ip=10.1.2.3) ",
        "|=>> 01/02 [03:04:05] - srun: ",
        "> ",
        "host [stderr] ",
        "\t ",
        "x",
        ":",
        "(",
        "=",
        ")",
        "\x0b",
        "\x1c",
        "\x7f",
    ]
    out = []
    for _ in range(n):
        k = rng.randint(0, 4)
        text = "".join(rng.choice(pieces) for _ in range(k))
        text += "".join(chr(rng.randint(0, 127)) for _ in range(rng.randint(0, 6)) if rng.random() < 0.5)
        out.append(text.replace("\n", " ") + "node-1:2:3 [0] NCCL INFO ")
    return out


def test_ascii_regex_matches_the_unicode_pattern_on_ascii_text() -> None:
    """The ASCII translation (`(?-u)`, classes spelled out) captures exactly what the Unicode pattern does on
    ASCII text, through Polars' own engine: the wrapper pattern and two patterns with negated classes, on
    random and odd strings."""
    from ncclscope.parse.logs.lines import peel

    rng = random.Random(11)
    texts = pl.Series("t", _random_ascii(rng, 3000), dtype=pl.Utf8)
    for pattern in (peel.wrapper_pattern(), r"a[^:()=]+\d\w[\w.-]\s*.x[^)]", r"^\s*\| (\d+)[^|]*"):
        ascii_pattern = "(?-u)" + collfast.ascii_regex(pattern)
        if "(?P<" in pattern:
            assert texts.str.extract_groups(pattern).equals(texts.str.extract_groups(ascii_pattern))
        assert texts.str.extract(pattern, 0).equals(texts.str.extract(ascii_pattern, 0))
    # the translation refuses what it cannot carry over exactly
    for bad in (r"\D", r"\p{L}", "[[a]b]", "[^\\S]"):
        try:
            collfast.ascii_regex(bad)
        except ValueError:
            continue
        raise AssertionError(f"translated {bad!r}")


def test_sets_of_long_rank_files_are_stored_once_per_block(tmp_path: Path) -> None:
    """Ranks printing the same collectives in files longer than a batch: each batch cuts a file at another
    opCount (preambles differ), yet each opCount block's pairs are stored once for all ranks, and only the
    blocks a cut falls in are stored again, in parts. The sets are those of the full frame, rank 2's other
    count at opCount 9000 included."""
    n, ranks, batch = 10_000, 4, 7_000
    paths = []
    for r in range(ranks):
        head = f"node-{r}:{100 + r}:{200 + r} [{r}] NCCL INFO "
        pre = [head + f"cudaDriverVersion {12000 + k}" for k in range(37 * (r + 1))]
        coll = [
            head + MSG.format(op=f"{i:x}", n=1024 * (1 + i % 7) * (3 if (r, i) == (2, 9_000) else 1))
            for i in range(n)
        ]
        (tmp_path / f"r{r}.log").write_text("\n".join(pre + coll) + "\n")
        paths.append(str(tmp_path / f"r{r}.log"))
    # reads of 64 KB: a batch ends inside a file, not where one ends
    big = read_logs(
        paths, tuning=Tuning(full_frames_max_bytes=0, batch_lines=batch, read_block_bytes=1 << 16)
    )
    cuts = sum(Path(p).read_text().count("\n") for p in paths) // batch  # batches ended inside a file
    assert big.coll.frame is None and cuts == 5
    # every block once, rank 2's last block once more, a split block per cut (a set per rank per batch before)
    assert big.coll.seqs.height <= n + FC.BLOCK + cuts * FC.BLOCK
    small = read_logs(paths)
    assert_frame_equal(_sets(big), _sets(small))
    at = _sets(big).filter(pl.col("op_count") == 9_000)
    assert at["sig"].n_unique() == 2


def test_interleaved_ranks_whose_sets_an_earlier_batch_holds(tmp_path: Path) -> None:
    """A set an earlier batch holds (rank 0 alone printed opCounts 0-2) met again in a later batch as one of
    several runs of a key in one block (two ranks' lines interleaved three at a time, as one output file of
    a node holds them): united with the key's other runs, so its pairs are gathered again. Facts as the
    general path's."""
    head0 = "node-0:100:200 [0] NCCL INFO "
    first = [head0 + MSG.format(op=f"{i:x}", n=8 * (1 + i % 5)) for i in range(3)]
    first += [head0 + f"cudaDriverVersion {12000 + k}" for k in range(700)]  # the rest of the first batch
    lines = []
    for k in range(0, 300, 3):
        for r in (2, 3):
            head = f"node-1:{100 + r}:{200 + r} [{r - 2}] NCCL INFO "
            lines += [head + MSG.format(op=f"{i:x}", n=8 * (1 + i % 5)) for i in range(k, k + 3)]
    paths = []
    for name, text in (("n0.log", first), ("n1.log", lines)):
        (tmp_path / name).write_text("\n".join(text) + "\n")
        paths.append(str(tmp_path / name))
    _same(paths, full_frames_max_bytes=0, batch_lines=600)
