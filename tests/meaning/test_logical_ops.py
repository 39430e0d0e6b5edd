"""Logical data-movement index maps against NumPy's own reshape, transpose, slicing, broadcast_to, flip, pad and concatenate (the oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_algebra.meaning.logical_ops import (
    broadcast_maps_dimensions,
    broadcast_result_index,
    broadcast_source_index,
    concatenate_source_index,
    concatenate_starts,
    dynamic_slice_clamped_start,
    dynamic_slice_source_index,
    dynamic_update_slice_reads_update,
    dynamic_update_slice_update_index,
    pad_reads_operand,
    pad_size,
    pad_source_index,
    reshape_source_index,
    reverse_dimensions_valid,
    reverse_source_index,
    slice_dims,
    slice_left_out,
    slice_range_fits,
    slice_result_index,
    slice_source_index,
    transpose_result_index,
    transpose_source_index,
)

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


@pytest.mark.slow
@settings(max_examples=200)
@given(st.data())
def test_reshape_is_numpy_reshape(data: st.DataObject) -> None:
    source = data.draw(dims_st)
    result = data.draw(factorizations(math.prod(source)))
    x = np.arange(math.prod(source)).reshape(source)
    y = x.reshape(result)
    for j in np.ndindex(*result):
        assert x[reshape_source_index(j, result, source)] == y[j], (source, result, j)


@pytest.mark.slow
@settings(max_examples=200)
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


@st.composite
def slices(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """An operand shape (size-0 dimensions allowed) and a slice XLA accepts on it."""
    source = draw(st.lists(st.integers(0, 7), min_size=0, max_size=3).map(tuple))
    starts, limits, strides = [], [], []
    for d in source:
        start = draw(st.integers(0, d))
        starts.append(start)
        limits.append(draw(st.integers(start, d)))
        strides.append(draw(st.integers(1, 4)))
    return source, tuple(starts), tuple(limits), tuple(strides)


@pytest.mark.slow
@settings(max_examples=300)
@given(slices())
def test_slice_is_numpy_slicing(case: tuple[tuple[int, ...], ...]) -> None:
    source, starts, limits, strides = case
    x = np.arange(math.prod(source)).reshape(source)
    y = x[tuple(slice(s, lim, st) for s, lim, st in zip(starts, limits, strides, strict=True))]
    assert all(
        slice_range_fits(s, lim, st, d) for s, lim, st, d in zip(starts, limits, strides, source, strict=True)
    )
    assert slice_dims(starts, limits, strides) == y.shape
    for j in np.ndindex(*y.shape):
        i = slice_source_index(j, starts, strides)
        assert x[i] == y[j], (case, j)
        assert slice_result_index(i, starts, strides) == tuple(j)
    # left out: exactly the operand elements no result element reads
    read = {int(v) for v in y.ravel()}
    for i in np.ndindex(*source):
        assert (not any(slice_left_out(i, starts, limits, strides))) == (int(x[i]) in read), (case, i)


@pytest.mark.slow
@settings(max_examples=300)
@given(slices(), st.integers(-2, 9), st.integers(-2, 9), st.integers(-1, 3))
def test_slice_range_fits_is_python_slicing_without_clamping(
    case: tuple[tuple[int, ...], ...], start: int, limit: int, stride: int
) -> None:
    """XLA refuses what Python would clamp: the range fits exactly when clamping changes nothing."""
    source = case[0]
    if not source:
        return
    d = source[0]
    fits = slice_range_fits(start, limit, stride, d)
    clamped = slice(start, limit, stride).indices(d) if stride != 0 else None
    assert fits == (stride >= 1 and clamped == (start, limit, stride) and start <= limit), (
        start,
        limit,
        stride,
        d,
    )


@st.composite
def broadcasts(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """An operand shape, a result shape and ``dimensions`` (any order) mapping one into the other."""
    result = draw(st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple))
    kept = draw(st.lists(st.sampled_from(range(len(result))), unique=True).map(tuple)) if result else ()
    return tuple(result[d] for d in kept), result, kept


@pytest.mark.slow
@settings(max_examples=300)
@given(broadcasts())
def test_broadcast_is_numpy_broadcast_to(case: tuple[tuple[int, ...], ...]) -> None:
    source, result, dims = case
    assert broadcast_maps_dimensions(dims, len(source), len(result))
    x = np.arange(math.prod(source)).reshape(source)
    # NumPy broadcasts trailing dimensions: move the operand's dimensions into place first
    order = sorted(range(len(dims)), key=lambda k: dims[k])
    placed = np.transpose(x, order).reshape(tuple(result[d] if d in dims else 1 for d in range(len(result))))
    y = np.broadcast_to(placed, result)
    for j in np.ndindex(*result):
        i = broadcast_source_index(j, dims)
        assert x[i] == y[j], (case, j)
    for i in np.ndindex(*source):
        j = broadcast_result_index(i, dims, len(result))
        assert y[j] == x[i] and broadcast_source_index(j, dims) == tuple(i)


def test_broadcast_dimensions_must_be_distinct_and_in_range() -> None:
    assert not broadcast_maps_dimensions((0, 0), 2, 3)
    assert not broadcast_maps_dimensions((3,), 1, 3)
    assert not broadcast_maps_dimensions((-1,), 1, 3)
    assert not broadcast_maps_dimensions((0,), 2, 3)
    assert broadcast_maps_dimensions((2, 0), 2, 3)  # XLA's verifier does not require them sorted


@pytest.mark.slow
@settings(max_examples=300)
@given(st.data())
def test_reverse_is_numpy_flip(data: st.DataObject) -> None:
    source = data.draw(st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple))
    dims = tuple(data.draw(st.lists(st.sampled_from(range(len(source))), unique=True))) if source else ()
    assert reverse_dimensions_valid(dims, len(source))
    x = np.arange(math.prod(source)).reshape(source)
    y = np.flip(x, dims) if dims else x
    for j in np.ndindex(*source):
        i = reverse_source_index(j, source, dims)
        assert x[i] == y[j], (source, dims, j)
        assert reverse_source_index(i, source, dims) == tuple(j)


def test_reverse_dimensions_named_twice_or_out_of_range_are_refused() -> None:
    assert not reverse_dimensions_valid((0, 0), 2)
    assert not reverse_dimensions_valid((2,), 2)
    assert not reverse_dimensions_valid((-1,), 2)


def test_index_maps_on_symbols() -> None:
    n = sympy.Symbol("N", integer=True, positive=True)
    j = sympy.symbols("j0 j1", integer=True, nonnegative=True)
    assert slice_source_index(j, (1, 0), (3, 1)) == (3 * j[0] + 1, j[1])
    assert reverse_source_index(j, (4, n), (1,)) == (j[0], n - 1 - j[1])
    assert broadcast_result_index((j[1],), (1,), 2) == (0, j[1])


def numpy_pad(x: np.ndarray, config: list[tuple[int, int, int]], value: int) -> np.ndarray:
    """XLA's pad by NumPy: interior padding by a strided assignment, then ``np.pad``, then cropping."""
    spread = np.full(
        [d + i * (d - 1) if d else 0 for d, (_, _, i) in zip(x.shape, config, strict=True)], value
    )
    spread[tuple(slice(None, None, i + 1) for _, _, i in config)] = x
    grown = np.pad(spread, [(max(lo, 0), max(hi, 0)) for lo, hi, _ in config], constant_values=value)
    return grown[
        tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi, _), n in zip(config, grown.shape, strict=True))
    ]


@pytest.mark.slow
@settings(max_examples=300)
@given(st.data())
def test_pad_is_numpy_pad(data: st.DataObject) -> None:
    source = data.draw(
        st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple)
    )  # np.pad needs rank >= 1
    config = []
    for d in source:
        interior = data.draw(st.integers(0, 2))
        spread = d + interior * (d - 1) if d else 0
        low = data.draw(st.integers(-spread, 3))
        high = data.draw(st.integers(-(spread + low) if spread + low > 0 else 0, 3))
        config.append((low, high, interior))
    x = np.arange(math.prod(source)).reshape(source)
    y = numpy_pad(x, config, -1)
    lows, highs, interiors = (tuple(c[k] for c in config) for k in range(3))
    assert (
        tuple(pad_size(lo, hi, i, d) for lo, hi, i, d in zip(lows, highs, interiors, source, strict=True))
        == y.shape
    )
    for j in np.ndindex(*y.shape):
        if all(pad_reads_operand(j, lows, interiors, source)):
            assert x[pad_source_index(j, lows, interiors, source)] == y[j], (source, config, j)
        else:
            assert y[j] == -1, (source, config, j)


@pytest.mark.slow
@settings(max_examples=200)
@given(st.data())
def test_concatenate_is_numpy_concatenate(data: st.DataObject) -> None:
    shape = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    d = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    pieces, first = [], 0
    for size in sizes:
        piece_shape = [*shape[:d], size, *shape[d + 1 :]]
        pieces.append(np.arange(first, first + math.prod(piece_shape)).reshape(piece_shape))
        first += math.prod(piece_shape)
    y = np.concatenate(pieces, axis=d)
    starts = concatenate_starts(sizes)
    assert starts[-1] == y.shape[d]
    for j in np.ndindex(*y.shape):
        (k,) = [k for k in range(len(sizes)) if starts[k] <= j[d] < starts[k + 1]]
        assert pieces[k][concatenate_source_index(j, d, starts[k])] == y[j], (shape, d, sizes, j)


@st.composite
def dynamic_slices(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """(operand shape, slice sizes that fit, start indices, often out of range)."""
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    sizes = [draw(st.integers(0, n)) for n in shape]
    return shape, sizes, [draw(st.integers(-7, 9)) for _ in shape]


def numpy_window(shape: list[int], sizes: list[int], starts: list[int]) -> tuple[slice, ...]:
    """XLA's rule written with NumPy: the window of ``sizes`` nearest ``starts`` that fits."""
    fitted = [int(np.clip(s, 0, n - k)) for s, n, k in zip(starts, shape, sizes, strict=True)]
    return tuple(slice(f, f + k) for f, k in zip(fitted, sizes, strict=True))


@settings(max_examples=200)
@given(dynamic_slices())
def test_dynamic_slice_is_the_in_bounds_numpy_window(case: tuple[list[int], list[int], list[int]]) -> None:
    shape, sizes, starts = case
    x = np.arange(math.prod(shape)).reshape(shape)
    window = x[numpy_window(shape, sizes, starts)]
    clamped = [dynamic_slice_clamped_start(s, n, k) for s, n, k in zip(starts, shape, sizes, strict=True)]
    assert all(0 <= c <= n - k for c, n, k in zip(clamped, shape, sizes, strict=True))
    for j in np.ndindex(*window.shape):
        assert x[dynamic_slice_source_index(j, clamped)] == window[j], (shape, sizes, starts, j)


@settings(max_examples=200)
@given(dynamic_slices())
def test_dynamic_update_slice_is_numpy_assignment_at_the_clamped_start(
    case: tuple[list[int], list[int], list[int]],
) -> None:
    shape, sizes, starts = case
    x = np.arange(math.prod(shape)).reshape(shape)
    update = -1 - np.arange(math.prod(sizes)).reshape(sizes)
    y = x.copy()
    y[numpy_window(shape, sizes, starts)] = update
    clamped = [dynamic_slice_clamped_start(s, n, k) for s, n, k in zip(starts, shape, sizes, strict=True)]
    for j in np.ndindex(*y.shape):
        if all(dynamic_update_slice_reads_update(j, clamped, sizes)):
            assert update[dynamic_update_slice_update_index(j, clamped)] == y[j], (shape, sizes, starts, j)
        else:
            assert x[j] == y[j], (shape, sizes, starts, j)


def test_dynamic_slice_clamp_on_solver_terms_is_the_integer_clamp() -> None:
    """The clamp built with ``z3.If`` (as hlo.verify builds it) agrees with the integer one."""
    import z3

    start, n = z3.Int("start"), z3.Int("n")
    term = dynamic_slice_clamped_start(start, n, 3, z3.If)
    for s in range(-4, 12):
        for size in range(3, 9):
            value = z3.simplify(z3.substitute(term, (start, z3.IntVal(s)), (n, z3.IntVal(size))))
            assert value.as_long() == dynamic_slice_clamped_start(s, size, 3) == min(max(s, 0), size - 3)


def test_hlo_verify_reads_the_dynamic_slice_maps_from_logical_ops() -> None:
    """One definition: verify's dynamic-(update-)slice clamps through logical_ops, not inline."""
    import inspect

    from layout_algebra.hlo.evaluate_movement import MovementOps

    source = inspect.getsource(MovementOps.offsets)
    assert "dynamic_slice_clamped_start" in source
    assert "min(max(" not in source
    assert "dynamic_slice_source_index" in inspect.getsource(MovementOps.op_dynamic_slice)
    update = inspect.getsource(MovementOps.op_dynamic_update_slice)
    assert "dynamic_update_slice_reads_update" in update
    assert "dynamic_update_slice_update_index" in update


def test_the_numpy_executor_stays_an_independent_oracle() -> None:
    """hlo.execute checks hlo.verify; it must not read the index maps verify reads."""
    import ast
    import inspect

    import layout_algebra.hlo.execute as execute
    import layout_algebra.hlo.execute_compare as execute_compare
    import layout_algebra.hlo.execute_ops as execute_ops

    imported: set[str | None] = set()
    for executor in (execute, execute_ops, execute_compare):
        tree = ast.parse(inspect.getsource(executor))
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
    assert "layout_algebra.meaning.logical_ops" not in imported
    assert "layout_algebra.decide.views" not in imported
    verifier = ("verify", "verify_values", "evaluator", "evaluate_movement", "evaluate_elementwise")
    assert not imported & {f"layout_algebra.hlo.{name}" for name in verifier}
