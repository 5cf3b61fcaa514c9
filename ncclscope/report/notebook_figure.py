"""Report stage, notebook figures: a Plotly figure that also carries a static SVG of itself.

Jupyter front ends with Plotly's renderer (JupyterLab, Notebook 7, VS Code) draw the interactive
figure from its JSON mimetype. Everything else that shows a saved notebook (GitHub, nbviewer,
`nbconvert --to html`) ignores that mimetype and shows the next one it knows: the `image/svg+xml`
added here (`static_svg`), so an executed notebook shows its figures without JavaScript and
without kaleido or a browser. The SVG is only added beside a mimetype bundle Plotly built (a
Jupyter kernel); outside one (a terminal IPython opening a browser) Plotly's own display runs.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from ncclscope.report.static_svg import to_svg

SVG = "image/svg+xml"
PLOTLY = "application/vnd.plotly.v1+json"


class NotebookFigure(go.Figure):  # type: ignore[misc]
    """A `plotly.graph_objects.Figure` whose notebook output also holds a static SVG drawing."""

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, validate: bool = True, **kwargs: Any
    ) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(include, exclude, validate, **kwargs) or {})
        if bundle and not any(k.startswith("image/") for k in bundle):
            bundle[SVG] = self.to_static_svg()
            bundle.setdefault("text/plain", self._plain())
        return bundle

    def _ipython_display_(self) -> None:
        import plotly.io as pio

        if not (pio.renderers.render_on_display and pio.renderers.default):
            print(repr(self))
            return
        bundle = self._repr_mimebundle_()
        if SVG not in bundle:  # no mimetype renderer (a browser, a file): Plotly's display does it
            super()._ipython_display_()
            return
        from IPython.display import display

        display(bundle, raw=True)  # type: ignore[no-untyped-call]

    def to_static_svg(self) -> str:
        """The figure's data drawn as one self-contained SVG (no hover, no menus)."""
        return to_svg(self.to_dict())

    def _plain(self) -> str:
        title = self.layout.title.text or "figure"
        return f"<ncclscope figure: {title}>"


def notebook_figure(fig: go.Figure) -> NotebookFigure:
    """The same figure, as a `NotebookFigure` (same data and layout)."""
    return NotebookFigure(fig, skip_invalid=True)
