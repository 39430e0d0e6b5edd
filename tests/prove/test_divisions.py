"""``whole_divisions``: the rewritten expression equals the original at every size >= 1.

The oracle is SymPy's own exact arithmetic at integer sizes (``subs`` then evaluate: ``floor``
and ``Mod`` of integers are exact). Random numerators (polynomials of two sizes with small
integer coefficients, plus a constant) over random divisors (a positive constant times a
size, a product of sizes, or a constant alone), at every size 1..8.
"""

from __future__ import annotations

import itertools

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_algebra.model.symbols import dim_symbol
from layout_algebra.prove.divisions import whole_divisions

N, M = dim_symbol("N"), dim_symbol("M")
SIZES = [N, M]


@st.composite
def divisions(draw) -> sympy.Expr:
    divisor = draw(st.integers(1, 8)) * draw(st.sampled_from([N, M, N * M, sympy.Integer(1), N**2]))
    quotient = sum(draw(st.integers(-3, 3)) * t for t in (N, M, N * M, sympy.Integer(1)))
    remainder = draw(st.integers(-10, 10))
    scale = draw(st.sampled_from([1, 1, 2, 3]))  # a numerator not of the form q*d + r sometimes
    numerator = sympy.expand(quotient * divisor + remainder) * scale
    kind = draw(st.sampled_from([sympy.floor, sympy.Mod]))
    return kind(numerator / divisor) if kind is sympy.floor else sympy.Mod(numerator, divisor)


def values_agree(expr: sympy.Expr, rewritten: sympy.Expr) -> None:
    for n, m in itertools.product(range(1, 9), repeat=2):
        at = {N: n, M: m}
        assert expr.subs(at) == rewritten.subs(at), (expr, rewritten, at)


@settings(max_examples=120, deadline=None)
@given(st.lists(divisions(), min_size=1, max_size=3))
def test_the_rewrite_is_an_identity_for_sizes_from_one(terms) -> None:
    expr = sympy.Add(*terms)
    values_agree(expr, whole_divisions(expr, SIZES))


def test_the_witness_terms_of_a_reshape_become_polynomials() -> None:
    """The terms of the necessity queries (``benchmarks/proofs_catalog.py``): no division left."""
    expr = 4096 * sympy.Mod(sympy.Mod(-1, N), 8) + 32768 * sympy.floor((256 * N - 128) / (128 * N))
    rewritten = whole_divisions(expr, SIZES)
    assert rewritten == 4096 * sympy.Mod(N + 7, 8) + 32768
    values_agree(expr, rewritten)


def test_what_depends_on_the_sizes_being_large_is_left_alone() -> None:
    for expr in (sympy.floor(5 / N), sympy.Mod(-9, 4 * N), sympy.floor((N + 1) / 2), sympy.Mod(N, M)):
        assert whole_divisions(expr, SIZES) == expr


def test_an_unknown_symbol_is_not_a_size() -> None:
    x = sympy.Symbol("x", integer=True)
    expr = sympy.Mod(-1, x)
    assert whole_divisions(expr, SIZES) == expr
