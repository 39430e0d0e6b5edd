"""XLA's ``IndexUtil``: index arithmetic that ignores tiles.

This reproduces the answer of XLA's C++ code (see ``layout_algebra.xla`` for the quirks),
not the exact mathematics of a tiled layout.

``GetDimensionStride`` is the distance, in elements, between two elements whose indices
differ by one in the given dimension, for the *untiled* layout: the product of the sizes
of the dimensions that are more minor. For ``f32[5,8,10,4]{3,2,1,0}`` stepping dimension 1
skips a whole ``10 x 4`` block:

>>> from layout_algebra.xla import dimension_stride
>>> dimension_stride("f32[5,8,10,4]{3,2,1,0}", 1)
40
>>> dimension_stride("f32[5,8,10,4]{0,1,2,3}", 1)   # dim 0 is now the only more minor one
5

Tiles never enter: ``f32[16,256]{1,0:T(8,128)}`` still reports 256 for dimension 0,
although a tiled row step is 128 elements inside a tile.

>>> dimension_stride("f32[16,256]{1,0:T(8,128)}", 0)
256
"""

from __future__ import annotations

from layout_algebra.xla._common import (
    ShapeLike,
    array_arg,
    concrete_dims,
    dimension_arg,
    layout_arg,
)

__all__ = ["dimension_stride"]


def dimension_stride(shape: ShapeLike, dimension: int) -> int:
    """XLA's ``IndexUtil::GetDimensionStride``: elements between neighbours along ``dimension``.

    Multiplies the sizes of the dimensions that come before ``dimension`` in
    ``minor_to_major``. Tiles, ``E(n)`` and padding are ignored.

    >>> dimension_stride("s8[3,7]{1,0}", 0), dimension_stride("s8[3,7]{1,0}", 1)
    (7, 1)
    """
    label = "dimension_stride (IndexUtil::GetDimensionStride)"
    array, text = array_arg(shape, label)
    dims = concrete_dims(array, text, label)
    dimension = dimension_arg(dimension, len(dims), text, label)
    layout = layout_arg(array, text, label)
    stride = 1
    for d in layout.minor_to_major:
        if d == dimension:
            break
        stride *= dims[d]
    return stride
