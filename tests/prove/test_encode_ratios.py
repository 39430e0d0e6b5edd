"""``constant_ratio``: the ratio of two sizes, a number exactly when they are proportional.

The oracle is ``sympy.simplify`` (what the encoding called before) and evaluation at integer
sizes: on random products of sizes, ``ceiling`` atoms and constants, the ratio is a number
exactly when simplify says so, the same number, and equal to the quotient at every size.
"""

from __future__ import annotations

import itertools

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_algebra.model.symbols import dim_symbol
from layout_algebra.prove.encode import constant_ratio

N, M = dim_symbol("N"), dim_symbol("M")
FACTORS = [N, M, sympy.ceiling(M / 128), sympy.ceiling(N / 8), N + 1, sympy.Integer(2), sympy.Integer(8)]

sizes = st.lists(st.sampled_from(FACTORS), min_size=0, max_size=4).map(lambda fs: sympy.Mul(*fs))


@settings(max_examples=200, deadline=None)
@given(sizes, sizes)
def test_the_ratio_is_a_number_exactly_when_simplify_finds_one(a, b) -> None:
    ratio, reference = constant_ratio(a, b), sympy.simplify(a / b)
    assert ratio.is_Number == reference.is_Number, (a, b, ratio, reference)
    if ratio.is_Number:
        assert ratio == reference
    for n, m in itertools.product((1, 5, 8, 130), repeat=2):
        at = {N: n, M: m}
        assert ratio.subs(at) == (a / b).subs(at)


def test_sizes_with_floor_or_mod_still_go_through_simplify() -> None:
    assert constant_ratio(8 * sympy.floor(N / 8) + 8, sympy.floor(N / 8) + 1) == 8
