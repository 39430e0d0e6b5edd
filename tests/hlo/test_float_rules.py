"""The verifier's float rules (``verify.FLOAT_RULES``) against an executable oracle.

Each rule claims that a narrow-type computation XLA rewrote into the wide type between
converts (``convert_bf16(op_f32(convert_f32(a), convert_f32(b)))``) has the narrow op's value.
The oracle here is independent of both the verifier and ``ml_dtypes``' own arithmetic:
exact rational arithmetic (``fractions.Fraction``) rounded once, by a rounding function
written from IEEE 754's definition (round to nearest, ties to even, gradual underflow,
overflow to infinity), compared bit for bit with what the rewritten program computes
(``float32`` arithmetic, then NumPy's ``astype`` to the narrow type). NaN results are
compared as NaN only: the rules claim equality up to NaN payloads.

Then the verifier itself: each rule proves its pattern, and every pattern that is not
neutral (``exp`` in f32, a widened reduction accumulator, a convert of the wrong types, an
arithmetic op on values that are not widened narrow values) stays not proved.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from support.hlo_text import hlo_module_with_parameters

from layout_algebra.hlo.evaluate_elementwise import FLOAT_RULES
from layout_algebra.hlo.float_precision import EXCESS_PRECISION
from layout_algebra.hlo.verify import float_rules_used, verify_rewrite

pytestmark = [
    pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),  # NaN inputs
]

NARROW = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
# precision (significand bits, the hidden one included), smallest normal exponent, largest exponent
FORMAT = {"bf16": (8, -126, 127), "f16": (11, -14, 15)}
# the IEEE rules and readings of XLA's semantics these tests check; excess-precision (which
# erases precision altogether) has its own tests (test_pass_precision.py)
ALL_RULES = tuple(r for r in FLOAT_RULES if r != EXCESS_PRECISION)
OPS = ("add", "subtract", "multiply", "divide")


# ------------------------------------------------------------------ the oracle
def _floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e if Fraction(2) ** e <= q else e - 1


def round_to(q: Fraction, narrow: str) -> float:
    """The exact rational ``q`` rounded once to the float type ``narrow`` (IEEE 754 RNE)."""
    p, emin, emax = FORMAT[narrow]
    if q == 0:
        return 0.0
    size = abs(q)
    ulp = Fraction(2) ** (max(_floor_log2(size), emin) - p + 1)  # subnormals: the fixed ulp
    steps = size / ulp
    n = math.floor(steps)
    rest = steps - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    value = n * ulp
    if value >= Fraction(2) ** (emax + 1):
        return math.copysign(math.inf, q)
    return math.copysign(float(value), q)


def exact_op(op: str, a: float, b: float, narrow: str) -> float:
    """The correctly rounded narrow ``a op b``: exact rational arithmetic, rounded once."""
    with np.errstate(all="ignore"):
        in_f64 = {"add": a + b, "subtract": a - b, "multiply": a * b}.get(op)
        if op == "divide":
            in_f64 = float(np.float64(a) / np.float64(b))
    if not (math.isfinite(a) and math.isfinite(b)) or (op == "divide" and b == 0):
        return in_f64  # infinities, NaN, x/0: exact by IEEE's rules, and f64 follows them
    x, y = Fraction(a), Fraction(b)
    q = {"add": x + y, "subtract": x - y, "multiply": x * y, "divide": x / y if y else None}[op]
    rounded = round_to(q, narrow)
    if rounded == 0:  # the sign of an exact zero: f64 computes it by the same IEEE rule
        return math.copysign(0.0, in_f64) if q == 0 else math.copysign(0.0, q)
    return rounded


def via_f32(op: str, a: np.ndarray, b: np.ndarray, narrow: str) -> np.ndarray:
    """What the rewritten program computes: widen, the f32 op, narrow."""
    x, y = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        wide = {
            "add": x + y,
            "subtract": x - y,
            "multiply": x * y,
            "divide": x / y,
            "maximum": np.maximum(x, y),
            "minimum": np.minimum(x, y),
        }[op]
    return wide.astype(NARROW[narrow])


def bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.uint16)


def same_up_to_nan_payload(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit equal, except that a NaN need only be a NaN (its payload may differ)."""
    nan = np.isnan(want.astype(np.float32))
    return bool((bits(got) == bits(want))[~nan].all() and np.isnan(got.astype(np.float32))[nan].all())


def special_values(narrow: str) -> list[float]:
    info = ml_dtypes.finfo(NARROW[narrow])
    tiny, smallest, big = float(info.tiny), float(info.smallest_subnormal), float(info.max)
    base = [0.0, 1.0, 1.5, 2.0, 3.0, math.inf, math.nan, tiny, smallest, 3 * smallest, big, tiny - smallest]
    base += [float(info.eps), 1 + float(info.eps), big / 2, 2 * tiny, 0.1, 1 / 3]
    return sorted({v for x in base for v in (x, -x)}, key=repr)


def samples(narrow: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random pairs of narrow values (random bit patterns: every exponent alike, NaNs
    and infinities included), plus every pair of special values."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(NARROW[narrow])
    b = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(NARROW[narrow])
    # close exponents too: sums with cancellation, products near 1
    near = rng.integers(0, 1 << 16, n // 4, dtype=np.uint16)
    c = near.view(NARROW[narrow])
    d = (near ^ rng.integers(0, 1 << 10, n // 4, dtype=np.uint16)).view(NARROW[narrow])
    specials = np.array(special_values(narrow), dtype=NARROW[narrow])
    sa, sb = np.meshgrid(specials, specials)
    return np.concatenate([a, c, sa.ravel()]), np.concatenate([b, d, sb.ravel()])


# ------------------------------------------------------------------ the rules, executed
@pytest.mark.parametrize("narrow", ["bf16", "f16"])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_exact_ops_maximum_minimum_on_widened_values(narrow: str, op: str) -> None:
    """>= 10^5 random pairs and all special pairs: max/min computed in f32 and narrowed is
    one of the two narrow operands, bit for bit, and the right one (NaN if either is)."""
    a, b = samples(narrow, 100_000, seed=1 if op == "maximum" else 2)
    got = via_f32(op, a, b, narrow)
    x, y = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(x) | np.isnan(y)
    assert np.isnan(got.astype(np.float64))[nan].all()
    keep = ~nan
    is_a, is_b = bits(got) == bits(a), bits(got) == bits(b)
    assert (is_a | is_b)[keep].all()  # the result is an operand, bit for bit
    value = got.astype(np.float64)
    better = (value >= np.maximum(x, y)) if op == "maximum" else (value <= np.minimum(x, y))
    assert better[keep].all()


@pytest.mark.parametrize("narrow", ["bf16", "f16"])
def test_exact_ops_negate_abs_compare_select_on_widened_values(narrow: str) -> None:
    a, b = samples(narrow, 100_000, seed=3)
    wa, wb = a.astype(np.float32), b.astype(np.float32)
    for f in (np.negative, np.abs):
        assert same_up_to_nan_payload(f(wa).astype(NARROW[narrow]), f(a))
    exact_a, exact_b = a.astype(np.float64), b.astype(np.float64)  # f64: exact, and not f32
    for compare in (np.less, np.less_equal, np.equal, np.not_equal, np.greater):
        assert (compare(wa, wb) == compare(exact_a, exact_b)).all()
    pick = np.random.default_rng(4).integers(0, 2, a.shape).astype(bool)
    assert same_up_to_nan_payload(np.where(pick, wa, wb).astype(NARROW[narrow]), np.where(pick, a, b))
    assert same_up_to_nan_payload(wa.astype(NARROW[narrow]), a)  # widening then narrowing


@pytest.mark.parametrize("narrow", ["bf16", "f16"])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_correctly_rounded_arithmetic_via_f32_equals_rounding_once(narrow: str, op: str) -> None:
    """Double rounding is innocuous: for narrow a, b, narrow(f32(a op b)) is the exact
    a op b rounded once to the narrow type (10,000 random bit patterns + 2,500 pairs of
    near-equal values + every pair of the special values, per op and type)."""
    a, b = samples(narrow, 10_000, seed=10 * ("bf16", "f16").index(narrow) + OPS.index(op))
    _check_arithmetic(op, a, b, narrow)


def _check_arithmetic(op: str, a: np.ndarray, b: np.ndarray, narrow: str) -> None:
    got = via_f32(op, a, b, narrow)
    bad = []
    for x, y, g in zip(
        a.astype(np.float64).tolist(), b.astype(np.float64).tolist(), got.tolist(), strict=True
    ):
        want = exact_op(op, x, y, narrow)
        g = float(g)
        if math.isnan(want) or math.isnan(g):
            ok = math.isnan(want) and math.isnan(g)
        else:
            ok = want == g and math.copysign(1, want) == math.copysign(1, g)
        if not ok:
            bad.append((x, y, want, g))
    assert bad == [], bad[:5]


@pytest.mark.slow
def test_correctly_rounded_near_the_hard_cases() -> None:
    """Adversarial pairs: products and quotients in the subnormal range, sums just below the
    overflow threshold, and sums of numbers far apart (a sticky bit below a tie)."""
    for narrow in ("bf16", "f16"):
        p, emin, emax = FORMAT[narrow]
        dtype = NARROW[narrow]
        info = ml_dtypes.finfo(dtype)
        rng = random.Random(5)
        pairs = []
        for _ in range(1000):
            m1, m2 = rng.randrange(1 << (p - 1), 1 << p), rng.randrange(1 << (p - 1), 1 << p)
            e1 = rng.randrange(emin - p, emax - p + 2)
            e2 = rng.randrange(emin - p, emax - p + 2)
            pairs.append((math.ldexp(m1, e1), math.ldexp(m2, e2)))
            # product or quotient near the subnormal range
            e3 = rng.randrange(emin - 2 * p, emin + 2)
            pairs.append((math.ldexp(m1, e3 - e2 - p), math.ldexp(m2, e2)))
            # a tie in the narrow type plus a tiny term (sticky bit)
            pairs.append((math.ldexp(2 * m1 + 1, e1), math.ldexp(1, e1 - p - 3)))
            pairs.append((float(info.max), math.ldexp(m2, emax - p - rng.randrange(0, 3))))
        xs = np.array([x for x, _ in pairs], dtype=np.float64).astype(dtype)
        ys = np.array([y for _, y in pairs], dtype=np.float64).astype(dtype)
        for op in ("add", "subtract", "multiply", "divide"):
            _check_arithmetic(op, xs, ys, narrow)


def test_the_oracle_sees_double_rounding_where_the_premise_fails() -> None:
    """The check has teeth: for an f32 operand that is not a bf16 value, rounding the f32 sum
    to bf16 (twice) and rounding the exact sum (once) differ, and the oracle says so."""
    a, b = 1 + 2.0**-8, 2.0**-30  # a is a bf16 tie; b a sticky bit below f32's precision
    assert exact_op("add", a, b, "bf16") == 1 + 2.0**-7
    twice = float((np.float32(a) + np.float32(b)).astype(ml_dtypes.bfloat16))
    assert twice == 1.0


def test_the_oracle_rounds_like_ieee() -> None:
    """The oracle's rounding, checked where NumPy's f64->bf16/f16 rounding is exact (f64 values)."""
    rng = np.random.default_rng(6)
    for narrow in ("bf16", "f16"):
        values = rng.standard_normal(5000) * np.exp2(rng.integers(-30, 30, 5000))
        values = np.concatenate([values, np.ldexp(rng.integers(1, 1 << 20, 500).astype(np.float64), -160)])
        for v in values.tolist():
            want = float(np.asarray(v).astype(NARROW[narrow]))
            assert round_to(Fraction(v), narrow) == want, v
    assert round_to(Fraction(3, 2) * Fraction(2) ** -133, "bf16") == 2.0**-132  # tie to even, subnormal
    assert round_to(Fraction(65520), "f16") == math.inf  # max + half ulp overflows
    assert round_to(Fraction(65519), "f16") == 65504.0


# ------------------------------------------------------------------ the verifier
def _module(body: str, params: str = "bf16[4,8]{1,0} a, bf16[4,8]{1,0} b") -> str:
    return hlo_module_with_parameters(body, params)


NARROW_OP = _module("  ROOT r = bf16[4,8]{1,0} {op}(a, b)")


def _widened(op: str, narrow: str = "bf16", wide: str = "f32") -> str:
    return _module(
        f"""  x = {wide}[4,8]{{1,0}} convert(a)
  y = {wide}[4,8]{{1,0}} convert(b)
  z = {wide}[4,8]{{1,0}} {op}(x, y)
  ROOT r = {narrow}[4,8]{{1,0}} convert(z)""",
        params=f"{narrow}[4,8]{{1,0}} a, {narrow}[4,8]{{1,0}} b",
    )


@pytest.mark.parametrize(
    ("op", "rules"),
    [
        ("maximum", ("exact-ops",)),
        ("minimum", ("exact-ops",)),
        ("add", ("correctly-rounded", "exact-ops")),
        ("subtract", ("correctly-rounded", "exact-ops")),
        ("multiply", ("correctly-rounded", "exact-ops")),
        ("divide", ("correctly-rounded", "exact-ops")),
    ],
)
def test_each_rule_proves_its_pattern_and_names_itself(op: str, rules: tuple[str, ...]) -> None:
    before = NARROW_OP.replace("{op}", op)
    r = verify_rewrite(before, _widened(op), float_rules=ALL_RULES)
    assert r.status == "proved" and float_rules_used(r) == rules
    assert verify_rewrite(before, _widened(op)).status != "proved"  # no rules: uninterpreted
    if "correctly-rounded" in rules:  # the exact rules alone do not cover arithmetic
        assert verify_rewrite(before, _widened(op), float_rules=("exact-ops",)).status != "proved"


def test_f16_is_covered_and_f32_to_f64_is_not_claimed() -> None:
    before = NARROW_OP.replace("{op}", "add").replace("bf16", "f16")
    assert verify_rewrite(before, _widened("add", "f16"), float_rules=ALL_RULES).status == "proved"
    before64 = NARROW_OP.replace("{op}", "add").replace("bf16", "f32")
    assert verify_rewrite(before64, _widened("add", "f32", "f64"), float_rules=ALL_RULES).status != "proved"


def test_relu_maximum_with_a_widened_constant_is_exact() -> None:
    """relu's max(x, 0) with the 0 an f32 constant (exactly a bf16 value) is proved; with a
    constant that is not a bf16 value (0.1 in f32) it is not."""
    before = _module(
        "  z = bf16[] constant(0)\n  zs = bf16[4,8]{1,0} broadcast(z), dimensions={}\n  ROOT r = bf16[4,8]{1,0} maximum(a, zs)",
        params="bf16[4,8]{1,0} a",
    )
    after = _module(
        "  z = f32[] constant(0)\n  zs = f32[4,8]{1,0} broadcast(z), dimensions={}\n  x = f32[4,8]{1,0} convert(a)\n"
        "  m = f32[4,8]{1,0} maximum(x, zs)\n  ROOT r = bf16[4,8]{1,0} convert(m)",
        params="bf16[4,8]{1,0} a",
    )
    assert verify_rewrite(before, after, float_rules=ALL_RULES).status == "proved"
    tenth = after.replace("f32[] constant(0)", "f32[] constant(0.1)")
    assert (
        verify_rewrite(before.replace("constant(0)", "constant(0.1)"), tenth, float_rules=ALL_RULES).status
        != "proved"
    )


def test_rounding_commutes_with_maximum_of_an_f32_sum() -> None:
    """convert(max(add_f32(a, b), c)): rounding is monotone, so it is max(add_bf16(a, b), c)."""
    before = _module(
        "  s = bf16[4,8]{1,0} add(a, b)\n  ROOT r = bf16[4,8]{1,0} maximum(s, c)",
        params="bf16[4,8]{1,0} a, bf16[4,8]{1,0} b, bf16[4,8]{1,0} c",
    )
    after = _module(
        "  x = f32[4,8]{1,0} convert(a)\n  y = f32[4,8]{1,0} convert(b)\n  w = f32[4,8]{1,0} convert(c)\n"
        "  s = f32[4,8]{1,0} add(x, y)\n  m = f32[4,8]{1,0} maximum(s, w)\n  ROOT r = bf16[4,8]{1,0} convert(m)",
        params="bf16[4,8]{1,0} a, bf16[4,8]{1,0} b, bf16[4,8]{1,0} c",
    )
    assert verify_rewrite(before, after, float_rules=ALL_RULES).status == "proved"
    # but an f32 sum of an f32 sum is not a bf16 sum of a bf16 sum (rounded once instead of twice)
    before2 = before.replace("maximum(s, c)", "add(s, c)")
    after2 = after.replace("maximum(s, w)", "add(s, w)")
    assert verify_rewrite(before2, after2, float_rules=ALL_RULES).status != "proved"


@pytest.mark.parametrize(
    "mutation",
    [
        "exponential",  # exp in f32 between converts: not correctly rounded twice
        "swap-types",  # the narrowing convert goes to f16, not bf16
        "drop-narrowing",  # the f32 result is not narrowed (a wider root: rejected)
        "maximum-to-add",  # add in f32 where the narrow op is maximum
    ],
)
def test_non_neutral_patterns_are_not_proved(mutation: str) -> None:
    before = NARROW_OP.replace("{op}", "maximum")
    after = _widened("maximum")
    if mutation == "exponential":
        before = _module("  ROOT r = bf16[4,8]{1,0} exponential(a)", params="bf16[4,8]{1,0} a")
        after = _module(
            "  x = f32[4,8]{1,0} convert(a)\n  z = f32[4,8]{1,0} exponential(x)\n  ROOT r = bf16[4,8]{1,0} convert(z)",
            params="bf16[4,8]{1,0} a",
        )
    elif mutation == "swap-types":
        after = after.replace(
            "ROOT r = bf16[4,8]{1,0} convert(z)",
            "h = f16[4,8]{1,0} convert(z)\n  ROOT r = bf16[4,8]{1,0} convert(h)",
        )
    elif mutation == "drop-narrowing":
        after = after.replace("ROOT r = bf16[4,8]{1,0} convert(z)", "ROOT r = f32[4,8]{1,0} copy(z)")
    elif mutation == "maximum-to-add":
        after = after.replace("maximum(x, y)", "add(x, y)")
    try:
        status = verify_rewrite(before, after, float_rules=ALL_RULES).status
    except ValueError:
        status = "rejected"
    assert status != "proved"


def test_a_widened_reduction_accumulator_is_not_proved() -> None:
    """reduce in f32 of widened bf16 values, then narrowed: many roundings become one (not neutral)."""
    region = """%add (x: {t}[], y: {t}[]) -> {t}[] {{
  %x = {t}[] parameter(0)
  %y = {t}[] parameter(1)
  ROOT %s = {t}[] add(%x, %y)
}}
"""
    before = (
        "HloModule m\n"
        + region.format(t="bf16")
        + """ENTRY e {
  a = bf16[4,8]{1,0} parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[4]{0} reduce(a, z), dimensions={1}, to_apply=%add
}"""
    )
    after = (
        "HloModule m\n"
        + region.format(t="f32").replace("%add", "%add32")
        + """ENTRY e {
  a = bf16[4,8]{1,0} parameter(0)
  w = f32[4,8]{1,0} convert(a)
  z = f32[] constant(0)
  s = f32[4]{0} reduce(w, z), dimensions={1}, to_apply=%add32
  ROOT r = bf16[4]{0} convert(s)
}"""
    )
    assert verify_rewrite(before, after, float_rules=ALL_RULES).status != "proved"


def test_a_mixed_precision_op_is_the_wide_op_then_convert() -> None:
    before = _module("  ROOT r = bf16[4,8]{1,0} multiply(p, q)", params="f32[4,8]{1,0} p, f32[4,8]{1,0} q")
    after = _module(
        "  m = f32[4,8]{1,0} multiply(p, q)\n  ROOT r = bf16[4,8]{1,0} convert(m)",
        params="f32[4,8]{1,0} p, f32[4,8]{1,0} q",
    )
    r = verify_rewrite(before, after, float_rules=ALL_RULES)
    assert r.status == "proved" and float_rules_used(r) == ("mixed-precision",)
    assert verify_rewrite(before, after, float_rules=("exact-ops",)).status != "proved"
    # rounding the operands first is another computation
    early = _module(
        "  u = bf16[4,8]{1,0} convert(p)\n  v = bf16[4,8]{1,0} convert(q)\n  ROOT r = bf16[4,8]{1,0} multiply(u, v)",
        params="f32[4,8]{1,0} p, f32[4,8]{1,0} q",
    )
    assert verify_rewrite(before, early, float_rules=ALL_RULES).status != "proved"


def test_an_unknown_rule_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="'fast-math'"):
        verify_rewrite(
            NARROW_OP.replace("{op}", "add"), NARROW_OP.replace("{op}", "add"), float_rules=("fast-math",)
        )


def test_a_totalorder_compare_of_widened_values_is_not_read_as_the_narrow_compare() -> None:
    """IEEE 754 conversion may quiet a signaling NaN (ml_dtypes' cast does not, hardware may),
    which would reorder NaNs in the total order: not claimed exact."""
    before = _module("  ROOT r = pred[4,8]{1,0} compare(a, b), direction=LT, type=TOTALORDER")
    after = _module(
        "  x = f32[4,8]{1,0} convert(a)\n  y = f32[4,8]{1,0} convert(b)\n"
        "  ROOT r = pred[4,8]{1,0} compare(x, y), direction=LT, type=TOTALORDER"
    )
    assert verify_rewrite(before, after, float_rules=ALL_RULES).status != "proved"
    plain = (before.replace(", type=TOTALORDER", ""), after.replace(", type=TOTALORDER", ""))
    assert verify_rewrite(*plain, float_rules=ALL_RULES).status == "proved"


# ------------------------------------------------------------------ random programs, executed
_BINARY = ("maximum", "minimum", "add", "subtract", "multiply")
_UNARY = ("negate", "abs")


def _random_programs(rng: random.Random, narrow_every_arithmetic: bool) -> tuple[str, str]:
    """A random bf16 expression over three parameters, and the same expression computed in
    f32 between converts (as float-type-correction writes it), narrowed after every
    arithmetic op when ``narrow_every_arithmetic`` (then exactly equal under the rules), at
    random nodes otherwise."""
    shape = "[4,8]{1,0}"
    before = [f"  p{k} = bf16{shape} parameter({k})" for k in range(3)]
    after = list(before) + [f"  w{k} = f32{shape} convert(p{k})" for k in range(3)]
    count = 0

    def node(depth: int) -> tuple[str, str]:
        nonlocal count
        if depth == 0 or rng.random() < 0.25:
            k = rng.randrange(3)
            return f"p{k}", f"w{k}"
        count += 1
        n = count
        kind = rng.random()
        if kind < 0.6:
            op = rng.choice(_BINARY)
            (b1, a1), (b2, a2) = node(depth - 1), node(depth - 1)
            before.append(f"  b{n} = bf16{shape} {op}({b1}, {b2})")
            after.append(f"  a{n} = f32{shape} {op}({a1}, {a2})")
        elif kind < 0.8:
            op = rng.choice(_UNARY)
            b1, a1 = node(depth - 1)
            before.append(f"  b{n} = bf16{shape} {op}({b1})")
            after.append(f"  a{n} = f32{shape} {op}({a1})")
        else:
            op = "select"
            (b1, a1), (b2, a2), (b3, a3), (b4, a4) = (node(depth - 1) for _ in range(4))
            before.append(f"  c{n} = pred{shape} compare({b1}, {b2}), direction=GT")
            before.append(f"  b{n} = bf16{shape} select(c{n}, {b3}, {b4})")
            after.append(f"  d{n} = pred{shape} compare({a1}, {a2}), direction=GT")
            after.append(f"  a{n} = f32{shape} select(d{n}, {a3}, {a4})")
        arithmetic = op in ("add", "subtract", "multiply")
        if (narrow_every_arithmetic and arithmetic) or (not narrow_every_arithmetic and rng.random() < 0.5):
            after.append(f"  n{n} = bf16{shape} convert(a{n})")
            after.append(f"  a{n}w = f32{shape} convert(n{n})")
            return f"b{n}", f"a{n}w"
        return f"b{n}", f"a{n}"

    b_root, a_root = node(3)
    before.append(f"  ROOT r = bf16{shape} copy({b_root})")
    after.append(f"  ROOT r = bf16{shape} convert({a_root})")
    wrap = "HloModule m\nENTRY e {{\n{}\n}}".format
    return wrap("\n".join(before)), wrap("\n".join(after))


@pytest.mark.slow
def test_random_programs_computed_in_f32_between_converts() -> None:
    """40 random programs (derandomized): narrowed after every arithmetic op they are proved;
    narrowed at random nodes, every proof is confirmed by the NumPy executor (random inputs,
    specials included), and a program with one op swapped is never proved."""
    from layout_algebra.hlo.execute_compare import compare

    rng = random.Random(11)
    proved_random = 0
    for case in range(40):
        safe = case % 2 == 0
        before, after = _random_programs(rng, narrow_every_arithmetic=safe)
        r = verify_rewrite(before, after, float_rules=ALL_RULES)
        if safe:
            assert r.status == "proved", (before, after, r.reason)
        if r.status == "proved":
            proved_random += not safe
            assert compare(before, after).same is not False, (before, after)
        ops = [op for op in (*_BINARY, *_UNARY) if f" {op}(" in after]
        if ops:
            old = rng.choice(ops)
            new = {"maximum": "minimum", "minimum": "maximum", "add": "subtract", "subtract": "add",
                   "multiply": "add", "negate": "abs", "abs": "negate"}[old]  # fmt: skip
            mutated = after.replace(f" {old}(", f" {new}(", 1)
            assert verify_rewrite(before, mutated, float_rules=ALL_RULES).status != "proved", mutated
    assert proved_random >= 3  # some random narrowings are exact (a narrowed max, a lone sum)


@pytest.mark.parametrize("narrow", ["bf16", "f16"])
def test_maximum_with_minus_inf_and_minimum_with_inf_are_identities_on_every_value(narrow: str) -> None:
    """All 65,536 values of the type: max(x, -inf) and min(x, inf) are x (a NaN stays a NaN)."""
    every = np.arange(1 << 16, dtype=np.uint16).view(NARROW[narrow])
    low, high = np.full_like(every, -np.inf), np.full_like(every, np.inf)
    for got in (
        np.maximum(every, low),
        np.maximum(low, every),
        np.minimum(every, high),
        np.minimum(high, every),
    ):
        assert same_up_to_nan_payload(got, every)
    # and in f32 on the widened values (what the rule reads through a convert)
    wide = every.astype(np.float32)
    assert same_up_to_nan_payload(np.maximum(wide, np.float32(-np.inf)).astype(NARROW[narrow]), every)


# ------------------------------------------------- power-of-two division, an exact identity
def powers_of_two(narrow: str) -> list[Fraction]:
    """Every divisor ±2^k of the type whose reciprocal is exact in it (subnormal ones included)."""
    p, emin, emax = FORMAT[narrow]
    smallest = emin - p + 1  # the exponent of the smallest subnormal
    return [
        s * Fraction(2) ** k for k in range(smallest, emax + 1) if smallest <= -k <= emax for s in (1, -1)
    ]


@pytest.mark.parametrize("narrow", ["bf16", "f16"])
def test_power_of_two_division_is_multiplication_by_the_exact_reciprocal(narrow: str) -> None:
    """x / 2^k and x * 2^-k, each rounded once from the exact rational (IEEE 754), are the same
    bits for random bit patterns and special values x and every power of two the type holds."""
    random_values, _ = samples(narrow, 600, seed=11)
    x = np.concatenate([random_values[:600], np.array(special_values(narrow), dtype=NARROW[narrow])])
    for c in powers_of_two(narrow):
        quotient = np.array([exact_op("divide", float(v), float(c), narrow) for v in x], dtype=NARROW[narrow])
        product = np.array(
            [exact_op("multiply", float(v), float(1 / c), narrow) for v in x], dtype=NARROW[narrow]
        )
        assert same_up_to_nan_payload(product, quotient), (narrow, c)


def test_power_of_two_division_in_f32_hardware_arithmetic() -> None:
    """The same identity in IEEE f32 as NumPy computes it, on random bit patterns of every exponent."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        for k in range(-126, 127):  # 2^-k normal: its reciprocal is exact (subnormal or normal)
            c = np.float32(2.0**k)
            got, want = x * np.float32(2.0**-k), x / c
            nan = np.isnan(want)
            assert (got.view(np.uint32) == want.view(np.uint32))[~nan].all() and np.isnan(got[nan]).all(), k


def test_the_oracle_refutes_the_identity_for_other_divisors() -> None:
    """The check can fail: dividing by 3 is not multiplying by the rounded 1/3."""
    x, _ = samples("bf16", 2000, seed=3)
    third = float(np.float32(1 / 3).astype(NARROW["bf16"]))
    quotient = np.array([exact_op("divide", float(v), 3.0, "bf16") for v in x], dtype=NARROW["bf16"])
    product = np.array([exact_op("multiply", float(v), third, "bf16") for v in x], dtype=NARROW["bf16"])
    assert not same_up_to_nan_payload(product, quotient)


def _scaled(op: str, constant: str, element: str = "f32", source: str = "f32") -> str:
    convert = f"  f = {element}[256]{{0}} convert(p)\n" if source != element else ""
    operand = "f" if convert else "p"
    return (
        f"HloModule m\nENTRY e {{\n  p = {source}[256]{{0}} parameter(0)\n{convert}"
        f"  c = {element}[] constant({constant})\n  b = {element}[256]{{0}} broadcast(c), dimensions={{}}\n"
        f"  ROOT d = {element}[256]{{0}} {op}({operand}, b)\n}}\n"
    )


@pytest.mark.parametrize(
    ("element", "divisor", "reciprocal"),
    [("f32", "2048", "0.00048828125"), ("bf16", "0.25", "4"), ("f16", "-32768", "-3.0517578125e-05")],
)
def test_power_of_two_division_is_proved_naming_its_rule(element: str, divisor: str, reciprocal: str) -> None:
    before, after = (
        _scaled("divide", divisor, element, element),
        _scaled("multiply", reciprocal, element, element),
    )
    r = verify_rewrite(before, after, float_rules=("power-of-two-division",))
    assert r.status == "proved" and float_rules_used(r) == ("power-of-two-division",), r.reason
    assert verify_rewrite(before, after).status != "proved"  # without the rule: uninterpreted


def test_division_by_255_is_not_multiplication_by_its_rounded_reciprocal() -> None:
    """The algebraic simplifier's u8 x/255 -> x*(1/255): 126 of the 256 inputs round differently."""
    before = _scaled("divide", "255", "f32", "u8")
    after = _scaled("multiply", "0.00392156886", "f32", "u8")
    r = verify_rewrite(before, after, float_rules=ALL_RULES)
    assert r.status == "refuted", r.reason
    x = np.arange(256, dtype=np.float32)
    differ = int((x / np.float32(255) != x * np.float32(0.00392156886)).sum())
    assert differ == 126


# ------------------------------------------------------------ clamp as minimum of maximum
def _clamped(root: str, element: str = "f32") -> str:
    return (
        f"HloModule m\nENTRY e {{\n  x = {element}[64]{{0}} parameter(0)\n  lo = {element}[64]{{0}} parameter(1)\n"
        f"  hi = {element}[64]{{0}} parameter(2)\n{root}\n}}\n"
    )


CLAMP = "  ROOT c = {t}[64]{{0}} clamp(lo, x, hi)"
MIN_MAX = "  m = {t}[64]{{0}} maximum(x, lo)\n  ROOT c = {t}[64]{{0}} minimum(m, hi)"
MAX_MIN = "  m = {t}[64]{{0}} minimum(x, hi)\n  ROOT c = {t}[64]{{0}} maximum(m, lo)"  # differs where lo > hi


@pytest.mark.parametrize("element", ["f32", "bf16", "s32"])
def test_clamp_is_the_minimum_of_the_maximum_naming_its_rule(element: str) -> None:
    from layout_algebra.hlo.execute_compare import compare

    clamp, min_max = _clamped(CLAMP.format(t=element), element), _clamped(MIN_MAX.format(t=element), element)
    r = verify_rewrite(clamp, min_max, float_rules=("clamp-as-min-max",))
    assert r.status == "proved" and float_rules_used(r) == ("clamp-as-min-max",), r.reason
    assert verify_rewrite(clamp, min_max).status != "proved"  # without the rule: uninterpreted
    assert compare(clamp, min_max, trials=8).same is True  # the executor computes both alike
    max_min = _clamped(MAX_MIN.format(t=element), element)
    assert verify_rewrite(clamp, max_min, float_rules=ALL_RULES).status != "proved"
    assert compare(clamp, max_min, trials=8).same is False  # lo > hi somewhere: another value
