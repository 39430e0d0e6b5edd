"""Hypothesis strategies for layouts whose maps are small enough to enumerate.

``small_layout_shapes`` draws array shapes with random ``minor_to_major``, 0-3 tile
levels (tiles longer than the shape, ``*`` combines, later tiles over cross-tile dims),
``L(n)`` and the element types whose packing matters (bf16, s8, s4 with ``E(4)``, pred
with and without ``E(1)``, f32, f64), keeping the tiled buffer at most ``max_slots``.
"""

from __future__ import annotations

import math

from hypothesis import assume
from hypothesis import strategies as st

from layout_algebra.meaning.sizes import tiled_dimensions
from layout_algebra.model.primitive_types import primitive_type
from layout_algebra.model.shapes import COMBINE_DIMENSION, ArrayShape, Layout, Tile

#: (element type, E(n)) pairs: each packing case the layout map must get right.
ELEMENT_CASES = (
    ("f32", 0),
    ("bf16", 0),
    ("f16", 0),
    ("s8", 0),
    ("u8", 0),
    ("s4", 0),
    ("s4", 4),
    ("u4", 4),
    ("s2", 2),
    ("pred", 0),
    ("pred", 1),
    ("f64", 0),
    ("f8e4m3fn", 0),
)


@st.composite
def small_tiles(draw: st.DrawFn, rank: int, *, combine: bool = True, max_levels: int = 3) -> tuple[Tile, ...]:
    """0..max_levels tiles; each level's rank may exceed the shape's (reaching cross-tile dims)."""
    levels = draw(st.integers(0, max_levels))
    out = []
    current_rank = rank
    for _ in range(levels):
        k = draw(st.integers(1, max(1, current_rank + 1)))
        sizes = draw(st.lists(st.sampled_from([1, 2, 2, 3, 4]), min_size=k, max_size=k))
        if combine and k >= 2:
            for j in range(k - 1):
                if draw(st.integers(0, 4)) == 0:
                    sizes[j] = COMBINE_DIMENSION
        out.append(Tile(tuple(sizes)))
        current_rank = (
            max(current_rank, k)
            + sum(1 for s in sizes if s != COMBINE_DIMENSION)
            - sum(1 for s in sizes if s == COMBINE_DIMENSION)
        )
    return tuple(out)


@st.composite
def small_layout_shapes(
    draw: st.DrawFn,
    *,
    max_rank: int = 3,
    max_dim: int = 6,
    max_slots: int = 2048,
    combine: bool = True,
    element: tuple[str, int] | None = None,
) -> ArrayShape:
    """A concrete array shape with a random layout whose tiled buffer has <= max_slots slots."""
    name, e_bits = element if element is not None else draw(st.sampled_from(ELEMENT_CASES))
    rank = draw(st.integers(0, max_rank))
    dims = tuple(draw(st.lists(st.integers(0, max_dim), min_size=rank, max_size=rank)))
    m2m = tuple(draw(st.permutations(range(rank))))
    tiles = draw(small_tiles(rank, combine=combine))
    tail = draw(st.sampled_from([1, 1, 1, 2, 3, 8]))
    layout = Layout(
        minor_to_major=m2m,
        tiles=tiles,
        tail_padding_alignment_in_elements=tail,
        element_size_in_bits=e_bits,
    )
    shape = ArrayShape(primitive_type(name), dims, (False,) * rank, layout)
    try:
        slots = math.prod(tiled_dimensions(shape), start=1)
    except ValueError:  # e.g. a tile ending in '*': not a layout with a meaning
        assume(False)
    assume(slots * tail <= max_slots)
    return shape
