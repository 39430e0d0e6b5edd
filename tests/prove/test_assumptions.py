"""Assumptions and claims are data read by a grammar (``prove.assumptions``), never run.

Regression tests for issue 15 items 6 and 9 (each failed on the regex + ``sympy.parse_expr``
reader: ``or``/``not`` were dropped, Python was evaluated, several inputs crashed), and
property tests against independent oracles: random formulas evaluated directly in Python,
and layouts compared element by element at every size the assumption admits.
"""

from __future__ import annotations

import itertools
import math
import operator
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import sympy
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layout_algebra import prove
from layout_algebra.decide.bitcast import reshape_is_bitcast
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.symbols import dim_symbol
from layout_algebra.prove.assumptions import (
    AssumptionError,
    AssumptionsAdmitNoSizes,
    assumption_terms,
    assumptions_hold,
    parse_assumptions,
    parse_condition,
)
from layout_algebra.prove.encode import IntArithmetic

N, M, K = dim_symbol("N"), dim_symbol("M"), dim_symbol("K")


def _positions(text: str, sizes: dict[str, int]) -> dict[tuple[int, ...], int]:
    """Every element's position in a layout at concrete sizes (the oracle for equivalence)."""
    concrete = layout_map(text).specialize(sizes)
    dims = [int(d) for d in concrete.shape.dimensions]
    return {index: concrete.forward(index) for index in itertools.product(*(range(d) for d in dims))}


# ------------------------------------------------------------------- the examples
def test_or_is_one_assumption_not_its_first_half() -> None:
    (either,) = parse_assumptions("N == 1 or N == 2")
    assert isinstance(either, sympy.Or)
    assert [assumptions_hold((either,), {N: n}) for n in range(4)] == [False, True, True, False]


def test_equivalence_under_a_disjunction_is_refuted_at_a_size_it_admits() -> None:
    a, b = "f32[N,M]{0,1}", "f32[N,M]{1,0}"
    r = prove.equivalent(a, b, assume="N == 1 or N == 2")
    assert r.status == "refuted"
    sizes = r.counterexample["sizes"]
    assert sizes["N"] in (1, 2)
    element = tuple(r.counterexample["element"])
    assert _positions(a, sizes)[element] != _positions(b, sizes)[element]


def test_not_is_negation() -> None:
    r = prove.holds("N == 5", assume="not N == 0")
    assert r.status == "refuted"
    assert r.counterexample["N"] not in (0, 5)
    assert prove.holds("N >= 1", assume="not N == 0").status == "proved"


def test_bitcast_under_a_disjunction_is_not_proved() -> None:
    v = reshape_is_bitcast("f32[N]{0:L(8)}", "f32[N]{0}", assume="N % 8 == 0 or N == 3")
    assert v.status != "proved"
    # the true answer: at N = 3 the L(8) buffer holds 8 elements and the plain one 3
    assert layout_map("f32[N]{0:L(8)}").specialize({"N": 3}).size_in_bytes == 32
    assert layout_map("f32[N]{0}").specialize({"N": 3}).size_in_bytes == 12
    assert reshape_is_bitcast("f32[N]{0:L(8)}", "f32[N]{0}", assume="N % 8 == 0").status == "proved"


def test_chained_comparisons_are_conjunctions() -> None:
    assert parse_assumptions("0 < N < 8") == (sympy.Lt(0, N), sympy.Lt(N, 8))
    inside = parse_condition("0 < N <= M < 8")
    assert [
        assumptions_hold((inside,), {N: n, M: m}) for n, m in [(1, 1), (0, 3), (3, 2), (2, 8), (2, 7)]
    ] == [
        True,
        False,
        False,
        False,
        True,
    ]


def test_claims_that_used_to_crash_get_answers() -> None:
    assert prove.holds("1 >= 2").status == "refuted"
    assert prove.holds("2 >= 1").status == "proved"
    assert prove.holds("ceiling(N/128)*128 >= N").status == "proved"
    assert prove.holds("floor(N/128)*128 >= N").status == "refuted"
    # N % M is meaningless at M = 0: not proved without M >= 1, proved with it
    bare = prove.holds("N % M < M")
    assert bare.status == "unknown" and "side condition" in bare.reason
    assert prove.holds("N % M < M", assume="M >= 1").status == "proved"
    assert prove.holds("N % M < M", assume="N % M == 0").status == "proved"  # the assumption brings M >= 1
    assert prove.holds("N // M * M + N % M == N", assume="M >= 1").status == "proved"


def test_remainders_of_remainders_are_not_rewritten_by_sympy() -> None:
    """SymPy 1.14 evaluates Mod(2*Mod(N, 5), 3) as Mod(2*Mod(N, 5)**2, 3): 2 instead of 1 at N = 2."""
    (claim,) = parse_assumptions("(2 * (N % 5)) % 3 == 1")
    assert [n for n in range(10) if assumptions_hold((claim,), {N: n})] == [
        n for n in range(10) if (2 * (n % 5)) % 3 == 1
    ]
    assert prove.holds("(2 * (N % 5)) % 3 == 1", assume="N == 2").status == "proved"


def test_a_divisor_in_an_assumption_is_assumed_positive() -> None:
    assert parse_assumptions("N % M == 0") == (sympy.Ge(M, 1, evaluate=False), parse_condition("N % M == 0"))
    assert not assumptions_hold(parse_assumptions("N % M == 0 or N == 0"), {N: 0, M: 0})
    assert assumptions_hold(parse_assumptions("N % M == 0 or N == 0"), {N: 0, M: 1})


def test_sympy_symbols_mean_what_they_are_declared() -> None:
    k = sympy.Symbol("k", integer=True)
    r = prove.holds(k >= 0)
    assert r.status == "refuted" and r.counterexample["k"] < 0
    assert prove.holds(sympy.Symbol("k", integer=True, nonnegative=True) >= 0).status == "proved"
    assert prove.holds(sympy.Symbol("k", integer=True, positive=True) >= 1).status == "proved"
    assert prove.holds(sympy.Symbol("k", integer=True, nonnegative=True) >= 1).status == "refuted"
    real = prove.holds(sympy.Symbol("x") >= 0)
    assert real.status == "unknown" and "not declared an integer" in real.reason
    r = prove.holds(sympy.floor(k / 2) * 2 <= k)
    assert r.status == "proved"  # floor division of negative numbers is floor, not truncation


def test_min_and_max() -> None:
    assert prove.holds("min(N, M) <= max(N, M)").status == "proved"
    assert prove.holds("min(N, M) + max(N, M) == N + M").status == "proved"
    r = prove.holds("max(N, M) == N")
    assert r.status == "refuted" and r.counterexample["M"] > r.counterexample["N"]


def test_a_function_map_may_subtract() -> None:
    shifted = prove.function_map("f32[4]", lambda i, ar: i[0] - 1)
    assert prove.injective(shifted).status == "proved"
    r = prove.in_bounds(shifted)
    assert r.status == "refuted"
    element = r.counterexample["element"]
    assert shifted.evaluate(element) == r.counterexample["position"] < 0
    mirrored = prove.function_map("f32[3,4]", lambda i, ar: 11 - 4 * i[0] - i[1])
    assert prove.injective(mirrored).status == "proved"
    assert prove.in_bounds(mirrored).status == "proved"  # 11 - (4i + j) covers 0..11 exactly
    folded = prove.function_map("f32[3,4]", lambda i, ar: i[0] * (-3) + i[1])  # (0, 0) and (1, 3)
    r = prove.injective(folded)
    assert r.status == "refuted"
    a, b = r.counterexample["element"], r.counterexample["other_element"]
    assert a != b and folded.evaluate(a) == folded.evaluate(b)


def test_a_symbolic_map_with_negative_positions_is_not_in_bounds() -> None:
    """``fx >= size`` alone missed positions below 0 (this was 'proved')."""
    shifted = prove.function_map("f32[N]", lambda i, ar: i[0] - 1)
    assert prove.in_bounds(shifted).status != "proved"
    assert prove.injective(shifted).status == "proved"


@pytest.mark.parametrize(
    "function",
    [
        lambda i, ar: i[0] // 2,  # Python operators the interval bounds do not model
        lambda i, ar: i[0] / 2,
        lambda i, ar: i[0] ** 2,
        lambda i, ar: ar.floordiv(i[0] - 1, 2),  # a division of a value that may be negative
        lambda i, ar: ar.mod(1 - i[0], 3),
        lambda i, ar: math.floor(i[0]),
        lambda i, ar: float(i[0]),
        lambda i, ar: max(i[0], 1),
        lambda i, ar: abs(i[0] - 2),
    ],
    ids=["//", "/", "**", "floordiv of negative", "mod of negative", "math.floor", "float", "max", "abs"],
)
def test_what_the_bit_vectors_cannot_encode_is_unknown(function) -> None:
    m = prove.function_map("f32[5]", function)
    for r in (prove.injective(m), prove.in_bounds(m)):
        assert r.status == "unknown" and r.reason


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("N % 0 == 0", "division by 0"),
        ("N // 0 == 0", "division by 0"),
        ("floor(N / 0) == 0", "division by 0"),
        ("ceiling(N / (M - M)) >= 1", "division by 0"),
        ("N >= 1/0", "'/' is exact division"),
        ("N % -8 == 1", "positive integer"),
        ("N >= 1.5", "float"),
        ("N = 3", "equality is '=='"),
        ("N >", "not a comparison"),
        ("N", "is a number, not a comparison"),
        ("N + (M > 1) > 0", "is a condition, not a number"),
        ("N >= 1 | M >= 1", "'|' is not allowed"),
        ("N in M", "'in' is not a comparison"),
        ("N ** M > 1", "exponent"),
        ("N >= 2 ** 100000", "exponent"),
        ("floor(N, M) > 1", "exactly one argument"),
        ("floor >= 1", "is a function"),
        ("", "empty"),
        ("N >= 1 if M else N < 1", "conditional expression"),
        ("(N >= 1, M >= 1) or K > 0", "top level"),
        ("Ñ >= 1", "not a size name"),
    ],
)
def test_bad_text_is_a_clear_error(text, message) -> None:
    with pytest.raises(AssumptionError, match=message) as info:
        parse_condition(text)
    assert isinstance(info.value, ValueError)
    assert text.strip() in str(info.value)  # the text is quoted (with a caret under the fault)


def test_the_caret_sits_under_the_fault() -> None:
    with pytest.raises(AssumptionError) as info:
        parse_assumptions("N >= 1 and M % 0 == 0")
    assert info.value.position == len("N >= 1 and M % ")
    assert str(info.value).splitlines()[-1] == "  " + " " * info.value.position + "^"


@pytest.mark.parametrize(
    "text",
    [
        "(" * 1000 + "N" + ")" * 1000 + " > 1",
        "not " * 5000 + "N > 1",
        "N" + " + 1" * 50_000 + " > 1",
        "-" * 3000 + "N > 1",
        "floor(" * 150 + "N" + ")" * 150 + " > 1",
        "N > " + "9" * 5000,
        "N > " + "2 ** 64 ** " * 200 + "2",
    ],
    ids=["parentheses", "not", "long sum", "minus", "floor", "huge literal", "power tower"],
)
def test_deep_or_huge_text_is_a_clear_error(text) -> None:
    with pytest.raises(
        AssumptionError, match=r"nested too deeply|too large|longer than|cannot read|outside|exponent"
    ):
        parse_assumptions(text)


def test_sympy_input_must_be_a_condition() -> None:
    with pytest.raises(AssumptionError, match="not a condition"):
        parse_assumptions(N + 1)
    with pytest.raises(AssumptionError, match="expected text"):
        parse_assumptions([3])
    for bad in (3, 2.5, {"N": 1}):
        with pytest.raises(AssumptionError, match="expected text"):
            parse_assumptions(bad)
    assert parse_assumptions([sympy.Ge(N, 1), "M == 2*N", True]) == (
        sympy.Ge(N, 1),
        sympy.Eq(M, 2 * N),
        sympy.true,
    )


def test_expressions_equal_reads_where_text_by_the_grammar(tmp_path: Path) -> None:
    i = sympy.Symbol("i", integer=True, nonnegative=True)
    assert prove.expressions_equal(sympy.Mod(i, 4), i, {i: 8}, where="i < 4").status == "proved"
    r = prove.expressions_equal(sympy.Mod(i, 4), i, {i: 8}, where="i < 4 or i == 6")
    assert r.status == "refuted" and r.counterexample["i"] == 6
    sentinel = tmp_path / "ran"
    with pytest.raises(AssumptionError):
        prove.expressions_equal(i, i, {i: 8}, where=f"__import__('os').system('touch {sentinel}') == 0")
    assert not sentinel.exists()


def test_expressions_equal_reads_expression_text_by_the_grammar(tmp_path: Path) -> None:
    i = sympy.Symbol("i", integer=True, nonnegative=True)
    assert prove.expressions_equal("floor(floor(i/2)/4)", "i // 8", {i: "N * 8"}).status == "proved"
    r = prove.expressions_equal("i % 8", "i", {i: 20})
    assert r.status == "refuted" and r.counterexample["i"] >= 8
    sentinel = tmp_path / "ran"
    with pytest.raises(AssumptionError, match="not allowed"):
        prove.expressions_equal(f"__import__('os').system('touch {sentinel}')", "i", {i: 8})
    with pytest.raises(AssumptionError, match="is a condition, not a number"):
        prove.expressions_equal("i >= 1", "i", {i: 8})
    assert not sentinel.exists()


# ------------------------------------------------------------------------- security
_PAYLOADS = [
    "__import__('os').system('touch {sentinel}') == 0",
    "N >= __import__('os').system('touch {sentinel}')",
    "N % 8 == 0 and __import__('os').system('touch {sentinel}')",
    "open('{sentinel}', 'w').close() is None",
    "N >= (lambda: __import__('os').system('touch {sentinel}'))()",
    "N >= [__import__('os').system('touch {sentinel}')][0]",
    "N >= f\"{{__import__('os').system('touch {sentinel}')}}\"",
    "N.__class__.__mro__[-1].__subclasses__() == 0",
    'exec(\'open("{sentinel}", "w")\') == 0',
    "eval('1') == 1",
    "N >= Symbol('x')",
    "N >= S.Zero",
]


@pytest.mark.parametrize("payload", _PAYLOADS)
def test_python_in_the_text_is_refused_and_never_run(payload, tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    text = payload.format(sentinel=sentinel)
    with pytest.raises(AssumptionError):
        parse_assumptions(text)
    with pytest.raises(AssumptionError):
        prove.holds(text)
    with pytest.raises(AssumptionError):
        prove.injective("f32[N]{0}", assume=text)
    assert not sentinel.exists()


@pytest.mark.slow
def test_the_command_line_refuses_python_in_assume(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    text = f"__import__('os').system('touch {sentinel}') == 0"
    run = subprocess.run(
        [sys.executable, "-m", "layout_algebra", "prove", "injective", "f32[N]{0}", "--assume", text],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "not allowed" in run.stderr and "Traceback" not in run.stderr
    assert not sentinel.exists()


# ------------------------------------------- random formulas against a Python oracle
# A formula is a tree of tuples; ``_text`` prints it, ``_value``/``_truth`` evaluate it
# directly with Python integers (floor semantics), independently of SymPy and Z3.
_NAMES = ("N", "M", "K")


def _terms(depth: int) -> st.SearchStrategy:
    leaf = st.one_of(
        st.tuples(st.just("const"), st.integers(-20, 20)),
        st.tuples(st.just("sym"), st.sampled_from(_NAMES)),
    )
    if depth == 0:
        return leaf
    sub = _terms(depth - 1)
    divisor = st.integers(1, 9)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(["add", "sub", "mul"]), sub, sub),
        st.tuples(st.just("neg"), sub),
        st.tuples(st.sampled_from(["fdiv", "mod", "floor", "ceil"]), sub, divisor),
        st.tuples(st.just("mods"), sub, st.sampled_from(_NAMES)),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub),
    )


def _conditions(depth: int) -> st.SearchStrategy:
    relation = st.tuples(
        st.just("rel"), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), _terms(2), _terms(2)
    )
    chain = st.tuples(st.just("chain"), st.sampled_from(["<", "<="]), _terms(1), _terms(1), _terms(1))
    leaf = st.one_of(relation, chain, st.tuples(st.just("bool"), st.booleans()))
    if depth == 0:
        return leaf
    sub = _conditions(depth - 1)
    return st.one_of(
        leaf, st.tuples(st.sampled_from(["and", "or"]), sub, sub), st.tuples(st.just("not"), sub)
    )


def _text(node) -> str:
    kind = node[0]
    if kind == "const":
        return str(node[1])
    if kind == "sym":
        return node[1]
    if kind in ("add", "sub", "mul"):
        return f"({_text(node[1])} {dict(add='+', sub='-', mul='*')[kind]} {_text(node[2])})"
    if kind == "neg":
        return f"-({_text(node[1])})"
    if kind == "fdiv":
        return f"({_text(node[1])} // {node[2]})"
    if kind == "mod":
        return f"({_text(node[1])} % {node[2]})"
    if kind == "mods":
        return f"({_text(node[1])} % {node[2]})"
    if kind in ("floor", "ceil"):
        return f"{'floor' if kind == 'floor' else 'ceiling'}({_text(node[1])} / {node[2]})"
    if kind in ("min", "max"):
        return f"{kind}({_text(node[1])}, {_text(node[2])})"
    if kind == "rel":
        return f"({_text(node[2])} {node[1]} {_text(node[3])})"
    if kind == "chain":
        return f"({_text(node[2])} {node[1]} {_text(node[3])} {node[1]} {_text(node[4])})"
    if kind == "bool":
        return str(node[1])
    if kind in ("and", "or"):
        return f"({_text(node[1])} {kind} {_text(node[2])})"
    if kind == "not":
        return f"(not {_text(node[1])})"
    raise AssertionError(kind)


def _value(node, env: dict[str, int]) -> int:
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "sym":
        return env[node[1]]
    if kind in ("add", "sub", "mul"):
        return {"add": operator.add, "sub": operator.sub, "mul": operator.mul}[kind](
            _value(node[1], env), _value(node[2], env)
        )
    if kind == "neg":
        return -_value(node[1], env)
    if kind == "fdiv":
        return _value(node[1], env) // node[2]
    if kind == "mod":
        return _value(node[1], env) % node[2]
    if kind == "mods":
        return _value(node[1], env) % env[node[2]]  # only called when the divisor is >= 1
    if kind == "floor":
        return math.floor(Fraction(_value(node[1], env), node[2]))
    if kind == "ceil":
        return math.ceil(Fraction(_value(node[1], env), node[2]))
    if kind == "min":
        return min(_value(node[1], env), _value(node[2], env))
    if kind == "max":
        return max(_value(node[1], env), _value(node[2], env))
    raise AssertionError(kind)


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt}
_COMPARE[">="] = operator.ge


def _truth(node, env: dict[str, int]) -> bool:
    kind = node[0]
    if kind == "rel":
        return _COMPARE[node[1]](_value(node[2], env), _value(node[3], env))
    if kind == "chain":
        a, b, c = (_value(n, env) for n in node[2:])
        return _COMPARE[node[1]](a, b) and _COMPARE[node[1]](b, c)
    if kind == "bool":
        return node[1]
    if kind == "and":
        return _truth(node[1], env) and _truth(node[2], env)
    if kind == "or":
        return _truth(node[1], env) or _truth(node[2], env)
    if kind == "not":
        return not _truth(node[1], env)
    raise AssertionError(kind)


def _symbolic_divisors(node) -> set[str]:
    found = {node[2]} if node[0] == "mods" else set()
    for child in node[1:]:
        if isinstance(child, tuple):
            found |= _symbolic_divisors(child)
    return found


def _admits(node, env: dict[str, int]) -> bool:
    """The oracle's reading of an assumption: its symbolic divisors are >= 1, and it is true."""
    return all(env[d] >= 1 for d in _symbolic_divisors(node)) and _truth(node, env)


_SIZES = st.fixed_dictionaries({name: st.integers(0, 12) for name in _NAMES})


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(formula=_conditions(3), env=_SIZES)
def test_random_formulas_hold_exactly_when_python_says(formula, env) -> None:
    text = _text(formula)
    values = {dim_symbol(k): v for k, v in env.items()}
    assert assumptions_hold(parse_assumptions(text), values) == _admits(formula, env), text


@pytest.mark.slow
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(formula=_conditions(2), env=_SIZES)
def test_random_formulas_translate_to_z3_faithfully(formula, env) -> None:
    """With every size fixed, the Z3 terms are satisfiable exactly when the oracle admits the sizes."""
    text = _text(formula)
    ar = IntArithmetic()
    terms = assumption_terms(parse_assumptions(text), ar)
    s = z3.Solver()
    s.set("timeout", 10_000)
    s.add(*terms, *ar.side)
    s.add(*[ar.symbol(dim_symbol(k)) == v for k, v in env.items()])
    answer = s.check()
    assert answer != z3.unknown, text
    assert (answer == z3.sat) == _admits(formula, env), text


# --------------------------------- random disjunctive assumptions against brute force
def _atoms() -> st.SearchStrategy:
    sym, small = st.sampled_from(["N", "M"]), st.integers(1, 6)
    return st.one_of(
        st.tuples(
            st.just("rel"), st.just("=="), st.tuples(st.just("sym"), sym), st.tuples(st.just("const"), small)
        ),
        st.tuples(
            st.just("rel"),
            st.sampled_from(["<=", ">="]),
            st.tuples(st.just("sym"), sym),
            st.tuples(st.just("const"), small),
        ),
        st.tuples(
            st.just("rel"),
            st.just("=="),
            st.tuples(st.just("mod"), st.tuples(st.just("sym"), sym), st.integers(2, 4)),
            st.tuples(st.just("const"), st.integers(0, 1)),
        ),
        st.tuples(
            st.just("rel"), st.just("=="), st.tuples(st.just("sym"), sym), st.tuples(st.just("sym"), sym)
        ),
    )


_DISJUNCTIONS = st.recursive(
    _atoms(),
    lambda sub: st.one_of(
        st.tuples(st.just("or"), sub, sub),
        st.tuples(st.just("and"), sub, sub),
        st.tuples(st.just("not"), sub),
    ),
    max_leaves=4,
)

_PAIRS = [
    ("f32[N,M]{0,1}", "f32[N,M]{1,0}"),
    ("f32[N,M]{1,0:T(2,2)}", "f32[N,M]{1,0}"),
    ("f32[N,M]{1,0:T(1,4)}", "f32[N,M]{1,0}"),
    ("f32[N,M]{0,1:T(2,1)}", "f32[N,M]{0,1}"),
]


def _unless_no_sizes(formula, ask):
    """The answer, or ``None`` where the prover refused the assumptions as admitting no
    sizes; then brute force must find none either (else the refusal was wrong)."""
    try:
        return ask()
    except AssumptionsAdmitNoSizes:
        assert not _sizes_admitted(formula), _text(formula)
        return None


def _sizes_admitted(formula) -> list[dict[str, int]]:
    return [
        {"N": n, "M": m}
        for n in range(0, 7)
        for m in range(0, 7)
        if _admits(formula, {"N": n, "M": m, "K": 0})
    ]


@pytest.mark.slow
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(formula=_DISJUNCTIONS, pair=st.sampled_from(_PAIRS))
def test_equivalence_is_never_proved_where_brute_force_finds_a_difference(formula, pair) -> None:
    text = _text(formula)
    a, b = pair
    r = _unless_no_sizes(formula, lambda: prove.equivalent(a, b, assume=text, timeout_ms=10_000))
    if r is None:
        return
    if r.status == "proved":
        for sizes in _sizes_admitted(formula):
            assert _positions(a, sizes) == _positions(b, sizes), (text, sizes)
    elif r.status == "refuted":
        sizes = r.counterexample["sizes"]
        assert _admits(formula, {**sizes, "K": 0}), (text, sizes)
        element = tuple(r.counterexample["element"])
        assert _positions(a, sizes)[element] != _positions(b, sizes)[element]


@pytest.mark.slow
@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(formula=_DISJUNCTIONS)
def test_injectivity_is_never_proved_where_brute_force_finds_a_collision(formula) -> None:
    """``4*i + j`` on an N x M box collides exactly when N >= 2 and M >= 5."""
    text = _text(formula)
    m = prove.function_map("f32[N,M]", lambda i, ar: i[0] * 4 + i[1], name="row stride 4")
    r = _unless_no_sizes(formula, lambda: prove.injective(m, assume=text, timeout_ms=10_000))
    if r is not None and r.status == "proved":
        for sizes in _sizes_admitted(formula):
            seen = [4 * i + j for i in range(sizes["N"]) for j in range(sizes["M"])]
            assert len(seen) == len(set(seen)), (text, sizes)


# ----------------------------------------------------------------------- command line
def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from layout_algebra.cli import main

    try:
        status = main(list(argv))
    except SystemExit as exit_:  # argparse's --help
        status = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def test_prove_help_shows_the_percent_sign(capsys) -> None:
    status, out, err = _cli(capsys, "prove", "--help")
    assert status == 0 and "N % 8 == 0" in out and not err


@pytest.mark.parametrize(
    ("assume", "message"),
    [("N % 0 == 0", "division by 0"), ("N >= 1/0", "exact division"), ("N = 8", "equality is '=='")],
)
def test_a_bad_assume_exits_2_with_the_message(capsys, assume, message) -> None:
    status, out, err = _cli(capsys, "prove", "injective", "f32[N]{0}", "--assume", assume)
    assert status == 2 and message in err and assume in err and "Traceback" not in err
    assert "proved" not in out


def test_an_assume_with_or_reaches_the_prover(capsys) -> None:
    status, out, _ = _cli(
        capsys, "prove", "equivalent", "f32[N,M]{0,1}", "f32[N,M]{1,0}", "--assume", "N == 1 or N == 2"
    )
    assert status == 1 and out.startswith("refuted")


@pytest.mark.parametrize("where", ["missing/report.md", "a_file/report.md", "."])
def test_proofs_write_to_a_bad_path_exits_2(capsys, tmp_path: Path, where) -> None:
    (tmp_path / "a_file").write_text("")
    status, _, err = _cli(capsys, "proofs", "row_major", "--write", str(tmp_path / where))
    assert status == 2 and "--write" in err and "Traceback" not in err
