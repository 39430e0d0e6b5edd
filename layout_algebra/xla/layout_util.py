"""XLA's ``LayoutUtil`` (and ``Layout::Equal``): index, split and tiling helpers.

These reproduce the answers of XLA's C++ code, simplifications included; they are not
the exact mathematics of a layout (see ``layout_algebra.xla`` for the list of quirks).

**LinearIndex** (``LayoutUtil::LinearIndex``) is the element offset of a logical index,
with only the *top-level* tile taken into account. On one tile level it agrees with XLA's
tiled-layout document: ``f32[3,5]{1,0:T(2,2)}`` is stored as six 2x2 tiles, tile by tile,
each tile row-major, so element (2,3) lands in slot 17::

    slots 0-3                 slots 4-7                 slots 8-11
    (0,0) (0,1) (1,0) (1,1)   (0,2) (0,3) (1,2) (1,3)   (0,4)  pad  (1,4)  pad
    slots 12-15               slots 16-19               slots 20-23
    (2,0) (2,1)  pad   pad    (2,2) (2,3)  pad   pad    (2,4)  pad   pad   pad

>>> from layout_algebra.xla import layout_util_linear_index
>>> layout_util_linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3))
17

Two simplifications to know about. A rank-1 shape returns its index unchanged, whatever
its tiles; and a later tile such as bf16's ``(2,1)`` is ignored, so element (1,0) of
``bf16[16,256]{1,0:T(8,128)(2,1)}`` is put in slot 128 (one row of 128 below), where the
nested tiling of the document would put it in slot 1 (the (2,1) tile pairs rows 0 and 1):

>>> layout_util_linear_index("f32[1000]{0:T(256)}", (999,))
999
>>> layout_util_linear_index("bf16[16,256]{1,0:T(8,128)(2,1)}", (1, 0))
128

**Split configs.** ``SC(p:i,j,...)`` cuts *physical* dimension ``p`` (0 = most major) at
the given indices. ``MaxSplitSize`` is the longest piece of a logical dimension; with the
layout ``{0,1,2}`` physical dimension 0 is logical dimension 2 (100 cut at 30: pieces 30,
70) and physical 1 is logical 1 (200 cut at 40 and 130: pieces 40, 90, 70):

>>> from layout_algebra.xla import max_split_size, max_elements_in_per_split
>>> s = "f32[150,200,100]{0,1,2:SC(0:30)(1:40,130)}"
>>> [max_split_size(s, d) for d in range(3)]
[150, 90, 70]
>>> max_elements_in_per_split(s)    # 150 * 90 * 70
945000

**IsUntiledLayout** asks whether tiling only reshapes the array: every tiled dimension is
divided exactly, and inside one tile, once a tile dimension is not 1, every more minor
dimension holds exactly one tile. Physical dimensions are listed major to minor:

>>> from layout_algebra.xla import is_untiled_layout
>>> is_untiled_layout([(8, 128)], [24, 128])    # 3 tiles of 8 rows, one tile across
True
>>> is_untiled_layout([(8, 128)], [8, 256])     # two tiles across: rows are cut in two
False

**ByteStridesIsMajorToMinor** checks that byte strides are those of a dense row-major
array (f32: 4 bytes, then 4*11, 4*11*10, ...):

>>> from layout_algebra.xla import byte_strides_is_major_to_minor
>>> byte_strides_is_major_to_minor((3960, 440, 44, 4), (8, 9, 10, 11), "f32")
True

**Layout::Equal** compares every field except ``M(n)`` (the dynamic-shape metadata
prefix), and can be told to ignore fields:

>>> from layout_algebra.xla import layout_equal
>>> layout_equal("{0,1:M(123)}", "{0,1}")
True
>>> layout_equal("{0,1,2:T(42,44)}", "{0,1,2}"), layout_equal("{0,1,2:T(42,44)}", "{0,1,2}", ignore=["tiles"])
(False, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import (
    COMBINE_DIMENSION,
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    Layout,
    Shape,
    Tile,
    TupleShape,
)
from layout_algebra.model.syntax import as_layout
from layout_algebra.xla._common import (
    ShapeLike,
    XlaInputError,
    array_arg,
    ceil_of_ratio,
    concrete_dims,
    dimension_arg,
    element_type_arg,
    int_sequence,
    layout_arg,
    product,
    usable_tile,
)

__all__ = [
    "LAYOUT_EQUAL_IGNORABLE",
    "byte_strides_is_major_to_minor",
    "is_untiled_layout",
    "layout_equal",
    "layout_util_linear_index",
    "max_elements_in_per_split",
    "max_split_size",
    "shapes_equal",
]


# --------------------------------------------------------------------------- LinearIndex
def layout_util_linear_index(shape: ShapeLike, index: Sequence[int]) -> int:
    """XLA's ``LayoutUtil::LinearIndex``: the element slot of a logical ``index``.

    Uses only the top-level tile, and returns ``index[0]`` unchanged for rank-1 shapes
    even when they are tiled. (This package's exact index for nested tiling is a
    different function; this one reproduces XLA's answer.)

    >>> layout_util_linear_index("f32[8,4]{1,0:T(2,2)}", (3, 1))
    11
    >>> layout_util_linear_index("f32[8,4]{1,0}", (3, 1))
    13

    Raises ``XlaInputError`` when the index has the wrong length or an entry outside its
    dimension (XLA does not check bounds), for non-array shapes, and for shapes without
    concrete sizes.
    """
    label = "layout_util_linear_index (LayoutUtil::LinearIndex)"
    array, text = array_arg(shape, label)
    dims = concrete_dims(array, text, label)
    layout = layout_arg(array, text, label)
    idx = int_sequence(index, "the index", label)
    if len(idx) != len(dims):
        raise XlaInputError(
            f"{label}: the index {list(idx)} has length {len(idx)}, but {text} has {len(dims)} dimension(s)"
        )
    for d, (i, n) in enumerate(zip(idx, dims, strict=True)):
        if not 0 <= i < n:
            raise XlaInputError(
                f"{label}: the index {list(idx)} is out of range for {text}: entry {d} is {i}, "
                f"but dimension {d} has size {n}" + (" (no elements)" if n == 0 else "")
            )
    return linear_index_unchecked(dims, layout, idx, text, label)


def linear_index_unchecked(
    dims: Sequence[int], layout: Layout, idx: Sequence[int], text: str, label: str
) -> int:
    """The arithmetic of ``LayoutUtil::LinearIndex`` on already checked arguments."""
    rank = len(dims)
    if rank == 0:
        return 0
    if rank == 1:
        return idx[0]  # XLA: 1-D shapes ignore their tiles
    tile: tuple[int, ...] = ()
    if layout.tiles:
        tile = usable_tile(layout.tiles[0], text, label, "LayoutUtil::LinearIndex")
    k = len(tile)
    linear = 0
    tile_multiplier = product(tile)  # elements in one tile, extra tile dims included
    within_tile_multiplier = 1
    for minor in range(rank):
        d = layout.minor_to_major[minor]
        if minor < k:
            t = tile[k - 1 - minor]
            linear += tile_multiplier * (idx[d] // t) + within_tile_multiplier * (idx[d] % t)
            tile_multiplier *= ceil_of_ratio(dims[d], t)
            within_tile_multiplier *= t
        else:
            linear += idx[d] * tile_multiplier
            tile_multiplier *= dims[d]
    return linear


# ------------------------------------------------------------------------ split configs
def max_split_size(shape: ShapeLike, dim: int) -> int:
    """XLA's ``LayoutUtil::MaxSplitSize``: the longest piece of logical dimension ``dim``.

    The split config applies when ``Major(layout, config.dimension) == dim``, i.e. its
    dimension is a *physical* one (0 = most major). Without a split config (or without a
    layout) the answer is the dimension's size.

    >>> max_split_size("f32[150,200,100]{0,1,2:SC(0:30)(1:40,130)}", 2)
    70
    """
    label = "max_split_size (LayoutUtil::MaxSplitSize)"
    array, text = array_arg(shape, label)
    dims = concrete_dims(array, text, label)
    dim = dimension_arg(dim, len(dims), text, label)
    if array.layout is None:
        return dims[dim]
    return max_split_size_unchecked(dims, layout_arg(array, text, label), dim)


def max_split_size_unchecked(dims: Sequence[int], layout: Layout, dim: int) -> int:
    """The arithmetic of ``LayoutUtil::MaxSplitSize`` on already checked arguments."""
    m2m = layout.minor_to_major
    for config in layout.split_configs:
        if m2m[len(m2m) - 1 - config.dimension] == dim:  # Major(layout, config.dimension)
            longest = 0
            last = 0
            for split_index in config.split_indices:
                longest = max(longest, split_index - last)
                last = split_index
            return max(longest, dims[dim] - last)
    return dims[dim]


def max_elements_in_per_split(shape: ShapeLike) -> int:
    """XLA's ``LayoutUtil::MaxElementsInPerSplit``: the product of ``max_split_size`` over dims.

    >>> max_elements_in_per_split("f32[150,200,100]{0,1,2}")
    3000000
    """
    label = "max_elements_in_per_split (LayoutUtil::MaxElementsInPerSplit)"
    array, text = array_arg(shape, label)
    dims = concrete_dims(array, text, label)
    if array.layout is None:
        return product(dims)
    layout = layout_arg(array, text, label)
    return product([max_split_size_unchecked(dims, layout, d) for d in range(len(dims))])


# ---------------------------------------------------------------------------- strides
def byte_strides_is_major_to_minor(
    byte_strides: Sequence[int], dims: Sequence[int], element_type: PrimitiveType | str
) -> bool:
    """XLA's ``LayoutUtil::ByteStridesIsMajorToMinor``: are these dense row-major strides?

    Walking from the last (most minor) dimension, each stride must equal the byte width
    of the element type times the sizes of the dimensions after it.

    >>> byte_strides_is_major_to_minor((1880, 220, 22, 2), (8, 9, 10, 11), "f32")
    False
    """
    label = "byte_strides_is_major_to_minor (LayoutUtil::ByteStridesIsMajorToMinor)"
    strides = int_sequence(byte_strides, "byte_strides", label)
    sizes = int_sequence(dims, "dims", label)
    t = element_type_arg(element_type, label)
    if len(strides) != len(sizes):
        raise XlaInputError(
            f"{label}: {len(strides)} byte strides {list(strides)} for {len(sizes)} dimensions "
            f"{list(sizes)}; XLA requires one stride per dimension"
        )
    stride = t.byte_width
    for i in reversed(range(len(sizes))):
        if strides[i] != stride:
            return False
        stride *= sizes[i]
    return True


# ------------------------------------------------------------------------------ tiling
def is_untiled_layout(tiles: Iterable[Tile | Sequence[int]], physical_dims: Sequence[int]) -> bool:
    """XLA's ``LayoutUtil::IsUntiledLayout``: does tiling leave the data in row-major order?

    ``tiles`` are ``Tile`` values or sequences of ints (major to minor); ``physical_dims``
    are the array's dimensions in physical order, major to minor. Each tile applies to the
    suffix of the current dimensions, which grows as ``(..., n/t0, m/t1, t0, t1)``.

    >>> is_untiled_layout([(1, 128)], [4, 256])     # a 1 allows many tiles after it
    True
    >>> is_untiled_layout([(8, 128)], [2, 3, 4])    # 3 is not divisible by 8
    False
    """
    label = "is_untiled_layout (LayoutUtil::IsUntiledLayout)"
    current = list(int_sequence(physical_dims, "physical_dims", label))
    if any(d < 0 for d in current):
        raise XlaInputError(f"{label}: physical_dims {current} has a negative size")
    for tile in tiles:
        tile_dims = tile.dimensions if isinstance(tile, Tile) else int_sequence(tile, "a tile", label)
        tile_text = "(" + ",".join("*" if t == COMBINE_DIMENSION else str(t) for t in tile_dims) + ")"
        if any(t <= 0 for t in tile_dims):
            raise XlaInputError(
                f"{label}: tile {tile_text} has a dimension that is not a positive size "
                "(XLA CHECKs tile dimensions > 0; a combined dimension '*' is not supported either)"
            )
        k = len(tile_dims)
        if k > len(current):
            raise XlaInputError(
                f"{label}: tile {tile_text} has {k} dimensions but is applied to the {len(current)} "
                f"dimension(s) {current}; a tile may not have more dimensions than it tiles"
            )
        suffix = current[len(current) - k :]
        expanded = [0] * (2 * k)
        allow_multiple_tiles = True
        for i in range(k):
            if suffix[i] % tile_dims[i] != 0:
                return False
            expanded[i] = suffix[i] // tile_dims[i]
            expanded[k + i] = tile_dims[i]
            if not allow_multiple_tiles and expanded[i] != 1:
                return False
            if tile_dims[i] != 1:
                allow_multiple_tiles = False
        current = current[: len(current) - k] + expanded
    return True


# ------------------------------------------------------------------------ Layout::Equal
#: The names ``layout_equal(..., ignore=...)`` accepts, after ``Layout::Equal``'s options.
LAYOUT_EQUAL_IGNORABLE: tuple[str, ...] = (
    "tiles",
    "tail_padding_alignment_in_elements",
    "element_size_in_bits",
    "index_primitive_type",
    "pointer_primitive_type",
    "memory_space",
    "split_configs",
    "physical_shape",
    "minor_to_major_only",
)

# Compared in Layout::Equal's order; minor_to_major is always compared, M(n) never.
_COMPARED_FIELDS = (
    "tiles",
    "tail_padding_alignment_in_elements",
    "index_primitive_type",
    "pointer_primitive_type",
    "element_size_in_bits",
    "memory_space",
    "split_configs",
)


def layout_equal(a: Layout | str, b: Layout | str, ignore: Iterable[str] | str = ()) -> bool:
    """XLA's ``Layout::Equal``: field-by-field layout equality that never compares ``M(n)``.

    ``ignore`` names fields to leave out, after the ``Ignore...`` options of
    ``Layout::Equal``: any of ``LAYOUT_EQUAL_IGNORABLE``; ``"minor_to_major_only"``
    ignores every field but ``minor_to_major``. A single name may be given as a string.

    >>> layout_equal("{1,0:T(8,128)S(1)}", "{1,0:T(8,128)}", ignore="memory_space")
    True
    >>> layout_equal("{1,0:T(8,128)E(4)}", "{1,0}", ignore=["minor_to_major_only"])
    True

    A physical shape ``P(...)`` is compared like XLA's ``Shape::Equal()`` does: element
    type, dimensions (an unbounded ``?`` matches any size), dynamic flags and layouts.
    """
    left = as_layout(a)
    right = as_layout(b)
    names = {ignore} if isinstance(ignore, str) else set(ignore)
    unknown = sorted(str(n) for n in names - set(LAYOUT_EQUAL_IGNORABLE))
    if unknown:
        raise XlaInputError(
            f"layout_equal (Layout::Equal): cannot ignore {', '.join(map(repr, unknown))}; "
            f"valid names are {', '.join(map(repr, LAYOUT_EQUAL_IGNORABLE))}"
        )
    if "minor_to_major_only" in names:
        names = set(LAYOUT_EQUAL_IGNORABLE)
    return _layouts_equal(left, right, frozenset(names))


def _layouts_equal(a: Layout, b: Layout, ignored: frozenset[str]) -> bool:
    if a.minor_to_major != b.minor_to_major:
        return False
    for name in _COMPARED_FIELDS:
        if name not in ignored and getattr(a, name) != getattr(b, name):
            return False
    if "physical_shape" not in ignored and (a.physical_shape is not None or b.physical_shape is not None):
        if a.physical_shape is None or b.physical_shape is None:
            return False
        return shapes_equal(a.physical_shape, b.physical_shape)
    return True


def shapes_equal(a: Shape, b: Shape) -> bool:
    """``Shape::Equal()`` with its default options (layouts compared by ``Layout::Equal``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, TupleShape) and isinstance(b, TupleShape):
        return len(a.elements) == len(b.elements) and all(
            shapes_equal(x, y) for x, y in zip(a.elements, b.elements, strict=True)
        )
    if isinstance(a, BufferShape) and isinstance(b, BufferShape):
        return shapes_equal(a.array, b.array)
    if not (isinstance(a, ArrayShape) and isinstance(b, ArrayShape)):
        return True  # token == token, opaque == opaque
    if a.element_type != b.element_type or a.rank != b.rank:
        return False
    pairs_a = zip(a.dimensions, a.dynamic_dimensions, strict=True)
    pairs_b = zip(b.dimensions, b.dynamic_dimensions, strict=True)
    for (x, x_dyn), (y, y_dyn) in zip(pairs_a, pairs_b, strict=True):
        unbounded = (x_dyn and x == UNBOUNDED_SIZE) or (y_dyn and y == UNBOUNDED_SIZE)
        if not unbounded and x != y:  # ShapeUtil::SameDimensions lets '?' match anything
            return False
    if a.dynamic_dimensions != b.dynamic_dimensions:
        return False
    if a.layout is None or b.layout is None:
        return a.layout is None and b.layout is None
    return _layouts_equal(a.layout, b.layout, frozenset())
