"""Two independent references for the position of an element under nested tiling.

The stage pipeline (:mod:`layout_algebra.meaning.stages`) is the package's definition of a
layout. These two functions compute the same positions *another way*, written apart from
the stages on purpose, so that "the pipeline equals the document" is something the
package checks and proves (:mod:`layout_algebra.prove`), not something it assumes.

**1. The document's formula** (XLA's tiled-layout document, "Linear index formulas"):

    linear_index_with_tile(e, d, t)
        = linear_index(⌊e/t⌋, ⌈d/t⌉) · t_n···t_1 + linear_index(e mod t, t)

applied tile by tile: each level turns the current index into a *number* by the formula,
and the next level reads that number back as an index of the tiled shape.

**2. Pad → reshape → transpose** (the document's "Tiling as pad-reshape-transpose"): pad
each dim to a multiple of the tile; *reshape* (a row-major reinterpretation, done by
linearizing and delinearizing, not by splitting each index) to
``(⌈d_n/t_n⌉, t_n, ..., ⌈d_1/t_1⌉, t_1)``; transpose the ``t``'s to the minor end.

Both handle ``minor_to_major``, tiles longer than the shape (leading dims of size 1),
combined dims (``*``) and later tiles that reach into cross-tile dims. Neither includes
``L(n)`` or the element size: they give the element position in the tiled buffer.

>>> shape = "f32[3,5]{1,0:T(2,2)}"
>>> by_formula(shape, (2, 3)), by_pad_reshape_transpose(shape, (2, 3))
(17, 17)
>>> by_formula("f32[8,8]{1,0:T(2,4)(2,1,1,1)}", (6, 5))
51

The arithmetic is pluggable (:class:`~layout_algebra.meaning.stages.arith.Arithmetic`), so the
same references run on NumPy index arrays, SymPy symbols or solver terms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import COMBINE_DIMENSION, ArrayShape, Dim, Shape
from layout_algebra.model.syntax import as_shape

__all__ = [
    "by_formula",
    "by_pad_reshape_transpose",
    "delinearize_row_major",
    "linear_index_row_major",
    "linear_index_with_tile",
]


def linear_index_row_major(e: Sequence[Any], d: Sequence[Dim], ar: Arithmetic = ARITHMETIC) -> Any:
    """The document's ``linear_index(e, d) = e_n d_{n-1}...d_1 + ... + e_1`` (most major first).

    >>> linear_index_row_major((1, 1, 0, 1), (2, 3, 2, 2))
    17
    """
    total: Any = 0
    for k, ek in enumerate(e):
        total = total + ek * ar.lift(math.prod(d[k + 1 :], start=1))
    return ar.mixed_radix(total, e, d)


def delinearize_row_major(n: Any, d: Sequence[Dim], ar: Arithmetic = ARITHMETIC) -> tuple:
    """The index ``e`` with ``linear_index_row_major(e, d) == n`` (``0 <= n < prod(d)``).

    >>> delinearize_row_major(17, (2, 3, 2, 2))
    (1, 1, 0, 1)
    """
    out = []
    for k in range(len(d)):
        stride = math.prod(d[k + 1 :], start=1)
        q = ar.floordiv(n, ar.lift(stride))
        out.append(q if k == 0 else ar.mod(q, ar.lift(d[k])))
    return tuple(out)


def linear_index_with_tile(
    e: Sequence[Any], d: Sequence[Dim], t: Sequence[int], ar: Arithmetic = ARITHMETIC
) -> Any:
    """The document's formula for one tile of the same rank as the array.

    ``linear_index((⌊e/t⌋), (⌈d/t⌉)) · prod(t) + linear_index((e mod t), t)``:

    >>> linear_index_with_tile((2, 3), (3, 5), (2, 2))
    17
    """
    tile_index = [ar.floordiv(ei, ti) for ei, ti in zip(e, t, strict=True)]
    tile_counts = [_ceil(di, ti) for di, ti in zip(d, t, strict=True)]
    within = [ar.mod(ei, ti) for ei, ti in zip(e, t, strict=True)]
    return linear_index_row_major(tile_index, tile_counts, ar) * math.prod(
        t, start=1
    ) + linear_index_row_major(within, t, ar)


def by_formula(shape: Shape | str, index: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
    """Element position by the document's formula, applied tile by tile (reference 1)."""
    array = _array(shape)
    e, d = _physical(array, index)
    if not array.effective_layout.tiles:
        return linear_index_row_major(e, d, ar)
    position: Any = None
    for level, tile in enumerate(array.effective_layout.tiles):
        if level:  # read the previous level's number back as an index of its tiled shape
            e = list(delinearize_row_major(position, d, ar))
        e, d, t = _prepare(e, d, list(tile.dimensions), ar)
        s = len(d) - len(t)
        prefix_e, prefix_d = e[:s], d[:s]
        tiled_d = [_ceil(di, ti) for di, ti in zip(d[s:], t, strict=True)] + t
        inner = math.prod(tiled_d, start=1)
        position = linear_index_row_major(prefix_e, prefix_d, ar) * ar.lift(inner) + linear_index_with_tile(
            e[s:], d[s:], t, ar
        )
        # The formula's number is the row-major number of these digits (a prover checks the note).
        digits = prefix_e + [ar.floordiv(ei, ti) for ei, ti in zip(e[s:], t, strict=True)]
        digits += [ar.mod(ei, ti) for ei, ti in zip(e[s:], t, strict=True)]
        position = ar.mixed_radix(position, digits, prefix_d + tiled_d)
        d = prefix_d + tiled_d
    return position


def by_pad_reshape_transpose(shape: Shape | str, index: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
    """Element position by pad → reshape → transpose on index tuples (reference 2)."""
    array = _array(shape)
    e, d = _physical(array, index)
    for tile in array.effective_layout.tiles:
        e, d, t = _prepare(e, d, list(tile.dimensions), ar)
        s = len(d) - len(t)
        k = len(t)
        # 1. pad: the index stays, the bounds grow to multiples of the tile
        padded = d[:s] + [_ceil(di, ti) * ti for di, ti in zip(d[s:], t, strict=True)]
        # 2. reshape (a bitcast): same row-major position, read in the interleaved shape
        interleaved = d[:s] + [x for di, ti in zip(d[s:], t, strict=True) for x in (_ceil(di, ti), ti)]
        e = list(delinearize_row_major(linear_index_row_major(e, padded, ar), interleaved, ar))
        # 3. transpose: the t's move to the minor end, keeping their order
        order = list(range(s)) + [s + 2 * i for i in range(k)] + [s + 2 * i + 1 for i in range(k)]
        e = [e[j] for j in order]
        d = [interleaved[j] for j in order]
    return linear_index_row_major(e, d, ar)


# ----------------------------------------------------------------------------- helpers
def _array(shape: Shape | str) -> ArrayShape:
    s = as_shape(shape)
    if not isinstance(s, ArrayShape):
        raise InvalidArgumentError(f"{s}: the references are defined for array shapes only")
    return s


def _physical(array: ArrayShape, index: Sequence[Any]) -> tuple[list, list]:
    m2m = array.effective_layout.minor_to_major
    if len(index) != array.rank:
        raise InvalidArgumentError(f"{array}: index {tuple(index)} does not have rank {array.rank}")
    return [index[k] for k in reversed(m2m)], [array.dimensions[k] for k in reversed(m2m)]


def _prepare(e: list, d: list, tile: list[int], ar: Arithmetic = ARITHMETIC) -> tuple[list, list, list[int]]:
    """Leading size-1 dims for a long tile, then the ``*`` merges (each into the next dim)."""
    missing = len(tile) - len(d)
    if missing > 0:
        e, d = [0] * missing + e, [1] * missing + d
    s = len(d) - len(tile)
    out_e, out_d, out_t = e[:s], d[:s], []
    carry_e: Any = 0
    carry_d: Dim = 1
    for ei, di, ti in zip(e[s:], d[s:], tile, strict=True):
        carry_e, carry_d = carry_e * ar.lift(di) + ei, carry_d * di
        if ti != COMBINE_DIMENSION:
            out_e.append(carry_e)
            out_d.append(carry_d)
            out_t.append(ti)
            carry_e, carry_d = 0, 1
    if tile and tile[-1] == COMBINE_DIMENSION:
        raise InvalidArgumentError(f"tile {tuple(tile)} ends with '*': nothing to combine into")
    return out_e, out_d, out_t


def _ceil(d: Dim, t: int) -> Dim:
    if isinstance(d, int):
        return -(-d // t)
    import sympy

    from layout_algebra.model.symbols import as_sympy

    return sympy.ceiling(as_sympy(d) / t)
