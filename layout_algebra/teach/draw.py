"""Pictures of layouts: the logical array as a grid of memory positions, and memory as a strip.

:func:`draw` is one more interpreter of a layout's map (:mod:`layout_algebra.meaning.layout_map`):
it asks the map where each element lives and paints the answers. Nothing about tiling is
worked out here a second time: the number in a cell is ``layout_map(shape).forward(index)``,
a white cell is one the map calls padding, and the colours and outlines group cells by
the values the map's own stages produce.

What a picture shows, for ``f32[3,5]{1,0:T(2,2)}`` (the tiled-layout document's Figure 1):

* the logical array as a grid, row 0 on top, each element labelled with its position in
  memory, counted in element slots;
* the grid grown to whole tiles of the **first** tile level, so the padding shows: the
  extra row and column are white, labelled in grey with the slot they occupy;
* each first-level tile in its own colour, with a black border;
* with two or more tile levels, each tile of the **last** level outlined in red: the
  2x1 pairs of ``(2,4)(2,1)``, the pairs of rows sharing a 32-bit word in bf16's
  ``(8,128)(2,1)``;
* below, the buffer itself (optional): slots in memory order, left to right, wrapped into
  rows, each labelled with the index of the element stored there, padding white.

The numbers can be read back from the figure, which is how the tests check them. Every
text has a ``gid`` (an ``id`` in SVG) saying what it labels: ``"element_2_3"`` for the
element at (2, 3), ``"padding_3_0"`` for a padding cell of the grid, ``"slot_17"`` for
memory slot 17:

>>> from layout_algebra.teach.draw import draw, layout_picture
>>> fig = draw("f32[3,5]{1,0:T(2,2)}")
>>> grid, memory = fig.axes
>>> labels = {t.get_gid(): t.get_text() for t in grid.texts}
>>> labels["element_2_3"]                 # the document's 17
'17'
>>> [labels[f"element_0_{c}"] for c in range(5)]
['0', '1', '4', '5', '8']
>>> labels["padding_0_5"], labels["padding_3_0"]
('9', '14')
>>> {t.get_gid(): t.get_text() for t in memory.texts}["slot_17"]
'2,3'

The same facts without matplotlib, as plain data (:func:`layout_picture`):

>>> picture = layout_picture("f32[4,8]{1,0:T(2,4)(2,1)}")     # the document's Figure 2
>>> [cell.position for cell in picture.cells if cell.row == 1]
[1, 3, 5, 7, 9, 11, 13, 15]
>>> picture.extent_text
'4 rows, 8 cols'

Large arrays are cropped to their top-left corner, and the title says so:

>>> picture = layout_picture("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}", max_rows=16, max_cols=32)
>>> picture.view_text
'rows: dim 2, cols: dim 3; dims 0, 1 at index 0'
>>> picture.extent_text
'rows 0-15 of 1280, cols 0-31 of 16384'
>>> picture.memory_text
'memory: element slots 0-127 of 167772160, in order; each shows the (row, col) of its element (dims 0, 1 at index 0)'

Figures are built on matplotlib's Agg canvas (no display needed) and returned; give a
path ending in ``.png`` or ``.svg`` to also save one.

With ``fmt="html"`` (or a path ending in ``.html``) the result is an interactive page
instead (:mod:`layout_algebra.teach.explorer`): the same grid and buffer, drawn by the browser
from certified generated JavaScript; point at an element to see its slot, offsets and
arithmetic. Several layouts can share one page:

>>> page = draw(["f32[16,256]{1,0:T(8,128)}", "f32[16,256]{0,1:T(8,128)}"], fmt="html")
>>> page.count('class="panels"'), "function p1_logical_index(p)" in page
(1, True)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from layout_algebra.meaning.layout_map import LayoutMap, layout_map
from layout_algebra.meaning.stages.pipeline import TILE
from layout_algebra.meaning.stages.stages import Linearize, Split
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import Shape

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from layout_algebra.teach.explorer import Panel

__all__ = ["FORMATS", "Cell", "LayoutPicture", "Slot", "draw", "explorer_panel", "layout_picture"]

#: File formats :func:`draw` writes, by path suffix.
FORMATS = ("png", "svg", "html")

#: Fill colours of first-level tiles (light, so black numbers stay readable); padding is white.
PALETTE = (
    "#a6cee3",
    "#fdbf6f",
    "#b2df8a",
    "#cab2d6",
    "#fb9a99",
    "#ffff99",
    "#8dd3c7",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
)
PADDING_COLOUR = "#ffffff"
GROUP_COLOUR = "#d62728"

_CELL_INCHES = 0.42


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: an element, or a padding slot of the first tile level.

    ``index`` is the full logical index (for padding, past the array's edge in a drawn
    dimension); ``row, col`` place it in the picture; ``position`` is its element slot;
    ``tile`` and ``group`` name its first-level and last-level tile (``group`` is
    ``None`` with fewer than two tile levels).
    """

    row: int
    col: int
    index: tuple[int, ...]
    position: int
    padding: bool
    tile: Hashable
    group: Hashable


@dataclass(frozen=True)
class Slot:
    """One element slot of the buffer: its ``position``, the ``element`` stored there
    (``None`` for padding) and the tiles it belongs to (``None`` past the tiled shape,
    in the ``L(n)`` tail)."""

    position: int
    element: tuple[int, ...] | None
    tile: Hashable
    group: Hashable


@dataclass(frozen=True)
class LayoutPicture:
    """Everything a figure shows, computed from the layout map; :func:`draw` paints it.

    ``rows_dim`` and ``cols_dim`` are the logical dimensions drawn down and across
    (``None`` where a rank-0 or rank-1 array has no such dimension); ``n_rows`` and
    ``n_cols`` the grid drawn (``beyond``: the cells just past a crop, not drawn);
    ``slots`` the start of the buffer, drawn ``strip_width``
    slots a row.
    """

    shape_text: str
    rows_dim: int | None
    cols_dim: int | None
    n_rows: int
    n_cols: int
    cells: tuple[Cell, ...]
    beyond: tuple[Cell, ...]
    slots: tuple[Slot, ...]
    strip_width: int
    view_text: str
    extent_text: str
    memory_text: str
    legend_text: str
    slot_labels: tuple[str, ...]

    @property
    def title(self) -> str:
        return f"{self.shape_text}\n{self.view_text}\n{self.extent_text}"


# ------------------------------------------------------------------------ reading the map
@dataclass(frozen=True)
class _Levels:
    """Where, in the map's flat stage list, the first and last tile levels end."""

    first_end: int | None  # stages[:first_end] produce the first-level tiled index
    first_rank: int  # its last first_rank entries are positions inside the tile
    last_end: int | None  # the same for the last level, when there are two or more
    last_rank: int
    linearize_at: int
    first_tile: str
    last_tile: str


def _levels(m: LayoutMap) -> _Levels:
    ends = []
    count = 0
    for step in m.steps:
        count += len(step.stages)
        if step.tile is not None and step.stages:
            split = next(s for s in step.stages if isinstance(s, Split))
            ends.append((count, len(split.tile), str(step.tile)))
    linearize_at = next(k for k, s in enumerate(m.stages) if isinstance(s, Linearize))
    if not ends:
        return _Levels(None, 0, None, 0, linearize_at, "", "")
    first, last = ends[0], ends[-1]
    if len(ends) == 1:
        return _Levels(first[0], first[1], None, 0, linearize_at, first[2], "")
    return _Levels(first[0], first[1], last[0], last[1], linearize_at, first[2], last[2])


def _view_dims(m: LayoutMap) -> tuple[int | None, int | None]:
    """The logical dims drawn down and across: the two minor-most, in logical order."""
    m2m = m.shape.effective_layout.minor_to_major
    if m.rank == 0:
        return None, None
    if m.rank == 1:
        return None, 0
    low, high = sorted(m2m[:2])
    return low, high


def _padded_extent(m: LayoutMap, dim: int | None) -> int:
    """Size of logical ``dim`` grown to whole tiles of the first tile level (as the map's
    first ``Pad`` stage grows it), or its own size where the first level does not pad it
    alone (no tiles, or merged with other dims by ``*``)."""
    if dim is None:
        return 1
    size = m.shape.dimensions[dim]
    first_tile = next((step for step in m.steps if step.role == TILE), None)
    if first_tile is None:
        return size
    place: int | None = m.physical_order.carried_dimension(dim)  # its place in physical order
    for stage in first_tile.stages:
        if place is None:  # merged with other dims by '*'
            return size
        if isinstance(stage, Split):  # the tile splits the padded dims
            return int(stage.domain[place])
        place = stage.carried_dimension(place)
    return size


def _fixed_index(m: LayoutMap, rows_dim: int | None, cols_dim: int | None, r: int, c: int) -> tuple[int, ...]:
    index = [0] * m.rank
    if rows_dim is not None:
        index[rows_dim] = r
    if cols_dim is not None:
        index[cols_dim] = c
    return tuple(index)


def _key(value: tuple, rank: int) -> tuple:
    return tuple(int(v) for v in value[: len(value) - rank])


def _grid_cells(
    m: LayoutMap, levels: _Levels, rows_dim: int | None, cols_dim: int | None, n_rows: int, n_cols: int
) -> list[Cell]:
    dims = m.shape.dimensions
    through = levels.linearize_at + 1
    cells = []
    for r in range(n_rows):
        for c in range(n_cols):
            index = _fixed_index(m, rows_dim, cols_dim, r, c)
            inside = all(0 <= i < d for i, d in zip(index, dims, strict=True))
            # An element's position is the map's forward(); a padding cell of the first tile
            # level has no element, so run its (past-the-edge) index through the same stages.
            position = m.forward(index) if inside else int(m.apply(index, through=through)[0])
            tile = (
                _key(m.apply(index, through=levels.first_end), levels.first_rank) if levels.first_end else ()
            )
            group = (
                _key(m.apply(index, through=levels.last_end), levels.last_rank) if levels.last_end else None
            )
            cells.append(Cell(r, c, index, position, m.is_padding(position), tile, group))
    return cells


def _memory_slots(m: LayoutMap, levels: _Levels, count: int) -> list[Slot]:
    linearize = m.stages[levels.linearize_at]
    (tiled_count,) = linearize.range
    slots = []
    for p in range(count):
        element = m.inverse(p)
        tile = group = None
        if p < tiled_count:
            # Back from the position through the stages to each tile level's tiled index.
            value = linearize.inverse((p,))
            group = _key(value, levels.last_rank) if levels.last_end else None
            if levels.first_end is None:
                tile = ()
            else:
                for stage in reversed(m.stages[levels.first_end : levels.linearize_at]):
                    value = stage.inverse(value)
                tile = _key(value, levels.first_rank)
        slots.append(Slot(p, element, tile, group))
    return slots


def _extent_phrase(name: str, logical: int, extent: int, drawn: int) -> str:
    if drawn < logical:
        return f"{name} 0-{drawn - 1} of {logical}"
    text = f"{logical} {name}"
    if drawn > logical:
        text += f" + {drawn - logical} of padding"
    if drawn < extent:
        text += f" (padding cropped at {drawn})"
    return text


def _dims(dims: list[int]) -> str:
    """``[1]`` -> ``"dim 1"``, ``[0, 1]`` -> ``"dims 0, 1"``."""
    return ("dim " if len(dims) == 1 else "dims ") + ", ".join(map(str, dims))


def _check_limit(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    return value


def layout_picture(
    shape: Shape | str, *, max_rows: int = 16, max_cols: int = 32, memory_slots: int | None = None
) -> LayoutPicture:
    """What :func:`draw` shows for ``shape``, as data: the grid's cells and the memory's slots.

    The grid is the two minor-most dimensions of ``minor_to_major`` (in logical order,
    so a 2-D array is drawn as it is indexed), other indices 0; rank 1 is one row and a
    scalar one cell. It is grown to whole first-level tiles and cropped to
    ``max_rows`` x ``max_cols``. The memory shows the first ``memory_slots`` slots
    (default ``4 * max_cols``).

    >>> p = layout_picture("f32[3,5]{1,0:T(2,2)}")
    >>> p.n_rows, p.n_cols, p.extent_text
    (4, 6, '3 rows + 1 of padding, 5 cols + 1 of padding')
    >>> [s.position for s in p.slots if s.element is None]
    [9, 11, 14, 15, 18, 19, 21, 22, 23]
    """
    _check_limit("max_rows", max_rows)
    _check_limit("max_cols", max_cols)
    m = layout_map(shape)
    if m.is_symbolic:
        raise InvalidArgumentError(f"{m.shape}: a picture needs concrete sizes; give the dimensions numbers")
    levels = _levels(m)
    rows_dim, cols_dim = _view_dims(m)
    dims = m.shape.dimensions
    empty = math.prod(dims) == 0
    row_extent, col_extent = _padded_extent(m, rows_dim), _padded_extent(m, cols_dim)
    n_rows = 0 if empty else min(row_extent, max_rows)
    n_cols = 0 if empty else min(col_extent, max_cols)
    # One more row and column past a crop, not drawn: they tell whether a tile or a packing
    # group goes on past the edge (then it is left open) or ends there (then it is closed).
    more_rows, more_cols = (0, 0) if empty else (int(n_rows < row_extent), int(n_cols < col_extent))
    cells, beyond = [], []
    for cell in _grid_cells(m, levels, rows_dim, cols_dim, n_rows + more_rows, n_cols + more_cols):
        (cells if cell.row < n_rows and cell.col < n_cols else beyond).append(cell)

    total = int(m.size_in_elements)
    shown = min(
        total, _check_limit("memory_slots", memory_slots) if memory_slots is not None else 4 * max_cols
    )
    slots = _memory_slots(m, levels, shown)

    if m.rank == 0:
        view = "a scalar: one element"
        extent = "1 element"
    else:
        others = [d for d in range(m.rank) if d not in (rows_dim, cols_dim)]
        if rows_dim is None:
            view = "one row: dim 0"
        else:
            view = f"rows: dim {rows_dim}, cols: dim {cols_dim}"
        if others:
            view += f"; {_dims(others)} at index 0"
        if empty:
            extent = "no elements (a dimension has size 0)"
        else:
            parts = []
            if rows_dim is not None:
                parts.append(_extent_phrase("rows", dims[rows_dim], row_extent, n_rows))
            parts.append(_extent_phrase("cols", dims[cols_dim], col_extent, n_cols))
            extent = ", ".join(parts)

    unit = f"{m.element_bits}-bit element slots" if m.element_bits % 8 else "element slots"
    if shown == 0:
        memory = "memory: no slots"
    elif shown == total:
        memory = f"memory: all {total} {unit}, in order"
    else:
        memory = f"memory: {unit} 0-{shown - 1} of {total}, in order"
    slot_labels, labelled_by_view = _slot_labels(m, slots, rows_dim, cols_dim)
    if shown:
        if labelled_by_view and m.rank > 2:
            fixed = [d for d in range(m.rank) if d not in (rows_dim, cols_dim)]
            memory += f"; each shows the (row, col) of its element ({_dims(fixed)} at index 0)"
        else:
            memory += "; each shows the index of its element"

    legend = "number in a cell: the element's position in memory (element slot); white: padding"
    if levels.first_end is not None:
        legend += f"; colours: tiles {levels.first_tile}"
    if levels.last_end is not None:
        legend += f"; red: last-level tiles {levels.last_tile}"
    return LayoutPicture(
        shape_text=str(m.shape),
        rows_dim=rows_dim,
        cols_dim=cols_dim,
        n_rows=n_rows,
        n_cols=n_cols,
        cells=tuple(cells),
        beyond=tuple(beyond),
        slots=tuple(slots),
        strip_width=min(shown, max_cols) if shown else 0,
        view_text=view,
        extent_text=extent,
        memory_text=memory,
        legend_text=legend,
        slot_labels=tuple(slot_labels),
    )


def _slot_labels(
    m: LayoutMap, slots: list[Slot], rows_dim: int | None, cols_dim: int | None
) -> tuple[list[str], bool]:
    """Labels of memory slots: the element's full index, or just (row, col) when every
    element shown has index 0 in the other dims (short labels for high ranks)."""
    view = [d for d in (rows_dim, cols_dim) if d is not None]
    elements = [s.element for s in slots if s.element is not None]
    by_view = m.rank > 2 and all(e[d] == 0 for e in elements for d in range(m.rank) if d not in view)
    labels = []
    for s in slots:
        if s.element is None:
            labels.append("")
        else:
            shown = [s.element[d] for d in view] if by_view else list(s.element)
            labels.append(",".join(map(str, shown)))
    return labels, by_view


# ------------------------------------------------------------------------------- painting
def _colours(picture: LayoutPicture) -> dict[Hashable, str]:
    """A colour per first-level tile; tiles that touch (in the grid or the strip) differ."""
    order: list[Hashable] = []
    neighbours: dict[Hashable, set] = {}

    def note(a: Hashable, b: Hashable | None = None) -> None:
        if a not in neighbours:
            neighbours[a] = set()
            order.append(a)
        if b is not None and b != a:
            note(b)
            neighbours[a].add(b)
            neighbours[b].add(a)

    grid = {(c.row, c.col): c.tile for c in picture.cells}
    for (r, c), key in grid.items():
        note(key)
        for other in ((r, c + 1), (r + 1, c)):
            if other in grid:
                note(key, grid[other])
    width = picture.strip_width
    strip = {s.position: s.tile for s in picture.slots if s.tile is not None}
    for p, key in strip.items():
        note(key)
        for q in (p + 1 if (p + 1) % width else None, p + width):
            if q in strip:
                note(key, strip[q])
    colour: dict[Hashable, str] = {}
    used = dict.fromkeys(PALETTE, 0)
    for key in order:
        taken = {colour[n] for n in neighbours[key] if n in colour}
        free = [c for c in PALETTE if c not in taken] or list(PALETTE)
        colour[key] = min(free, key=used.__getitem__)  # least used: distinct while colours last
        used[colour[key]] += 1
    return colour


def _boundaries(
    keys: Mapping[tuple[int, int], Hashable], inset: float, context: Mapping[tuple[int, int], Hashable]
) -> list[list[tuple[float, float]]]:
    """Segments outlining each run of cells with equal keys, drawn ``inset`` inside them.

    A cell side is outlined where the neighbour across it (drawn, or in ``context``: not
    drawn) has another key or is absent; ``None`` keys are not outlined.
    """
    around = {**context, **keys}

    def differs(cell: tuple[int, int], key: Hashable) -> bool:
        return around.get(cell, _ABSENT) != key

    segments = []
    for (r, c), key in keys.items():
        if key is None:
            continue
        top, bottom = differs((r - 1, c), key), differs((r + 1, c), key)
        left, right = differs((r, c - 1), key), differs((r, c + 1), key)
        x0, x1 = c + (inset if left else 0), c + 1 - (inset if right else 0)
        y0, y1 = r + (inset if top else 0), r + 1 - (inset if bottom else 0)
        if top:
            segments.append([(x0, r + inset), (x1, r + inset)])
        if bottom:
            segments.append([(x0, r + 1 - inset), (x1, r + 1 - inset)])
        if left:
            segments.append([(c + inset, y0), (c + inset, y1)])
        if right:
            segments.append([(c + 1 - inset, y0), (c + 1 - inset, y1)])
    return segments


_ABSENT = object()


def _font_size(labels: Iterable[str]) -> float:
    longest = max((len(t) for t in labels), default=1)
    return max(3.0, min(9.0, _CELL_INCHES * 72 * 0.85 / (0.75 * max(longest, 1))))


def _suffix(index: tuple[int, ...]) -> str:
    """``(2, 3)`` -> ``"_2_3"``: an index in a ``gid`` (a valid SVG id once prefixed)."""
    return "".join(f"_{i}" for i in index)


def _wrapped(text: str, inches: float, fontsize: float) -> str:
    """``text`` broken into lines that fit ``inches`` at ``fontsize`` (roughly)."""
    import textwrap

    return textwrap.fill(text, width=max(20, int(inches * 72 / (fontsize * 0.55))), break_on_hyphens=False)


def _ticks(ax, n: int, axis: str) -> None:
    step = max(1, math.ceil(n / 32))
    values = list(range(0, n, step))
    centres = [v + 0.5 for v in values]
    if axis == "x":
        ax.set_xticks(centres, [str(v) for v in values], fontsize=6)
    else:
        ax.set_yticks(centres, [str(v) for v in values], fontsize=6)


def _paint_cells(ax, boxes, colours, labels, gids, text_colours, fontsize) -> None:
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    rects = [Rectangle((c, r), 1, 1) for r, c in boxes]
    ax.add_collection(
        PatchCollection(rects, facecolors=colours, edgecolors="#b0b0b0", linewidths=0.4, zorder=1)
    )
    for (r, c), text, gid, tc in zip(boxes, labels, gids, text_colours, strict=True):
        if text:
            ax.text(
                c + 0.5,
                r + 0.5,
                text,
                ha="center",
                va="center",
                fontsize=fontsize,
                color=tc,
                gid=gid,
                zorder=4,
            )


def _paint_outlines(ax, cells: Iterable, beyond: Iterable = ()) -> None:
    """Black borders around first-level tiles, red ones (inset) around last-level tiles."""
    from matplotlib.collections import LineCollection

    cells, beyond = list(cells), list(beyond)
    tiles = {box: item.tile for box, item in cells}
    groups = {box: item.group for box, item in cells}
    ax.add_collection(
        LineCollection(
            _boundaries(tiles, 0.0, {box: item.tile for box, item in beyond}),
            colors="black",
            linewidths=1.6,
            zorder=2,
        )
    )
    if any(v is not None for v in groups.values()):
        segments = _boundaries(groups, 0.1, {box: item.group for box, item in beyond})
        ax.add_collection(LineCollection(segments, colors=GROUP_COLOUR, linewidths=1.3, zorder=3))


def _frame(ax, width: int, height: int) -> None:
    ax.set_xlim(0, max(width, 1))
    ax.set_ylim(max(height, 1), 0)
    ax.set_aspect("equal")
    ax.tick_params(length=0, pad=1.5)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _render(picture: LayoutPicture, memory_strip: bool) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    colours = _colours(picture)
    width = picture.strip_width if memory_strip else 0
    strip_rows = math.ceil(len(picture.slots) / width) if width else 0
    grid_w, grid_h = max(picture.n_cols, 1), max(picture.n_rows, 1)
    cell = _CELL_INCHES
    margin_l, margin_r = 0.7, 0.3
    title_h, gap, caption_h = 1.0, 0.85, 0.55
    fig_w = max(max(grid_w, width) * cell + margin_l + margin_r, 5.0)
    fig_h = title_h + grid_h * cell + (gap + strip_rows * cell if memory_strip else 0) + caption_h
    fig = Figure(figsize=(fig_w, fig_h))
    FigureCanvasAgg(fig)
    fig.suptitle(picture.title, fontsize=9, y=1 - 0.08 / fig_h, va="top")
    legend = _wrapped(picture.legend_text, fig_w - 0.4, 6.5)
    fig.text(0.5, 0.08 / fig_h, legend, ha="center", va="bottom", fontsize=6.5)

    bottom = caption_h + ((gap + strip_rows * cell) if memory_strip else 0)
    ax = fig.add_axes(
        (margin_l / fig_w, bottom / fig_h, grid_w * cell / fig_w, grid_h * cell / fig_h), gid="layout_grid"
    )
    _frame(ax, picture.n_cols, picture.n_rows)
    boxes = [(c.row, c.col) for c in picture.cells]
    labels = [str(c.position) for c in picture.cells]
    gids = [("padding" if c.padding else "element") + _suffix(c.index) for c in picture.cells]
    fills = [PADDING_COLOUR if c.padding else colours[c.tile] for c in picture.cells]
    text_colours = ["#8c8c8c" if c.padding else "black" for c in picture.cells]
    _paint_cells(ax, boxes, fills, labels, gids, text_colours, _font_size(labels))
    _paint_outlines(
        ax,
        zip(boxes, picture.cells, strict=True),
        (((c.row, c.col), c) for c in picture.beyond),
    )
    if picture.cols_dim is not None and picture.n_cols:
        _ticks(ax, picture.n_cols, "x")
        ax.xaxis.tick_top()
        ax.xaxis.set_label_position("top")
        ax.set_xlabel(f"dim {picture.cols_dim}", fontsize=7, labelpad=2)
    else:
        ax.set_xticks([])
    if picture.rows_dim is not None and picture.n_rows:
        _ticks(ax, picture.n_rows, "y")
        ax.set_ylabel(f"dim {picture.rows_dim}", fontsize=7, labelpad=2)
    else:
        ax.set_yticks([])
    if not picture.cells:
        ax.text(0.5, 0.5, "no elements", ha="center", va="center", fontsize=8, gid="no_elements")

    if memory_strip:
        mem = fig.add_axes(
            (
                margin_l / fig_w,
                caption_h / fig_h,
                max(width, 1) * cell / fig_w,
                max(strip_rows, 1) * cell / fig_h,
            ),
            gid="memory_strip",
        )
        _frame(mem, width, strip_rows)
        boxes = [(s.position // width, s.position % width) for s in picture.slots] if width else []
        fills = [PADDING_COLOUR if s.element is None else colours[s.tile] for s in picture.slots]
        gids = [f"slot_{s.position}" for s in picture.slots]
        _paint_cells(
            mem,
            boxes,
            fills,
            picture.slot_labels,
            gids,
            ["black"] * len(boxes),
            _font_size(picture.slot_labels),
        )
        _paint_outlines(mem, zip(boxes, picture.slots, strict=True))
        mem.set_title(_wrapped(picture.memory_text, fig_w - margin_l, 7), fontsize=7, loc="left", pad=3)
        if width:
            _ticks(mem, width, "x")
            starts = list(range(strip_rows))
            mem.set_yticks([r + 0.5 for r in starts], [str(r * width) for r in starts], fontsize=6)
    return fig


def explorer_panel(
    shape: Shape | str, *, max_rows: int = 16, max_cols: int = 32, memory_slots: int | None = None
) -> Panel:
    """What the explorer page needs to show ``shape``: the map, the dims drawn, the tile levels.

    The same reading of the map as :func:`layout_picture` (the two minor-most dims, grown
    to whole first-level tiles); the page's window is ``max_rows`` x ``max_cols`` cells
    and ``memory_slots`` slots (default ``4 * max_cols``), ``max_cols`` a row.

    >>> p = explorer_panel("bf16[20,300]{1,0:T(8,128)(2,1)}")
    >>> p.row_extent, p.col_extent, p.first_tile, p.last_tile
    (24, 384, '(8,128)', '(2,1)')
    """
    from layout_algebra.teach.explorer import Panel

    _check_limit("max_rows", max_rows)
    _check_limit("max_cols", max_cols)
    slots = _check_limit("memory_slots", memory_slots) if memory_slots is not None else 4 * max_cols
    m = layout_map(shape)
    if m.is_symbolic:
        raise InvalidArgumentError(
            f"{m.shape}: an explorer page needs concrete sizes; give the dimensions numbers"
        )
    levels = _levels(m)
    rows_dim, cols_dim = _view_dims(m)
    return Panel(
        map=m,
        rows_dim=rows_dim,
        cols_dim=cols_dim,
        row_extent=_padded_extent(m, rows_dim),
        col_extent=_padded_extent(m, cols_dim),
        first_end=levels.first_end,
        first_rank=levels.first_rank,
        last_end=levels.last_end,
        last_rank=levels.last_rank,
        linearize_at=levels.linearize_at,
        first_tile=levels.first_tile,
        last_tile=levels.last_tile,
        grid_rows=max_rows,
        grid_cols=max_cols,
        strip_width=max_cols,
        strip_rows=math.ceil(slots / max_cols),
        palette=PALETTE,
    )


def _draw_html(
    shapes: Sequence[Shape | str],
    path: str | Path | None,
    max_rows: int,
    max_cols: int,
    memory_slots: int | None,
) -> str:
    from layout_algebra.teach.explorer import explorer_page, write_page

    panels = [
        explorer_panel(s, max_rows=max_rows, max_cols=max_cols, memory_slots=memory_slots) for s in shapes
    ]
    page = explorer_page(panels)
    if path is not None:
        write_page(page, path)
    return page


def draw(
    shape: Shape | str | Sequence[Shape | str],
    path: str | Path | None = None,
    *,
    memory_strip: bool = True,
    max_rows: int = 16,
    max_cols: int = 32,
    memory_slots: int | None = None,
    fmt: str | None = None,
) -> Figure | str:
    """Draw ``shape``'s layout; save it to ``path`` (PNG, SVG or HTML, by suffix or ``fmt``) if given.

    Returns the matplotlib ``Figure`` (on the Agg canvas; not registered with pyplot, so
    nothing accumulates). The first axes is the grid, the second (with ``memory_strip``)
    the memory; see the module documentation for what they show and how to read the
    numbers back. Raises ``ValueError`` for a shape without one exact map (a tuple, a
    symbolic size, ...), a format other than PNG, SVG or HTML, or a path it cannot write.

    ``fmt="html"`` returns the text of an
    interactive page (:mod:`layout_algebra.teach.explorer`) instead; ``shape`` may then be a
    list of shapes, shown side by side; ``max_rows``/``max_cols``/``memory_slots`` size
    its window.

    >>> fig = draw("bf16[4,8]{1,0:T(2,4)(2,1)}", memory_strip=False)
    >>> len(fig.axes)
    1
    """
    kind = None
    if path is not None or fmt is not None:
        kind = (fmt or Path(path).suffix.lstrip(".")).lower()
        if kind not in FORMATS:
            where = f"format {fmt!r}" if fmt else f"path {str(path)!r}"
            raise InvalidArgumentError(
                f"cannot draw to {where}: give a path ending in .png or .svg, or .html for an explorer page "
                "(or fmt='png'/'svg'/'html')"
            )
    several = isinstance(shape, (list, tuple))
    if kind == "html":
        shapes = list(shape) if several else [shape]
        return _draw_html(shapes, path, max_rows, max_cols, memory_slots)
    if several:
        raise InvalidArgumentError(
            "draw: several shapes go on one page only as HTML (fmt='html' or a path ending in .html)"
        )
    picture = layout_picture(shape, max_rows=max_rows, max_cols=max_cols, memory_slots=memory_slots)
    fig = _render(picture, memory_strip)
    if path is not None:
        try:
            fig.savefig(path, format=kind, dpi=150 if kind == "png" else None)
        except OSError as err:
            raise InvalidArgumentError(f"cannot write {path}: {err.strerror or err}") from None
    return fig
