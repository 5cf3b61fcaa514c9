"""The Markdown report in Jira's wiki markup (`report --format md --flavor jira`, issue 31 item 1): the same
section layouts, Jira's inline escaping (`md_jira.inline`) and Jira's blocks (`md_jira.blocks`); log
text stays inert in Jira as it does in Markdown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclscope.cli import main
from ncclscope.report import md_jira, md_text

REPO = Path(__file__).resolve().parents[2]
HANG = REPO / "samples" / "hang" / "torch26_class_a_8ranks"
# Jira markup a log line could hold: a noformat/code close, a link, table cells, phrase marks, a heading,
# a list, emoticons, an image, monospace, a line break, a bare URL, an entity.
HOSTILE = (
    "{noformat} [click|https://evil.example/x] |a|b| *bold* _em_ -gone- +ins+ ^sup^ ~sub~ "
    "(x) (!) :) !pic.png! {{mono}} \\\\ www.evil.example &copy; ??cite??"
)


def _report(tmp_path: Path, path: Path, flavor: str) -> str:
    out = tmp_path / f"r.{flavor}.md"
    assert main(["report", "-q", str(path), "-o", str(out), "--flavor", flavor]) == 0
    return out.read_text(encoding="utf-8")


def test_a_sample_in_both_flavours(tmp_path: Path) -> None:
    md, jira = _report(tmp_path, HANG, "markdown"), _report(tmp_path, HANG, "jira")
    assert md.startswith("# ncclscope report\n") and "## Hang view" in md and "```" in md
    assert jira.startswith("h1. ncclscope report\n")
    assert "h2. Hang view: how far each rank got" in jira and "h2. Ranks × configuration" in jira
    assert "|| ranks || host || process group || last collective || NCCL opCount (hex) ||" in jira
    assert re.search(r"^\| 5 \| node-00 \| 0 \| AllReduce \| 0x26 \|.*\| \*culprit\* \|$", jira, re.MULTILINE)
    assert jira.count("{noformat}") % 2 == 0 and jira.count("{noformat}") >= 2
    assert jira.count("{quote}") % 2 == 0
    for markdown_only in ("```", "<details>", "</details>", "<summary>", "\n## ", "**", "|---|", "\n> "):
        assert markdown_only not in jira, markdown_only
    # the same sections, in the same order
    heads = [h.removeprefix("## ") for h in re.findall(r"^## .*$", md, re.MULTILINE)]
    assert [h.removeprefix("h2. ") for h in re.findall(r"^h2\. .*$", jira, re.MULTILINE)] == heads


def test_the_default_flavour_is_plain_markdown(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    assert main(["report", "-q", str(HANG), "-o", str(out)]) == 0
    made = "- command: "  # the command lines differ by the output's name and the option
    keep = lambda md: [ln for ln in md.splitlines() if not ln.startswith(made)]
    assert keep(out.read_text(encoding="utf-8")) == keep(_report(tmp_path, HANG, "markdown"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["-o", "r.html", "--flavor", "jira"], "Markdown reports only"),
        (["-o", "r.md", "--flavor", "rst"], "rst"),
    ],
)
def test_a_flavour_that_does_not_apply_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    args = [a if not a.startswith("r.") else str(tmp_path / a) for a in args]
    assert main(["report", "-q", str(HANG), *args]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_log_line_holding_jira_markup_stays_literal(tmp_path: Path) -> None:
    log = tmp_path / "hostile.log"
    log.write_text(
        "node-01:100:1234 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
        f"node-01:100:1234 [0] NCCL WARN {HOSTILE}\n"
        "node-01:100:1234 [0] NCCL INFO comm 0x55d1 rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE\n",
        encoding="utf-8",
    )
    jira = _report(tmp_path, log, "jira")
    blocks = re.split(r"^\{noformat\}$", jira, flags=re.MULTILINE)
    quoted, prose = blocks[1::2], "".join(blocks[0::2])
    assert any(
        "{\u200bnoformat} [click|https://evil" in q for q in quoted
    )  # the evidence, verbatim but unclosable
    assert HOSTILE.split("{noformat} ", 1)[1] in "".join(quoted)
    # outside the quoted lines, nothing of it is read as markup
    for raw in (
        "[click|",
        "|a|b|",
        " *bold* ",
        " _em_ ",
        " -gone- ",
        "{{mono}}",
        "!pic.png!",
        "https://",
        "(x)",
    ):
        assert raw not in prose, raw


def test_inline_escapes() -> None:
    got = md_jira.inline(HOSTILE)
    assert got.startswith(
        "&#123;noformat&#125; &#91;click&#124;https&#58;//evil.example/x&#93; &#124;a&#124;b&#124; "
    )
    assert "\\*bold\\* \\_em\\_ \\-gone\\- \\+ins\\+ \\^sup\\^ \\~sub\\~" in got
    assert (
        "&#40;x) &#40;\\!) &#58;) \\!pic.png\\! &#123;&#123;mono&#125;&#125; &#92;&#92; www&#46;evil" in got
    )
    assert got.endswith("&amp;copy; \\?\\?cite\\?\\?")
    # inside words Jira reads no mark: names stay readable
    assert md_jira.inline("node-07 NCCL_IB_HCA a+b 2^10") == "node-07 NCCL_IB_HCA a+b 2^10"
    for head in ("h1. Title", "bq. quote", "# list"):
        assert not re.match(r"h[1-6]\. |bq\. |#", md_jira.inline(head))


_MARKS = "*_-+^~"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("{}[]|*_-+^~!?#()\\&<>:;/.xhq1 ab")), max_size=40))
def test_no_jira_markup_survives_inline(value: str) -> None:
    got = md_jira.inline(value)
    assert not set(got) & set("{}[]|<>")  # macros, links, cells, tags: only as entities
    assert "\\\\" not in got and "??" not in got and "://" not in got
    plain = re.sub(r"&#?\w+;", "e", got)  # entities read as one letter
    for i, ch in enumerate(plain):
        if ch in _MARKS and plain[i - 1 : i] != "\\":
            before, after = plain[i - 1 : i], plain[i + 1 : i + 2]
            assert before.isalnum() and after.isalnum(), (value, got)  # inside a word: not a mark
        if ch == "!":
            assert plain[i - 1 : i] == "\\"


def test_fenced_lines_cannot_close_noformat() -> None:
    lines = ["a {noformat} b", "{NOFORMAT}", "```", "## not a heading", "**not bold**", "| not | a table |"]
    with md_text.flavor("jira"):
        md = "\n".join(["## Head", "", md_text.fenced(lines), ""])
    got = md_jira.blocks(md).split("\n")
    assert got[0] == "h2. Head" and got[2] == "{noformat}" and got[-2] == "{noformat}"
    assert got[3:-2] == ["a {\u200bnoformat} b", "{\u200bNOFORMAT}", "```", *lines[3:]]


def test_the_flavour_is_scoped() -> None:
    with md_text.flavor("jira"):
        assert md_text.text("*x*") == "\\*x\\*" and md_text.code("a|b") == "{{a&#124;b}}"
    assert md_text.text("*x*") == "\\*x\\*" and md_text.code("a|b") == "`a|b`"
    assert md_text.text("[x]") == "\\[x\\]"
    with pytest.raises(ValueError, match="flavour"), md_text.flavor("rst"):
        pass
