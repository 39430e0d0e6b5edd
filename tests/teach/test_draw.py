"""Figures: the numbers drawn are the layout's, checked against values derived independently.

Every check reads the matplotlib objects of the figure (texts by their ``gid``, cell
rectangles and outline segments), never the data the figure was built from.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.colors import to_hex
from support.strategies_maps import small_layout_shapes

import layout_algebra as la
from layout_algebra.cli import main
from layout_algebra.meaning.references import by_formula
from layout_algebra.teach.draw import draw

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

FIGURE_1 = "f32[3,5]{1,0:T(2,2)}"
FIGURE_2 = "f32[4,8]{1,0:T(2,4)(2,1)}"
BF16_TPU = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"


def texts(ax) -> dict[str, str]:
    return {t.get_gid(): t.get_text() for t in ax.texts if t.get_gid()}


def elements(ax) -> dict[tuple[int, ...], int]:
    """Element index -> the number drawn in its cell."""
    out = {}
    for gid, text in texts(ax).items():
        if gid.startswith("element"):
            out[tuple(int(v) for v in gid.split("_")[1:])] = int(text)
    return out


def padding(ax) -> dict[tuple[int, ...], int]:
    out = {}
    for gid, text in texts(ax).items():
        if gid.startswith("padding_"):
            out[tuple(int(v) for v in gid.split("_")[1:])] = int(text)
    return out


def fills(ax) -> dict[tuple[int, int], str]:
    """(row, col) of each cell rectangle -> its fill colour."""
    (cells,) = [c for c in ax.collections if isinstance(c, PatchCollection)]
    out = {}
    for path, colour in zip(cells.get_paths(), cells.get_facecolors(), strict=True):
        x, y = path.vertices.min(axis=0)
        out[(round(y), round(x))] = to_hex(colour)
    return out


def red_segments(ax) -> list:
    return [
        seg
        for c in ax.collections
        if isinstance(c, LineCollection) and to_hex(c.get_colors()[0]) == "#d62728"
        for seg in c.get_segments()
    ]


# ------------------------------------------------------------------------- Figure 1 and 2
def figure_1_position(r: int, c: int) -> int:
    """The document's rule for 2x2 tiles of a 3x5 array: tiles row-major (3 per row, 4
    slots each), then row-major inside the tile."""
    return ((r // 2) * 3 + c // 2) * 4 + (r % 2) * 2 + c % 2


def test_figure_1_numbers_padding_and_tiles() -> None:
    grid, memory = draw(FIGURE_1).axes
    assert elements(grid) == {(r, c): figure_1_position(r, c) for r in range(3) for c in range(5)}
    assert elements(grid)[(2, 3)] == 17
    # the grid is padded to 4x6: the extra row and column are the padding slots
    element_positions = {figure_1_position(r, c) for r in range(3) for c in range(5)}
    assert set(padding(grid)) == {(3, c) for c in range(6)} | {(r, 5) for r in range(4)}
    assert set(padding(grid).values()) == set(range(24)) - element_positions
    colours = fills(grid)
    for (r, c), colour in colours.items():
        assert (colour == "#ffffff") == (r == 3 or c == 5)
    # one colour per tile, and the six tiles all differ
    by_tile = {}
    for (r, c), colour in colours.items():
        if colour != "#ffffff":
            by_tile.setdefault((r // 2, c // 2), set()).add(colour)
    assert all(len(v) == 1 for v in by_tile.values())
    assert len({next(iter(v)) for v in by_tile.values()}) == 6
    # memory: slot p shows the element whose position is p; the padding slots are blank and white
    slots = texts(memory)
    for r, c in itertools.product(range(3), range(5)):
        assert slots[f"slot_{figure_1_position(r, c)}"] == f"{r},{c}"
    strip = fills(memory)
    assert {c for (_, c), colour in strip.items() if colour == "#ffffff"} == set(
        range(24)
    ) - element_positions
    assert not red_segments(grid)  # one tile level: no packing groups


def test_figure_2_numbers_and_packing_pairs() -> None:
    (grid,) = draw(FIGURE_2, memory_strip=False).axes
    expected = {
        (r, c): 16 * (r // 2) + 8 * (c // 4) + 2 * (c % 4) + (r % 2) for r in range(4) for c in range(8)
    }
    assert elements(grid) == expected
    assert not padding(grid)
    # the (2,1) boxes: red outlines close above row 2k and below row 2k+1, never between them
    segments = red_segments(grid)
    horizontal = {round(a[1], 2) for a, b in segments if a[1] == b[1]}
    assert horizontal == {0.1, 1.9, 2.1, 3.9}
    vertical = {round(a[0], 2) for a, b in segments if a[0] == b[0]}
    assert vertical == {c + d for c in range(8) for d in (0.1, 0.9)}


def test_cropped_real_layout_states_the_crop_and_keeps_the_numbers() -> None:
    fig = draw(BF16_TPU)
    grid, memory = fig.axes
    assert "rows 0-15 of 1280, cols 0-31 of 16384" in fig.get_suptitle()
    assert "dims 0, 1 at index 0" in fig.get_suptitle()
    assert "0-127 of 167772160" in memory.get_title(loc="left").replace("\n", " ")

    def bf16(r: int, c: int) -> int:  # (8,128) tiles of 1024 slots, 128 per tile row; (2,1) pairs
        return ((r // 8) * 128 + c // 128) * 1024 + ((r % 8) // 2) * 256 + (c % 128) * 2 + r % 2

    assert elements(grid) == {(0, 0, r, c): bf16(r, c) for r in range(16) for c in range(32)}
    assert len(fills(grid)) == 16 * 32


def test_uncropped_picture_says_no_crop() -> None:
    fig = draw(FIGURE_1)
    assert "3 rows + 1 of padding, 5 cols + 1 of padding" in fig.get_suptitle()
    assert " of 3" not in fig.get_suptitle()


@pytest.mark.parametrize(
    ("shape", "view"),
    [
        ("f32[2,3,4]{0,2,1}", "rows: dim 0, cols: dim 2; dim 1 at index 0"),
        ("f32[5]{0:T(4)}", "one row: dim 0"),
        ("f32[]", "a scalar"),
    ],
)
def test_views_of_other_ranks(shape: str, view: str) -> None:
    fig = draw(shape)
    assert view in fig.get_suptitle()
    grid = fig.axes[0]
    m = la.layout_map(shape)
    assert elements(grid) == {
        index: by_formula(shape, index) for index in m.elements() if _in_view(index, shape)
    }


def _in_view(index: tuple[int, ...], shape: str) -> bool:
    m2m = la.parse_shape(shape).layout.minor_to_major
    return all(v == 0 for d, v in enumerate(index) if d not in m2m[:2])


def test_rank_one_padding_is_drawn() -> None:
    (grid,) = draw("f32[5]{0:T(4)}", memory_strip=False).axes
    assert padding(grid) == {(5,): 5, (6,): 6, (7,): 7}


def test_empty_array_draws() -> None:
    fig = draw("f32[0,3]{1,0:T(2,2)}")
    assert "no elements" in fig.get_suptitle()
    assert not elements(fig.axes[0])


# ------------------------------------------------------------------------------ files
@pytest.mark.slow
def test_png_and_svg_files(tmp_path: Path) -> None:
    png, svg = tmp_path / "f.png", tmp_path / "f.svg"
    draw(FIGURE_1, png)
    draw(FIGURE_1, svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = svg.read_text(encoding="utf-8")
    assert "<svg" in text and 'id="element_2_3"' in text
    other = tmp_path / "figure"
    draw(FIGURE_1, other, fmt="svg")
    assert "<svg" in other.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "f.jpg"}, "give a path ending in .png or .svg"),
        ({"fmt": "pdf"}, "give a path ending in .png or .svg"),
        ({"max_rows": 0}, "max_rows must be a positive integer"),
        ({"path": "/nonexistent-dir/f.png"}, "cannot write /nonexistent-dir/f.png"),
    ],
)
def test_bad_arguments_are_value_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        draw(FIGURE_1, **kwargs)


def test_symbolic_and_tuple_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="concrete sizes"):
        draw("f32[N,M]{1,0:T(8,128)}")
    with pytest.raises(ValueError, match="tuple"):
        draw("(f32[2], f32[3])")


# ----------------------------------------------------------------------------------- CLI
def test_cli_draw_writes_the_picture(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fig.png"
    assert main(["draw", FIGURE_2, "-o", str(out), "--no-memory", "--rows", "2", "--cols", "4"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert capsys.readouterr().out.strip() == f"{out}: {FIGURE_2}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["(f32[2], f32[3])", "-o", "{tmp}/t.png"], "tuple"),
        ([FIGURE_1, "-o", "/nonexistent-dir/f.png"], "cannot write /nonexistent-dir/f.png"),
        ([FIGURE_1, "-o", "{tmp}/f.gif"], ".png or .svg"),
        ([FIGURE_1, "-o", "{tmp}/f.png", "--rows", "0"], "max_rows must be a positive integer"),
        (["f32[N]{0}", "-o", "{tmp}/f.png"], "concrete sizes"),
    ],
)
def test_cli_draw_errors_are_one_line_with_status_2(tmp_path: Path, capsys, argv: list, message: str) -> None:
    code = main(["draw", *(a.replace("{tmp}", str(tmp_path)) for a in argv)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("layout-algebra draw: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------ random layouts
@pytest.mark.slow
@settings(max_examples=30)
@given(small_layout_shapes(max_rank=3, max_dim=5, max_slots=512))
def test_random_layouts_draw_the_documents_positions(shape) -> None:
    fig = draw(shape, max_rows=6, max_cols=6)
    grid = fig.axes[0]
    drawn = elements(grid)
    for index, position in drawn.items():
        assert position == by_formula(shape, index)
    # padding cells hold slots no element has, inside the buffer
    all_positions = {by_formula(shape, i) for i in itertools.product(*(range(d) for d in shape.dimensions))}
    slots = math.prod(la.tiled_dimensions(shape), start=1)
    for position in padding(grid).values():
        assert position not in all_positions and 0 <= position < slots
    # the memory strip labels each slot with the element the map's inverse names
    m = la.layout_map(shape)
    for gid, text in texts(fig.axes[1]).items():
        element = m.inverse(int(gid.removeprefix("slot_")))
        assert element is not None and by_formula(shape, element) == int(gid.removeprefix("slot_"))
        assert text.replace(",", " ").split() == [str(v) for v in _shown(element, shape, fig)]


def _shown(element: tuple[int, ...], shape, fig) -> tuple[int, ...]:
    """Slot labels are the full index, or (row, col) when the caption says the rest is 0."""
    caption = fig.axes[1].get_title(loc="left").replace("\n", " ")
    if "(row, col)" in caption:
        m2m = shape.layout.minor_to_major
        return tuple(element[d] for d in sorted(m2m[:2]))
    return element


# ------------------------------------------------------------------ the docs' figures
def _generate_figures_module():
    spec = importlib.util.spec_from_file_location("generate_figures", DOCS / "generate_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_image_the_docs_show_is_generated_by_draw(tmp_path: Path) -> None:
    gen = _generate_figures_module()
    shown = {
        name
        for page in DOCS.glob("*.md")
        for name in re.findall(r"\]\(figures/([^)]+)\)", page.read_text(encoding="utf-8"))
    }
    assert shown, "the tutorial shows figures"
    assert shown <= set(gen.FIGURES), (
        f"images not drawn by docs/generate_figures.py: {shown - set(gen.FIGURES)}"
    )
    for figure in gen.FIGURES.values():  # each builds (CI also writes them all for the site)
        draw(figure.shape, **figure.options)
    # Figures 1 and 2, as files: they show the document's numbers
    assert gen.FIGURES["figure1.png"].shape == FIGURE_1 and gen.FIGURES["figure2.png"].shape == FIGURE_2
    written = gen.generate(tmp_path, names=["figure1.png", "figure2.png"])
    assert sorted(p.name for p in written) == ["figure1.png", "figure2.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
