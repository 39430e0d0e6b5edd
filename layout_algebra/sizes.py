"""Exact memory sizes of a layout: every tile level's padding, packing and ``L(n)``.

An array's physical buffer is what its layout makes of it. Take the dimensions in
physical order (major to minor, by ``minor_to_major``); each tile ``(t_1..t_k)`` applies
to the last ``k`` of the current dimensions, replacing each ``d_i`` by the pair
``ceil(d_i / t_i), t_i`` (cross-tile count first, within-tile size last)::

    f32[3,5]{1,0:T(2,2)}           [3, 5] → [2, 3, 2, 2]          24 slots, 15 elements
    bf16[16,256]{1,0:T(8,128)(2,1)} [16, 256] → [2, 2, 8, 128] → [2, 2, 4, 128, 2, 1]

>>> from layout_algebra.sizes import tiled_dimensions, physical_size_in_bytes
>>> tiled_dimensions("f32[3,5]{1,0:T(2,2)}")
(2, 3, 2, 2)
>>> physical_size_in_bytes("f32[3,5]{1,0:T(2,2)}")      # 24 slots × 4 bytes
96
>>> tiled_dimensions("bf16[16,256]{1,0:T(8,128)(2,1)}")
(2, 2, 4, 128, 2, 1)

The element count after tiling is rounded up to ``L(n)``; the bit size is that count
times the element size in bits (``E(n)`` if given, else whole bytes: 8 bits for ``pred``
and for ``s4`` without ``E(4)``), rounded up to whole bytes:

>>> physical_size_in_bytes("s4[64,128]{1,0:E(4)}")      # two s4 per byte
4096
>>> physical_size_in_bytes("f32[5]{0:T(1)L(1024)}")     # 5 elements padded to 1024
4096

A tile with more dimensions than the shape pads virtual leading dimensions of size 1
(a scalar under ``T(256)`` takes 256 slots, as on TPU). A ``*`` in a tile combines that
dimension into the next more minor one before tiling (XLA's tiled-layout document):

>>> tiled_dimensions("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
(56, 37, 2, 3)

Symbolic dimensions give SymPy expressions:

>>> physical_size_in_bytes("f32[N,M]{1,0:T(8,128)}")
4096*ceiling(M/128)*ceiling(N/8)

**Exact versus allocated.** When every later tile divides the first one (all of XLA:TPU's
standard formats), the later tiles add no padding. When one does not, the exact buffer
is larger than what XLA (``ShapeUtil::ArraySize``) and the XLA:TPU compiler allocate:
they pad to the first tile only. ``size_report`` shows both numbers:

>>> r = size_report("s16[1000,200]{0,1:T(1,128)(2,1)}")
>>> r.physical_bytes, r.first_tile_bytes
(819200, 409600)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from layout_algebra.model.shapes import (
    COMBINE_DIMENSION,
    ArrayShape,
    BufferShape,
    Dim,
    Shape,
    Tile,
)
from layout_algebra.model.syntax import as_shape

__all__ = [
    "LayoutSemanticsError",
    "SizeReport",
    "apply_tile",
    "ceil_div",
    "combine_dimensions",
    "element_size_in_bits",
    "first_tile_dimensions",
    "meaningful_array",
    "physical_dimensions",
    "physical_size_in_bits",
    "physical_size_in_bytes",
    "round_up",
    "size_report",
    "tiled_dimensions",
]


class LayoutSemanticsError(ValueError):
    """The layout has no exact meaning this package can give (e.g. a ``*`` with nothing
    more minor to combine into, an unbounded ``?`` dimension, an ``E(n)`` too small)."""

    def __init__(self, shape: Shape, reason: str) -> None:
        self.shape = shape
        self.reason = reason
        super().__init__(f"{shape}: {reason}")


# --------------------------------------------------------------------------- arithmetic
def ceil_div(a: Dim, b: Dim) -> Dim:
    """``ceil(a / b)`` for non-negative ints, or a SymPy ``ceiling`` for symbolic sizes."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    import sympy

    return sympy.ceiling(sympy.Integer(a) / b if isinstance(a, int) else a / b)


def round_up(a: Dim, b: Dim) -> Dim:
    """The least multiple of ``b`` that is ``>= a``."""
    return ceil_div(a, b) * b


def _product(values) -> Dim:
    return math.prod(values, start=1)


# ------------------------------------------------------------------- the shape pipeline
def physical_dimensions(shape: ArrayShape) -> tuple[Dim, ...]:
    """The dimension sizes in physical order, most major first (``minor_to_major`` reversed)."""
    m2m = shape.effective_layout.minor_to_major
    return tuple(shape.dimensions[d] for d in reversed(m2m))


def combine_dimensions(dims: tuple[Dim, ...], tile: Tile) -> tuple[tuple[Dim, ...], tuple[int, ...]]:
    """Merge each ``*`` tile entry's dimension into the next more minor one.

    ``dims`` must already be aligned with ``tile`` (same length). Returns the merged
    dimensions and the tile without its ``*`` entries.

    >>> combine_dimensions((2, 7, 8, 11, 10), Tile((COMBINE_DIMENSION, COMBINE_DIMENSION, 2, COMBINE_DIMENSION, 3)))
    ((112, 110), (2, 3))
    """
    if len(dims) != len(tile.dimensions):
        raise ValueError(f"cannot combine {len(dims)} dimensions with a tile of rank {len(tile.dimensions)}")
    if tile.dimensions and tile.dimensions[-1] == COMBINE_DIMENSION:
        raise ValueError(f"tile {tile} ends with '*': there is no more minor dimension to combine into")
    merged: list[Dim] = []
    sizes: list[int] = []
    carry: Dim = 1
    for d, t in zip(dims, tile.dimensions, strict=True):
        if t == COMBINE_DIMENSION:
            carry = carry * d
        else:
            merged.append(carry * d)
            sizes.append(t)
            carry = 1
    return tuple(merged), tuple(sizes)


def apply_tile(dims: tuple[Dim, ...], tile: Tile) -> tuple[Dim, ...]:
    """One tiling level: the last ``len(tile)`` dims ``d_i`` become ``ceil(d_i/t_i)`` then ``t_i``.

    Missing leading dimensions count as size 1; ``*`` entries combine first.

    >>> apply_tile((3, 5), Tile((2, 2)))
    (2, 3, 2, 2)
    >>> apply_tile((5,), Tile((8, 128)))
    (1, 1, 8, 128)
    """
    k = len(tile.dimensions)
    dims = (1,) * max(0, k - len(dims)) + tuple(dims)
    keep, suffix = dims[: len(dims) - k], dims[len(dims) - k :]
    merged, sizes = combine_dimensions(suffix, tile)
    for t in sizes:
        if t <= 0:
            raise ValueError(f"tile {tile} has a dimension of size {t}; tile sizes must be positive")
    return keep + tuple(ceil_div(d, t) for d, t in zip(merged, sizes, strict=True)) + sizes


def tiled_dimensions(shape: Shape | str) -> tuple[Dim, ...]:
    """The physical shape after every tile level (exact nested tiling), major to minor."""
    array = meaningful_array(shape)
    dims = physical_dimensions(array)
    for tile in array.effective_layout.tiles:
        dims = _checked(array, apply_tile, dims, tile)
    return dims


def first_tile_dimensions(shape: Shape | str) -> tuple[Dim, ...]:
    """The physical shape after the first tile level only (what XLA and XLA:TPU allocate)."""
    array = meaningful_array(shape)
    dims = physical_dimensions(array)
    tiles = array.effective_layout.tiles
    return _checked(array, apply_tile, dims, tiles[0]) if tiles else dims


def element_size_in_bits(shape: Shape | str) -> int:
    """Bits per element in memory: ``E(n)`` if set, else a whole number of bytes.

    This is XLA's ``ShapeUtil::ElementSizeInBits``: without ``E(n)`` an element takes
    ``ByteWidth`` bytes, so ``pred`` and ``s4`` take 8 bits each; ``E(4)`` packs two
    ``s4`` per byte and ``E(1)`` eight ``pred`` per byte.

    >>> element_size_in_bits("s4[8]"), element_size_in_bits("s4[8]{0:E(4)}"), element_size_in_bits("pred[8]")
    (8, 4, 8)
    """
    array = meaningful_array(shape)
    e = array.effective_layout.element_size_in_bits
    t = array.element_type
    if e == 0:
        return t.byte_width * 8
    if e < t.bit_width:
        raise LayoutSemanticsError(
            array, f"E({e}) cannot hold a {t.text} element, which needs {t.bit_width} bits"
        )
    return e


def physical_size_in_bits(shape: Shape | str) -> Dim:
    """Bits of the exact physical buffer (before rounding up to whole bytes)."""
    array = meaningful_array(shape)
    count = _product(tiled_dimensions(array))
    count = round_up(count, array.effective_layout.tail_padding_alignment_in_elements)
    return count * element_size_in_bits(array)


def physical_size_in_bytes(shape: Shape | str) -> Dim:
    """Bytes of the exact physical buffer: all tile levels' padding, packing, ``L(n)``.

    Accepts a ``Shape`` or shape text; a buffer ``b(...)`` is sized by its array.
    Raises ``LayoutSemanticsError`` for shapes without one exact buffer size (tuples,
    tokens, unbounded ``?`` dims, split configs) with the reason.
    """
    return ceil_div(physical_size_in_bits(shape), 8)


@dataclass(frozen=True)
class SizeReport:
    """Logical and physical sizes of one array, side by side.

    ``physical_*`` is the exact buffer (every tile level); ``first_tile_*`` pads to the
    first tile only — the rule of ``ShapeUtil::ArraySize``, which the XLA:TPU compiler's
    allocations follow. They differ only when a later tile does not divide the first.
    """

    shape: ArrayShape
    element_bits: int
    logical_elements: Dim
    logical_bytes: Dim
    tiled_dimensions: tuple[Dim, ...]
    physical_elements: Dim
    physical_bytes: Dim
    first_tile_elements: Dim
    first_tile_bytes: Dim
    metadata_prefix_bytes: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def padding_bytes(self) -> Dim:
        return self.physical_bytes - self.logical_bytes

    @property
    def padding_ratio(self) -> Dim:
        """Physical over logical bytes (1 means no padding); ``inf`` for empty arrays with padding."""
        if self.logical_bytes == 0:
            return 1.0 if self.physical_bytes == 0 else float("inf")
        return self.physical_bytes / self.logical_bytes


def size_report(shape: Shape | str) -> SizeReport:
    """Logical bytes, exact physical bytes and XLA:TPU's allocation for ``shape``."""
    array = meaningful_array(shape)
    layout = array.effective_layout
    bits = element_size_in_bits(array)
    logical = _product(array.dimensions)
    tiled = tiled_dimensions(array)
    alignment = layout.tail_padding_alignment_in_elements
    physical = round_up(_product(tiled), alignment)
    first = round_up(_product(first_tile_dimensions(array)), alignment)
    notes = []
    if first != physical:
        notes.append(
            "a later tile does not divide the first: the exact nested buffer is larger than what "
            "XLA (ShapeUtil::ArraySize) and XLA:TPU allocate, which pad to the first tile only"
        )
    if layout.dynamic_shape_metadata_prefix_bytes:
        notes.append(f"M({layout.dynamic_shape_metadata_prefix_bytes}): a metadata prefix, not counted above")
    return SizeReport(
        shape=array,
        element_bits=bits,
        logical_elements=logical,
        logical_bytes=ceil_div(logical * bits, 8),
        tiled_dimensions=tiled,
        physical_elements=physical,
        physical_bytes=ceil_div(physical * bits, 8),
        first_tile_elements=first,
        first_tile_bytes=ceil_div(first * bits, 8),
        metadata_prefix_bytes=layout.dynamic_shape_metadata_prefix_bytes,
        notes=tuple(notes),
    )


# ----------------------------------------------------------------------------- helpers
def meaningful_array(shape: Shape | str) -> ArrayShape:
    """``shape`` as an ``ArrayShape`` whose layout has one exact meaning, or a clear error.

    Accepts shape text or a ``Shape``; a buffer ``b(...)`` gives its array. Raises
    ``LayoutSemanticsError`` for tuples, tokens, unbounded ``?`` dims, a ``minor_to_major``
    that is not a permutation, split configs, and empty or size-0 tiles.
    """
    s = as_shape(shape)
    if isinstance(s, BufferShape):
        s = s.array
    if not isinstance(s, ArrayShape):
        kind = type(s).__name__.removesuffix("Shape").lower()
        raise LayoutSemanticsError(s, f"a {kind} shape has no single array buffer; size its array elements")
    if s.is_unbounded_dynamic:
        raise LayoutSemanticsError(s, "an unbounded dynamic dimension '?' has no size; give a bound '<=N'")
    layout = s.effective_layout
    if sorted(layout.minor_to_major) != list(range(s.rank)):
        raise LayoutSemanticsError(
            s, "minor_to_major must be a permutation of the dimensions (see validate())"
        )
    if layout.split_configs:
        raise LayoutSemanticsError(
            s, "split configs SC(...) divide the array into separate pieces; not modelled"
        )
    for tile in layout.tiles:
        if not tile.dimensions or 0 in tile.dimensions:
            raise LayoutSemanticsError(s, f"tile {tile} is empty or has a size-0 dimension")
    return s


def _checked(shape: ArrayShape, fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        raise LayoutSemanticsError(shape, str(e)) from None
