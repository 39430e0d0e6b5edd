"""Proofs by instances of general stage lemmas: sound, and they refuse what they cannot cover.

A concrete layout is proved injective and in bounds by composing its stages, each an
instance of a general stage proved once for all sizes. These tests check the verdicts
against enumeration, check that the instance test rejects non-instances, and break
general stages on purpose: a broken general stage must never be proved.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.strategies_maps import small_layout_shapes

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    Transpose,
)
from layout_algebra.model.symbols import dim_symbol
from layout_algebra.prove import core
from layout_algebra.prove.general import (
    GeneralStage,
    general_stage,
    generalize,
    instance_of,
    is_instance,
    is_pattern_instance,
    read_sizes,
    specialize_stage,
)
from layout_algebra.prove.maps import position_stages


@pytest.fixture
def fresh_lemmas():
    """An empty lemma store for the test, the real one back afterwards."""
    saved = dict(core._GENERAL_LEMMAS)
    core._GENERAL_LEMMAS.clear()
    yield core._GENERAL_LEMMAS
    core._GENERAL_LEMMAS.clear()
    core._GENERAL_LEMMAS.update(saved)


# ---------------------------------------------------------------- verdicts vs enumeration
@pytest.mark.slow
@settings(max_examples=80)
@given(small_layout_shapes(max_slots=1024))
def test_lemma_proofs_agree_with_enumeration_and_with_the_direct_query(shape) -> None:
    m = prove.layout_index_map(shape)
    by_lemmas, direct = prove.injective(m), prove.injective(m, method="direct")
    bounds = prove.in_bounds(m)
    assert by_lemmas.encoding.startswith("composition of") and by_lemmas.lemmas
    assert bounds.encoding.startswith("composition of")
    assert (by_lemmas.status, direct.status, bounds.status) == ("proved", "proved", "proved")
    points = list(itertools.product(*(range(d) for d in m.dimensions)))
    positions = [m.evaluate(p) for p in points]
    assert len(set(positions)) == len(positions)
    assert all(0 <= p < layout_map(shape).size_in_elements for p in positions)


@pytest.mark.slow
@settings(max_examples=60)
@given(small_layout_shapes(max_slots=1024))
def test_every_stage_of_a_layout_is_an_instance_with_the_same_map(shape) -> None:
    for stage in position_stages(shape):
        general, values = generalize(stage)
        assert is_instance(general, values, stage)
        # the general stage's forward map, with the values substituted, is the stage's
        x = [sympy.Symbol(f"x{k}", integer=True, nonnegative=True) for k in range(len(stage.domain))]
        symbolic = general.stage.forward(x)
        for point in itertools.islice(itertools.product(*(range(d) for d in stage.domain)), 50):
            at = dict(zip(x, point, strict=True)) | values
            assert tuple(int(sympy.sympify(e).subs(at)) for e in symbolic) == stage.forward(point)


# --------------------------------------------------------------------- non-instances
@pytest.mark.parametrize(
    "stage",
    [
        Pad(domain=(5, 3), padded=(4, 3)),  # shrinks: E would be -1
        Split(domain=(3, 17), start=1, tile=(8,)),  # 17 is no multiple of 8 (needs padding)
    ],
    ids=["pad-shrinks", "split-not-a-multiple"],
)
def test_non_instances_are_rejected(stage) -> None:
    general, values = generalize(stage)
    assert not is_instance(general, values, stage)


def test_an_instance_of_one_kind_is_not_one_of_another() -> None:
    general, values = generalize(Transpose(domain=(2, 3), permutation=(1, 0)))
    assert not is_instance(general, values, Transpose(domain=(2, 3), permutation=(0, 1)))
    assert not is_instance(general, values, Pad(domain=(2, 3), padded=(2, 3)))


def test_subclasses_and_symbolic_stages_have_no_general_form() -> None:
    class Shifted(Transpose):
        def forward(self, x, ar=None):
            return tuple(v + 1 for v in x)

    assert generalize(Shifted(domain=(2,), permutation=(0,))) is None
    assert generalize(Pad(domain=(dim_symbol("N"),), padded=(dim_symbol("N"),))) is None


def test_a_broken_chain_is_not_composed(monkeypatch) -> None:
    shape = "f32[5,300]{1,0:T(8,128)}"
    stages = position_stages(layout_map(shape).shape)
    assert any(isinstance(s, Pad) for s in stages)
    without_pad = tuple(s for s in stages if not isinstance(s, Pad))
    monkeypatch.setattr(core, "position_stages", lambda _shape: without_pad)
    assert core._by_general_lemmas("claim", prove.layout_index_map(shape), None, 10_000) is None
    # and the public answer still comes, from the direct query
    assert prove.injective(shape).encoding.startswith("integer")


def test_a_wrong_final_box_is_not_in_bounds() -> None:
    m = prove.layout_index_map("f32[5,300]{1,0:T(8,128)}")
    slots = int(m.size_in_elements())
    assert core._by_general_lemmas("claim", m, slots, 10_000).proved
    assert core._by_general_lemmas("claim", m, slots - 1, 10_000) is None


# ---------------------------------------------------- broken general stages are not proved
class DropsTheRemainder(Split):
    """A split that forgets the position inside the tile: not injective."""

    def forward(self, x, ar=ARITHMETIC):
        out = list(super().forward(x, ar))
        for k in range(len(self.tile)):
            out[self.start + 2 * k + 1] = 0
        return tuple(out)


def test_a_broken_split_is_refuted(fresh_lemmas) -> None:
    general, _values = generalize(Split(domain=(16,), start=0, tile=(8,)))
    broken = GeneralStage(
        DropsTheRemainder(domain=general.stage.domain, start=0, tile=general.stage.tile), general.minimum
    )
    result = core.general_stage_lemma(broken)
    assert result.status == "refuted"
    found = result.counterexample
    concrete = DropsTheRemainder(
        domain=(found["sizes"]["K0"] * found["sizes"]["t0"],), start=0, tile=(found["sizes"]["t0"],)
    )
    assert found["element"] != found["other_element"]
    assert concrete.forward(found["element"]) == concrete.forward(found["other_element"])
    assert core.general_stage_lemma(general).proved


def test_padding_one_short_is_refuted(fresh_lemmas) -> None:
    general, _values = generalize(Pad(domain=(3,), padded=(4,)))
    (d,), (padded,) = general.stage.domain, general.stage.padded
    short = GeneralStage(Pad(domain=(d,), padded=(padded - 1,)), general.minimum)
    result = core.general_stage_lemma(short)
    assert result.status == "refuted"
    (element,), (size,) = result.counterexample["element"], result.counterexample["range"]
    assert element >= size


def test_alignment_without_a_positive_minimum_is_not_proved(fresh_lemmas) -> None:
    general, _values = generalize(AlignTail(domain=(5,), alignment=8))
    loose = GeneralStage(general.stage, tuple((s, 0) for s, _low in general.minimum))
    assert core.general_stage_lemma(loose).status != "proved"
    assert core.general_stage_lemma(general).proved
    assert loose not in fresh_lemmas  # an unknown is not kept


def test_a_map_that_only_claims_to_be_a_layout_gets_the_direct_query() -> None:
    real = prove.layout_index_map("f32[5,300]{1,0:T(8,128)}")
    impostor = dataclasses.replace(real, evaluator=lambda shape, index, ar: 0)
    assert not impostor.is_layout and real.is_layout
    result = prove.injective(impostor)
    assert result.status == "refuted" and not result.lemmas


def test_method_is_checked() -> None:
    with pytest.raises(ValueError, match="method 'fast'"):
        prove.injective("f32[8,128]{1,0:T(8,128)}", method="fast")


# ------------------------------------------- the plain instance test (no SymPy), vs arithmetic
@st.composite
def concrete_stages(draw: st.DrawFn) -> Stage:
    """A concrete stage of any kind, its sizes small and often *not* an instance (a pad that
    shrinks, a dim no multiple of its tile, a zero tile or alignment where constructible)."""
    rank = draw(st.integers(1, 3))
    domain = tuple(draw(st.lists(st.integers(0, 9), min_size=rank, max_size=rank)))
    kind = draw(st.sampled_from(["transpose", "prepend", "combine", "linearize", "pad", "split", "align"]))
    if kind == "transpose":
        return Transpose(domain=domain, permutation=tuple(draw(st.permutations(range(rank)))))
    if kind == "prepend":
        return PrependUnitDims(domain=domain, count=draw(st.integers(0, 2)))
    if kind == "combine":
        cut = draw(st.integers(1, rank))
        return Combine(
            domain=domain,
            groups=(tuple(range(cut)), tuple(range(cut, rank))) if cut < rank else (tuple(range(rank)),),
        )
    if kind == "linearize":
        return Linearize(domain=domain)
    if kind == "pad":
        return Pad(domain=domain, padded=tuple(d + draw(st.integers(-2, 3)) for d in domain))
    if kind == "align":
        return AlignTail(domain=domain[:1], alignment=draw(st.integers(1, 9)))
    start = draw(st.integers(0, rank - 1))
    tile = tuple(draw(st.lists(st.integers(1, 5), min_size=rank - start, max_size=rank - start)))
    try:
        return Split(domain=domain, start=start, tile=tile)
    except ValueError:
        assume(False)
        raise


def _is_instance_by_arithmetic(stage: Stage) -> bool:
    """What each general stage covers, said directly: every size >= 0, a tile or an
    alignment >= 1, a tiled dim a multiple of its tile, a padded dim at least the dim."""
    if any(d < 0 for d in stage.domain):
        return False
    if isinstance(stage, Split):
        tiled = stage.domain[stage.start :]
        return all(t >= 1 and d % t == 0 for d, t in zip(tiled, stage.tile, strict=True))
    if isinstance(stage, Pad):
        return all(p >= d for d, p in zip(stage.domain, stage.padded, strict=True))
    if isinstance(stage, AlignTail):
        return stage.alignment >= 1
    return True


@pytest.mark.slow
@settings(max_examples=300, derandomize=True)
@given(concrete_stages())
def test_the_plain_instance_test_is_what_the_general_stages_cover(stage) -> None:
    found = instance_of(stage)
    assert (found is not None) == _is_instance_by_arithmetic(stage), stage
    general, values = generalize(stage)
    assert is_instance(general, values, stage) == (found is not None)
    if found is not None:  # SymPy substitution into the general stage gives the stage back
        assert general is general_stage(found)
        assert specialize_stage(general.stage, values) == stage
        assert all(values[s] >= low for s, low in general.minimum)


def test_the_plain_instance_test_refuses_other_kinds_and_structures() -> None:
    split = Split(domain=(3, 16), start=1, tile=(8,))
    found = instance_of(split)
    values = read_sizes(found, split)
    assert is_pattern_instance(found, values, split)
    assert not is_pattern_instance(found, values, Split(domain=(3, 16), start=0, tile=(1, 8)))
    assert not is_pattern_instance(found, values, Split(domain=(3, 24), start=1, tile=(8,)))
    assert not is_pattern_instance(found, values, Pad(domain=(3, 16), padded=(3, 16)))
    assert not is_pattern_instance(found, {**values, "t1": 0}, split)  # below its minimum

    class Shifted(Transpose):
        pass

    assert instance_of(Shifted(domain=(2, 3), permutation=(1, 0))) is None  # not the package's own kind
    assert instance_of(Transpose(domain=(2, dim_symbol("N")), permutation=(1, 0))) is None


# ------------------------------------------------------- symbolic divisors in sizes
def test_division_by_a_symbolic_size_needs_it_positive() -> None:
    n, t = dim_symbol("N"), dim_symbol("T")
    assert prove.holds(t * sympy.ceiling(n / t) >= n, assume="T >= 1").proved
    assert not prove.holds(t * sympy.ceiling(n / t) >= n).proved
    wrong = prove.holds(t * sympy.floor(n / t) >= n, assume="T >= 1")
    assert wrong.status == "refuted"
    values = {dim_symbol(name): value for name, value in wrong.counterexample.items()}
    assert values[t] >= 1 and not bool((t * sympy.floor(n / t) >= n).subs(values))


# ------------------------------------------------ offsets quantified as mixed-radix digits
@pytest.mark.parametrize("radix", [(7, 3), (5, 4, 5), (100,), (3, 50)], ids=str)
def test_offsets_as_digits_cover_every_offset_whatever_the_box(radix) -> None:
    """Any box is sound: offsets past its product are a second query (here 21, 100, 100, 150 vs 100)."""
    p = sympy.Symbol("p", integer=True, nonnegative=True)
    same = prove.expressions_equal(sympy.Mod(p, 21), p - 21 * sympy.floor(p / 21), {p: 100}, radix=radix)
    assert same.status == "proved"
    late = prove.expressions_equal(sympy.floor(p / 21), sympy.floor(p / 22), {p: 100}, radix=radix)
    assert late.status == "refuted"
    q = late.counterexample["p"]
    assert 0 <= q < 100 and q // 21 != q // 22


def test_offsets_as_digits_need_one_offset() -> None:
    p, k = sympy.symbols("p k", integer=True, nonnegative=True)
    with pytest.raises(ValueError, match="exactly one bounded symbol"):
        prove.expressions_equal(p, k, {p: 4, k: 4}, radix=(2, 2))
