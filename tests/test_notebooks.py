"""Every notebook in notebooks/ runs top to bottom (cwd = notebooks/) on the bundled samples, and once run
it shows every figure without JavaScript: each Plotly output also holds a static SVG, which
`nbconvert --to html` writes inline (that part skips where nbconvert is not installed).

The kernel is this interpreter (a kernelspec written to a temporary folder), so the test needs no
`ipykernel install` and never picks up another Python's kernel on a fresh CI machine.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
KERNEL = "ncclscope-test-python"


@pytest.fixture(scope="module")
def kernel_manager_factory(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    root = tmp_path_factory.mktemp("kernels")
    spec = root / KERNEL
    spec.mkdir()
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "ncclscope tests",
                "language": "python",
            }
        )
    )
    ksm = KernelSpecManager(kernel_dirs=[str(root)], ensure_native_kernel=False)

    def make() -> KernelManager:
        return KernelManager(kernel_name=KERNEL, kernel_spec_manager=ksm)

    return make


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_manager_factory) -> None:  # type: ignore[no-untyped-def]
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), (
        "commit notebooks without outputs"
    )
    assert [c.cell_type for c in nb.cells[:2]] == ["markdown", "markdown"]  # Description, API, then Example
    client = nbclient.NotebookClient(
        nb,
        km=kernel_manager_factory(),
        timeout=300,
        allow_errors=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    figures = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "application/vnd.plotly.v1+json" in o.get("data", {})
    ]
    assert figures or "quickstart" in path.stem  # the figure notebooks did draw
    # Saved notebooks are shown by GitHub/nbviewer/nbconvert, which ignore Plotly's mimetype.
    assert all("image/svg+xml" in o["data"] for o in figures)
    _shown_without_javascript(nb, len(figures))


def _shown_without_javascript(nb, n_figures: int) -> None:  # type: ignore[no-untyped-def]
    try:
        from nbconvert import HTMLExporter
    except ImportError:
        return  # nbconvert is not a test dependency; the SVG check above still ran
    body, _ = HTMLExporter().from_notebook_node(nb)
    body = re.sub(r"<script\b.*?</script>", "", body, flags=re.DOTALL)  # what a page without JavaScript has
    # nbconvert writes an SVG output inline or as an <img> with a data: URL, depending on its version.
    inline = re.findall(r"<svg\b[^>]*>.*?</svg>", body, flags=re.DOTALL)
    images = [
        base64.b64decode(m).decode()
        for m in re.findall(r'<img[^>]*src="data:image/svg\+xml;base64,([^"]+)"', body)
    ]
    drawn = [d for d in inline + images if 'class="ncclscope-figure"' in d]
    assert len(drawn) == n_figures
    for d in drawn:
        ElementTree.fromstring(d)  # well-formed XML: a browser draws it
        # Data was drawn, or (an empty figure) the sentence saying why, not only a title.
        assert re.search(r"<(path|rect x|image|circle)\b", d) or d.count("<text") >= 2
