"""Logical correspondences of a bitcast, and the bit offsets they pair, by enumeration.

A bitcast keeps every element's bits under a *correspondence*: which input element each
output element is (XLA's ``ShapeUtil::DecomposeBitcast``). Three kinds: a reshape (both
sides read row-major), a transpose, and a transpose-reshape-transpose (both sides read in
their physical order). :mod:`layout_algebra.decide.bitcast` decides with them; this module
holds the correspondences, the input index they give, and the NumPy helpers that compare
bit offsets element by element (or group by group, when the offsets are separable).

>>> from layout_algebra.model.syntax import as_shape
>>> a, b = as_shape("f32[2,3]{1,0}"), as_shape("f32[3,2]{0,1}")
>>> corr = transpose_correspondence((1, 0), b)
>>> str(corr), input_index_of(corr, a, b)((2, 1), None)
('transpose [1, 0]', [1, 2])
>>> str(physical_correspondence(a, b)), physical_correspondence(a, b).dst_order
('transpose-reshape-transpose', (1, 0))
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.logical_ops import (
    reshape_source_index,
    transpose_result_index,
    transpose_source_index,
)
from layout_algebra.meaning.stages import same_offset_form
from layout_algebra.meaning.stages.arith import Arithmetic
from layout_algebra.model.shapes import ArrayShape

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Correspondence",
    "equal_product_groups",
    "input_index_by_groups",
    "input_index_of",
    "is_separable",
    "offsets_at",
    "physical_correspondence",
    "probe_positions",
    "reading_indices",
    "reshape_correspondence",
    "same_physical_arrangement",
    "transpose_correspondence",
]

# ------------------------------------------------------------------ correspondences


@dataclass(frozen=True)
class Correspondence:
    """Which input element each output element is: read the input's dimensions in the
    order ``src_order`` and the output's in ``dst_order``, each row-major; elements with
    the same position correspond.

    * reshape: both orders are the identity;
    * transpose ``p``: ``src_order = p`` (output dimension ``k`` is input dimension ``p[k]``);
    * transpose-reshape-transpose: each side's physical order, major to minor.
    """

    kind: str
    src_order: tuple[int, ...]
    dst_order: tuple[int, ...]

    def __str__(self) -> str:
        if self.kind == "transpose":
            return f"transpose {list(self.src_order)}"
        return self.kind


def reshape_correspondence(a: ArrayShape, b: ArrayShape) -> Correspondence:
    return Correspondence("reshape", tuple(range(a.rank)), tuple(range(b.rank)))


def transpose_correspondence(perm: Sequence[int], b: ArrayShape) -> Correspondence:
    return Correspondence("transpose", tuple(perm), tuple(range(b.rank)))


def _major_to_minor(shape: ArrayShape) -> tuple[int, ...]:
    return tuple(reversed(shape.effective_layout.minor_to_major))


def physical_correspondence(a: ArrayShape, b: ArrayShape) -> Correspondence:
    return Correspondence("transpose-reshape-transpose", _major_to_minor(a), _major_to_minor(b))


def input_index_of(corr: Correspondence, a: ArrayShape, b: ArrayShape) -> Callable[[Any, Any], list[Any]]:
    """``j, ar -> i``: the input index of output element ``j`` (any arithmetic).

    Transpose the output by ``dst_order``, reshape to the input read in ``src_order``,
    transpose that back (:mod:`layout_algebra.meaning.logical_ops`, the one definition of each).
    """
    src_dims = tuple(a.dimensions[d] for d in corr.src_order)
    dst_dims = tuple(b.dimensions[d] for d in corr.dst_order)

    def input_index(j: Any, ar: Any) -> list[Any]:
        t = transpose_result_index(j, corr.dst_order)
        s = reshape_source_index(t, dst_dims, src_dims, ar)
        return list(transpose_source_index(s, corr.src_order))

    return input_index


def _same_formula(x: Any, y: Any) -> bool:
    """Whether two size formulas are the same polynomial (equal for every value of their symbols)."""
    import sympy  # here: concrete decisions need no SymPy

    from layout_algebra.model.symbols import as_sympy

    return sympy.expand(as_sympy(x) - as_sympy(y)) == 0


def _row_major_cuts(src_dims: Sequence[Any], dst_dims: Sequence[Any]) -> list[tuple[int, int]] | None:
    """Where both row-major readings split at the same place, whatever the sizes: pairs
    ``(k, l)`` from ``(0, 0)`` to ``(len(src_dims), len(dst_dims))``, each past the one
    before in both lists, with ``prod(src_dims[:k]) == prod(dst_dims[:l])`` and
    ``prod(src_dims[k:]) == prod(dst_dims[l:])`` as formulas. ``None`` when the whole
    products are not the same formula (equal counts only under assumptions).

    >>> import sympy
    >>> A, B = sympy.symbols("A B", integer=True, nonnegative=True)
    >>> _row_major_cuts((A, B, 128), (A * B, 128))
    [(0, 0), (2, 1), (3, 2)]
    >>> _row_major_cuts((A, 128), (B, 128)) is None
    True
    """
    ns, nd = len(src_dims), len(dst_dims)
    if not _same_formula(math.prod(src_dims, start=1), math.prod(dst_dims, start=1)):
        return None
    cuts, last = [(0, 0)], 0
    for k in range(1, ns):
        for m in range(last + 1, nd):
            if _same_formula(math.prod(src_dims[:k], start=1), math.prod(dst_dims[:m], start=1)) and (
                _same_formula(math.prod(src_dims[k:], start=1), math.prod(dst_dims[m:], start=1))
            ):
                cuts.append((k, m))
                last = m
                break
    cuts.append((ns, nd))
    return cuts


def input_index_by_groups(
    corr: Correspondence, a: ArrayShape, b: ArrayShape
) -> Callable[[Any, Any], list[Any]]:
    """:func:`input_index_of` for every index in the output's box, each group of dimensions
    between two :func:`_row_major_cuts` reshaped on its own: the symbolic decision's form.

    Why it is the same element: at a cut ``(k, l)`` the row-major position is ``H*S + L``
    on both sides, with ``S`` the (same) product after the cut, ``H`` the number of the
    digits before it and ``0 <= L < S`` that of the digits after it. Unravelling by the
    input's dimensions, a digit after ``k`` has a stride ``T`` dividing ``S`` and
    ``H*S/T`` is a multiple of its dimension, so it depends on ``L`` only; a digit before
    ``k`` has a stride ``T*S`` and ``⌊(H*S + L)/(T*S)⌋ = ⌊H/T⌋`` as ``L < S``, so it depends
    on ``H`` only. An empty box (a size 0) has no index: nothing to agree on.

    Why: the reshape of ``[A*B, 128]`` to ``[A, B, 128]`` as a whole divides the position
    by ``B*128``, which the solver must then prove positive and multiply out (nonlinear);
    by groups it divides ``j0`` by ``B`` alone. The two ``A x B`` merges of
    ``benchmarks/conditions.py`` went from a 30 s timeout to under a second.
    """
    src_dims = tuple(a.dimensions[d] for d in corr.src_order)
    dst_dims = tuple(b.dimensions[d] for d in corr.dst_order)
    cuts = _row_major_cuts(src_dims, dst_dims)
    if cuts is None or len(cuts) <= 2:  # one group: the whole reshape
        return input_index_of(corr, a, b)
    groups = list(itertools.pairwise(cuts))

    def input_index(j: Any, ar: Any) -> list[Any]:
        t = transpose_result_index(j, corr.dst_order)
        s: list[Any] = []
        for (k0, m0), (k1, m1) in groups:
            s += reshape_source_index(t[m0:m1], dst_dims[m0:m1], src_dims[k0:k1], ar)
        return list(transpose_source_index(s, corr.src_order))

    return input_index


# ------------------------------------------------------- separable offsets, by groups


class _Dependence:
    """An abstract value: the set of its additive terms, each named by the logical
    dimensions it depends on. Constants have no terms; a sum keeps its terms apart; a
    product of two non-constants, a floor or a remainder merges them into one term."""

    __slots__ = ("terms",)

    def __init__(self, terms) -> None:
        self.terms = frozenset(terms)

    def __add__(self, other: Any) -> _Dependence:
        return _Dependence(self.terms | _terms_of(other))

    __radd__ = __add__

    def __mul__(self, other: Any) -> _Dependence:
        theirs = _terms_of(other)
        if not theirs:
            return self
        if not self.terms:
            return _Dependence(theirs)
        return _Dependence({frozenset().union(*self.terms, *theirs)})

    __rmul__ = __mul__


def _terms_of(value: Any) -> frozenset:
    if isinstance(value, _Dependence):
        return value.terms
    if isinstance(value, int):
        return frozenset()
    raise TypeError(f"no dependence for {value!r}")


class _DependenceArithmetic(Arithmetic):
    """Runs a layout's stages on ``_Dependence`` values (anything else raises)."""

    def lift(self, size: Any) -> Any:
        if not isinstance(size, int):
            raise TypeError("symbolic size")
        return size

    def floordiv(self, a: Any, b: Any) -> Any:
        return _Dependence({frozenset().union(*_terms_of(a), *_terms_of(b))} if _terms_of(a) else ())

    mod = floordiv


@functools.lru_cache(maxsize=4096)
def is_separable(shape: ArrayShape) -> bool:
    """Whether the offset is ``c + sum_d g_d(index[d])``: each additive term of the stage
    pipeline's offset depends on one logical dimension at most (no ``*`` combine mixing
    two of them). Decided on the stages themselves; anything unexpected says no."""
    m = layout_map(shape)
    index = [_Dependence({frozenset({d})}) for d in range(m.rank)]
    try:
        (offset,) = m.apply(index, _DependenceArithmetic(), through=len(m.stages) - 1)
        return all(len(term) <= 1 for term in _terms_of(offset))
    except (TypeError, AttributeError, ValueError, NotImplementedError):
        return False


def equal_product_groups(src_dims: Sequence[int], dst_dims: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Consecutive runs ``src_dims[s0:s1]``, ``dst_dims[d0:d1]`` of equal products, as
    short as possible (the digits of a row-major position split at the same places)."""
    out, s0, d0, s, d = [], 0, 0, 0, 0
    while s < len(src_dims) or d < len(dst_dims):
        ps = math.prod(src_dims[s0:s], start=1)
        pd = math.prod(dst_dims[d0:d], start=1)
        if s > s0 and d > d0 and ps == pd:
            out.append((s0, s, d0, d))
            s0, d0 = s, d
        elif (ps <= pd and s < len(src_dims)) or d == len(dst_dims):
            s += 1
        else:
            d += 1
    if s0 < len(src_dims) or d0 < len(dst_dims):
        out.append((s0, len(src_dims), d0, len(dst_dims)))
    return out


def _reading_order(shape: ArrayShape, order: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in order if shape.dimensions[d] != 1)


def same_physical_arrangement(a: ArrayShape, b: ArrayShape, corr: Correspondence) -> bool:
    """A sufficient condition, decided without a solver: the correspondence reads both
    sides in their physical order (unit dimensions aside), so it pairs elements with the
    same physical index, and both stage pipelines take a physical index to the same bit
    offset (:func:`~layout_algebra.meaning.stages.offset_form`: the stages' own account, with the
    unit dimensions no stage pads left out). When it says no, the exact paths decide."""
    if _reading_order(a, corr.src_order) != _reading_order(a, _major_to_minor(a)):
        return False
    if _reading_order(b, corr.dst_order) != _reading_order(b, _major_to_minor(b)):
        return False
    return same_offset_form(a, b)


def offsets_at(shape: ArrayShape, index: tuple[np.ndarray, ...]) -> np.ndarray:
    import numpy as np

    m = layout_map(shape)
    if m.rank == 0:
        return np.full(len(index[0]) if index else 1, m.forward(()) * m.element_bits, dtype=np.int64)
    return np.asarray(m.apply(index, through=len(m.stages) - 1)[0], dtype=np.int64) * m.element_bits


def reading_indices(shape: ArrayShape, order: tuple[int, ...], flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """The logical indices of the elements at row-major positions ``flat`` when the
    dimensions are read in ``order``."""
    import numpy as np

    dims = tuple(int(shape.dimensions[d]) for d in order)
    index: list[np.ndarray] = [np.zeros_like(flat)] * shape.rank
    if dims:
        for d, coordinate in zip(order, np.unravel_index(flat, dims), strict=True):
            index[d] = coordinate.astype(np.int64)
    return tuple(index)


def probe_positions(b: ArrayShape, corr: Correspondence, n: int) -> np.ndarray:
    """Positions worth checking first: the ends, every unit step and last index of each
    output dimension, and a fixed pseudo-random sample."""
    import numpy as np

    dims = [int(b.dimensions[d]) for d in corr.dst_order]
    strides = [math.prod(dims[k + 1 :]) for k in range(len(dims))]
    picks = {0, n - 1}
    for d, s in zip(dims, strides, strict=True):
        for x in (1, 2, d - 1, d // 2):
            if 0 < x < d:
                picks.add(x * s)
    rng = np.random.default_rng(n)
    sample = rng.integers(0, n, size=512, dtype=np.int64)
    return np.unique(np.concatenate([np.fromiter(picks, dtype=np.int64), sample]))
