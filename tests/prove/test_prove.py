"""The prover against exhaustive enumeration: it must never say proved for a false claim.

Random small layouts (all claims true) and deliberately broken maps (an index term dropped,
a wrong stride, a tile too small) are judged both by the prover and by enumerating every
element; the verdicts must agree, and every refutation must carry a counterexample that
really is one.
"""

from __future__ import annotations

import itertools
import math

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies_maps import small_layout_shapes

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.model.syntax import parse_shape


def positions(m: prove.IndexMap) -> dict[tuple, int]:
    return {e: m.evaluate(e) for e in itertools.product(*(range(d) for d in m.dimensions))}


def enumerated_injective(m: prove.IndexMap) -> bool:
    values = list(positions(m).values())
    return len(set(values)) == len(values)


# ------------------------------------------------------------------------ true claims
@pytest.mark.slow
@settings(max_examples=60)
@given(small_layout_shapes(max_slots=1024))
def test_random_layouts_are_proved_injective_in_bounds_and_equal_to_both_references(shape) -> None:
    assert prove.injective(shape).status == "proved"
    assert prove.in_bounds(shape).status == "proved"
    assert prove.equivalent(shape, prove.formula_reference(shape)).status == "proved"
    assert prove.equivalent(shape, prove.pad_reshape_transpose_reference(shape)).status == "proved"


# ---------------------------------------------------------------------- broken maps
def _dropped_term(shape, k):
    def f(index, ar):
        changed = list(index)
        changed[k] = 0
        m = layout_map(shape)
        return m.apply(changed, ar, through=len(m.stages) - 1)[0]

    return f


def _wrong_stride(dims):
    strides = [math.prod(dims[k + 1 :]) for k in range(len(dims))]
    if len(strides) >= 2:
        strides[-2] = max(strides[-2] - 1, 0)

    def f(index, ar):
        return sum((i * s for i, s in zip(index, strides, strict=True)), start=0)

    return f


def _tile_too_small(dims, tile):
    (_d0, d1), (t0, t1) = dims, tile
    tiles_per_row = -(-d1 // t1)

    def f(index, ar):
        i0, i1 = index
        tile_number = ar.floordiv(i0, t0) * tiles_per_row + ar.floordiv(i1, t1)
        return tile_number * (t0 * t1) + ar.mod(i0, t0) * (t1 - 1) + ar.mod(i1, t1)

    return f


broken_maps = st.one_of(
    st.tuples(
        small_layout_shapes(max_slots=512).filter(lambda s: s.rank >= 1),
        st.integers(0, 3),
    ).map(
        lambda sk: prove.function_map(sk[0], _dropped_term(sk[0], sk[1] % sk[0].rank), name="dropped term")
    ),
    st.lists(st.integers(1, 6), min_size=1, max_size=3).map(
        lambda dims: prove.function_map(
            parse_shape(f"f32[{','.join(map(str, dims))}]"), _wrong_stride(dims), name="wrong stride"
        )
    ),
    st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 4)).map(
        lambda v: prove.function_map(
            parse_shape(f"f32[{v[0]},{v[1]}]"),
            _tile_too_small((v[0], v[1]), (v[2], v[3])),
            name="tile too small",
        )
    ),
)


@pytest.mark.slow
@settings(max_examples=120)
@given(broken_maps)
def test_injectivity_verdict_agrees_with_enumeration(m) -> None:
    result = prove.injective(m)
    truth = enumerated_injective(m)
    assert result.status == ("proved" if truth else "refuted"), result
    if result.status == "refuted":
        a, b = result.counterexample["element"], result.counterexample["other_element"]
        assert a != b and m.evaluate(a) == m.evaluate(b)


@pytest.mark.slow
@settings(max_examples=80)
@given(broken_maps)
def test_equivalence_verdict_agrees_with_enumeration(m) -> None:
    layout = prove.layout_index_map(m.shape)
    truth = positions(m) == positions(layout)
    result = prove.equivalent(layout, m)
    assert result.status == ("proved" if truth else "refuted"), result
    if result.status == "refuted":
        e = result.counterexample["element"]
        assert layout.evaluate(e) != m.evaluate(e)


@pytest.mark.slow
@settings(max_examples=60)
@given(small_layout_shapes(max_slots=512), st.integers(0, 6))
def test_bounds_verdict_of_a_shifted_map_agrees_with_enumeration(shape, shift) -> None:
    layout = prove.layout_index_map(shape)
    shifted = prove.function_map(
        shape, lambda i, ar: layout.evaluate(i, ar) + shift, name=f"shifted by {shift}"
    )
    truth = all(p < layout.size_in_elements() for p in positions(shifted).values())
    result = prove.in_bounds(shifted)
    assert result.status == ("proved" if truth else "refuted"), result
    if result.status == "refuted":
        assert shifted.evaluate(result.counterexample["element"]) >= layout.size_in_elements()


# ------------------------------------------------------------------------- symbolic
@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "f32[N,M]{1,0:T(8,128)}",
        "bf16[N,M]{1,0:T(8,128)(2,1)}",
        "s8[N,M]{0,1:T(32,128)(4,1)}",
        "f32[N,M,K]{2,1,0}",
    ],
)
def test_symbolic_layouts_are_injective_and_in_bounds_and_the_answer_holds_on_small_sizes(text) -> None:
    assert prove.injective(text).status == "proved"
    assert prove.in_bounds(text).status == "proved"
    symbolic = layout_map(text)
    for values in itertools.product([1, 3, 9], repeat=3):
        sizes = dict(zip(("N", "M", "K"), values, strict=True))
        concrete = symbolic.specialize({k: v for k, v in sizes.items() if k in str(text)})
        got = [concrete.forward(e) for e in concrete.elements()]
        assert len(set(got)) == len(got) and all(p < concrete.size_in_elements for p in got)


@pytest.mark.slow
def test_symbolic_refutation_names_sizes_and_is_a_real_counterexample() -> None:
    result = prove.equivalent("f32[N,M]{1,0:T(8,128)}", "f32[N,M]{1,0}")
    assert result.status == "refuted"
    cex = result.counterexample
    concrete = {k: v for k, v in cex["sizes"].items()}
    a = layout_map("f32[N,M]{1,0:T(8,128)}").specialize(concrete)
    b = layout_map("f32[N,M]{1,0}").specialize(concrete)
    assert a.forward(cex["element"]) != b.forward(cex["element"])


def test_assumptions_make_a_claim_provable() -> None:
    """Without padding (M a multiple of 128), T(1,128) on f32[N,M] is row-major."""
    tiled, plain = "f32[N,M]{1,0:T(1,128)}", "f32[N,M]{1,0}"
    assert prove.equivalent(tiled, plain).status == "refuted"
    assert prove.equivalent(tiled, plain, assume="M % 128 == 0").status == "proved"


@pytest.mark.parametrize(
    ("text", "message"),
    [("N >", "not a comparison"), ("N ** == 3", "cannot read"), ("banana", "not a comparison")],
)
def test_bad_assumptions_are_clear_errors(text, message) -> None:
    with pytest.raises(ValueError, match=message):
        prove.parse_assumptions(text)


def test_expressions_equal_proves_and_refutes() -> None:
    i = sympy.Symbol("i", integer=True, nonnegative=True)
    n = sympy.Symbol("N", integer=True, nonnegative=True)
    assert prove.expressions_equal(sympy.Mod(i, 8) + 8 * sympy.floor(i / 8), i, {i: n}).status == "proved"
    r = prove.expressions_equal(sympy.Mod(i, 8), i, {i: n})
    assert r.status == "refuted" and r.counterexample["i"] >= 8


def test_the_pair_lemma_is_proved() -> None:
    assert prove.mixed_radix_pair_lemma().status == "proved"


def test_xla_allocation_bound_is_refuted_where_the_compiler_pads_to_the_first_tile_only() -> None:
    r = prove.in_bounds("s16[1000,200]{0,1:T(1,128)(2,1)}", allocation="xla")
    assert r.status == "refuted"
    m = layout_map("s16[1000,200]{0,1:T(1,128)(2,1)}")
    assert m.forward(r.counterexample["element"]) >= r.counterexample["allocated"]
    assert prove.in_bounds("bf16[16,256]{1,0:T(8,128)(2,1)}", allocation="xla").status == "proved"


def test_maps_of_different_boxes_cannot_be_compared() -> None:
    with pytest.raises(ValueError, match="different index boxes"):
        prove.equivalent("f32[2,3]", "f32[3,2]")


@pytest.mark.parametrize(
    "function",
    [lambda i, ar: i[0] // 2, lambda i, ar: max(i[0], 1), lambda i, ar: i[0] % 3 if i[0] else 0],
    ids=["floordiv", "max", "conditional"],
)
@pytest.mark.parametrize("shape", ["f32[N]", "f32[6]"])
def test_python_operations_on_solver_terms_are_unknown_not_a_crash(function, shape: str) -> None:
    m = prove.function_map(shape, function)
    values = [function((k,), ARITHMETIC) for k in range(6)]  # the truth at size 6, by enumeration
    truth = {"injective": len(set(values)) == 6, "in_bounds": all(0 <= v < 6 for v in values)}
    for claim, result in (("injective", prove.injective(m)), ("in_bounds", prove.in_bounds(m))):
        assert result.status in {"unknown", "refuted", "proved"}
        if result.status == "unknown":
            assert result.reason
        elif shape == "f32[6]":
            assert (result.status == "proved") == truth[claim]
