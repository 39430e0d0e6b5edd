"""Which shapes have one exact meaning, and the facts about them every layer shares.

A layout gets its meaning from the stage pipeline (:mod:`layout_algebra.meaning.stages`). Before
the pipeline is built, :func:`meaningful_array` checks that there is one: an array (not a
tuple or a token), bounded dimensions, a ``minor_to_major`` that is a permutation, no
split configs, tiles that are not empty, have no size 0 and do not end with ``*``.
Otherwise it raises :class:`LayoutSemanticsError`, quoting the shape and the reason:

>>> meaningful_array("f32[3,5]{1,0:T(2,2)}")
parse_shape('f32[3,5]{1,0:T(2,2)}')
>>> meaningful_array("f32[2,3]{1,0:T(8,*)}")
Traceback (most recent call last):
    ...
layout_algebra.model.meaning.LayoutSemanticsError: f32[2,3]{1,0:T(8,*)}: tile (8,*) ends with '*': there is no more minor dimension to combine into

The element size in memory is XLA's ``ShapeUtil::ElementSizeInBits``: ``E(n)`` when set,
else whole bytes (so ``pred`` and ``s4`` take 8 bits each):

>>> element_size_in_bits("s4[8]"), element_size_in_bits("s4[8]{0:E(4)}"), element_size_in_bits("pred[8]")
(8, 4, 8)

The names XLA gives memory spaces ``S(n)`` (other numbers are backend specific):

>>> memory_space_name(0), memory_space_name(1), memory_space_name(3)
('device memory (HBM)', 'fast memory (VMEM on TPU)', 'backend-specific memory space')
"""

from __future__ import annotations

from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import COMBINE_DIMENSION, ArrayShape, BufferShape, Shape
from layout_algebra.model.syntax import as_shape

__all__ = [
    "MEMORY_SPACE_NAMES",
    "LayoutSemanticsError",
    "element_size_in_bits",
    "meaningful_array",
    "memory_space_name",
]

#: XLA's named memory spaces ``S(n)`` (``Layout::kDefaultMemorySpace``,
#: ``kGenericFastMemorySpace``, ``kHostMemorySpace``, ``kUnpinnedHostMemorySpace``).
MEMORY_SPACE_NAMES: dict[int, str] = {
    0: "device memory (HBM)",
    1: "fast memory (VMEM on TPU)",
    5: "host memory",
    6: "unpinned host memory",
}


def memory_space_name(space: int) -> str:
    """What XLA calls memory space ``S(space)``."""
    return MEMORY_SPACE_NAMES.get(space, "backend-specific memory space")


class LayoutSemanticsError(LayoutAlgebraError, ValueError):
    """The layout has no exact meaning this package can give (e.g. a ``*`` with nothing
    more minor to combine into, an unbounded ``?`` dimension, an ``E(n)`` too small)."""

    def __init__(self, shape: Shape, reason: str) -> None:
        self.shape = shape
        self.reason = reason
        super().__init__(f"{shape}: {reason}")


def meaningful_array(shape: Shape | str) -> ArrayShape:
    """``shape`` as an ``ArrayShape`` whose layout has one exact meaning, or a clear error.

    Accepts shape text or a ``Shape``; a buffer ``b(...)`` gives its array. Raises
    ``LayoutSemanticsError`` for tuples, tokens, unbounded ``?`` dims, a ``minor_to_major``
    that is not a permutation, split configs, and empty, size-0 or ``*``-ended tiles.
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
        if tile.dimensions[-1] == COMBINE_DIMENSION:
            raise LayoutSemanticsError(
                s, f"tile {tile} ends with '*': there is no more minor dimension to combine into"
            )
    return s


def element_size_in_bits(shape: Shape | str) -> int:
    """Bits per element in memory: ``E(n)`` if set, else a whole number of bytes.

    This is XLA's ``ShapeUtil::ElementSizeInBits``: without ``E(n)`` an element takes
    ``ByteWidth`` bytes, so ``pred`` and ``s4`` take 8 bits each; ``E(4)`` packs two
    ``s4`` per byte and ``E(1)`` eight ``pred`` per byte. An ``E(n)`` smaller than the
    type raises ``LayoutSemanticsError``.
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
