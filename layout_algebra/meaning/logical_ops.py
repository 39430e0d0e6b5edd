"""Logical data movement: which operand element each result element is.

XLA's ``reshape``, ``transpose``, ``slice``, ``broadcast``, ``reverse``, ``pad``,
``concatenate``, ``dynamic-slice`` and ``dynamic-update-slice`` are data movement *logically* defined: each says, for every element of its result, which element of its
operand it is. These functions are that one definition, as pure functions of an index
over any :class:`~layout_algebra.meaning.stages.arith.Arithmetic` (ints, NumPy index arrays,
SymPy symbols, solver terms), with the result dimensions and the validity checks XLA
makes. The bitcast decision (:mod:`layout_algebra.decide.bitcast`), views
(:mod:`layout_algebra.decide.views`) and the rewrite verifier (:mod:`layout_algebra.hlo.verify`)
all read them. The NumPy HLO executor (:mod:`layout_algebra.hlo.execute`) deliberately
does **not**: it is the independent oracle the verifier is tested against, so it keeps
its own NumPy-level slicing, ``broadcast_to`` and ``flip``.

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

**Slice** with ``starts``, ``limits`` and ``strides`` keeps, in each dimension, the
elements ``start, start + stride, ...`` below ``limit`` (``⌈(limit - start) / stride⌉`` of
them); element ``j`` reads ``start + stride·j``. :func:`slice_result_index` goes back, and
:func:`slice_left_out` says when an operand element is not in the slice:

>>> slice_dims((1,), (8,), (3,)), slice_range_fits(1, 8, 3, 8), slice_range_fits(1, 9, 3, 8)
((3,), True, False)
>>> slice_source_index((2,), (1,), (3,))
(7,)
>>> slice_result_index((7,), (1,), (3,))
(2,)
>>> [any(slice_left_out((i,), (1,), (8,), (3,))) for i in range(8)]
[True, False, True, True, False, True, True, False]

**Broadcast** with ``dimensions``: operand dimension ``k`` is result dimension
``dimensions[k]`` (same size); the other result dimensions repeat the operand.
:func:`broadcast_result_index` is the first result element reading an operand element:

>>> broadcast_maps_dimensions((1,), operand_rank=1, result_rank=2)
True
>>> broadcast_source_index((4, 2), (1,))
(2,)
>>> broadcast_result_index((2,), (1,), 2)
(0, 2)

**Reverse** of ``dimensions`` (no dimension twice): index ``x`` of a reversed dimension of
size ``n`` reads ``n - 1 - x``; reversing twice is the identity:

>>> reverse_dimensions_valid((0,), 2), reverse_dimensions_valid((0, 0), 2)
(True, False)
>>> reverse_source_index((1, 2), (4, 3), (0,))
(2, 2)
>>> reverse_source_index(j, (4, sympy.Symbol("N")), (1,))
(j0, N - j1 - 1)

**Pad** with ``low``, ``high`` and ``interior`` per dimension (``low``/``high`` may be
negative, cropping): ``interior`` padding elements go between neighbours, so operand
element ``i`` lands at ``low + (interior + 1)·i``; every other result element is the
padding value. ``f32[3]`` padded ``1_0_1`` is ``[pad, x0, pad, x1, pad, x2]``:

>>> pad_size(1, 0, 1, 3)
6
>>> [pad_source_index((j,), (1,), (1,), (3,)) for j in (1, 3, 5)]
[(0,), (1,), (2,)]
>>> [all(pad_reads_operand((j,), (1,), (1,), (3,))) for j in range(6)]
[False, True, False, True, False, True]

**Concatenate** along ``dimension``: operand ``k`` starts at the sum of the sizes before
it; a result element in operand ``k``'s range reads it shifted back by that start:

>>> concatenate_starts((2, 3, 1))
(0, 2, 5, 6)
>>> concatenate_source_index((1, 4), 1, 2)
(1, 2)

**Dynamic slice** of ``sizes`` at run-time ``starts``: XLA never reads out of bounds, it
clamps each start into ``[0, operand_dim - slice_dim]`` first (a start of ``7`` for a
slice of 3 from a dimension of 8 becomes ``5``; ``-2`` becomes ``0``). Element ``j`` then
reads ``start + j``:

>>> [dynamic_slice_clamped_start(s, 8, 3) for s in (-2, 0, 4, 5, 7)]
[0, 0, 4, 5, 5]
>>> dynamic_slice_source_index((0, 2), (5, 1))
(5, 3)

The same clamp on symbols, given how to choose between two values (here SymPy's
``Piecewise``):

>>> start, n = sympy.symbols("s N", integer=True)
>>> ite = lambda c, a, b: sympy.Piecewise((a, c), (b, True))
>>> dynamic_slice_clamped_start(start, n, 3, ite).subs({start: 9, n: 8})
5

**Dynamic update slice** writes an ``update`` at the (equally clamped) ``starts``; result
element ``j`` is update element ``j - start`` where every dimension has
``start <= j < start + update_dim``, else the operand's element ``j``. An update ``u[2]``
into ``f32[5]`` at start ``9`` lands at ``3``, covering elements 3 and 4:

>>> s = dynamic_slice_clamped_start(9, 5, 2)
>>> s, [all(dynamic_update_slice_reads_update((j,), (s,), (2,))) for j in range(5)]
(3, [False, False, False, True, True])
>>> dynamic_update_slice_update_index((4,), (s,))
(1,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from layout_algebra.meaning.references import delinearize_row_major, linear_index_row_major
from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.model.shapes import Dim

__all__ = [
    "broadcast_maps_dimensions",
    "broadcast_result_index",
    "broadcast_source_index",
    "concatenate_source_index",
    "concatenate_starts",
    "dynamic_slice_clamped_start",
    "dynamic_slice_source_index",
    "dynamic_update_slice_reads_update",
    "dynamic_update_slice_update_index",
    "pad_reads_operand",
    "pad_size",
    "pad_source_index",
    "reshape_source_index",
    "reverse_dimensions_valid",
    "reverse_source_index",
    "slice_dims",
    "slice_left_out",
    "slice_range_fits",
    "slice_result_index",
    "slice_size",
    "slice_source_index",
    "transpose_result_index",
    "transpose_source_index",
]


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


# ------------------------------------------------------------------------------ slice
def slice_size(start: int, limit: int, stride: int) -> int:
    """How many of ``start, start + stride, ...`` lie below ``limit``: ``⌈(limit - start) / stride⌉``."""
    return -(-(limit - start) // stride)


def slice_range_fits(start: int, limit: int, stride: int, size: Dim) -> bool:
    """Whether XLA accepts ``[start:limit:stride]`` on a dimension of ``size``.

    ``0 <= start <= limit <= size`` and ``stride >= 1``; a symbolic ``size`` is only
    checked against the numbers (``limit <= size`` is then the caller's side condition).
    """
    if stride < 1 or not 0 <= start <= limit:
        return False
    return not isinstance(size, int) or limit <= size


def slice_dims(starts: Sequence[int], limits: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """The result dimensions of a slice: :func:`slice_size` per dimension."""
    return tuple(slice_size(s, lim, st) for s, lim, st in zip(starts, limits, strides, strict=True))


def slice_source_index(
    index: Sequence[Any], starts: Sequence[Any], strides: Sequence[Any]
) -> tuple[Any, ...]:
    """The operand index of element ``index`` of a slice: ``start + stride·j`` per dimension."""
    return tuple(s + st * j for j, s, st in zip(index, starts, strides, strict=True))


def slice_result_index(
    index: Sequence[Any], starts: Sequence[Any], strides: Sequence[Any], ar: Arithmetic = ARITHMETIC
) -> tuple[Any, ...]:
    """The slice element reading operand element ``index``: ``⌊(i - start) / stride⌋``.

    Meaningful where :func:`slice_left_out` is false (the element is in the slice).
    """
    return tuple(ar.floordiv(i - s, st) for i, s, st in zip(index, starts, strides, strict=True))


def slice_left_out(
    index: Sequence[Any],
    starts: Sequence[Any],
    limits: Sequence[Any],
    strides: Sequence[int],
    ar: Arithmetic = ARITHMETIC,
) -> list[Any]:
    """Conditions, any of which says operand element ``index`` is not in the slice.

    Per dimension: ``i < start``, ``i >= limit``, and (stride above 1) ``(i - start) mod stride >= 1``.
    """
    out: list[Any] = []
    for i, s, lim, st in zip(index, starts, limits, strides, strict=True):
        out += [ar.ge(s, i + 1), ar.ge(i, lim)]
        if st != 1:
            out.append(ar.ge(ar.mod(i - s, st), 1))
    return out


# -------------------------------------------------------------------------- broadcast
def broadcast_maps_dimensions(dimensions: Sequence[int], operand_rank: int, result_rank: int) -> bool:
    """Whether ``dimensions`` maps each of the operand's dimensions to its own result dimension.

    One entry per operand dimension, no two alike, each in ``[0, result_rank)``. (The sizes
    must also agree: ``operand_dims[k] == result_dims[dimensions[k]]``, as XLA's verifier
    checks; sizes are compared by the caller, which knows whether they are symbolic.)
    """
    return (
        len(dimensions) == operand_rank
        and len(set(dimensions)) == len(dimensions)
        and all(0 <= d < result_rank for d in dimensions)
    )


def broadcast_source_index(index: Sequence[Any], dimensions: Sequence[int]) -> tuple[Any, ...]:
    """The operand index of element ``index`` of a broadcast: ``i[k] = index[dimensions[k]]``."""
    return tuple(index[d] for d in dimensions)


def broadcast_result_index(
    index: Sequence[Any], dimensions: Sequence[int], result_rank: int
) -> tuple[Any, ...]:
    """The first result element reading operand element ``index``: ``0`` in the new dimensions.

    The zero is ``0 * index[0]`` when there is one, so it has the index's type (a NumPy
    index array broadcasts).
    """
    zero: Any = 0 * index[0] if len(index) else 0
    out: list[Any] = [zero] * result_rank
    for k, d in enumerate(dimensions):
        out[d] = index[k]
    return tuple(out)


# ---------------------------------------------------------------------------- reverse
def reverse_dimensions_valid(dimensions: Sequence[int], rank: int) -> bool:
    """Whether XLA accepts reversing ``dimensions`` of a rank-``rank`` array: in range, none twice."""
    return len(set(dimensions)) == len(dimensions) and all(0 <= d < rank for d in dimensions)


def reverse_source_index(
    index: Sequence[Any], dims: Sequence[Dim], dimensions: Sequence[int], ar: Arithmetic = ARITHMETIC
) -> tuple[Any, ...]:
    """The operand index of element ``index`` of ``reverse(x, dimensions)`` (also its inverse).

    ``size - 1 - j`` in a reversed dimension, ``j`` elsewhere; sizes go through ``ar.lift``.
    """
    return tuple(ar.lift(dims[k]) - 1 - j if k in dimensions else j for k, j in enumerate(index))


# -------------------------------------------------------------------------------- pad
def pad_size(low: int, high: int, interior: int, size: Dim) -> Dim:
    """The result size of padding a dimension of ``size``: ``low + high + size + interior·(size - 1)``.

    No interior padding in an empty dimension (``low + high``); ``interior`` must be ``>= 0``.
    """
    if isinstance(size, int) and size == 0:
        return low + high
    return low + high + size + interior * (size - 1)


def pad_source_index(
    index: Sequence[Any],
    lows: Sequence[int],
    interiors: Sequence[int],
    sizes: Sequence[Any],
    ar: Arithmetic = ARITHMETIC,
) -> tuple[Any, ...]:
    """The operand index result element ``index`` reads, where :func:`pad_reads_operand` holds.

    ``⌊(j - low) / (interior + 1)⌋`` per dimension, computed on a non-negative numerator
    (``j - low + step·(size + 1)``, then ``size + 1`` taken off) so a solver divides
    non-negative numbers; ``sizes`` are values of ``ar`` (already lifted).
    """
    out: list[Any] = []
    for j, low, interior, size in zip(index, lows, interiors, sizes, strict=True):
        shifted, step = j - low, interior + 1
        out.append(ar.floordiv(shifted + step * (size + 1), step) - (size + 1) if step > 1 else shifted)
    return tuple(out)


def pad_reads_operand(
    index: Sequence[Any],
    lows: Sequence[int],
    interiors: Sequence[int],
    sizes: Sequence[Any],
    ar: Arithmetic = ARITHMETIC,
) -> list[Any]:
    """Conditions, all of which say result element ``index`` is an operand element (not padding).

    Per dimension: ``j - low >= 0``, the :func:`pad_source_index` ``q`` has ``size - 1 >= q``,
    and (interior padding) ``j - low`` falls on a multiple of ``interior + 1``.
    """
    out: list[Any] = []
    source = pad_source_index(index, lows, interiors, sizes, ar)
    for j, low, interior, size, q in zip(index, lows, interiors, sizes, source, strict=True):
        shifted, step = j - low, interior + 1
        out += [ar.ge(shifted, 0), ar.ge(size - 1, q)]
        if step > 1:
            out.append(ar.ge(0, ar.mod(shifted + step * (size + 1), step)))
    return out


# ------------------------------------------------------------------------ concatenate
def concatenate_starts(sizes: Sequence[Any]) -> tuple[Any, ...]:
    """Where each operand starts along the concatenated dimension, then the total size."""
    out: list[Any] = [0]
    for size in sizes:
        out.append(out[-1] + size)
    return tuple(out)


def concatenate_source_index(index: Sequence[Any], dimension: int, start: Any) -> tuple[Any, ...]:
    """The index, in the operand starting at ``start``, of result element ``index``: shifted back along ``dimension``."""
    return tuple(j - start if k == dimension else j for k, j in enumerate(index))


# ----------------------------------------------------------- dynamic-(update-)slice
def _python_if_then_else(condition: Any, then: Any, otherwise: Any) -> Any:
    """``then if condition else otherwise``, for values whose comparisons are plain bools."""
    return then if condition else otherwise


def dynamic_slice_clamped_start(
    start: Any,
    operand_dim: Any,
    slice_dim: Any,
    if_then_else: Callable[[Any, Any, Any], Any] = _python_if_then_else,
) -> Any:
    """The start XLA uses for a run-time ``start``: clamped into ``[0, operand_dim - slice_dim]``.

    A slice (or an update) of ``slice_dim`` elements then always lies inside the operand's
    dimension of ``operand_dim`` (``slice_dim <= operand_dim`` is checked by the caller).
    ``if_then_else(condition, a, b)`` chooses between two values: Python's conditional by
    default (ints), a solver's ``If`` or NumPy's ``where`` for terms or arrays.
    """
    limit = operand_dim - slice_dim
    return if_then_else(start < 0, 0, if_then_else(start > limit, limit, start))


def dynamic_slice_source_index(index: Sequence[Any], starts: Sequence[Any]) -> tuple[Any, ...]:
    """The operand index of element ``index`` of a dynamic slice at (clamped) ``starts``: ``start + j``."""
    return tuple(s + j for j, s in zip(index, starts, strict=True))


def dynamic_update_slice_reads_update(
    index: Sequence[Any], starts: Sequence[Any], update_dims: Sequence[Any], ar: Arithmetic = ARITHMETIC
) -> list[Any]:
    """Conditions, all of which say result element ``index`` is an element of the update.

    Per dimension: ``j >= start`` and ``start + update_dim >= j + 1``, at the (clamped) ``starts``.
    """
    out: list[Any] = []
    for j, s, u in zip(index, starts, update_dims, strict=True):
        out += [ar.ge(j, s), ar.ge(s + u, j + 1)]
    return out


def dynamic_update_slice_update_index(index: Sequence[Any], starts: Sequence[Any]) -> tuple[Any, ...]:
    """The update index result element ``index`` reads, where :func:`dynamic_update_slice_reads_update` holds: ``j - start``."""
    return tuple(j - s for j, s in zip(index, starts, strict=True))
