"""Every renderer through the one protocol: picked by name or suffix, deterministic, redactable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.errors import InputError
from ncclscope.report import RENDERERS, Options, json_report, renderer_for, write_report

from .conftest import make_session


@pytest.mark.parametrize(
    "name, path, expected",
    [
        ("json", None, "json"),
        ("md", None, "markdown"),
        ("markdown", None, "markdown"),
        ("HTML", None, "html"),
        (None, "r.md", "markdown"),
        (None, "out/R.HTML", "html"),
        (None, "r.json", "json"),
        (None, "r.htm", "html"),
    ],
)
def test_pick_by_name_or_suffix(name: str | None, path: str | None, expected: str) -> None:
    assert renderer_for(name, path).name == expected


@pytest.mark.parametrize("name, path", [("pdf", None), (None, "r.txt"), (None, None)])
def test_unknown_format_is_a_clear_error(name: str | None, path: str | None) -> None:
    with pytest.raises(InputError, match="format"):
        renderer_for(name, path)


@pytest.mark.parametrize("name", sorted(RENDERERS))
@pytest.mark.parametrize("redact", [False, True])
@pytest.mark.parametrize("traces", [False, True])
def test_every_renderer(name: str, redact: bool, traces: bool) -> None:
    s = make_session(with_traces=traces)
    r = RENDERERS[name]
    a = r.render(s, Options(command="ncclscope report x", redact=redact))
    b = r.render(make_session(with_traces=traces), Options(command="ncclscope report x", redact=redact))
    assert a == b, f"{name} is not deterministic"
    assert a.endswith("\n")


def test_every_renderer_on_an_empty_session(empty_session) -> None:  # type: ignore[no-untyped-def]
    for r in RENDERERS.values():
        assert r.render(empty_session, Options())


def test_json_keeps_its_schema_when_redacted() -> None:
    s = make_session()
    plain = json_report.to_dict(s)
    red = json.loads(RENDERERS["json"].render(s, Options(redact=True)))
    assert list(red) == list(plain)
    assert [f["id"] for f in red["findings"]] == [f["id"] for f in plain["findings"]]
    assert red["ranks"][0]["host"] == "host-1" and red["ranks"][0]["comm_ids"] == ["0xptr-1"]


def test_write_report(tmp_path: Path) -> None:
    out = write_report(make_session(), tmp_path / "r.md")
    assert out.read_text(encoding="utf-8").startswith("# ncclscope report")
    with pytest.raises(InputError, match="cannot write"):
        write_report(make_session(), tmp_path / "missing" / "r.md")
