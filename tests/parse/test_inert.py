"""Lines rejected early (`inert`) are exactly those no pattern can claim: needles, prefix test, evidence kept."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from ncclscope import grammar as G
from ncclscope.frames import LogFrames
from ncclscope.parse import classify_inputs, read_logs
from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
from ncclscope.parse.logs.keep import inert
from ncclscope.parse.logs.keep.policy import combined
from ncclscope.parse.logs.lines import needles, peel
from ncclscope.parse.logs.lines.runtime_lines import ANCHOR
from ncclscope.session import analyze, keep_policy
from ncclscope.tuning import Tuning

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
GOLDEN = REPO / "tests" / "golden" / "families"
GENERAL = Tuning(fast_paths=False)


def _sample_inputs() -> list[Path]:
    return [
        *sorted((SAMPLES / "logs").glob("*.log")),
        *sorted((SAMPLES / "complete").glob("*.gz")),
        *sorted(p for p in (SAMPLES / "hang").iterdir() if p.is_dir()),
        *sorted(p for p in (SAMPLES / "capture").iterdir() if p.is_dir()),
    ]


def _same(a: LogFrames, b: LogFrames) -> None:
    assert a.coverage == b.coverage and a.notes == b.notes
    for name in (*a.table_names(), "streams"):
        try:
            assert_frame_equal(getattr(a, name), getattr(b, name))
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None


@pytest.mark.parametrize("path", _sample_inputs(), ids=lambda p: p.name)
def test_fast_paths_give_the_general_paths_frames(path: Path) -> None:
    logs = classify_inputs([str(path)]).logs
    _same(read_logs(logs), read_logs(logs, tuning=GENERAL))


@pytest.mark.corpus
def test_fast_paths_give_the_general_paths_frames_on_the_corpus(shared_dir: Path) -> None:
    for folder in ("issues", "complete"):
        paths = sorted(str(p) for p in (shared_dir / "corpus" / folder).glob("*.log"))
        _same(read_logs(paths), read_logs(paths, tuning=GENERAL))


@pytest.mark.parametrize("path", _sample_inputs(), ids=lambda p: p.name)
def test_evidence_lines_give_the_same_findings(path: Path) -> None:
    """A big input keeps only the unknown lines rules may cite: the findings do not change."""
    whole = analyze([str(path)])
    facts = analyze([str(path)], tuning=Tuning(full_frames_max_bytes=0))
    if whole.logs.inputs:  # (a folder of Flight Recorder dumps has no logs)
        assert facts.logs.unknown_count is not None and facts.logs.unknown.height <= whole.logs.unknown.height
    assert [f.to_json() for f in facts.findings] == [f.to_json() for f in whole.findings]


def _lines(paths: list[Path]) -> pl.DataFrame:
    raw = pl.concat([c for p in paths for c in read_chunks(str(p), ReadStats())])
    return peel.split(peel.clean(raw.with_columns(pl.int_range(pl.len()).alias("_row"))))


def test_every_prefixed_line_may_carry_a_prefix() -> None:
    df = _lines([*sorted((SAMPLES / "logs").glob("*.log")), *sorted(GOLDEN.glob("*.log"))])
    pre = df.filter(pl.col("prefixed"))
    assert pre.height > 200
    assert pre["clean"].str.contains(inert.PREFIX_POSSIBLE).all()
    mask, _ = inert.candidates(pre["clean"], None)
    assert mask.all()


def test_every_claimed_line_is_a_candidate() -> None:
    """Golden lines of every family, PyTorch lines and evidence lines are offered to the patterns."""
    paths = [*sorted(GOLDEN.glob("*.log")), *sorted((SAMPLES / "logs").glob("*.log"))]
    lf = read_logs([str(p) for p in paths], tuning=GENERAL)
    claimed = pl.concat(
        [
            getattr(lf, n).select("path", "line")
            for n in lf.table_names()
            if n not in ("unknown", "collectives", "streams")
        ]
        + [lf.collectives.select("path", "line")]
    )
    pattern = combined(keep_policy())
    assert pattern is not None
    kept = lf.unknown.filter(pl.col("text").str.contains(pattern)).select("path", "line")
    raw = pl.concat([c for p in paths for c in read_chunks(str(p), ReadStats())])
    want = raw.join(pl.concat([claimed, kept]).unique(), on=["path", "line"], how="semi")
    mask, _ = inert.candidates(inert.clean_text(want), None, keep_policy())
    assert mask.all(), want.filter(~mask)["raw"].to_list()[:5]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"\[(?:PG|Rank) \d", {"[PG ", "[Rank "}),
        (r"a\.{3,}b", {"a..."}),
        (r"(?i)Foo|bar", {"(?i)foo", "(?i)bar"}),
        (r"[Ww]atchdog caught", {"Watchdog caught", "watchdog caught"}),
        (r"x|.*", None),
        (r"#\d+ done", {" done"}),
    ],
)
def test_literals(pattern: str, expected: set[str] | None) -> None:
    assert needles.literals(pattern) == (frozenset(expected) if expected is not None else None)


_PATTERNS = [G.rule_regex(f, capture=False) for f in G.families()] + [ANCHOR.pattern, *keep_policy().patterns]


@pytest.mark.parametrize("pattern", _PATTERNS, ids=range(len(_PATTERNS)))
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_holds_a_needle(pattern: str, data: st.DataObject) -> None:
    """Random strings the pattern matches (Hypothesis `from_regex`) contain one of its needles."""
    lits = needles.literals(pattern)
    assert lits is not None
    text = data.draw(st.from_regex(re.compile(pattern), fullmatch=False))
    assert needles.contains_one(text, lits), (text, sorted(lits)[:5])


def test_keep_patterns_are_the_consumers_own() -> None:
    """The session's `KeepPolicy` is what the consumers declare, each pattern the very constant they search
    with (no copy in the reader): the rules' `searches=`, the quoted errors, align, hang (and diff reads
    align's RCCL banner)."""
    from ncclscope.align.facts_inputs import LAUNCHER, RCCL_BANNER
    from ncclscope.align.phase import APP_END
    from ncclscope.findings.quoted import NCCLTESTS
    from ncclscope.findings.registry import all_rules
    from ncclscope.findings.rules_config import PLUGIN_FAIL
    from ncclscope.findings.rules_errors import IB_COMPLETION
    from ncclscope.findings.rules_gpu import NVLS_BIND, UNHANDLED_CUDA
    from ncclscope.findings.rules_init import ELISION
    from ncclscope.findings.rules_kernel import LF_NEEDLE, XID_NEEDLE
    from ncclscope.findings.rules_library import COMPILED_WITH
    from ncclscope.hang.exits import _CRASH

    policy = keep_policy()
    want = (APP_END, PLUGIN_FAIL, ELISION, _CRASH, RCCL_BANNER, LAUNCHER, NCCLTESTS)
    assert set(policy.patterns) == {
        *want,
        IB_COMPLETION,
        NVLS_BIND,
        UNHANDLED_CUDA,
        XID_NEEDLE,
        LF_NEEDLE,
        COMPILED_WITH,
    }
    by_rule = {r.id: r.searches for r in all_rules() if r.searches}
    assert by_rule["ib-error"] == (IB_COMPLETION,) and ELISION in by_rule["init-incomplete"]
    src = (REPO / "ncclscope" / "parse").rglob("*.py")
    assert not any(p in f.read_text() for f in src for p in (APP_END, ELISION, _CRASH, NCCLTESTS))
    assert "RCCL_BANNER" in (REPO / "ncclscope" / "diff" / "facts.py").read_text()
    # Every reader of `logs.unknown` outside the parse stage, by file: a new one must declare its pattern
    # (`@rule(searches=)` or a SEARCHES tuple the session gathers; or read positions `evidence` keeps), then
    # update this count.
    uses = {}
    for p in sorted((REPO / "ncclscope").rglob("*.py")):
        n = len(re.findall(r"logs\.unknown\b(?!_)", p.read_text()))
        if n and "parse" not in p.parts:
            uses[str(p.relative_to(REPO / "ncclscope"))] = n
    assert uses == {
        "align/facts_inputs.py": 3,
        "align/phase.py": 1,  # the clean-end lines (APP_END), read once for the teardown and the success check
        "align/rankmap.py": 1,
        "diff/facts.py": 1,
        "findings/rules_config.py": 1,
        "findings/quoted.py": 2,  # the line after `Last error:` and NCCLTESTS
        "findings/rules_errors.py": 1,
        "findings/rules_gpu.py": 3,
        "findings/rules_init.py": 1,
        "findings/rules_kernel.py": 1,  # `NVRM: Xid` and libfabric lines (declared searches)
        "findings/rules_library.py": 1,  # nccl-tests' `compiled with NCCL` header (declared search)
        "hang/exits.py": 3,
        "hang/verdict.py": 1,
        "report/views_health.py": 2,
    }


def test_minimal_needles_give_the_same_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`needles.minimal` drops needles holding another (a folded one in any case): a line holds one of the
    minimal set exactly when it holds one of the whole set. On the reader's own set and every line of the
    samples, with their text case-swapped and cut too; the set is kept on disk and read back the same."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    whole = inert.needle_set(keep_policy()) | {
        "(?i)Unhandled Cuda Error",
        "unhandled cuda error here",
        "NCCL WARN x",
    }
    small = needles.minimal(whole)
    assert len(small) < len(whole) * 0.8 and needles.minimal(whole) == small  # the second read: from disk
    assert list(tmp_path.rglob("minimal-*.json"))
    texts = [
        str(t)
        for p in sorted((SAMPLES / "logs").glob("*.log"))
        for t in p.read_text(errors="replace").splitlines()
    ]
    texts += (
        [t.swapcase() for t in texts] + [t[len(t) // 3 :] for t in texts] + ["xx Unhandled CUDA error yy"]
    )
    bad = [t for t in texts if needles.contains_one(t, whole) != needles.contains_one(t, small)]
    assert not bad, bad[:3]
    assert sum(needles.contains_one(t, small) for t in texts) > len(texts) // 10


def test_a_big_input_keeps_what_the_policy_searches(tmp_path: Path) -> None:
    """Past the budget of whole unknown lines, a line is kept because a consumer declared its pattern: with
    the session's policy the crash line mid-log is kept, with no search it is counted only."""
    lines = [f"app line {i}" for i in range(400)]
    lines[200] = "worker 3: Segmentation fault (core dumped)"
    path = tmp_path / "rank0.log"
    path.write_text("node-00:100:100 [0] NCCL INFO Bootstrap : Using eth0\n" + "\n".join(lines) + "\n")
    small = Tuning(full_frames_max_bytes=0)
    with_policy = read_logs([str(path)], tuning=small, policy=keep_policy())
    without = read_logs([str(path)], tuning=small)
    assert "Segmentation fault" in " ".join(with_policy.unknown["text"].to_list())
    assert "Segmentation fault" not in " ".join(without.unknown["text"].to_list())
    assert with_policy.unknown_count == without.unknown_count == 400
