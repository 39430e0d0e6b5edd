"""Dimension formulas (``f32[N/8,128]``, ``bf16[3*N/4,256]``): the prover against brute force.

A shape with a dimension formula is an array only at the sizes where every formula is a
whole number >= 0: that is the domain of every question about it (``prove.core.shape_facts``;
docs/assumptions.md, "The domain of a question"). Each verdict is checked here against the
exact answer at every such size up to a bound, computed without a solver (the concrete
bitcast decision, the layout's offsets enumerated element by element, the exact sizes):

* ``proved`` must hold at every size of the domain;
* ``refuted`` must name a size of the domain (every dimension a whole number) where the
  claim fails;
* ``unknown`` must say why.

Before the domain was a fact of the queries, the prover said ``unknown`` for most of these
(the side condition "N/8 is exact" did not follow from nothing), and a no-padding
counterexample could be a size with no array at all (``s8[N/2,8]`` refuted at N = 7).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layout_algebra import prove
from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
from layout_algebra.decide.conditions import when_no_padding, when_reshape_is_bitcast
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import size_report
from layout_algebra.model.syntax import parse_shape
from layout_algebra.prove.assumptions import parse_condition, residue_of

#: One-symbol dimension formulas: exact divisions, a multiple of one, an offset one, a floor
#: division (a size at every N), a difference (a size from N = 2 on), N itself.
FORMULAS = ("N/8", "N/4", "N/2", "3*N/4", "5*N/8", "(N+4)/8", "(N+7)//8", "N-2", "N")
#: Second-symbol formulas (two-symbol questions).
SECOND = ("M/2", "M/4", "M", "3*M/2")
CONSTANTS = (1, 2, 3, 4, 8)
TYPES = ("f32", "bf16", "s8")
TILES = {
    1: ("", ":T(2)", ":T(4)", ":T(8)"),
    2: ("", ":T(2,4)", ":T(4,2)", ":T(8,8)", ":T(2,2)"),
    3: ("", ":T(2,4)", ":T(4,8)"),
}
KINDS = ("reshape", "reshape", "transpose", "injective", "in_bounds", "no_padding")

Pick = Callable[[Sequence[Any]], Any]
Question = tuple[Any, ...]


# ------------------------------------------------------------------------- questions
def shape_text(pick: Pick, element_type: str, dims: Sequence[str]) -> str:
    """``element_type[dims]`` with a random dimension order and (maybe) a tile."""
    rank = len(dims)
    order = pick(list(itertools.permutations(range(rank))))
    tile = pick(TILES[rank])
    if tile == ":T(2,2)" and element_type == "bf16" and pick((False, True)):
        tile = ":T(2,2)(2,1)"
    return f"{element_type}[{','.join(dims)}]{{{','.join(map(str, order))}{tile}}}"


def grouped(pick: Pick, factors: Sequence[str]) -> list[str]:
    """Runs of consecutive factors multiplied into dimensions (a reshape of row-major order)."""
    groups = [[factors[0]]]
    for f in factors[1:]:
        if pick((False, True)):
            groups[-1].append(f)
        else:
            groups.append([f])
    return ["*".join(f if f.isdigit() else f"({f})" for f in g) for g in groups]


def question(pick: Pick, symbolic: Sequence[str]) -> Question | None:
    """A claim about shapes made of the formulas ``symbolic`` and some constants, or None
    (a rank above 3)."""
    kind = pick(KINDS)
    element_type = pick(TYPES)
    factors = [*symbolic, *(str(pick(CONSTANTS)) for _ in range(pick((1, 2))))]
    factors = [factors[i] for i in pick(list(itertools.permutations(range(len(factors)))))]
    src = grouped(pick, factors)
    dst = grouped(pick, factors) if kind == "reshape" else src
    if len(src) > 3 or len(dst) > 3:
        return None
    a = shape_text(pick, element_type, src)
    if kind == "reshape":
        return kind, a, shape_text(pick, element_type, dst)
    if kind == "transpose":
        perm = pick(list(itertools.permutations(range(len(src)))))
        return kind, a, shape_text(pick, element_type, [src[p] for p in perm]), perm
    return kind, a


def ask(q: Question) -> Any:
    """The prover's verdict."""
    kind = q[0]
    if kind == "reshape":
        return reshape_is_bitcast(q[1], q[2], timeout_ms=10_000)
    if kind == "transpose":
        return transpose_is_bitcast(q[1], q[2], q[3], timeout_ms=10_000)
    return getattr(prove, kind)(q[1], timeout_ms=10_000)


def truth(q: Question, sizes: dict[str, int]) -> bool | None:
    """The claim at concrete sizes without a solver; ``None`` where the arrays do not exist."""
    try:
        shapes = [parse_shape(t).specialize(sizes) for t in q[1:3] if isinstance(t, str)]
    except ValueError:  # a dimension that is no whole number >= 0 there
        return None
    kind = q[0]
    if kind == "reshape":
        return reshape_is_bitcast(*shapes).status == "proved"
    if kind == "transpose":
        return transpose_is_bitcast(*shapes, q[3]).status == "proved"
    s = shapes[0]
    report = size_report(s)
    if kind == "no_padding":
        return report.physical_elements == report.logical_elements
    m = layout_map(s)
    offsets = [m.forward(i) for i in itertools.product(*map(range, s.dimensions))]
    if kind == "injective":
        return len(set(offsets)) == len(offsets)
    return all(0 <= o < report.physical_elements for o in offsets)  # in_bounds (exact buffer)


def check_against_brute_force(q: Question, grid: Sequence[dict[str, int]]) -> str:
    """Assert the verdict agrees with :func:`truth` over ``grid``; returns the status."""
    verdict = ask(q)
    if verdict.status == "proved":
        failing = [sizes for sizes in grid if truth(q, sizes) is False]
        assert not failing, (q, "proved, but fails at", failing[:3])
        assert any(truth(q, sizes) is not None for sizes in grid), (q, "no size of the grid has the arrays")
    elif verdict.status == "refuted":
        cex = verdict.counterexample or {}
        named = cex.get("sizes", cex)
        sizes = {name: int(named.get(name, 0)) for name in {n for s in grid for n in s}}
        assert truth(q, sizes) is False, (
            q,
            "refuted at",
            sizes,
            "where the claim holds or there is no array",
        )
    else:
        assert verdict.status == "unknown" and verdict.reason, q
    return str(verdict.status)


ONE_SYMBOL_GRID = [{"N": n} for n in range(0, 49)]
TWO_SYMBOL_GRID = [{"N": n, "M": m} for n in range(0, 17) for m in range(0, 13)]


def _drawn(data: st.DataObject, symbolic: Callable[[Pick], Sequence[str]]) -> Question:
    def pick(options: Sequence[Any]) -> Any:
        return data.draw(st.sampled_from(list(options)))

    while True:
        q = question(pick, symbolic(pick))
        if q is not None:
            return q


# ------------------------------------------------------------------------- properties
@pytest.mark.slow
@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_one_symbol_verdicts_agree_with_brute_force(data: st.DataObject) -> None:
    q = _drawn(data, lambda pick: [pick(FORMULAS)])
    status = check_against_brute_force(q, ONE_SYMBOL_GRID)
    # one symbol, small layouts: linear once N = d*k, so a verdict is always within reach
    assert status != "unknown", q


@pytest.mark.slow
@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_two_symbol_verdicts_agree_with_brute_force(data: st.DataObject) -> None:
    q = _drawn(data, lambda pick: [pick(FORMULAS), pick(SECOND)])
    check_against_brute_force(q, TWO_SYMBOL_GRID)


# ------------------------------------------------------------------- regressions (step 1)
DECIDED = [
    # each was `unknown` (the side condition "N/8 is exact" was not implied), or timed out
    (("reshape", "f32[N/8,8,128]{2,1,0}", "f32[N,128]{1,0}"), "proved"),
    (("reshape", "f32[N/8,8,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}"), "proved"),
    (("reshape", "f32[N,128]{1,0:T(8,128)}", "f32[N/8,8,128]{2,1,0:T(8,128)}"), "proved"),
    (("reshape", "f32[N/4,2,2]{2,1,0}", "f32[N]{0}"), "proved"),
    (("reshape", "f32[N/8,8]{1,0:T(8)}", "f32[N]{0:T(8)}"), "proved"),
    (("reshape", "f32[3*(N/8)]{0:T(8)}", "f32[3,(N/8)]{0,1:T(2,4)}"), "refuted"),
    (("transpose", "f32[N/8,128]{1,0}", "f32[128,N/8]{0,1}", (1, 0)), "proved"),
    (("transpose", "f32[N/8,128]{1,0:T(8,128)}", "f32[128,N/8]{0,1:T(8,128)}", (1, 0)), "proved"),
    (("injective", "f32[N/8,128]{1,0:T(8,128)}"), "proved"),
    (("injective", "bf16[3*N/4,256]{1,0:T(8,128)(2,1)}"), "proved"),
    (("injective", "f32[N/8,N/4]{0,1:T(8,128)}"), "proved"),
    (("in_bounds", "bf16[3*N/4,256]{1,0:T(8,128)(2,1)}"), "proved"),
    (("in_bounds", "s8[4,(N/2)]{1,0:T(8,8)}"), "proved"),
    (("injective", "bf16[2*3*((N+4)/8)]{0:T(2)}"), "proved"),
    # no divisibility: a floor division is a size at every N, N-2 from N = 2 on
    (("injective", "f32[(N+7)//8,128]{1,0:T(8,128)}"), "proved"),
    (("reshape", "f32[(N+7)//8,8]{1,0}", "f32[8*((N+7)//8)]{0}"), "proved"),
    (("reshape", "f32[N-2,8]{1,0:T(8,8)}", "f32[8*N-16]{0:T(64)}"), "proved"),
    (("no_padding", "f32[N-1,128]{1,0:T(8,128)}"), "refuted"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("q", "expected"), DECIDED, ids=[" ".join(map(str, q[1:3])) for q, _ in DECIDED])
def test_formula_dims_that_were_unknown_are_decided(q: Question, expected: str) -> None:
    assert check_against_brute_force(q, ONE_SYMBOL_GRID) == expected


def test_the_domain_is_named_in_the_claim_and_the_counterexample_lies_in_it() -> None:
    proved = reshape_is_bitcast("f32[N/8,8,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")
    assert "for all sizes with N % 8 == 0" in proved.reason
    refuted = prove.no_padding("f32[3*N/4,128]{1,0:T(8,128)}")
    assert refuted.status == "refuted" and refuted.counterexample["N"] % 4 == 0


def test_tiling_is_pad_reshape_transpose_with_a_formula_dim() -> None:
    assert prove.tiling_is_pad_reshape_transpose("f32[N/8,128]{1,0:T(8,128)}").status == "proved"


def test_two_symbols_multiplied_after_an_exact_division() -> None:
    """``15*M*N/2`` is an exact division of a product: Z3 timed out on it (30 s) until
    ``N % 8 == 0`` made ``N`` the term ``8*k`` and the quotient the polynomial ``60*M*k``."""
    q = ("reshape", "s8[5*N/8,12*M]{1,0}", "s8[(5*N/8)*12*M]{0:T(2)}")
    assert check_against_brute_force(q, TWO_SYMBOL_GRID) == "proved"


NESTED = [
    # M*(N + 4)/16 written (M/2)*((N+4)/8): a factor (N + 4)/8 need not be whole (M = 8,
    # N = 26), so its exact quotient was an obligation the domain does not imply: unknown
    (("reshape", "bf16[(M/2)*((N+4)/8)]{0:T(2)}", "bf16[(M/2)*((N+4)/8)]{0:T(2)}"), "proved"),
    (("injective", "f32[M*((N+4)/8),4]{0,1:T(2,2)}"), "proved"),
    (("in_bounds", "f32[M*((N+4)/8),4]{0,1:T(2,2)}"), "proved"),
    (("reshape", "f32[M*((N+4)/8),4]{1,0}", "f32[M*((N+4)/8)*4]{0}"), "proved"),
]


@pytest.mark.parametrize(("q", "expected"), NESTED, ids=[" ".join(map(str, q[1:3])) for q, _ in NESTED])
def test_a_product_with_a_fraction_inside_is_one_quotient(q: Question, expected: str) -> None:
    assert check_against_brute_force(q, TWO_SYMBOL_GRID) == expected


# ------------------------------------------------------------------- size conditions
def test_size_conditions_are_found_inside_the_domain() -> None:
    """The condition search sampled N = 1, 2, ... and stopped at N = 1 ("no such array"):
    ``unknown`` for every formula dim. It now samples, fits and proves inside the domain."""
    c = when_no_padding("f32[N/8,128]{1,0:T(8,128)}")
    assert (str(c.expr), c.status) == ("Eq(Mod(N, 64), 0)", "exact")
    r = when_reshape_is_bitcast("f32[N/4,4,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")
    assert (str(r.expr), r.status) == ("N <= 4", "exact")
    q = ("reshape", "f32[N/4,4,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")
    for n in range(4, 65, 4):
        assert r.holds_at({"N": n}) is truth(q, {"N": n}), n
    with pytest.raises(ValueError, match="outside the claim's domain"):
        r.holds_at({"N": 6})
    # the fit may use N % 8 == 0 for f32[N/3,128] (N % 24 == 0 inside the domain); its proof
    # for N = 8*K asks about f32[8*K/3,128], whose own domain (3 | K) the no-padding claim
    # did not read: unknown
    third = when_no_padding("f32[N/3,128]{1,0:T(8,128)}")
    assert third.status == "exact", third.details
    for n in range(3, 100, 3):
        assert third.holds_at({"N": n}) is truth(("no_padding", "f32[N/3,128]{1,0:T(8,128)}"), {"N": n}), n


# ------------------------------------------------------------ the residue encoding
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("N % 8 == 0", ("N", 8, 0)),
        ("3*N % 4 == 0", ("N", 4, 0)),
        ("(N + 4) % 8 == 0", ("N", 8, 4)),
        ("(3*N + 1) % 8 == 0", ("N", 8, 5)),
        ("6*N % 4 == 0", ("N", 2, 0)),
        ("N % 8 == 3", ("N", 8, 3)),
        ("(2*N + 1) % 4 == 0", None),  # no size satisfies it: left to the solver
        ("4*N % 4 == 0", None),  # says nothing
        ("M*N % 8 == 0", None),
    ],
)
def test_residue_of_solves_the_congruence(text: str, expected: tuple[str, int, int] | None) -> None:
    found = residue_of(parse_condition(text))
    assert (None if found is None else (str(found[0]), found[1], found[2])) == expected
    if found is not None:  # brute force: exactly the N with that residue satisfy the text
        from layout_algebra.prove.assumptions import condition_holds

        s, m, r = found
        for n in range(0, 50):
            assert condition_holds(parse_condition(text), {s: n}) is (n % m == r), (text, n)


def test_a_divisibility_to_prove_is_never_assumed() -> None:
    """Only the context is told to the arithmetic: a claim (or a disjunct) stays a claim."""
    assert prove.holds("N % 8 == 0").status == "refuted"
    r = prove.holds("N % 8 == 0", assume="N % 8 == 0 or N == 3")
    assert r.status == "refuted" and r.counterexample["N"] == 3
    assert prove.holds("N % 8 == 0", assume="N % 16 == 0").status == "proved"
    assert prove.holds("(N + 4) % 8 == 0", assume="N % 8 == 4").status == "proved"
    assert prove.holds("(N + 4) % 16 == 0", assume="N % 8 == 4").status == "refuted"


@pytest.mark.slow
def test_terms_under_a_known_residue_have_their_exact_values() -> None:
    """``N = m*k + r`` rewrites exact quotients, floors and ceilings of ``N``: each term Z3
    gets must still have the exact value at every ``N`` with that residue (the rewrite is
    the encoding of what the context says, never a change of meaning)."""
    import random

    import sympy
    import z3

    from layout_algebra.model.symbols import dim_symbol
    from layout_algebra.prove.encode import IntArithmetic, sympy_to_z3

    n = dim_symbol("N")
    rng = random.Random(5)
    for _ in range(30):
        m, r = rng.choice([(8, 0), (8, 4), (4, 1), (2, 1), (16, 8)])
        a, b, d = rng.randint(1, 5), rng.randint(-3, 7), rng.choice([2, 3, 4, 8, 16, 64])
        expr = rng.choice([sympy.floor, sympy.ceiling])((a * n + b) / d)
        exact = (a * n - a * r) / m  # a whole number wherever N % m == r
        for value in (r, r + m, r + 5 * m):
            ar = IntArithmetic()
            ar.know_residue(n, m, r)
            terms = [sympy_to_z3(expr, ar), sympy_to_z3(exact, ar)]
            solver = z3.Solver()
            solver.add(*ar.side, ar.symbol(n) == value)
            assert solver.check() == z3.sat, (expr, m, r, value)
            model = solver.model()
            got = [
                model.eval(t, model_completion=True).as_long() if not isinstance(t, int) else t for t in terms
            ]
            assert got == [int(expr.subs(n, value)), int(exact.subs(n, value))], (expr, exact, m, r, value)
            assert not ar.obligations, (exact, ar.obligations)  # the quotient needed no division
