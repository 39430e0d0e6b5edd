"""A derandomized soundness campaign: every entry point against an independent oracle,
with sizes named as a user may name them (including every pattern the package uses, or
used, for its own names).

Oracles: XLA's nested tiling written out from the tiled-layout document
(``tests/support/oracles.py``), element by element; plain arithmetic for padding; the NumPy
executor (``hlo.execute``, an independent implementation of HLO semantics) for rewrites.
Every verdict is checked: a ``proved`` at the sizes the oracle can enumerate, a
``refuted`` at its counterexample.

In CI (``CI=true``) the examples are derandomized: the same ≥ 2,000 cases every run (the
counts below, times one). A longer campaign: ``LAYOUT_ALGEBRA_SOUNDNESS_EXAMPLES=<factor>``
multiplies every example count (``=10`` runs about 20,000 cases), e.g.

    CI=true LAYOUT_ALGEBRA_SOUNDNESS_EXAMPLES=10 python -m pytest tests/soundness/test_soundness_suite.py

(drop ``CI=true`` to draw new examples each run).
"""

from __future__ import annotations

import itertools
import math
import os

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import nested_linear_index, nested_tiling

from layout_algebra import condition_of, prove
from layout_algebra.decide import conditions
from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.verify import verify_rewrite
from layout_algebra.model.symbols import dim_symbol

FACTOR = max(1, int(os.environ.get("LAYOUT_ALGEBRA_SOUNDNESS_EXAMPLES", "1")))


#: Examples per test (times ``FACTOR``): ≥ 2,000 in all.
COUNTS = {
    "injectivity": 900,
    "bitcast": 1000,
    "symbolic": 70,
    "sufficiency": 80,
    "conditions": 25,
    "conditions_assumed": 10,
    "rewrites": 60,
    "start_indices": 40,
}


def examples(n: int) -> settings:
    return settings(max_examples=n * FACTOR, deadline=None)


#: Size names as the package spells (or spelled) its own: index variables, substitutions,
#: quotients, start indices, lemma variables, digits; and plain ones.
LOOKALIKES = (
    "x0", "y0", "j0", "j1", "k", "K", "q", "r", "q_1", "r_2", "A", "D", "a1", "b2",
    "param1", "param0", "N_8", "N_8_1", "N8", "N_16", "N_by8", "x0_d0", "p_d0", "literal",
    "start", "lemma", "_x", "_1", "N__8", "N", "M",
)  # fmt: skip
RESERVED = {"p"} | {f"i{k}" for k in range(8)}  # refused by layout_map (closed forms' symbols)
names = st.one_of(
    st.sampled_from(LOOKALIKES), st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,5}", fullmatch=True)
).filter(lambda n: n not in RESERVED and not n.startswith("__"))

TILES = [(), (1,), (2,), (4,), (8,), (1, 2), (2, 2), (2, 4), (4, 2), (8, 4), (3, 2), (2, 3)]


def offsets(dims, minor_to_major, tiles) -> list[int]:
    """Each element's exact position (row-major order of elements), XLA's nested tiling."""
    return [nested_linear_index(dims, minor_to_major, tiles, i) for i in itertools.product(*map(range, dims))]


def xla_allocation(dims, minor_to_major, tiles) -> int:
    """XLA's ``ShapeUtil::ArraySize`` in elements: padded to the first tile only."""
    if not tiles:
        return math.prod(dims)
    return math.prod(nested_tiling(dims, minor_to_major, tiles[:1], [0] * len(dims))[1])


def layout_text(dims, minor_to_major, tiles) -> str:
    tail = ":T" + "".join(f"({','.join(map(str, t))})" for t in tiles) if tiles else ""
    return f"f32[{','.join(map(str, dims))}]{{{','.join(map(str, minor_to_major))}{tail}}}"


@st.composite
def layouts(draw, rank: int = 2, levels: int = 1):
    dims = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    order = tuple(draw(st.permutations(range(rank))))
    tiles = [t for t in (draw(st.sampled_from(TILES)) for _ in range(draw(st.integers(0, levels)))) if t]
    return dims, order, tiles


# ------------------------------------------------------------------ concrete layouts
@examples(COUNTS["injectivity"])
@given(layouts(rank=2, levels=2))
def test_injectivity_and_bounds_agree_with_enumeration(layout) -> None:
    dims, order, tiles = layout
    shape = layout_text(dims, order, tiles)
    places = offsets(dims, order, tiles)
    assert prove.injective(shape).status == ("proved" if len(set(places)) == len(places) else "refuted")
    inside = max(places) < xla_allocation(dims, order, tiles)
    r = prove.in_bounds(shape, allocation="xla")
    assert r.status == ("proved" if inside else "refuted"), (shape, r)


@examples(COUNTS["bitcast"])
@given(layouts(rank=2, levels=1), st.booleans())
def test_reshape_and_transpose_decisions_agree_with_brute_force(layout, transpose) -> None:
    dims, order, tiles = layout
    src = layout_text(dims, order, tiles)
    a = offsets(dims, order, tiles)
    if transpose:
        tdims = dims[::-1]
        for t_order in ((1, 0), (0, 1)):
            dst = layout_text(tdims, t_order, [])
            b = offsets(tdims, t_order, [])
            # output element (j, i) is input element (i, j)
            moved = [b[j * dims[0] + i] for i in range(dims[0]) for j in range(dims[1])]
            same = moved == a and xla_allocation(dims, order, tiles) == math.prod(dims)
            assert bool(transpose_is_bitcast(src, dst, (1, 0))) == same, (src, dst)
        return
    flat = math.prod(dims)
    dst = layout_text((flat,), (0,), [])
    # output element j is input element j in row-major order
    same = a == list(range(flat)) and xla_allocation(dims, order, tiles) == flat
    assert bool(reshape_is_bitcast(src, dst)) == same, (src, dst)


# ------------------------------------------------------------ symbolic, user names
@examples(COUNTS["symbolic"])
@given(names, st.sampled_from([(2, 2), (8, 4), (4, 8), (8, 128)]))
def test_symbolic_layout_questions_whatever_the_sizes_are_called(name, tile) -> None:
    t0, t1 = tile
    tiled = f"f32[{name},{t1}]{{1,0:T({t0},{t1})}}"
    assert prove.injective(tiled).status == "proved"
    assert prove.in_bounds(tiled).status == "proved"
    r = prove.no_padding(tiled)
    assert r.status == "refuted" and r.counterexample[name] % t0 != 0
    assert prove.no_padding(tiled, assume=f"{name} % {t0} == 0").status == "proved"
    r = prove.equivalent(f"f32[{name},3]{{1,0}}", f"f32[{name},3]{{0,1}}")
    assert r.status == "refuted"
    n = r.counterexample["sizes"][name]
    assert offsets((n, 3), (1, 0), []) != offsets((n, 3), (0, 1), [])
    merge = reshape_is_bitcast(
        f"f32[2,{name},{t1}]{{2,1,0:T({t0},{t1})}}", f"f32[2*{name},{t1}]{{1,0:T({t0},{t1})}}"
    )
    if t0 == 1:
        return
    assert merge.status == "refuted"
    n = int(merge.counterexample["sizes"][name])
    assert offsets((2, n, t1), (2, 1, 0), [(t0, t1)]) != offsets((2 * n, t1), (1, 0), [(t0, t1)])


@examples(COUNTS["sufficiency"])
@given(names, names, st.sampled_from([2, 4, 8]))
def test_sufficiency_proofs_never_identify_a_user_size_with_a_substitution(a, b, k) -> None:
    """``f32[a - k*b]`` tiled by ``2k`` has padding at ``a = 2k, b = 1`` although
    ``a % k == 0``: a proof of "no padding under ``a % k == 0``" would be false."""
    if a == b:
        return
    assert math.ceil(k / (2 * k)) * 2 * k != k  # the oracle: k elements in one tile of 2k
    claim = conditions.no_padding_claim(f"f32[{a}-{k}*{b}]{{0:T({2 * k})}}")
    ok, why = conditions.prove_sufficient(claim, sympy.Eq(sympy.Mod(dim_symbol(a), k), 0))
    assert not ok, (a, b, why)


@examples(COUNTS["conditions"])
@given(names, st.sampled_from([2, 4, 8, 16]))
def test_conditions_with_random_size_names_agree_with_arithmetic(name, k) -> None:
    c = conditions.when_no_padding(f"f32[{name}]{{0:T({k})}}")
    assert c.status == "exact", c
    for v in range(1, 3 * k + 2):
        assert c.holds_at({name: v}) == (v % k == 0)


@examples(COUNTS["conditions_assumed"])
@given(names)
def test_conditions_of_results_under_assumptions_agree_with_brute_force(name) -> None:
    other = "M" if name != "M" else "L"
    r = reshape_is_bitcast(
        f"f32[{name},128]{{1,0:T(8,128)}}", f"f32[{other}]{{0}}", assume=f"{other} == 128*{name}"
    )
    c = condition_of(r)
    assert c.status == "exact" and c.expr is not None, c
    for n in range(1, 26):
        same = offsets((n, 128), (1, 0), [(8, 128)]) == list(range(128 * n)) and -(-n // 8) * 8 == n
        assert c.holds_at({name: n}) == same, (name, n)


def _module(*lines: str) -> str:
    body = "\n".join(f"  {'ROOT ' if k == len(lines) - 1 else ''}{line}" for k, line in enumerate(lines))
    return f"HloModule m\nENTRY e {{\n{body}\n}}"


@examples(COUNTS["rewrites"])
@given(names, st.sampled_from(["negate", "copy", "reverse"]))
def test_rewrite_verdicts_with_user_names_agree_with_the_executor(name, op) -> None:
    if name in ("p", "c"):
        return
    head = f"p = f32[{name},4]{{1,0}} parameter(0)"
    before = _module(head, f"c = f32[{name},4]{{1,0}} copy(p)")
    tail = "reverse(p), dimensions={0}" if op == "reverse" else f"{op}(p)"
    after = _module(head, f"c = f32[{name},4]{{1,0}} {tail}")
    r = verify_rewrite(before, after)
    if op == "copy":
        assert r.status == "proved"
        for n in (1, 2, 3):
            assert compare(before, after, sizes={name: n}).same is True
        return
    assert r.status == "refuted", (name, op, r.reason)
    sizes = {k: int(v) for k, v in r.counterexample["sizes"].items()}
    assert compare(before, after, sizes=sizes).same is False


@examples(COUNTS["start_indices"])
@given(names)
def test_dynamic_slice_start_indices_are_no_user_size(name) -> None:
    head = (f"p = f32[{name}+1,4]{{1,0}} parameter(0)", "i = s32[] parameter(1)", "z = s32[] constant(0)")
    before = _module(*head, "d = f32[1,4]{1,0} dynamic-slice(p, i, z), dynamic_slice_sizes={1,4}")
    after = _module(
        *head,
        f"r = f32[{name}+1,4]{{1,0}} reverse(p), dimensions={{0}}",
        "d = f32[1,4]{1,0} dynamic-slice(r, z, z), dynamic_slice_sizes={1,4}",
    )
    r = verify_rewrite(before, after)
    assert r.status == "refuted", (name, r.reason)
    assert compare(before, after, sizes={name: 1}).same is False


def test_the_campaign_has_at_least_two_thousand_cases() -> None:
    assert sum(COUNTS.values()) >= 2000, COUNTS


@pytest.mark.parametrize("name", sorted(RESERVED))
def test_reserved_closed_form_names_are_refused_clearly(name) -> None:
    from layout_algebra.meaning.layout_map import layout_map

    with pytest.raises(ValueError, match="reserved"):
        layout_map(f"f32[{name},4]{{1,0}}")
