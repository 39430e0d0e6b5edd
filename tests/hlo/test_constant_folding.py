"""Constant folding in the verifier (``layout_algebra.hlo.evaluate_constants``) against exact
arithmetic: every folded float op equals the exact rational result rounded once to the type by
an independent round-to-nearest-even written here from the IEEE 754 definition; every folded
integer op equals NumPy's own fixed-width (wrapping) arithmetic; and a pass that folds
constants is proved, a wrong folded literal is refuted.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from layout_algebra.hlo.evaluate_constants import fold
from layout_algebra.hlo.passes import validate_pair

# precision (with the hidden bit), smallest normal exponent, largest exponent
FORMATS = {"f32": (24, -126, 127), "bf16": (8, -126, 127), "f16": (11, -14, 15), "f64": (53, -1022, 1023)}


def floor_log2(a: Fraction) -> int:
    """The exponent e with 2^e <= a < 2^(e+1) (a > 0), exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_to_format(x: Fraction, type_text: str, zero_sign: int = 1) -> object:
    """``x`` rounded to nearest, ties to even, in ``type_text`` (IEEE 754 binary formats)."""
    p, emin, emax = FORMATS[type_text]
    if x == 0:
        return "-0" if zero_sign < 0 else Fraction(0)
    sign, a = (1 if x > 0 else -1), abs(x)
    e = max(floor_log2(a), emin)
    q = Fraction(2) ** (e - p + 1)
    m = a / q
    n = math.floor(m)
    if m - n > Fraction(1, 2) or (m - n == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * q
    if r >= Fraction(2) ** (emax + 1):
        return "inf" if sign > 0 else "-inf"
    if r == 0:
        return "-0" if sign < 0 else Fraction(0)
    return sign * r


def exact(v: object) -> Fraction | None:
    return v if isinstance(v, Fraction) else Fraction(0) if v == "-0" else None


def random_value(rng: random.Random, type_text: str) -> object:
    """A random finite value of the type: random bits, zeros, subnormals, extremes."""
    p, emin, emax = FORMATS[type_text]
    kind = rng.random()
    if kind < 0.08:
        return rng.choice(["-0", Fraction(0)])
    if kind < 0.16:  # a subnormal
        return rng.choice([1, -1]) * rng.randint(1, 2 ** (p - 1) - 1) * Fraction(2) ** (emin - p + 1)
    if kind < 0.22:  # near the largest
        return rng.choice([1, -1]) * (2**p - rng.randint(1, 3)) * Fraction(2) ** (emax - p + 1)
    e = rng.randint(emin, emax) if kind < 0.5 else rng.randint(-8, 8)
    return rng.choice([1, -1]) * rng.randint(2 ** (p - 1), 2**p - 1) * Fraction(2) ** (e - p + 1)


def sign_of(v: object) -> int:
    return -1 if v == "-0" or (isinstance(v, Fraction) and v < 0) else 1


@pytest.mark.parametrize("type_text", sorted(FORMATS))
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_folded_arithmetic_is_the_exact_result_rounded_once(type_text: str, op: str) -> None:
    rng = random.Random(f"{type_text}{op}")
    for _ in range(300):
        x, y = random_value(rng, type_text), random_value(rng, type_text)
        got = fold(op, {}, type_text, [type_text, type_text], [x, y])
        ex, ey = exact(x), exact(y)
        if op == "divide" and ey == 0:
            assert got is None or got in ("inf", "-inf"), (x, y, got)
            continue
        real = {"add": ex + ey, "subtract": ex - ey, "multiply": ex * ey, "divide": ex / ey if ey else None}[
            op
        ]
        if real == 0:  # the sign of an exact zero, by IEEE 754's rules
            if op in ("multiply", "divide"):
                zero_sign = sign_of(x) * sign_of(y)
            else:
                sy = sign_of(y) if op == "add" else -sign_of(y)
                zero_sign = -1 if sign_of(x) < 0 and sy < 0 else 1
            assert got == round_to_format(real, type_text, zero_sign), (op, x, y, got)
        else:
            assert got == round_to_format(real, type_text), (op, x, y, got)


@pytest.mark.parametrize("type_text", sorted(FORMATS))
def test_folded_sqrt_is_the_exact_root_rounded_once(type_text: str) -> None:
    rng = random.Random(type_text)
    p, emin, _ = FORMATS[type_text]
    for _ in range(300):
        x = abs(exact(random_value(rng, type_text)))
        got = fold("sqrt", {}, type_text, [type_text], [x])
        if x == 0:
            continue
        # bracket sqrt(x) between two neighbours of the format, then pick by squaring
        e = max(floor_log2(x) // 2, emin)
        q = Fraction(2) ** (e - p + 1)
        n = math.isqrt(math.floor(x / (q * q)))
        while (n + 1) ** 2 * q * q <= x:
            n += 1
        low, high = n * q, (n + 1) * q
        mid = (low + high) / 2
        want = high if mid * mid < x or (mid * mid == x and n % 2 == 1) else low
        assert got == round_to_format(want, type_text), (x, got, want)


@pytest.mark.parametrize("target", ["f32", "bf16", "f16"])
def test_folded_converts_round_once(target: str) -> None:
    rng = random.Random(target)
    for _ in range(300):
        k = rng.randint(-(2**31), 2**31 - 1)
        assert fold("convert", {}, target, ["s32"], [k]) == round_to_format(Fraction(k), target)
        x = random_value(rng, "f64")
        got = fold("convert", {}, target, ["f64"], [x])
        if x == "-0":
            assert got == "-0"
        else:
            assert got == round_to_format(exact(x), target, sign_of(x)), (x, got)
    assert fold("convert", {}, "s32", ["f32"], [Fraction(-7, 2)]) == -3  # toward zero
    assert fold("convert", {}, "s8", ["f32"], [Fraction(300)]) is None  # out of range: not folded


INTEGER_OPS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("type_text", ["s8", "u8", "s32", "u16"])
def test_folded_integer_ops_wrap_like_numpy(type_text: str) -> None:
    dtype = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "u16": np.uint16}[type_text]
    info = np.iinfo(dtype)
    rng = random.Random(type_text)
    for _ in range(400):
        x, y = (
            rng.choice([info.min, info.max, 0, -1 if info.min else 1, rng.randint(info.min, info.max)])
            for _ in "xy"
        )
        op = rng.choice(sorted(INTEGER_OPS))
        with np.errstate(over="ignore"):
            want = int(INTEGER_OPS[op](dtype(x), dtype(y)))
        assert fold(op, {}, type_text, [type_text] * 2, [int(x), int(y)]) == want, (op, x, y)
        if y != 0 and not (x == info.min and y == -1):
            assert fold("divide", {}, type_text, [type_text] * 2, [int(x), int(y)]) == math.trunc(
                Fraction(int(x), int(y))
            )
            assert fold("remainder", {}, type_text, [type_text] * 2, [int(x), int(y)]) == int(math.fmod(x, y))
        with np.errstate(over="ignore"):
            assert fold("negate", {}, type_text, [type_text], [int(x)]) == int(np.negative(dtype(x)))
            assert fold("not", {}, type_text, [type_text], [int(x)]) == int(np.invert(dtype(x)))


def test_shifts_follow_xlas_definition() -> None:
    # in range: NumPy's shifts; an amount of at least the width: 0, or the sign (XLA's semantics)
    for x in (-128, -5, 0, 3, 127):
        for k in range(8):
            assert fold("shift-left", {}, "s8", ["s8", "s8"], [x, k]) == int(
                np.left_shift(np.int8(x), np.int8(k))
            )
            assert fold("shift-right-arithmetic", {}, "s8", ["s8", "s8"], [x, k]) == x >> k
            assert fold("shift-right-logical", {}, "s8", ["s8", "s8"], [x, k]) == int(
                np.int8(np.uint8(np.int8(x).view(np.uint8)) >> np.uint8(k))
            )
        for k in (8, 9, 100, -1):
            assert fold("shift-left", {}, "s8", ["s8", "s8"], [x, k]) == 0
            assert fold("shift-right-logical", {}, "s8", ["s8", "s8"], [x, k]) == 0
            assert fold("shift-right-arithmetic", {}, "s8", ["s8", "s8"], [x, k]) == (-1 if x < 0 else 0)


def test_what_is_not_folded() -> None:
    assert fold("add", {}, "f32", ["f32", "f32"], ["inf", "-inf"]) is None  # NaN
    assert fold("divide", {}, "s32", ["s32", "s32"], [1, 0]) is None
    assert fold("divide", {}, "s8", ["s8", "s8"], [-128, -1]) is None
    assert fold("exponential", {}, "f32", ["f32"], [Fraction(1)]) is None
    assert (
        fold(
            "compare",
            {"direction": "LT", "type": "TOTALORDER"},
            "pred",
            ["f32", "f32"],
            [Fraction(1), Fraction(2)],
        )
        is None
    )
    assert fold("add", {}, "f32", ["bf16", "f32"], [Fraction(1), Fraction(2)]) is None  # mixed precision


FOLDED = """HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  k = s32[] constant(3)
  c = f32[] convert(k)
  h = f32[] constant(0.5)
  d = f32[] divide(c, h)
  b = f32[8]{0} broadcast(d), dimensions={}
  ROOT r = f32[8]{0} multiply(p, b)
}"""


def test_a_pass_that_folds_constants_is_proved_and_a_wrong_literal_refuted() -> None:
    folded = """HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  d = f32[] constant(6)
  b = f32[8]{0} broadcast(d), dimensions={}
  ROOT r = f32[8]{0} multiply(p, b)
}"""
    r = validate_pair(FOLDED, folded, mode="logical")
    assert r.status == "proved", r.reason
    assert "constant-folding" in r.assumptions
    wrong = validate_pair(FOLDED, folded.replace("constant(6)", "constant(6.0000005)"), mode="logical")
    assert wrong.status == "refuted", wrong.reason
    without = validate_pair(FOLDED, folded, mode="logical", float_rules=())
    assert without.status != "proved"


def test_a_term_is_never_folded() -> None:
    import z3

    i = z3.Int("i")
    assert fold("add", {}, "s32", ["s32", "s32"], [i, 1]) is None
    assert fold("compare", {"direction": "LT"}, "pred", ["s32", "s32"], [i, 1]) is None


def test_folding_does_not_depend_on_numpys_finfo_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # ml_dtypes 0.7 makes np.finfo(bfloat16) work by filling np.finfo's cache at import; with
    # the lowest versions pyproject.toml names (ml_dtypes 0.6, numpy 2.0) it does not, and
    # np.finfo(bfloat16) raises. An empty cache reproduces that: bf16 must still fold.
    import ml_dtypes  # imported before the cache is emptied, so it cannot refill it

    assert ml_dtypes.bfloat16 is not None
    monkeypatch.setattr(np.finfo, "_finfo_cache", {})
    got = fold("add", {}, "bf16", ["bf16", "bf16"], [Fraction(256), Fraction(3)])
    assert got == round_to_format(Fraction(259), "bf16") == Fraction(260)
