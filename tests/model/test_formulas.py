"""One grammar of size formulas: shape text (``f32[N/8]``) and assumption/claim terms read alike.

The oracle is independent of both readers and of SymPy: each random formula is a tree printed
to text and evaluated directly with Python's ``Fraction`` and floor semantics.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layout_algebra.model.formulas import FormulaError, parse_formula
from layout_algebra.model.symbols import dim_symbol
from layout_algebra.model.syntax import ParseError, parse_shape
from layout_algebra.prove.assumptions import AssumptionError, parse_condition, parse_term, value_of

NAMES = ("N", "M", "K")
INT64_MAX = 2**63 - 1


# A tree: ("int", k) | ("name", s) | ("neg", t) | (op, t, u) for + - * | (op, t, k) for // % /
# with a literal divisor k >= 1 | (f, t, k) for floor(t / k), ceiling(t / k) | (f, t, u) for
# min, max | ("mod", t, k) for Mod(t, k) | ("pow", t, e) for t ** e.
def _trees(depth: int, division: bool):
    leaf = st.one_of(
        st.integers(0, 300).map(lambda k: ("int", k)), st.sampled_from(NAMES).map(lambda s: ("name", s))
    )
    if depth == 0:
        return leaf
    sub = _trees(depth - 1, division)
    divisor = st.integers(1, 9)
    ops = ["//", "%"] + (["/"] if division else [])
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(["+", "-", "*"]), sub, sub),
        st.tuples(st.just("neg"), sub),
        st.tuples(st.sampled_from(ops), sub, divisor),
        st.tuples(st.sampled_from(["floor", "ceiling", "ceil", "mod"]), sub, divisor),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub),
        st.tuples(st.just("pow"), sub, st.integers(0, 3)),
    )


def _text(tree, space: str) -> str:
    kind = tree[0]
    if kind == "int":
        return str(tree[1])
    if kind == "name":
        return tree[1]
    if kind == "neg":
        return f"-({_text(tree[1], space)})"
    if kind in ("+", "-", "*", "//", "%", "/"):
        right = tree[2] if isinstance(tree[2], int) else f"({_text(tree[2], space)})"
        # '//' touches its left operand: in shape text a ' //' after a formula without a
        # name starts XLA's comment (the one thing shape text adds to the formula grammar)
        before = "" if kind == "//" else space
        return f"({_text(tree[1], space)}){before}{kind}{space}{right}"
    if kind in ("floor", "ceiling", "ceil"):
        return f"{kind}(({_text(tree[1], space)}){space}/{space}{tree[2]})"
    if kind == "mod":
        return f"Mod({_text(tree[1], space)},{space}{tree[2]})"
    if kind in ("min", "max"):
        return f"{kind}({_text(tree[1], space)},{space}{_text(tree[2], space)})"
    return f"({_text(tree[1], space)})**{tree[2]}"


def _value(tree, env: dict[str, int]) -> Fraction:
    kind = tree[0]
    if kind == "int":
        return Fraction(tree[1])
    if kind == "name":
        return Fraction(env[tree[1]])
    if kind == "neg":
        return -_value(tree[1], env)
    a = _value(tree[1], env)
    if kind == "pow":
        return a ** tree[2]
    b = Fraction(tree[2]) if isinstance(tree[2], int) else _value(tree[2], env)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if kind == "/":
        return a / b
    if kind == "//":
        return Fraction(math.floor(a / b))
    if kind in ("%", "mod"):
        return a - b * math.floor(a / b)
    if kind == "floor":
        return Fraction(math.floor(a / b))
    if kind in ("ceiling", "ceil"):
        return Fraction(math.ceil(a / b))
    return min(a, b) if kind == "min" else max(a, b)


def _at(expr, env: dict[str, int]) -> Fraction:
    """A SymPy value at sizes, by SymPy's own substitution (not the package's evaluator)."""
    if isinstance(expr, int):
        return Fraction(expr)
    value = sympy.sympify(expr).subs({dim_symbol(k): v for k, v in env.items()})
    return Fraction(int(value.p), int(value.q))


_SIZES = st.fixed_dictionaries({name: st.integers(0, 50) for name in NAMES})


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_trees(3, division=False), st.sampled_from(["", " ", "  "]), _SIZES)
def test_shape_text_and_assumptions_read_a_formula_as_the_same_term(tree, space, env) -> None:
    text = _text(tree, space)
    term = parse_term(text)
    assert parse_formula(text) == term
    expected = _value(tree, env)
    assert value_of(term, {dim_symbol(k): v for k, v in env.items()}) == expected, text
    assert _at(term, env) == expected, text
    shape_text = f"f32[{text}]"
    try:
        (dim,) = parse_shape(shape_text).dimensions
    except ParseError as err:
        # a dimension is refused only when it cannot be a size: never >= 0, or too big
        assert err.text == shape_text and err.position >= len("f32[")
        if "64-bit" in err.reason:
            assert term.is_Integer and term > INT64_MAX
        else:
            assert "negative" in err.reason or "must be >= 0" in err.reason, err.reason
            assert expected <= 0
        return
    assert sympy.sympify(dim) == term, text
    assert _at(dim, env) == expected


@pytest.mark.slow
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(_trees(2, division=True), _SIZES)
def test_exact_division_means_the_same_where_each_reader_allows_it(tree, env) -> None:
    """'/' is exact division in both; a claim may write it only inside floor/ceiling."""
    text = _text(tree, " ")
    expected = _value(tree, env)
    assert _at(parse_formula(text), env) == expected
    if not _bare_division(tree, inside_rounding=True):
        wrapped = f"floor(({text}) / 1)"
        assert _at(parse_term(wrapped), env) == math.floor(expected)
    if _bare_division(tree, inside_rounding=False):
        with pytest.raises(AssumptionError, match="'/' is exact division"):
            parse_term(text)
    else:
        assert parse_term(text) == parse_formula(text)


def _bare_division(tree, inside_rounding: bool) -> bool:
    """Whether a '/' stands outside floor(...)/ceiling(...) (calls of min, max, Mod reset it)."""
    if not isinstance(tree, tuple) or tree[0] in ("int", "name"):
        return False
    kind = tree[0]
    if kind == "/" and not inside_rounding:
        return True
    inside = kind in ("floor", "ceiling", "ceil") or (inside_rounding and kind not in ("min", "max", "mod"))
    return any(_bare_division(child, inside) for child in tree[1:])


# Malformed and hostile formulas: both readers refuse them with the same reason, quoting the
# input, with the caret on the same piece (shape positions are shifted by the 'f32[' prefix).
BAD = [
    ("N +", "expected a number, a name or '('", 3),
    ("(N + 1", "expected ')'", 6),
    ("floor(N", "to close 'floor('", 7),
    ("N ** M", "exponent of '**' must be an integer", 5),
    ("N ** 99", "exponent 99 is larger than 64", 5),
    ("N ** 2 ** 2", "'**' takes an integer exponent", 7),
    ("floor(N, M)", "exactly one argument", 0),
    ("min()", "needs at least one argument", 0),
    ("N % 0", "division by 0", 4),
    ("N // (3 - 3)", "division by 0", 5),
    ("N // -8", "division by -8", 5),
    ("__import__('os')", "calling '__import__' is not allowed", 0),
    ("eval('1')", "calling 'eval' is not allowed", 0),
    ("open('x')", "calling 'open' is not allowed", 0),
    ("floor", "is a function", 0),
    ("1.5", "(a float) is not allowed", 0),
    ("2 * 0x10", "not an integer (sizes are written in decimal digits)", 4),
    ("1_000", "not an integer", 0),
    ("N | M", "'|' is not allowed", 2),
    ("N @ M", "'@' is not allowed", 2),
    ("__class__", "not a size name", 0),
    ("Ñ + 1", "not a size name", 0),
    ("lambda", "'lambda' (a lambda) is not allowed", 0),
    ("N + (M > 1)", "is a condition, not a number", 5),
    ("2 * " + "9" * 1300, "the constant is too large", 4),
    ("(" * 150 + "N" + ")" * 150, "nested too deeply", None),
    ("-" * 150 + "N", "nested too deeply", None),
]


@pytest.mark.parametrize(("text", "reason", "position"), BAD)
def test_both_readers_refuse_bad_formulas_alike(text, reason, position) -> None:
    with pytest.raises(AssumptionError) as as_term:
        parse_term(text)
    shape_text = f"f32[{text}]"
    with pytest.raises(ParseError) as in_shape:
        parse_shape(shape_text)
    with pytest.raises(FormulaError) as alone:
        parse_formula(text)
    for err, whole in ((as_term.value, text), (in_shape.value, shape_text), (alone.value, text)):
        assert reason in err.reason, (err.reason, reason)
        assert err.text == whole
    if ", found" not in as_term.value.reason:  # else each names what it found there (']' or the end)
        assert as_term.value.reason == in_shape.value.reason == alone.value.reason
    assert in_shape.value.position - len("f32[") == as_term.value.position == alone.value.position
    if position is not None:
        assert as_term.value.position == position
    assert text[:60] in str(as_term.value) and "^" in str(as_term.value).splitlines()[-1]
    assert not isinstance(as_term.value, type(in_shape.value)) or isinstance(as_term.value, ParseError)


def test_what_each_reader_adds_stays_its_own() -> None:
    # shape text: ',' and ']' end a formula, XLA's comments separate tokens
    assert str(parse_shape("f32[N /* rows */ // 8, 8 // a comment\n]")) == "f32[floor(N/8),8]{1,0}"
    # assumptions: comparisons and logic around the same terms
    assert parse_condition("N % 8 == 0 and min(N, M) >= 1") == sympy.And(
        sympy.Eq(sympy.Mod(dim_symbol("N"), 8), 0), sympy.Ge(sympy.Min(dim_symbol("N"), dim_symbol("M")), 1)
    )


@pytest.mark.parametrize(
    "text",
    [
        "f32[2*(N + 1)*floor(N/2),3]",  # read two factors at a time, this came back as (2*N + 2)*...
        "f32[N % 8, min(N, M), max(N, 2)]",  # '%', min and max print as Mod, Min, Max: all read back
        "f32[-(N - 2*N)]",
        "f32[ceil(N/128)*128]",
    ],
)
def test_every_formula_shape_prints_as_text_that_reads_back(text) -> None:
    shape = parse_shape(text)
    assert parse_shape(str(shape)) == shape


def test_a_formula_has_a_length_limit() -> None:
    with pytest.raises(ParseError, match="longer than 10000 characters"):
        parse_shape("f32[" + "+".join(["1"] * 6000) + "]")
    with pytest.raises(ParseError, match="too large"):
        parse_shape("f32[" + "*".join(["9" * 1000] * 5) + "]")


def test_the_shape_readers_fast_path_takes_only_plain_names() -> None:
    """Plain integers and names skip the formula reader; every word it would refuse does not."""
    from layout_algebra.model import syntax
    from layout_algebra.model.formulas import FUNCTIONS, KEYWORDS

    assert syntax._FORMULA_WORDS == KEYWORDS | set(FUNCTIONS)
    for word in ("for", "None", "floor", "Mod"):
        with pytest.raises(ParseError):
            parse_shape(f"f32[{word}]")


_PIECES = [
    "N",
    "M",
    "8",
    "0",
    "-",
    "+",
    "*",
    "/",
    "//",
    "%",
    "**",
    "(",
    ")",
    ",",
    " ",
    "floor(",
    "min(",
    "Mod(",
]
_PIECES += [
    "<",
    ">=",
    "==",
    "and",
    "or",
    "not",
    "True",
    "1.5",
    "'",
    ".",
    "[",
    "]",
    "Ñ",
    "=",
    "|",
    "#",
    "\n",
    "/*",
]


@pytest.mark.slow
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join))
def test_any_text_is_read_or_refused_with_the_readers_own_error(text) -> None:
    """Hostile token soup: a value, or a ParseError/AssumptionError quoting the text; never
    another exception, and the same verdict from the term reader and from parse_formula."""
    outcomes = []
    for read, error in ((parse_term, AssumptionError), (parse_formula, FormulaError)):
        try:
            outcomes.append(("ok", read(text)))
        except error as err:
            assert err.text in (text, text.strip()) and 0 <= err.position <= len(err.text)
            outcomes.append(("error", None))
    if outcomes[0][0] == "ok" or (text.strip() == text and "/" not in text):
        assert outcomes[0] == outcomes[1], text
    try:
        parse_condition(text)
    except AssumptionError as err:
        assert err.text == text.strip()
    try:
        parse_shape(f"f32[{text}]")
    except ParseError as err:
        assert err.text == f"f32[{text}]"
