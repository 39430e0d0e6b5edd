"""Constant folding in the rewrite verifier: an elementwise op on known numbers is its value.

XLA's ``constant_folding`` and algebraic simplifier replace ops whose operands are constants
by the literal XLA's evaluator computes. For the verifier to see that ``convert(constant(3))``
*is* ``constant(3.0)``, an op whose operands are all known numbers is evaluated here, exactly,
where the result is determined by IEEE 754 or by XLA's integer semantics:

* floats: ``add``, ``subtract``, ``multiply``, ``divide``, ``sqrt`` are correctly rounded, so
  computing in binary64 and rounding once to the type gives the type's own result for every
  type of at most 25 bits of precision (double rounding is innocuous when 53 >= 2 p + 2), and
  binary64 itself is computed natively; ``negate``, ``abs``, ``maximum``, ``minimum``,
  ``compare`` are exact; ``convert`` between float types or from integers rounds once;
* integers: two's complement, wrapped to the type's width; shifts as XLA defines them (an
  amount of at least the width gives 0, or the sign for an arithmetic right shift);
* never folded (the op stays an uninterpreted function): a NaN operand or result (payloads),
  ``maximum``/``minimum`` of two zeros of different signs, integer division or remainder by
  zero or of the minimum by -1, a float-to-integer ``convert`` out of range, ``TOTALORDER``
  compares, transcendental ops (not correctly rounded by every implementation).

The proofs that fold name the rule ``constant-folding``.

>>> from fractions import Fraction
>>> fold("convert", {}, "f32", ["s32"], [3])
Fraction(3, 1)
>>> fold("divide", {}, "f32", ["f32", "f32"], [Fraction(1), Fraction(3)]) == Fraction(float.fromhex("0x1.555556p-2"))
True
>>> fold("add", {}, "bf16", ["bf16", "bf16"], [Fraction(256), Fraction(1)])   # 257 ties to even
Fraction(256, 1)
>>> fold("add", {}, "s8", ["s8", "s8"], [127, 1])   # wraps
-128
>>> fold("compare", {"direction": "LT"}, "pred", ["f32", "f32"], ["-inf", Fraction(0)])
1
>>> fold("maximum", {}, "f32", ["f32", "f32"], ["-0", Fraction(0)]) is None   # which zero: not said
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from layout_algebra.model.primitive_types import primitive_type
from layout_algebra.packing.formats import numpy_dtype

__all__ = ["CONSTANT_FOLDING", "fold"]

#: The name of the rule (``FLOAT_RULES``) under which the verifier folds constants.
CONSTANT_FOLDING = "constant-folding"

_FLOAT_BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
_FLOAT_UNARY = {"negate": np.negative, "abs": np.abs, "sqrt": np.sqrt}
_COMPARISONS = {
    "EQ": lambda x, y: x == y,
    "NE": lambda x, y: x != y,
    "LT": lambda x, y: x < y,
    "LE": lambda x, y: x <= y,
    "GT": lambda x, y: x > y,
    "GE": lambda x, y: x >= y,
}


def fold(
    op: str, attributes: dict[str, str], result_type: str, types: Sequence[str], values: Sequence[Any]
) -> Any:
    """The value of ``op`` on the known ``values`` (of element types ``types``) as a number of
    ``result_type`` (an int, a Fraction, or ``'inf'``/``'-inf'``/``'-0'``), or None when it is
    not folded (see the module docstring)."""
    if not values or not all(_is_known(v) for v in values) or len(types) != len(values):
        return None
    if set(attributes) - {"direction", "type", "metadata"}:
        return None
    try:
        kinds = [primitive_type(t).value.kind for t in (*types, result_type)]
    except (KeyError, ValueError):
        return None
    if op == "compare":
        return _compare(attributes, types, values)
    if op == "convert" and len(values) == 1:
        return _convert(types[0], result_type, values[0])
    if any(t != result_type for t in types):  # mixed precision: not folded
        return None
    if kinds[-1] == "float":
        return _float_op(op, result_type, values)
    if kinds[-1] in ("signed", "unsigned"):
        return _integer_op(op, result_type, values)
    return None


def _is_known(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, (int, Fraction)) or (isinstance(v, str) and v in ("inf", "-inf", "-0"))


# ------------------------------------------------------------------ floats
def _as_float(v: Any) -> float | None:
    """A known float value as a binary64 (exact for every type of at most 64 bits), or None."""
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "-0": -0.0}[v]
    x = float(v)
    return x if Fraction(x) == v else None


def _rounded(x: float, type_text: str) -> Any:
    """``x`` rounded once to ``type_text``, as a verifier value; None for NaN."""
    try:
        dtype = numpy_dtype(type_text)
    except ValueError:
        return None
    with np.errstate(all="ignore"):
        r = float(np.asarray(x, dtype=np.float64).astype(dtype))
    if math.isnan(r):
        return None
    if math.isinf(r):
        return "inf" if r > 0 else "-inf"
    if r == 0 and math.copysign(1.0, r) < 0:
        return "-0"
    return Fraction(r)


def _precision(type_text: str) -> int | None:
    """Significand bits of a float type. ``ml_dtypes.finfo``, not ``np.finfo``: NumPy knows the
    ml_dtypes types only through entries ml_dtypes 0.7 puts in ``np.finfo``'s cache at import;
    with ml_dtypes 0.6 ``np.finfo(bfloat16)`` raises."""
    import ml_dtypes

    try:
        info = ml_dtypes.finfo(numpy_dtype(type_text))  # type: ignore[no-untyped-call]
        return int(info.nmant) + 1
    except (ValueError, TypeError):
        return None


def _float_op(op: str, type_text: str, values: Sequence[Any]) -> Any:
    p = _precision(type_text)
    if p is None or (p > 25 and type_text != "f64"):
        return None
    xs = [_as_float(v) for v in values]
    if any(x is None for x in xs):
        return None
    with np.errstate(all="ignore"):
        if op in _FLOAT_UNARY and len(xs) == 1:
            r = float(_FLOAT_UNARY[op](np.float64(xs[0])))
        elif op in _FLOAT_BINARY and len(xs) == 2:
            x, y = xs
            if (
                op in ("maximum", "minimum")
                and x == 0
                and y == 0
                and math.copysign(1, x) != math.copysign(1, y)
            ):
                return None
            r = float(_FLOAT_BINARY[op](np.float64(x), np.float64(y)))
        else:
            return None
    return _rounded(r, type_text)


def _compare(attributes: dict[str, str], types: Sequence[str], values: Sequence[Any]) -> Any:
    direction = attributes.get("direction")
    if len(values) != 2 or types[0] != types[1] or direction not in _COMPARISONS:
        return None
    kind = primitive_type(types[0]).value.kind
    if kind == "float":
        if attributes.get("type", "FLOAT") != "FLOAT":
            return None
        x, y = (_as_float(v) for v in values)
        if x is None or y is None:
            return None
        return int(_COMPARISONS[direction](x, y))
    if kind in ("signed", "unsigned"):
        if attributes.get("type", "SIGNED" if kind == "signed" else "UNSIGNED") != (
            "SIGNED" if kind == "signed" else "UNSIGNED"
        ):
            return None
        return int(_COMPARISONS[direction](*values))
    return None


def _convert(source: str, target: str, v: Any) -> Any:
    src, dst = primitive_type(source).value.kind, primitive_type(target).value.kind
    if src in ("signed", "unsigned") and dst in ("signed", "unsigned"):
        return _wrapped(int(v), target)
    if src in ("signed", "unsigned") and dst == "float":
        if abs(int(v)) >= 2**53:
            return None
        return _rounded(float(int(v)), target)
    if src == "float" and dst == "float":
        x = _as_float(v)
        return None if x is None else _rounded(x, target)
    if src == "float" and dst in ("signed", "unsigned"):
        x = _as_float(v)
        if x is None or math.isinf(x):
            return None
        t = math.trunc(x)
        low, high = _range(target)
        return t if low <= t <= high else None
    return None


# ------------------------------------------------------------------ integers
def _range(type_text: str) -> tuple[int, int]:
    info = primitive_type(type_text).value
    bits = info.bit_width
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if info.kind == "signed" else (0, (1 << bits) - 1)


def _wrapped(x: int, type_text: str) -> int:
    """``x`` in two's complement of ``type_text``'s width."""
    bits = primitive_type(type_text).value.bit_width
    x &= (1 << bits) - 1
    if primitive_type(type_text).value.kind == "signed" and x >= 1 << (bits - 1):
        x -= 1 << bits
    return x


def _integer_op(op: str, type_text: str, values: Sequence[Any]) -> Any:
    if not all(isinstance(v, int) for v in values):
        return None
    bits = primitive_type(type_text).value.bit_width
    low = _range(type_text)[0]
    if len(values) == 1:
        (x,) = values
        unary = {"negate": -x, "abs": abs(x), "not": ~x}
        return _wrapped(unary[op], type_text) if op in unary else None
    if len(values) != 2:
        return None
    x, y = values
    if op in ("divide", "remainder"):
        if y == 0 or (x == low and y == -1 and low < 0):
            return None
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # truncated toward zero
        return _wrapped(q if op == "divide" else x - q * y, type_text)
    if op in ("shift-left", "shift-right-logical", "shift-right-arithmetic"):
        amount = y & ((1 << bits) - 1)  # the amount is read as unsigned
        unsigned = x & ((1 << bits) - 1)
        if op == "shift-left":
            return _wrapped(unsigned << amount if amount < bits else 0, type_text)
        if op == "shift-right-logical":
            return _wrapped(unsigned >> amount if amount < bits else 0, type_text)
        if low == 0:  # an arithmetic shift of an unsigned type: not folded
            return None
        return _wrapped(x >> min(amount, bits - 1), type_text)
    binary = {
        "add": x + y,
        "subtract": x - y,
        "multiply": x * y,
        "and": x & y,
        "or": x | y,
        "xor": x ^ y,
        "maximum": max(x, y),
        "minimum": min(x, y),
    }
    return _wrapped(binary[op], type_text) if op in binary else None
