"""Shapes and layout maps show their picture in Jupyter.

In a notebook, a cell that ends with a shape (``la.parse_shape(...)``) or a layout map
(``la.layout_map(...)``) shows the layout's figure (:func:`layout_algebra.teach.draw.draw`) as
SVG, with the shape's text above it, instead of a one-line repr. The figure is capped
(:data:`NOTEBOOK_ROWS` x :data:`NOTEBOOK_COLS` cells and :data:`NOTEBOOK_SLOTS` buffer slots,
the title says where it is cropped), so a 167-million-element array draws as fast and as
small as a tiny one. What cannot be drawn (a symbolic size, a tuple, a token) shows its text.

The data model does not know about pictures (it is the bottom layer, drawing is the top
one): :func:`register` adds the formatters to the running IPython; ``import layout_algebra``
calls it when IPython is running, so nothing needs to be done by hand.

>>> html = layout_html("f32[3,5]{1,0:T(2,2)}")
>>> html.startswith("<div") and "<svg" in html and "f32[3,5]{1,0:T(2,2)}" in html
True
>>> layout_html("f32[N,M]{1,0}") is None          # symbolic sizes: no picture, the text repr stays
True
>>> register(None)                                  # outside IPython: nothing to register
False
"""

from __future__ import annotations

import html
import io
from typing import Any

__all__ = ["NOTEBOOK_COLS", "NOTEBOOK_ROWS", "NOTEBOOK_SLOTS", "layout_html", "layout_svg", "register"]

#: The largest window a notebook picture draws (the rest is cropped, as the title says).
NOTEBOOK_ROWS = 8
NOTEBOOK_COLS = 16
NOTEBOOK_SLOTS = 32


def layout_svg(shape: Any) -> str | None:
    """The layout's figure as SVG text (capped), or ``None`` when the shape has no picture."""
    import matplotlib

    from layout_algebra.meaning.layout_map import LayoutMap
    from layout_algebra.teach.draw import draw

    if isinstance(shape, LayoutMap):
        shape = shape.shape
    try:
        figure = draw(shape, max_rows=NOTEBOOK_ROWS, max_cols=NOTEBOOK_COLS, memory_slots=NOTEBOOK_SLOTS)
    except ValueError:
        return None
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "layout_algebra"}):
        figure.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]


def layout_html(shape: Any) -> str | None:
    """The shape's text and its capped figure, as one HTML block (``None`` when it has no picture)."""
    from layout_algebra.meaning.layout_map import LayoutMap

    svg = layout_svg(shape)
    if svg is None:
        return None
    text = str(shape.shape if isinstance(shape, LayoutMap) else shape)
    return (
        f'<div class="layout-algebra"><code>{html.escape(text)}</code>'
        f'<div style="max-width: 100%; overflow-x: auto">{svg}</div></div>'
    )


def register(ipython: Any) -> bool:
    """Show shapes and layout maps as pictures in ``ipython`` (``get_ipython()``); ``False`` if none."""
    if ipython is None or not hasattr(ipython, "display_formatter"):
        return False
    from layout_algebra.meaning.layout_map import LayoutMap
    from layout_algebra.model.shapes import ArrayShape

    formatter = ipython.display_formatter.formatters["text/html"]
    for cls in (ArrayShape, LayoutMap):
        formatter.for_type(cls, layout_html)
    return True
