"""Report sections (issue 31 item 9): each section module holds its data builder and its layouts, and the
document, the Markdown, HTML and terminal renderers and the HTML menu loop over `report.sections.SECTIONS`:
a section added to that list (its module being the other file) shows up everywhere with no other edit."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from ncclscope.report import Options, document_for, render, sections, terminal
from ncclscope.report.section import Section

from .conftest import HOSTS, make_session


def _new_section() -> Section:
    """What a new section module would define: data from the session, and a layout per renderer."""

    def build(s, _p):  # type: ignore[no-untyped-def]
        return {"hosts": sorted(set(s.ranks["host"].drop_nulls().to_list()))}

    return Section(
        "probe",
        build,
        "a section added by the test",
        title="Probe section",
        menu="Probe",
        markdown=lambda doc: ["## Probe section", "", "hosts: " + ", ".join(doc["probe"]["hosts"]), ""],
        html=lambda doc, _figs: "<p>hosts: " + ", ".join(doc["probe"]["hosts"]) + "</p>",
        terminal=lambda doc, con: con.print("probe hosts: " + ", ".join(doc["probe"]["hosts"])),
    )


@pytest.fixture
def with_probe(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sections, "SECTIONS", (*sections.SECTIONS, _new_section()))


def test_a_section_in_the_list_reaches_every_renderer(with_probe) -> None:  # type: ignore[no-untyped-def]
    s = make_session()
    doc = document_for(s)
    assert doc["probe"] == {"hosts": sorted(HOSTS)}
    md = render(s, "markdown")
    assert "## Probe section" in md and f"hosts: {', '.join(sorted(HOSTS))}" in md
    page = render(s, "html")
    assert '<section class="block" id="probe"><h2>Probe section</h2><p>hosts: ' in page
    nav = re.search(r"<nav>(.*?)</nav>", page, flags=re.DOTALL)
    assert nav and '<a href="#probe">Probe</a>' in nav.group(1)
    buf = io.StringIO()
    terminal.render(doc, Console(file=buf, width=200, color_system=None))
    assert "probe hosts: " + ", ".join(sorted(HOSTS)) in buf.getvalue()


def test_a_new_sections_data_is_redacted_like_the_rest(with_probe) -> None:  # type: ignore[no-untyped-def]
    md = render(make_session(), "markdown", redact=True)
    probe = md.split("## Probe section", 1)[1]
    assert not any(h in probe for h in HOSTS) and "host-" in probe


def test_without_it_nothing_shows() -> None:
    s = make_session()
    assert "probe" not in document_for(s) and "Probe" not in render(s, "markdown")


def test_keys_are_unique_and_the_terminal_order_names_real_sections() -> None:
    keys = [sec.key for sec in sections.SECTIONS]
    assert len(keys) == len(set(keys))
    assert all(sections.by_key(k).terminal is not None for k in sections.TERMINAL)


def test_the_menu_lists_every_block_with_a_label() -> None:
    page = render(make_session(), "html")
    nav = re.search(r"<nav>(.*?)</nav>", page, flags=re.DOTALL)
    assert nav is not None
    linked = re.findall(r'href="#([\w-]+)"', nav.group(1))
    blocks = re.findall(r'<section class="block" id="([\w-]+)">', page)
    labelled = {sec.element_id for sec in sections.SECTIONS if sec.menu}
    assert linked == [b for b in blocks if b in labelled]
    assert {"findings", "hang", "ranks", "provenance"} <= set(linked)


def test_environment_data_is_typed_and_survives_the_document_and_redaction() -> None:
    from ncclscope.report import section_environment as env
    from ncclscope.report.section import Provenance

    s = make_session()
    data = env.build(s, Provenance())
    assert isinstance(data, env.Environment) and data.shape.processes == s.ranks.height
    assert env.of(document_for(s)) == data  # stored as a tree, read back typed, nothing lost
    redacted = env.of(document_for(s, Options(redact=True)))
    assert redacted.shape == data.shape and len(redacted.env) == len(data.env)


def test_provenance_data_is_typed_and_survives_the_document_and_redaction() -> None:
    from ncclscope.report import section_provenance as prov
    from ncclscope.report.section import Provenance

    s = make_session()
    data = prov.build(s, Provenance(command="ncclscope report x", redacted=False))
    assert isinstance(data, prov.Made) and data.command == "ncclscope report x"
    assert data.coverage.lines == s.logs.coverage.lines
    doc = document_for(s, Options(command="ncclscope report x"))
    assert prov.of(doc) == data
    assert prov.of(document_for(s, Options(redact=True))).redacted is True


def test_nccltests_data_is_typed_and_the_document_holds_plain_lists() -> None:
    from pathlib import Path

    from ncclscope.report import views_nccltests as nt
    from ncclscope.report.section import Provenance
    from ncclscope.session import analyze

    log = (
        Path(__file__).resolve().parents[2]
        / "samples"
        / "nccltests"
        / "dgxspark_roce_switch_ok_nccl2_28_9.log"
    )
    s = analyze([str(log)])
    data = nt.SECTION.build(s, Provenance())  # type: ignore[misc]
    assert (
        isinstance(data, nt.NcclTests) and data.runs and all(isinstance(r.rows[0], nt.Row) for r in data.runs)
    )
    doc = document_for(s)
    assert type(doc["nccltests"]["runs"]) is list and type(doc["nccltests"]["runs"][0]["rows"]) is list
    assert nt.of(doc) == data
