"""``layout_algebra.xla.bitcast_util`` (XLA's tile-unaware bitcast predicates) and the report.

Expected values come from ``tests/data/ground_truth/xla_vectors.json`` (XLA's own tests; every case
of the bitcast kinds is run), from brute force (enumerating every element of small untiled
arrays), from the properties XLA's code and tests state (xla-facts §7), and from arithmetic
worked out by hand in a comment next to the assertion.

The last tests check ``docs/bitcasts_xla_vs_exact.md`` against ``docs/generate_bitcast_report.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ground_truth import ground_truth_file, require_vector, vector_params
from support.strategies import array_shapes, layouts

from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import ArrayShape, Layout
from layout_algebra.model.symbols import dim_symbol
from layout_algebra.xla import (
    BitcastDecomposition,
    XlaInputError,
    align_layouts,
    common_factors,
    decompose_bitcast,
    deduce_transpose_dimensions_for_bitcast,
    permute_dimensions,
)
from layout_algebra.xla.bitcast_util import (
    is_reshape_or_transpose_bitcast,
    reshape_is_bitcast,
    transpose_is_bitcast,
)

F32 = PrimitiveType.F32


def _array(dims: list[int] | tuple[int, ...], m2m: tuple[int, ...] | None = None) -> ArrayShape:
    m2m = tuple(reversed(range(len(dims)))) if m2m is None else m2m
    return ArrayShape(F32, tuple(dims), layout=Layout(m2m))


# ----------------------------------------------------------------- xla_vectors.json
@pytest.mark.parametrize("case", vector_params("reshape_is_bitcast"))
def test_reshape_is_bitcast_vectors(case: dict | None) -> None:
    case = require_vector(case, "reshape_is_bitcast")
    i = case["input"]
    got = reshape_is_bitcast(i["input"], i["output"], i["ignore_element_type"])
    assert got is case["expected"], case["source"]


@pytest.mark.parametrize("case", vector_params("transpose_is_bitcast"))
def test_transpose_is_bitcast_vectors(case: dict | None) -> None:
    case = require_vector(case, "transpose_is_bitcast")
    i = case["input"]
    got = transpose_is_bitcast(i["input"], i["output"], i["dimension_mapping"], i["ignore_element_type"])
    assert got is case["expected"], case["source"]


@pytest.mark.parametrize("case", vector_params("is_reshape_or_transpose_bitcast"))
def test_is_reshape_or_transpose_bitcast_vectors(case: dict | None) -> None:
    case = require_vector(case, "is_reshape_or_transpose_bitcast")
    i = case["input"]
    assert is_reshape_or_transpose_bitcast(i["a"], i["b"], i["ignore_element_type"]) is case["expected"]


@pytest.mark.parametrize("case", vector_params("deduce_transpose_dims"))
def test_deduce_transpose_dims_vectors(case: dict | None) -> None:
    case = require_vector(case, "deduce_transpose_dims")
    i = case["input"]
    got = deduce_transpose_dimensions_for_bitcast(i["input"], i["output"])
    expected = case["expected"]
    assert got == (None if expected is None else tuple(expected)), case["source"]


@pytest.mark.parametrize("case", vector_params("decompose_bitcast"))
def test_decompose_bitcast_vectors(case: dict | None) -> None:
    case = require_vector(case, "decompose_bitcast")
    i = case["input"]
    got = decompose_bitcast(i["input"], i["output"])
    expected = case["expected"]
    assert got is not None
    assert got.type == expected["type"], case["source"]
    fields = {"transpose1_dims", "transpose2_dims", "transpose_dims"}
    shapes = {"transpose1_shape", "reshape_shape"}
    for name, value in expected.items():
        if name in fields:
            assert getattr(got, name) == tuple(value), name
        elif name in shapes:
            assert str(getattr(got, name)) == value, name
        else:
            assert name == "type", f"unknown field {name!r} in the vector"


@pytest.mark.parametrize("case", vector_params("align_layouts"))
def test_align_layouts_vectors(case: dict | None) -> None:
    case = require_vector(case, "align_layouts")
    i = case["input"]
    got = align_layouts(i["input"], i["output_dims"])
    assert (None if got is None else str(got)) == case["expected"], case["source"]


# ------------------------------------------------------------------- worked examples
def test_reshape_ignores_tiles_and_size_one_dims() -> None:
    # XLA's own comment: tiles are ignored, so flattening a tiled matrix is a "bitcast".
    assert reshape_is_bitcast("f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}") is True
    # The size-1 dimension 0 is the minor one of {0,1}; skipped, so [1,6] -> [6] is free.
    assert reshape_is_bitcast("f32[1,6]{0,1}", "f32[6]{0}") is True
    # [2,3]{0,1} is column-major: element (0,1) is at offset 2, but at 1 in f32[6]{0}.
    assert reshape_is_bitcast("f32[2,3]{0,1}", "f32[6]{0}") is False
    # Different element counts.
    assert reshape_is_bitcast("f32[2,3]{1,0}", "f32[7]{0}") is False
    # Only the reverse direction sees this one: f32[12]{0}'s unit index (1) lands on (0,0,1),
    # offset 1 in both, but the output's unit index (0,1,0), logical position 3, is at
    # offset 6 under {2,0,1} (dim 0 has stride 3, dim 1 stride 6) and at 3 in the input.
    assert reshape_is_bitcast("f32[12]{0}", "f32[2,2,3]{2,0,1}") is False
    assert reshape_is_bitcast("f32[2,2,3]{2,0,1}", "f32[12]{0}") is False
    # Bounded dynamic dimensions count their bound: 2*3 == 6.
    assert reshape_is_bitcast("f32[<=2,3]{1,0}", "f32[6]{0}") is True


def test_transpose_ignores_sizes_but_not_size_one_positions() -> None:
    # Dimension sizes are never compared.
    assert transpose_is_bitcast("f32[2,3]{1,0}", "f32[7,9]{0,1}", [1, 0]) is True
    # Unlike ReshapeIsBitcast, size-1 dimensions are not skipped: mapping[out.m2m] =
    # ([1,0][1], [1,0][0]) = (0,1) != (1,0), although no element moves.
    assert transpose_is_bitcast("f32[1,128]{1,0}", "f32[128,1]{1,0}", [1, 0]) is False
    # Element types: compared unless ignored.
    assert transpose_is_bitcast("f32[5,3]{1,0}", "s32[3,5]{0,1}", [1, 0]) is False
    assert transpose_is_bitcast("f32[5,3]{1,0}", "s32[3,5]{0,1}", [1, 0], ignore_element_type=True) is True
    # Different ranks: a permutation of the output's dimensions, compared and False.
    assert transpose_is_bitcast("f32[6]{0}", "f32[2,3]{1,0}", [1, 0]) is False
    # No arithmetic on sizes, so symbolic dimensions are fine.
    assert transpose_is_bitcast("f32[N,M]{1,0}", "f32[M,N]{0,1}", [1, 0]) is True


def test_is_reshape_or_transpose_bitcast_steps() -> None:
    # Equal up to element type (step 2), with ignore_element_type.
    assert is_reshape_or_transpose_bitcast("f32[2,3]{0,1}", "s32[2,3]{0,1}") is False
    assert is_reshape_or_transpose_bitcast("f32[2,3]{0,1}", "s32[2,3]{0,1}", ignore_element_type=True) is True
    # Equal shapes with '?' return True before any size is needed.
    assert is_reshape_or_transpose_bitcast("f32[?,3]{1,0}", "f32[?,3]{1,0}") is True
    # A swap (an involution) is found through the transpose step.
    assert is_reshape_or_transpose_bitcast("f32[5,3]{1,0}", "f32[3,5]{0,1}") is True
    # A reshape between descending layouts (step 3).
    assert is_reshape_or_transpose_bitcast("f32[5,3]{1,0}", "f32[3,5]{1,0}") is True
    # Neither: column-major [2,3] -> [3,2] moves (0,1) from offset 2 to 3, and the only
    # transpose keeping each dimension in place (the identity) does not fit the sizes.
    assert is_reshape_or_transpose_bitcast("f32[2,3]{0,1}", "f32[3,2]{0,1}") is False


def test_decompose_bitcast_transpose_and_mismatch() -> None:
    d = decompose_bitcast("f32[3,7,6,4]{3,2,1,0}", "f32[3,6,4,7]{2,1,3,0}")
    assert d == BitcastDecomposition("transpose", transpose_dims=(0, 2, 3, 1))
    assert decompose_bitcast("f32[2,3]{1,0}", "f32[7]{0}") is None
    # Element types may differ (IsDecomposableBitcast only needs equal element counts).
    assert decompose_bitcast("f32[6]{0}", "s32[2,3]{1,0}") == BitcastDecomposition("reshape")


def test_decompose_bitcast_trt_keeps_tiles_e_l_and_memory_space() -> None:
    # f32[2,3]{0,1} has dims major to minor [3,2]; the output f32[6]{0} is already so.
    d = decompose_bitcast("s4[2,3]{0,1:T(2,128)L(1024)E(4)S(1)M(8)}", "s4[6]{0:E(4)}")
    assert d is not None and d.type == "trt"
    assert str(d.transpose1_shape) == "s4[3,2]{1,0:T(2,128)L(1024)E(4)S(1)}"  # M(n) dropped
    assert d.transpose1_dims == (1, 0) and d.transpose2_dims == (0,)
    assert str(d.reshape_shape) == "s4[6]{0:E(4)}"
    assert not d.is_transpose1_identity and d.is_transpose2_identity


def test_align_layouts_size_one_dimensions_go_on_top() -> None:
    # [2,1,6]{0,2,1} without its 1 is [2,6]{0,1}; [1,2,2,3,1] without 1s is [2,2,3]; groups
    # [2]->[2] and [6]->[2,3], walked from the minor end: output dims 1 then 3,2; the
    # output's 1s (4, 0) are added most major, descending.
    assert align_layouts("f32[2,1,6]{0,2,1}", [1, 2, 2, 3, 1]) == Layout((1, 3, 2, 4, 0))
    # Tiles and E of the input are ignored; the result is a bare minor_to_major.
    assert align_layouts("bf16[4,8]{1,0:T(8,128)(2,1)}", (32,)) == Layout((0,))
    # Zero elements: CommonFactors makes one group, whose dims must still be adjacent.
    assert align_layouts("f32[0,3]{1,0}", [3, 0]) == Layout((1, 0))
    assert align_layouts("f32[0,3]{0,1}", [3, 0]) is None


def test_common_factors_examples() -> None:
    assert common_factors([2, 3, 4], [6, 2, 2]) == ((0, 0), (2, 1), (3, 3))
    assert common_factors([], []) == ((0, 0),)
    # After the equal prefix 5, 0 the rest differs (2 vs 7): XLA gives up and makes one group.
    assert common_factors([5, 0, 2], [5, 0, 7]) == ((0, 0), (3, 3))
    # After the prefix 5 both rests have product 0: one group for the rest.
    assert common_factors([5, 0, 2], [5, 2, 0]) == ((0, 0), (1, 1), (3, 3))
    # A 1 can form a group with no dimension on the other side.
    assert common_factors([2, 1, 3], [2, 3]) == ((0, 0), (1, 1), (2, 1), (3, 2))


# -------------------------------------------------------------------------- errors
def test_bad_inputs_raise_xla_input_error_quoting_the_shape() -> None:
    with pytest.raises(XlaInputError, match=r"'f32\[2,'.*not valid shape text.*cannot parse shape"):
        reshape_is_bitcast("f32[2,", "f32[2]")
    with pytest.raises(XlaInputError, match=r"needs an array shape, but '\(f32\[2\]\)' is a tuple shape"):
        transpose_is_bitcast("(f32[2])", "f32[2]", [0])
    with pytest.raises(XlaInputError, match=r"'f32\[2,3\]' has no layout"):
        reshape_is_bitcast(ArrayShape(F32, (2, 3)), "f32[6]")
    with pytest.raises(XlaInputError, match=r"minor_to_major \{0,0\} of 'f32\[2,3\]\{0,0\}'"):
        deduce_transpose_dimensions_for_bitcast("f32[2,3]{0,0}", "f32[3,2]")
    with pytest.raises(XlaInputError, match=r"dimension_mapping \[0, 0\] is not a permutation.*'f32\[3,2\]'"):
        transpose_is_bitcast("f32[2,3]", "f32[3,2]", [0, 0])
    with pytest.raises(XlaInputError, match=r"dimension_mapping \[1, 0, 2\] is not a permutation of the 2"):
        transpose_is_bitcast("f32[2,3]", "f32[3,2]", [1, 0, 2])
    with pytest.raises(XlaInputError, match=r"'f32\[\?,3\]'.*unbounded"):
        reshape_is_bitcast("f32[?,3]", "f32[3]")
    with pytest.raises(XlaInputError, match=r"'f32\[N,3\]'.*symbolic"):
        decompose_bitcast("f32[N,3]", "f32[3,N]")
    with pytest.raises(XlaInputError, match=r"'f32\[2,3\]\{1,0\}' has 6 elements.*\[7\] hold 7"):
        align_layouts("f32[2,3]{1,0}", [7])
    with pytest.raises(XlaInputError, match="negative size"):
        align_layouts("f32[0]{0}", [0, -1])
    with pytest.raises(XlaInputError, match=r"perm \[0\] is not a permutation .*'f32\[2,3\]'"):
        permute_dimensions([0], "f32[2,3]")
    with pytest.raises(XlaInputError, match="different products"):
        common_factors([2, 3], [5])
    with pytest.raises(TypeError, match="must be a sequence of ints"):
        transpose_is_bitcast("f32[2]", "f32[2]", "0")


def test_permute_dimensions_without_layout_keeps_none() -> None:
    out = permute_dimensions([1, 0], ArrayShape(F32, (2, dim_symbol("N"))))
    assert out.layout is None and out.dimensions == (dim_symbol("N"), 2)


# ---------------------------------------------------------------- brute-force oracle
def _untiled_offset(shape: ArrayShape, index: tuple[int, ...]) -> int:
    assert shape.layout is not None
    offset, stride = 0, 1
    for d in shape.layout.minor_to_major:
        offset += index[d] * stride
        stride *= shape.dimensions[d]
    return offset


def _row_major_indices(dims: tuple[int, ...]):
    return itertools.product(*(range(d) for d in dims))


def _reshape_moves_nothing(a: ArrayShape, b: ArrayShape) -> bool:
    """Every element keeps its untiled offset (both enumerated in row-major order)."""
    if len(list(_row_major_indices(a.dimensions))) != len(list(_row_major_indices(b.dimensions))):
        return False
    pairs = zip(_row_major_indices(a.dimensions), _row_major_indices(b.dimensions), strict=True)
    return all(_untiled_offset(a, i) == _untiled_offset(b, j) for i, j in pairs)


@st.composite
def reshape_pairs(draw: st.DrawFn, *, max_factors: int = 5, max_ones: int = 2, zeros: bool = True):
    """Two untiled f32 shapes with the same element count, random layouts."""
    factors = draw(st.lists(st.integers(0 if zeros else 1, 4), max_size=max_factors))

    def dims_from(fs: list[int]) -> list[int]:
        dims: list[int] = []
        for f in fs:
            if dims and draw(st.booleans()):
                dims[-1] *= f
            else:
                dims.append(f)
        for _ in range(draw(st.integers(0, max_ones))):
            dims.insert(draw(st.integers(0, len(dims))), 1)
        return dims

    a = dims_from(factors)
    b = dims_from(draw(st.permutations(factors)) if draw(st.booleans()) else factors)
    la = draw(st.permutations(range(len(a))))
    lb = draw(st.permutations(range(len(b))))
    return _array(a, tuple(la)), _array(b, tuple(lb))


@pytest.mark.slow
@settings(max_examples=300)
@given(reshape_pairs())
def test_reshape_is_bitcast_is_exact_for_untiled_layouts(pair: tuple[ArrayShape, ArrayShape]) -> None:
    # XLA's comment proves that checking unit indices both ways is enough without tiles.
    a, b = pair
    assert reshape_is_bitcast(a, b) == _reshape_moves_nothing(a, b)


@pytest.mark.slow
@given(reshape_pairs())
def test_any_reshape_between_descending_layouts_is_a_bitcast(pair: tuple[ArrayShape, ArrayShape]) -> None:
    a, b = pair
    assert reshape_is_bitcast(_array(a.dimensions), _array(b.dimensions)) is True


@pytest.mark.slow
@given(array_shapes(dynamic=False, max_dim=5), st.data())
def test_transpose_is_bitcast_is_exact_for_untiled_layouts_without_unit_dims(
    shape: ArrayShape, data: st.DataObject
) -> None:
    perm = tuple(data.draw(st.permutations(range(shape.rank))))
    out_m2m = tuple(data.draw(st.permutations(range(shape.rank))))
    a = replace(shape, layout=Layout(shape.layout.minor_to_major))  # type: ignore[union-attr]
    b = _array(tuple(a.dimensions[p] for p in perm), out_m2m)
    moves_nothing = all(
        _untiled_offset(b, j) == _untiled_offset(a, tuple(j[perm.index(d)] for d in range(a.rank)))
        for j in _row_major_indices(b.dimensions)
    )
    if all(d > 1 for d in a.dimensions):  # size-1 (and 0-size) dims are where XLA is stricter
        assert transpose_is_bitcast(a, b, perm, ignore_element_type=True) == moves_nothing
    elif transpose_is_bitcast(a, b, perm, ignore_element_type=True):
        assert moves_nothing


# ------------------------------------------------------------- properties from XLA
@pytest.mark.slow
@given(array_shapes(), st.data())
def test_permute_dimensions_gives_a_transpose_bitcast(shape: ArrayShape, data: st.DataObject) -> None:
    perm = tuple(data.draw(st.permutations(range(shape.rank))))
    out = permute_dimensions(perm, shape)
    assert transpose_is_bitcast(shape, out, perm)  # XLA's PermuteDimensionsLayout test
    assert out.dimensions == tuple(shape.dimensions[p] for p in perm)
    assert out.dynamic_dimensions == tuple(shape.dynamic_dimensions[p] for p in perm)
    assert out.layout is not None and shape.layout is not None
    assert replace(out.layout, minor_to_major=shape.layout.minor_to_major) == shape.layout
    assert deduce_transpose_dimensions_for_bitcast(shape, out) == perm


@pytest.mark.slow
@given(array_shapes(dynamic=False, max_dim=6), st.data())
def test_is_reshape_or_transpose_bitcast_misses_exactly_the_non_involutions(
    shape: ArrayShape, data: st.DataObject
) -> None:
    perm = tuple(data.draw(st.permutations(range(shape.rank))))
    out = permute_dimensions(perm, shape)
    involution = all(perm[perm[i]] == i for i in range(len(perm)))
    # The transpose step computes TransposeIsBitcast(out, shape, perm), true iff perm == perm^-1.
    expected = reshape_is_bitcast(shape, out, ignore_element_type=True) or involution
    assert is_reshape_or_transpose_bitcast(shape, out) == expected


@pytest.mark.slow
@given(reshape_pairs(), st.data())
def test_tiles_and_other_layout_fields_never_matter(
    pair: tuple[ArrayShape, ArrayShape], data: st.DataObject
) -> None:
    a, b = pair
    dress = lambda s: replace(  # noqa: E731
        s, layout=replace(data.draw(layouts(s.rank)), minor_to_major=s.layout.minor_to_major)
    )
    ta, tb = dress(a), dress(b)
    assert reshape_is_bitcast(ta, tb) == reshape_is_bitcast(a, b)
    assert is_reshape_or_transpose_bitcast(ta, tb) == is_reshape_or_transpose_bitcast(a, b)
    assert deduce_transpose_dimensions_for_bitcast(ta, tb) == deduce_transpose_dimensions_for_bitcast(a, b)
    assert align_layouts(ta, b.dimensions) == align_layouts(a, b.dimensions)
    plain, dressed = decompose_bitcast(a, b), decompose_bitcast(ta, tb)
    assert plain is not None and dressed is not None and dressed.type == plain.type
    if a.rank == b.rank:
        perm = tuple(data.draw(st.permutations(range(a.rank))))
        assert transpose_is_bitcast(ta, tb, perm) == transpose_is_bitcast(a, b, perm)


@pytest.mark.slow
@given(reshape_pairs(max_factors=4, max_ones=1, zeros=False))
def test_align_layouts_finds_a_bitcast_layout_iff_one_exists(pair: tuple[ArrayShape, ArrayShape]) -> None:
    a, b = pair
    got = align_layouts(a, b)
    working = [
        p for p in itertools.permutations(range(b.rank)) if reshape_is_bitcast(a, b.with_layout(Layout(p)))
    ]
    assert (got is not None) == bool(working)
    if got is not None:
        assert got.minor_to_major in working
        ones = [d for d in reversed(range(b.rank)) if b.dimensions[d] == 1]
        assert list(got.minor_to_major[b.rank - len(ones) :]) == ones


@pytest.mark.slow
@given(reshape_pairs())
def test_decompose_bitcast_steps_are_bitcasts(pair: tuple[ArrayShape, ArrayShape]) -> None:
    a, b = pair
    d = decompose_bitcast(a, b)
    assert d is not None
    if d.type == "reshape":
        assert reshape_is_bitcast(a, b)
        return
    assert not reshape_is_bitcast(a, b)
    if d.type == "transpose":
        assert d.transpose_dims is not None
        assert b.dimensions == tuple(a.dimensions[p] for p in d.transpose_dims)
        assert transpose_is_bitcast(a, b, d.transpose_dims)
        return
    assert d.type == "trt" and deduce_transpose_dimensions_for_bitcast(a, b) is None
    t1, r, p1, p2 = d.transpose1_shape, d.reshape_shape, d.transpose1_dims, d.transpose2_dims
    assert t1 is not None and r is not None and p1 is not None and p2 is not None
    assert t1.dimensions == tuple(a.dimensions[p] for p in p1) and transpose_is_bitcast(a, t1, p1)
    assert reshape_is_bitcast(t1, r)
    assert b.dimensions == tuple(r.dimensions[p] for p in p2) and transpose_is_bitcast(r, b, p2)
    # Each step is a real transpose/reshape of the data, so the whole bitcast moves nothing.
    assert _reshape_moves_nothing(t1, r)


@pytest.mark.slow
@given(st.lists(st.integers(0, 6), max_size=5), st.data())
def test_common_factors_groups(a: list[int], data: st.DataObject) -> None:
    b = [x for x in data.draw(st.permutations(a))]
    bounds = common_factors(a, b)
    assert bounds[0] == (0, 0) and bounds[-1] == (len(a), len(b))
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        assert i0 <= i1 and j0 <= j1 and (i0, j0) != (i1, j1)
        assert _product(a[i0:i1]) == _product(b[j0:j1])
        if 0 in a or 1 in a:
            continue  # shortest groups are defined for sizes >= 2
        for i, j in itertools.product(range(i0 + 1, i1 + 1), range(j0 + 1, j1 + 1)):
            if (i, j) != (i1, j1):
                assert _product(a[i0:i]) != _product(b[j0:j]), "a shorter group exists"


def _product(xs: list[int]) -> int:
    result = 1
    for x in xs:
        result *= x
    return result


# ------------------------------------------------------------------------ the report
DOCS = Path(__file__).resolve().parents[2] / "docs"


@functools.cache
def _report_module() -> ModuleType:
    """``docs/generate_bitcast_report.py`` as a module (``docs`` is not a package)."""
    name = "_bitcast_report_under_test"
    spec = importlib.util.spec_from_file_location(name, DOCS / "generate_bitcast_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in vector_params("linear_index")
        if c.values[0] is None or "Nested" in c.values[0]["input"]["function"]
    ],
)
def test_report_nested_linear_index_matches_xla_vectors(case: dict | None) -> None:
    case = require_vector(case, "linear_index")
    from layout_algebra.model.syntax import as_shape

    i = case["input"]
    assert _report_module().nested_linear_index(as_shape(i["shape"]), i["index"]) == case["expected"]


@pytest.mark.slow
def test_report_is_up_to_date_for_the_tpu_rows() -> None:
    ground_truth_file("tpu/reshape_bitcast.jsonl")
    ground_truth_file("tpu/transpose_bitcast.jsonl")
    report = _report_module()
    cases = report.tpu_cases()
    comparisons = [report.compare(c) for c in cases]
    expected_rows = report.table_rows(comparisons)
    text = (DOCS / "bitcasts_xla_vs_exact.md").read_text(encoding="utf-8")
    tpu_row = re.compile(r"\| TPU (reshape|transpose) row \d+ \|")
    assert [line for line in text.splitlines() if tpu_row.match(line)] == expected_rows
    assert len(expected_rows) == sum(c.disagrees for c in comparisons) > 0
    groups = [(n, [c for c in comparisons if c.case.op == op]) for n, op in report.TPU_GROUPS]
    for line in report._counts(groups)[2:]:
        assert line in text.splitlines(), line


_ELEMENT = re.compile(r"element \(([0-9,]*)\): bit (\d+) in dst, bit (\d+) in src")


def test_report_counterexamples_recheck() -> None:
    # Every element counterexample in the checked-in report, re-evaluated under nested tiling.
    report = _report_module()
    from layout_algebra.model.syntax import as_shape

    text = (DOCS / "bitcasts_xla_vs_exact.md").read_text(encoding="utf-8")
    checked = 0
    for line in text.splitlines():
        found = _ELEMENT.search(line)
        if not found:
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        op = "transpose" if cells[1].startswith("transpose") else "reshape"
        perm = tuple(json.loads("[" + cells[1][len("transpose {") : -1] + "]")) if op == "transpose" else None
        case = report.Case("row", op, cells[2].strip("`"), cells[3].strip("`"), perm)
        src, dst = as_shape(case.src), as_shape(case.dst)
        element = tuple(int(x) for x in found.group(1).split(","))
        dst_bit, src_bit = report._bits(case, src, dst, element)
        assert (dst_bit, src_bit) == (int(found.group(2)), int(found.group(3))), line
        assert dst_bit != src_bit
        checked += 1
    assert checked > 10
