"""Notebooks: a shape or a layout map shows its picture in Jupyter (capped, so a huge array
draws small), and the example notebook in examples/ runs from top to bottom in a real kernel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import layout_algebra as la
from layout_algebra.teach.notebook import NOTEBOOK_COLS, NOTEBOOK_ROWS, layout_html, layout_svg

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "layouts_in_a_notebook.ipynb"
HUGE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"


def test_the_picture_labels_each_element_with_its_slot() -> None:
    svg = layout_svg("f32[3,5]{1,0:T(2,2)}")
    labels = set(re.findall(r">(\d+)</text>", svg))
    m = la.layout_map("f32[3,5]{1,0:T(2,2)}")
    slots = {str(m.forward((i, j))) for i in range(3) for j in range(5)}
    assert slots <= labels  # every element's slot is written on the picture


def test_a_huge_array_draws_a_capped_picture() -> None:
    svg = layout_svg(HUGE)
    small = layout_svg("bf16[16,256]{1,0:T(8,128)(2,1)}")
    assert len(svg) < 400_000 and len(svg) < 2 * len(small)
    m = la.layout_map(HUGE)
    drawn = {str(m.forward((0, 0, i, j))) for i in range(NOTEBOOK_ROWS) for j in range(NOTEBOOK_COLS)}
    beyond = {str(m.forward((0, 0, NOTEBOOK_ROWS + 3, j))) for j in range(NOTEBOOK_COLS)}
    labels = set(re.findall(r">(\d+)</text>", svg))
    assert drawn <= labels and not (beyond & labels - drawn)


@pytest.mark.parametrize("shape", ["f32[N,M]{1,0}", "(f32[2], s8[3])", "token[]"])
def test_what_has_no_picture_keeps_its_text(shape) -> None:
    assert layout_html(shape) is None


def test_the_example_notebook_runs_and_shows_pictures() -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbclient and ipykernel are test dependencies")
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    pictures = [o for o in outputs if "text/html" in o.get("data", {}) and "<svg" in o["data"]["text/html"]]
    assert len(pictures) == 3  # the two shapes and the layout map, each as its picture
    assert "(17, 96)" in [o.get("data", {}).get("text/plain") for o in outputs]
