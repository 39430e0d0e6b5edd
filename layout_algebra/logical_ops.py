"""Logical reshape and transpose: which input element each output element is.

XLA's ``reshape`` and ``transpose`` move no data *logically* defined: each says, for every
element of its result, which element of its operand it is. These functions are that one
definition, as pure functions of an index over any :class:`~layout_algebra.stages.arith.Arithmetic`
(ints, NumPy index arrays, SymPy symbols, solver terms). The bitcast decision
(:mod:`layout_algebra.bitcast`) and the rewrite verifier (:mod:`layout_algebra.hlo.verify`)
both read them.

**Reshape** reads both shapes row-major (most major dimension first): element ``j`` of
``reshape(x)`` is the element of ``x`` at the same row-major position. In ``f32[6]``
reshaped to ``[2,3]``, element ``(1, 2)`` is element ``5``:

>>> reshape_source_index((1, 2), (2, 3), (6,))
(5,)
>>> reshape_source_index((4,), (6,), (3, 2))
(2, 0)

**Transpose** with ``permutation`` ``p``: result dimension ``k`` is operand dimension
``p[k]``, so element ``j`` of ``transpose(x, p)`` is the element ``i`` of ``x`` with
``i[p[k]] = j[k]``; :func:`transpose_result_index` goes the other way:

>>> transpose_source_index((7, 8, 9), (2, 0, 1))
(8, 9, 7)
>>> transpose_result_index((8, 9, 7), (2, 0, 1))
(7, 8, 9)

The same functions on symbols give the formulas:

>>> import sympy
>>> j = sympy.symbols("j0 j1", integer=True, nonnegative=True)
>>> reshape_source_index(j, (2, 3), (6,))
(3*j0 + j1,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from layout_algebra.model.shapes import Dim
from layout_algebra.references import delinearize_row_major, linear_index_row_major
from layout_algebra.stages.arith import ARITHMETIC, Arithmetic

__all__ = ["reshape_source_index", "transpose_result_index", "transpose_source_index"]


def reshape_source_index(
    index: Sequence[Any], result_dims: Sequence[Dim], source_dims: Sequence[Dim], ar: Arithmetic = ARITHMETIC
) -> tuple[Any, ...]:
    """The operand index (shape ``source_dims``) of element ``index`` of its reshape to ``result_dims``.

    Row-major position kept: ``linear(i, source_dims) == linear(index, result_dims)``.
    Equal dimensions give the index itself (the same thing, for an in-bounds index).
    """
    if tuple(result_dims) == tuple(source_dims):
        return tuple(index)
    position = linear_index_row_major(index, tuple(result_dims), ar)
    return tuple(delinearize_row_major(position, tuple(source_dims), ar))


def transpose_source_index(index: Sequence[Any], permutation: Sequence[int]) -> tuple[Any, ...]:
    """The operand index of element ``index`` of ``transpose(x, permutation)``: ``i[p[k]] = index[k]``."""
    source: list[Any] = [None] * len(permutation)
    for k, p in enumerate(permutation):
        source[p] = index[k]
    return tuple(source)


def transpose_result_index(index: Sequence[Any], permutation: Sequence[int]) -> tuple[Any, ...]:
    """The index in ``transpose(x, permutation)`` of element ``index`` of ``x``: ``j[k] = index[p[k]]``."""
    return tuple(index[p] for p in permutation)
