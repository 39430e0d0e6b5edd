"""The executor's further elementwise ops: rounding, ``power``, ``atan2``, bit counts,
``reduce-precision`` and the other transcendental functions, each by XLA's semantics.

Each takes the instruction, the result shape and the operands' logical arrays, and returns
the result array (:func:`math_elementwise`); the caller combines the operands' defined
masks. Floats narrower than f32 (bf16, f16 aside, the f8 types) are computed in f32 and
rounded once, as the other elementwise ops of the executor are.

>>> import numpy as np
>>> from layout_algebra.hlo.execute import run
>>> text = '''HloModule m
... ENTRY e {
...   p = f32[6]{0} parameter(0)
...   ROOT r = f32[6]{0} round-nearest-even(p)
... }'''
>>> run(text, [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32)]).array.tolist()
[0.0, 2.0, 2.0, -0.0, -2.0, 2.0]
>>> run(text.replace("round-nearest-even", "round-nearest-afz"),
...     [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32)]).array.tolist()
[1.0, 2.0, 3.0, -1.0, -2.0, 2.0]

Integer ``power`` wraps like the other integer ops; a negative exponent gives 1 for base 1
and 0 otherwise (XLA's ``EmitIntegerPow``):

>>> ints = text.replace("f32", "s32").replace("round-nearest-even(p)", "power(p, p)")
>>> run(ints, [np.array([2, 3, 1, -1, 0, 70000], np.int32)]).array.tolist()
[4, 27, 1, 0, 1, 0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from layout_algebra.hlo.ir import HloInstruction
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.packing.formats import numpy_dtype

__all__ = ["MATH_OPCODES", "compute_dtype", "math_elementwise", "total_order_key", "wrapped"]


def _kind(shape: ArrayShape) -> str:
    return shape.element_type.value.kind


def _bits(shape: ArrayShape) -> int:
    return shape.element_type.value.bit_width


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The NumPy type a float op computes in: the type itself for f16/f32/f64, else f32."""
    return np.dtype(dtype) if dtype in (np.float16, np.float32, np.float64) else np.dtype(np.float32)


def wrapped(values: np.ndarray, shape: ArrayShape) -> np.ndarray:
    """Exact integers (Python ints in an object array, or int64/uint64) reduced to the
    integer type of ``shape`` (two's complement wrap)."""
    bits, kind = _bits(shape), _kind(shape)
    mask = (1 << bits) - 1
    flat = [int(v) & mask for v in np.asarray(values).ravel().tolist()]
    if kind == "signed":
        flat = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in flat]
    return np.array(flat, dtype=numpy_dtype(shape.element_type)).reshape(np.shape(values))


def _round_afz(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    away = np.abs(x - t) >= 0.5
    return np.copysign(np.where(away, t + np.sign(x), t), x)


def _reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's ``reduce-precision`` on float32/float64 bits: round the mantissa to nearest
    even, overflow to infinity, values below the smallest normal flushed to a signed zero,
    NaN kept a NaN."""
    if x.dtype == np.float64:
        ubits, src_m, src_e, itype = 64, 52, 11, np.uint64
    else:
        x, ubits, src_m, src_e, itype = x.astype(np.float32), 32, 23, 8, np.uint32
    u = x.view(itype).astype(np.uint64)
    one = np.uint64(1)
    if mantissa_bits < src_m:
        drop = np.uint64(src_m - mantissa_bits)
        last = (u >> drop) & one
        bias = (one << (drop - one)) - one + last
        u = (u + bias) & ~((one << drop) - one)
    if exponent_bits < src_e:
        sign = u & (one << np.uint64(ubits - 1))
        magnitude = u & ~sign
        src_bias = (1 << (src_e - 1)) - 1
        bias = (1 << (exponent_bits - 1)) - 1
        max_exp = np.uint64(src_bias + bias) << np.uint64(src_m)  # largest normal's biased exponent
        min_exp = np.uint64(src_bias - bias + 1) << np.uint64(src_m)
        inf = np.uint64(((1 << src_e) - 1) << src_m)
        magnitude = np.where(magnitude >= max_exp + (one << np.uint64(src_m)), inf, magnitude)
        magnitude = np.where(magnitude < min_exp, np.uint64(0), magnitude)
        u = sign | magnitude
    out = u.astype(itype).view(x.dtype)
    return np.where(np.isnan(x), x, out)


def _int_power(base: np.ndarray, exponent: np.ndarray, shape: ArrayShape) -> np.ndarray:
    bits = _bits(shape)
    pairs = zip(base.ravel().tolist(), exponent.ravel().tolist(), strict=True)
    out = [pow(int(b), int(e), 1 << bits) if e >= 0 else int(b == 1) for b, e in pairs]
    return wrapped(np.array(out, dtype=object).reshape(base.shape), shape)


def _count_leading_zeros(x: np.ndarray, shape: ArrayShape) -> np.ndarray:
    bits = _bits(shape)
    out = [bits - (int(v) & ((1 << bits) - 1)).bit_length() for v in x.ravel().tolist()]
    return np.array(out, dtype=x.dtype).reshape(x.shape)


def _popcount(x: np.ndarray, shape: ArrayShape) -> np.ndarray:
    bits = _bits(shape)
    out = [bin(int(v) & ((1 << bits) - 1)).count("1") for v in x.ravel().tolist()]
    return np.array(out, dtype=x.dtype).reshape(x.shape)


_erf = np.frompyfunc(math.erf, 1, 1)

_FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "round-nearest-even": np.rint,
    "round-nearest-afz": _round_afz,
    "cbrt": np.cbrt,
    "tan": np.tan,
    "logistic": lambda x: 1 / (1 + np.exp(-x)),
    "erf": lambda x: _erf(x.astype(np.float64)).astype(np.float64),
}
_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "power": np.power,
    "atan2": np.arctan2,
}

#: The opcodes :func:`math_elementwise` computes.
MATH_OPCODES = frozenset(
    {*_FLOAT_UNARY, *_FLOAT_BINARY, "is-finite", "count-leading-zeros", "popcnt", "reduce-precision"}
)


def _precision_bits(ins: HloInstruction) -> tuple[int, int]:
    try:
        e, m = int(ins.attributes["exponent_bits"]), int(ins.attributes["mantissa_bits"])
    except (KeyError, ValueError):
        raise InvalidHlo(
            f"instruction {ins.name!r}: reduce-precision needs exponent_bits=N and mantissa_bits=N"
        ) from None
    if not (1 <= e and 0 <= m):
        raise InvalidHlo(f"instruction {ins.name!r}: reduce-precision to {e} exponent, {m} mantissa bits")
    return e, m


def math_elementwise(
    ins: HloInstruction, shape: ArrayShape, operand_shapes: Sequence[ArrayShape], xs: Sequence[np.ndarray]
) -> np.ndarray | None:
    """The result array of elementwise op ``ins`` (one of :data:`MATH_OPCODES`) on ``xs``, or
    ``None`` for an element type it is not defined on here."""
    op = ins.opcode
    unary = op not in _FLOAT_BINARY
    if len(xs) != (1 if unary else 2):
        raise InvalidHlo(f"instruction {ins.name!r}: {op} takes {1 if unary else 2} operands, got {len(xs)}")
    dims = tuple(shape.dimensions)
    for s, x in zip(operand_shapes, xs, strict=True):
        if x.shape != dims:
            raise InvalidHlo(f"instruction {ins.name!r}: operand {s} does not match the result {shape}")
    kind, dtype = _kind(shape), numpy_dtype(shape.element_type)
    source = operand_shapes[0]
    if op == "is-finite":
        if _kind(source) != "float" or kind != "pred":
            raise InvalidHlo(f"instruction {ins.name!r}: is-finite of {source} into {shape}")
        return np.isfinite(xs[0].astype(np.float64))
    if any(s.element_type != shape.element_type for s in operand_shapes):
        raise InvalidHlo(
            f"instruction {ins.name!r}: operands {list(map(str, operand_shapes))} and result {shape}"
        )
    with np.errstate(all="ignore"):
        if kind == "float":
            compute = compute_dtype(dtype)
            ys = [x.astype(compute) for x in xs]
            if op == "reduce-precision":
                return _reduce_precision(ys[0], *_precision_bits(ins)).astype(dtype)
            if op in _FLOAT_UNARY:
                return np.asarray(_FLOAT_UNARY[op](ys[0])).astype(compute).astype(dtype)
            if op in _FLOAT_BINARY:
                return np.asarray(_FLOAT_BINARY[op](ys[0], ys[1])).astype(compute).astype(dtype)
        if kind in ("signed", "unsigned"):
            if op == "power":
                return _int_power(xs[0], xs[1], shape)
            if op == "count-leading-zeros":
                return _count_leading_zeros(xs[0], shape)
            if op == "popcnt":
                return _popcount(xs[0], shape)
    return None


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered as XLA's ``TOTALORDER`` float comparison orders ``x``:
    -NaN < -inf < ... < -0 < +0 < ... < inf < NaN (sign and magnitude read as two's complement).

    >>> key = total_order_key(np.array([np.nan, -np.inf, -0.0, 0.0, 1.0, -np.nan], np.float32))
    >>> [int(k) for k in np.argsort(key, kind="stable")]
    [5, 1, 2, 3, 4, 0]
    """
    width = x.dtype.itemsize
    itype = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[width]
    raw = np.ascontiguousarray(x).view(itype).astype(np.int64)
    magnitude_mask = (1 << (8 * width - 1)) - 1
    return np.where(raw < 0, -(raw & magnitude_mask) - 1, raw)
