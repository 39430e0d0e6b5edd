"""Exact memory sizes of a layout: every tile level's padding, packing and ``L(n)``.

Every answer here is read off the layout's stage pipeline (:mod:`layout_algebra.meaning.stages`),
the one definition of what a layout means: the tiled shape is the domain of its
``Linearize`` stage, the bit size the range of its ``ToBits``, and XLA's allocation the
pipeline cut after the first tile level.

An array's physical buffer is what its layout makes of it. Take the dimensions in
physical order (major to minor, by ``minor_to_major``); each tile ``(t_1..t_k)`` applies
to the last ``k`` of the current dimensions, replacing each ``d_i`` by the pair
``ceil(d_i / t_i), t_i`` (cross-tile count first, within-tile size last)::

    f32[3,5]{1,0:T(2,2)}           [3, 5] → [2, 3, 2, 2]          24 slots, 15 elements
    bf16[16,256]{1,0:T(8,128)(2,1)} [16, 256] → [2, 2, 8, 128] → [2, 2, 4, 128, 2, 1]

>>> from layout_algebra.meaning.sizes import tiled_dimensions, physical_size_in_bytes
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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from layout_algebra.meaning.stages.pipeline import (
    LINEARIZE,
    PHYSICAL_ORDER,
    TILE,
    TO_BITS,
    Step,
    combine_groups,
    layout_steps,
    tile_stages,
)
from layout_algebra.meaning.stages.stages import Combine, ceil_div, round_up_size
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.meaning import LayoutSemanticsError, element_size_in_bits, meaningful_array
from layout_algebra.model.shapes import COMBINE_DIMENSION, ArrayShape, Dim, Shape, Tile

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
    "xla_shape_size",
]

#: The least multiple of ``b`` that is ``>= a`` (exact for symbolic sizes).
round_up = round_up_size


def _product(values: Iterable[Dim]) -> Dim:
    return math.prod(values, start=1)


# ------------------------------------------------------ read off the stage pipeline
def _step(steps: tuple[Step, ...], role: str) -> Step:
    return next(step for step in steps if step.role == role)


def physical_dimensions(shape: Shape | str) -> tuple[Dim, ...]:
    """The dimension sizes in physical order, most major first (``minor_to_major`` reversed)."""
    return _step(layout_steps(shape), PHYSICAL_ORDER).range


def tiled_dimensions(shape: Shape | str) -> tuple[Dim, ...]:
    """The physical shape after every tile level (exact nested tiling), major to minor:
    the domain of the pipeline's ``Linearize``."""
    return _step(layout_steps(shape), LINEARIZE).domain


def first_tile_dimensions(shape: Shape | str) -> tuple[Dim, ...]:
    """The physical shape after the first tile level only (what XLA and XLA:TPU allocate):
    the pipeline cut after its first tile step."""
    return _first_tile_dimensions(layout_steps(shape))


def _first_tile_dimensions(steps: tuple[Step, ...]) -> tuple[Dim, ...]:
    tiles = [step for step in steps if step.role == TILE]
    return tiles[0].range if tiles else _step(steps, PHYSICAL_ORDER).range


def apply_tile(dims: tuple[Dim, ...], tile: Tile) -> tuple[Dim, ...]:
    """One tiling level (the pipeline's tile step): the last ``len(tile)`` dims ``d_i`` become
    ``ceil(d_i/t_i)`` then ``t_i``. Missing leading dimensions count as size 1; ``*``
    entries combine first.

    >>> apply_tile((3, 5), Tile((2, 2)))
    (2, 3, 2, 2)
    >>> apply_tile((5,), Tile((8, 128)))
    (1, 1, 8, 128)
    """
    return tile_stages(tuple(dims), tile)[-1].range


def combine_dimensions(dims: tuple[Dim, ...], tile: Tile) -> tuple[tuple[Dim, ...], tuple[int, ...]]:
    """Merge each ``*`` tile entry's dimension into the next more minor one (the pipeline's
    ``Combine`` stage).

    ``dims`` must already be aligned with ``tile`` (same length). Returns the merged
    dimensions and the tile without its ``*`` entries.

    >>> combine_dimensions((2, 7, 8, 11, 10), Tile((COMBINE_DIMENSION, COMBINE_DIMENSION, 2, COMBINE_DIMENSION, 3)))
    ((112, 110), (2, 3))
    """
    if len(dims) != len(tile.dimensions):
        raise InvalidArgumentError(
            f"cannot combine {len(dims)} dimensions with a tile of rank {len(tile.dimensions)}"
        )
    merged = Combine(domain=tuple(dims), groups=combine_groups(0, tile)).range
    return merged, tuple(t for t in tile.dimensions if t != COMBINE_DIMENSION)


def element_bits(steps: tuple[Step, ...]) -> int:
    """Bits per element: the factor of the pipeline's ``ToBits``."""
    (to_bits,) = _step(steps, TO_BITS).stages
    return to_bits.bits  # type: ignore[attr-defined, no-any-return]


def physical_size_in_bits(shape: Shape | str) -> Dim:
    """Bits of the exact physical buffer (before rounding up to whole bytes): the range
    of the pipeline's ``ToBits``."""
    return _step(layout_steps(shape), TO_BITS).range[0]


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

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the records of ``layout-algebra size --json``): sizes in
        bytes or elements, symbolic sizes as SymPy text.

        >>> r = size_report("f32[3,5]{1,0:T(2,2)}").to_dict()
        >>> r["logical_bytes"], r["physical_bytes"], r["tiled_dimensions"]
        (60, 96, [2, 3, 2, 2])
        >>> size_report("f32[N,128]{1,0:T(8,128)}").to_dict()["physical_bytes"]
        '4096*ceiling(N/8)'
        """

        def size(x: Dim) -> int | str:
            return x if isinstance(x, int) else str(x)

        return {
            "shape": str(self.shape),
            "element_bits": self.element_bits,
            "logical_elements": size(self.logical_elements),
            "logical_bytes": size(self.logical_bytes),
            "tiled_dimensions": [size(d) for d in self.tiled_dimensions],
            "physical_elements": size(self.physical_elements),
            "physical_bytes": size(self.physical_bytes),
            "xla_allocated_bytes": size(self.first_tile_bytes),
            "padding_bytes": size(self.padding_bytes),
            "notes": list(self.notes),
        }


def size_report(shape: Shape | str) -> SizeReport:
    """Logical bytes, exact physical bytes and XLA:TPU's allocation for ``shape``."""
    array = meaningful_array(shape)
    steps = layout_steps(array)
    layout = array.effective_layout
    bits = element_bits(steps)
    logical = _product(array.dimensions)
    tiled = _step(steps, LINEARIZE).domain
    physical = _step(steps, TO_BITS).domain[0]
    alignment = layout.tail_padding_alignment_in_elements
    first = round_up(_product(_first_tile_dimensions(steps)), alignment)
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


def xla_shape_size(shape: Shape | str) -> Dim:
    """``ShapeUtil::ArraySize`` in bytes, read off the stage pipeline: the first tile's
    padding and ``L(n)``; without tiles, the elements' bytes (``L(n)`` ignored, as XLA
    does). What XLA's verifier compares for a bitcast; a formula for symbolic sizes.

    >>> xla_shape_size("bf16[3,128]{1,0:T(8,128)(2,1)}"), xla_shape_size("f32[5]{0:T(1)L(4)}")
    (2048, 32)
    >>> xla_shape_size("f32[5]{0:L(4)}"), xla_shape_size("s4[5]{0:E(4)}")
    (20, 3)
    """
    report = size_report(shape)
    if not meaningful_array(shape).effective_layout.tiles:
        return report.logical_bytes
    return report.first_tile_bytes
