"""Logical reshape/transpose index maps against NumPy's reshape and transpose (the oracle)."""

from __future__ import annotations

import math

import numpy as np
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_algebra.logical_ops import reshape_source_index, transpose_result_index, transpose_source_index

dims_st = st.lists(st.integers(1, 5), min_size=0, max_size=4).map(tuple)


def factorizations(n: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes with ``n`` elements (random factor splits, size-1 dimensions allowed)."""
    divisors = [d for d in range(1, n + 1) if n % d == 0]

    @st.composite
    def build(draw: st.DrawFn) -> tuple[int, ...]:
        left, out = n, []
        for _ in range(draw(st.integers(0, 3))):
            d = draw(st.sampled_from([d for d in divisors if left % d == 0]))
            out.append(d)
            left //= d
        out.append(left)
        return tuple(draw(st.permutations(out)))

    return build()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_reshape_is_numpy_reshape(data: st.DataObject) -> None:
    source = data.draw(dims_st)
    result = data.draw(factorizations(math.prod(source)))
    x = np.arange(math.prod(source)).reshape(source)
    y = x.reshape(result)
    for j in np.ndindex(*result):
        assert x[reshape_source_index(j, result, source)] == y[j], (source, result, j)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_transpose_is_numpy_transpose(data: st.DataObject) -> None:
    source = data.draw(dims_st)
    perm = tuple(data.draw(st.permutations(range(len(source)))))
    x = np.arange(math.prod(source)).reshape(source)
    y = np.transpose(x, perm)
    for j in np.ndindex(*y.shape):
        i = transpose_source_index(j, perm)
        assert x[i] == y[j], (source, perm, j)
        assert transpose_result_index(i, perm) == tuple(j)


def test_reshape_on_symbols_is_the_row_major_formula() -> None:
    i = sympy.symbols("i0 i1 i2", integer=True, nonnegative=True)
    (flat,) = reshape_source_index(i, (2, 3, 4), (24,))
    assert sympy.expand(flat - (12 * i[0] + 4 * i[1] + i[2])) == 0


def test_reshape_to_the_same_dimensions_is_the_identity() -> None:
    n, m = sympy.symbols("N M", integer=True, positive=True)
    j = sympy.symbols("j0 j1", integer=True, nonnegative=True)
    assert reshape_source_index(j, (n, m), (n, m)) == j
