"""Every notebook in notebooks/ runs top to bottom (cwd = notebooks/) on the bundled samples.

The kernel is this interpreter (a kernelspec written to a temporary folder), so the test needs no
`ipykernel install` and never picks up another Python's kernel on a fresh CI machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
