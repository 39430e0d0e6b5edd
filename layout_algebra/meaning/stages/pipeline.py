"""Build the stage pipeline of a layout: what ``minor_to_major``, tiles, ``L(n)`` and ``E(n)`` mean.

One function, :func:`layout_steps`, turns an array shape into its pipeline:

1. **physical order**: ``Transpose`` by ``minor_to_major`` reversed (major first);
2. **each tile** ``(t_1..t_k)``, on the last ``k`` dimensions of the current shape
   (which after the first tile include cross-tile dimensions):
   ``PrependUnitDims`` if the shape has fewer than ``k`` dims, ``Combine`` for ``*``
   entries, ``Pad`` to multiples of the tile, ``Split`` each dim into (tile number,
   position in tile), ``Transpose`` the positions-in-tile to the minor end;
3. **linearize** row-major over the tiled shape (the element's position);
4. **tail padding** ``L(n)``: round the count up to a multiple of ``n``;
5. **to bits**: times the element size (``E(n)`` or the storage width).

>>> for step in layout_steps("f32[3,5]{1,0:T(2,2)}"):
...     print(step.label)
...     for stage in step.stages:
...         print("   ", stage.describe())
physical order (minor_to_major {1,0})
    physical order: order (0, 1), [3, 5] -> [3, 5]
tile 1: (2,2)
    pad: [3, 5] -> [4, 6]
    split by (2,2): [4, 6] -> [2, 2, 3, 2]
    tiles outside, positions inside: order (0, 2, 1, 3), [2, 2, 3, 2] -> [2, 3, 2, 2]
linearize
    linearize row-major: [2, 3, 2, 2] -> [24]
to bits
    to bits (32 per element): [24] -> [768]

Stages that do nothing are left out (an identity reorder, padding by zero), except
the physical-order step, which is always there to show ``minor_to_major``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import zip_longest
from typing import Any

from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    ToBits,
    Transpose,
    round_up_size,
)
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.meaning import element_size_in_bits, meaningful_array
from layout_algebra.model.shapes import COMBINE_DIMENSION, ArrayShape, Dim, Shape, Tile

__all__ = [
    "LINEARIZE",
    "PHYSICAL_ORDER",
    "TAIL_PADDING",
    "TILE",
    "TO_BITS",
    "Step",
    "layout_stages",
    "layout_steps",
    "offset_form",
    "same_offset_form",
]

#: The role of each step: which feature of the layout it realises (readers match on these).
PHYSICAL_ORDER = "physical order"
TILE = "tile"
LINEARIZE = "linearize"
TAIL_PADDING = "tail padding"
TO_BITS = "to bits"


@dataclass(frozen=True)
class Step:
    """A labelled group of stages: one feature of the layout (a tile level, ``L(n)``, ...).

    ``role`` is one of :data:`PHYSICAL_ORDER`, :data:`TILE`, :data:`LINEARIZE`,
    :data:`TAIL_PADDING`, :data:`TO_BITS`; ``label`` is the same for people.
    """

    label: str
    stages: tuple[Stage, ...]
    tile: Tile | None = None
    role: str = ""

    @property
    def domain(self) -> tuple[Dim, ...]:
        """The shape this step starts from (the domain of its first stage)."""
        return self.stages[0].domain

    @property
    def range(self) -> tuple[Dim, ...]:
        """The shape this step ends with (the range of its last stage)."""
        return self.stages[-1].range


def layout_steps(shape: Shape | str) -> tuple[Step, ...]:
    """The stage pipeline of ``shape``, grouped by the layout feature each stage realises.

    Raises ``LayoutSemanticsError`` for shapes without one meaning. Pipelines are immutable
    and built once per distinct shape (cached: compiler dumps repeat their shapes).
    """
    return _layout_steps(meaningful_array(shape))


@lru_cache(maxsize=4096)
def _layout_steps(array: ArrayShape) -> tuple[Step, ...]:
    bits = element_size_in_bits(array)  # raises LayoutSemanticsError for an E(n) too small for the type
    layout = array.effective_layout
    m2m = layout.minor_to_major
    order = Transpose(
        domain=tuple(array.dimensions),
        permutation=tuple(reversed(m2m)),
        role=PHYSICAL_ORDER,
    )
    m2m_text = "{" + ",".join(map(str, m2m)) + "}"
    steps = [Step(f"{PHYSICAL_ORDER} (minor_to_major {m2m_text})", (order,), role=PHYSICAL_ORDER)]
    dims = order.range
    for level, tile in enumerate(layout.tiles, start=1):
        stages = tile_stages(dims, tile)
        steps.append(Step(f"{TILE} {level}: {tile}", stages, tile, role=TILE))
        dims = stages[-1].range
    linearize = Linearize(domain=dims)
    steps.append(Step(LINEARIZE, (linearize,), role=LINEARIZE))
    count = linearize.range
    alignment = layout.tail_padding_alignment_in_elements
    if alignment > 1:
        align = AlignTail(domain=count, alignment=alignment)
        if align.has_holes:
            steps.append(Step(f"{TAIL_PADDING} L({alignment})", (align,), role=TAIL_PADDING))
            count = align.range
    steps.append(Step(TO_BITS, (ToBits(domain=count, bits=bits),), role=TO_BITS))
    return tuple(steps)


def offset_form(shape: Shape | str) -> tuple[Any, ...]:
    """What an element's bit offset is, given its physical index: the physical dimensions
    of extent other than 1, then the ``unit_free_form`` of every later stage that does
    something to the other dimensions.

    Two layouts with equal forms put the elements with equal physical indices (unit
    dimensions aside) at equal bit offsets: the stages after the physical order map the
    shortened index the same way, step by step. It is a sufficient condition only (two
    different pipelines may still agree). Unit dimensions that a tile pads are not dropped:
    ``s8[2,2]{1,0:T(2)(2,1,1)}`` and ``s8[2,1,2]{2,1,0:T(2)(2,1,1)}`` have the same physical
    dimensions without their unit ones, but the second tile grows the unit dimension of the
    second to 2 (and in the first, it moves the rows inside the columns):

    >>> offset_form("s8[2,2]{1,0:T(2)(2,1,1)}")
    ((2, 2), ('transpose', (2, 2), (1, 0)), ('linearize', (2, 2)), ('to bits', 8))
    >>> offset_form("s8[2,1,2]{2,1,0:T(2)(2,1,1)}")[:2]
    ((2, 2), ('pad', ((2, 2), (1, 2), (2, 2))))

    A unit dimension that nothing pads changes nothing, nor does a tile of 1 or ``L(n)``:

    >>> offset_form("f32[1,8,256]{2,1,0:T(8,128)}") == offset_form("f32[8,256]{1,0:T(8,128)(1,1)L(4096)}")
    True
    """
    return tuple(_offset_form(meaningful_array(shape)))


def same_offset_form(a: Shape | str, b: Shape | str) -> bool:
    """``offset_form(a) == offset_form(b)``, stopping at the first part that differs.

    >>> same_offset_form("f32[1,8,256]{2,1,0:T(8,128)}", "f32[8,256]{1,0:T(8,128)}")
    True
    >>> same_offset_form("f32[8,256]{1,0:T(8,128)}", "f32[256,8]{1,0:T(8,128)}")
    False
    """
    forms = zip_longest(_offset_form(meaningful_array(a)), _offset_form(meaningful_array(b)), fillvalue=_END)
    return all(x == y for x, y in forms)


_END = object()


def _offset_form(array: ArrayShape) -> Iterator[Any]:
    order, *later = _layout_steps(array)
    yield tuple(d for d in order.range if d != 1)
    for step in later:
        for stage in step.stages:
            form = stage.unit_free_form()
            if form is not None:
                yield form


def layout_stages(shape: Shape | str) -> tuple[Stage, ...]:
    """The stages of ``shape``'s layout, in order (``layout_steps`` without the labels).

    >>> [s.name for s in layout_stages("bf16[16,256]{1,0:T(8,128)(2,1)}")]
    ['Transpose', 'Split', 'Transpose', 'Split', 'Transpose', 'Linearize', 'ToBits']
    """
    return tuple(stage for step in layout_steps(shape) for stage in step.stages)


def tile_stages(dims: tuple[Dim, ...], tile: Tile) -> tuple[Stage, ...]:
    """The stages of one tile level applied to the current dimensions ``dims``.

    >>> [s.describe() for s in tile_stages((5,), Tile((2, 4)))]
    ['prepend 1 unit dim(s): [5] -> [1, 5]', 'pad: [1, 5] -> [2, 8]', 'split by (2,4): [2, 8] -> [1, 2, 2, 4]', 'tiles outside, positions inside: order (0, 2, 1, 3), [1, 2, 2, 4] -> [1, 2, 2, 4]']
    """
    k = len(tile.dimensions)
    stages: list[Stage] = []
    if k > len(dims):
        stages.append(PrependUnitDims(domain=dims, count=k - len(dims)))
        dims = stages[-1].range
    start = len(dims) - k
    if COMBINE_DIMENSION in tile.dimensions:
        combine = Combine(domain=dims, groups=combine_groups(start, tile))
        stages.append(combine)
        dims = combine.range
    sizes = tuple(t for t in tile.dimensions if t != COMBINE_DIMENSION)
    start = len(dims) - len(sizes)
    padded = dims[:start] + tuple(round_up_size(d, t) for d, t in zip(dims[start:], sizes, strict=True))
    if padded != dims:
        stages.append(Pad(domain=dims, padded=padded))
    split = Split(domain=padded, start=start, tile=sizes)
    stages.append(split)
    n = len(sizes)
    permutation = (
        tuple(range(start))
        + tuple(start + 2 * i for i in range(n))
        + tuple(start + 2 * i + 1 for i in range(n))
    )
    move = Transpose(domain=split.range, permutation=permutation, role="tiles outside, positions inside")
    if not move.is_identity:
        stages.append(move)
    return tuple(stages)


def combine_groups(start: int, tile: Tile) -> tuple[tuple[int, ...], ...]:
    """Runs of dims merged by a tile's ``*`` entries (the tile covers dims ``start..``).

    A ``*`` merges its dimension into the next more minor one:

    >>> combine_groups(0, Tile((COMBINE_DIMENSION, COMBINE_DIMENSION, 2, COMBINE_DIMENSION, 3)))
    ((0, 1, 2), (3, 4))
    >>> combine_groups(1, Tile((COMBINE_DIMENSION, 8)))
    ((0,), (1, 2))
    """
    groups: list[tuple[int, ...]] = [(i,) for i in range(start)]
    run: list[int] = []
    for offset, t in enumerate(tile.dimensions):
        run.append(start + offset)
        if t != COMBINE_DIMENSION:
            groups.append(tuple(run))
            run = []
    if run:
        raise InvalidArgumentError(
            f"tile {tile} ends with '*': there is no more minor dimension to combine into"
        )
    return tuple(groups)
