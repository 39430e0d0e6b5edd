"""The HLO executor's ops: each computes a result array (data and defined mask) from its operands
with NumPy, by the op's own semantics (an oracle independent of the rewrite verifier's encoding).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from layout_algebra.hlo.ir import HloComputation, HloInstruction
from layout_algebra.hlo.literals import is_tuple_or_complex_literal, literal_entries
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.packing.formats import numpy_dtype


class ExecutionError(LayoutAlgebraError, ValueError):
    """A module this executor cannot run (base class)."""


class UnsupportedOpError(ExecutionError):
    """An op (or a form of it) the executor does not interpret; ``opcode`` names it."""

    def __init__(self, opcode: str, message: str) -> None:
        self.opcode = opcode
        super().__init__(message)


@dataclass
class ArrayValue:
    """An array value during execution: its declared shape, logical data, defined mask."""

    shape: ArrayShape
    data: np.ndarray
    defined: np.ndarray
    physical: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)


Value = Any  # ArrayValue | tuple[Value, ...]


def is_constant_through_copies(comp: HloComputation, name: str) -> bool:
    """Whether instruction ``name`` is a ``constant``, or a chain of ``copy`` of one."""
    seen: set[str] = set()
    while name in comp and name not in seen:
        seen.add(name)
        ins = comp.instruction(name)
        if ins.opcode != "copy" or not ins.operand_names:
            return ins.opcode == "constant"
        name = ins.operand_names[0]
    return False


def arity(ins: HloInstruction, operands: list[Value], n: int) -> list[Value]:
    if len(operands) != n:
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} takes {n} operands, got {len(operands)}")
    return operands


def check_result(ins: HloInstruction, shape: ArrayShape, data: np.ndarray) -> None:
    dims = tuple(shape.dimensions)
    if data.shape != dims:
        raise InvalidHlo(
            f"instruction {ins.name!r}: {ins.opcode} gives dimensions {list(data.shape)}, "
            f"but its shape is {shape}"
        )
    if data.dtype != numpy_dtype(shape.element_type):
        raise InvalidHlo(
            f"instruction {ins.name!r}: {ins.opcode} gives elements of type {data.dtype}, but its shape is {shape}"
        )


def _attribute_ints(ins: HloInstruction, name: str) -> tuple[int, ...]:
    from layout_algebra.hlo.attributes import AttributeValueError, parse_int_list

    if name == "dimensions" and ins.dimensions is not None:
        return ins.dimensions
    text = ins.attributes.get(name)
    if text is None:
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} needs the attribute {name}={{...}}")
    try:
        return parse_int_list(text)
    except AttributeValueError as err:
        raise InvalidHlo(f"instruction {ins.name!r}: {name}={text}: {err}") from None


def _permutation(ins: HloInstruction, dims: tuple[int, ...], rank: int) -> tuple[int, ...]:
    if sorted(dims) != list(range(rank)):
        raise InvalidHlo(
            f"instruction {ins.name!r}: dimensions={{{','.join(map(str, dims))}}} is not a permutation of {rank} dims"
        )
    return dims


# ------------------------------------------------------------------ data movement
# Each takes (instruction, result shape, operands) and returns (data, defined).


def _reshape(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    dims = tuple(shape.dimensions)
    if math.prod(dims) != a.data.size:
        raise InvalidHlo(
            f"instruction {ins.name!r}: reshape of {a.data.size} elements ({a.shape}) into {shape} "
            f"({math.prod(dims)} elements)"
        )
    return a.data.reshape(dims), a.defined.reshape(dims)


def _transpose(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    perm = _permutation(ins, _attribute_ints(ins, "dimensions"), a.data.ndim)
    return np.transpose(a.data, perm), np.transpose(a.defined, perm)


def _copy(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    return a.data, a.defined


def _slice(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    config = ins.slice
    if config is None or len(config) != a.data.ndim:
        raise InvalidHlo(f"instruction {ins.name!r}: slice needs one [start:limit:stride] per dimension")
    for d, s in zip(a.data.shape, config, strict=True):
        if not (0 <= s.start <= s.limit <= d and s.stride >= 1):
            raise InvalidHlo(
                f"instruction {ins.name!r}: slice [{s.start}:{s.limit}:{s.stride}] does not fit a dimension of {d}"
            )
    index = tuple(slice(s.start, s.limit, s.stride) for s in config)
    return a.data[index], a.defined[index]


def _broadcast(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    dims = _attribute_ints(ins, "dimensions") if a.data.ndim else ()
    out = tuple(shape.dimensions)
    if len(dims) != a.data.ndim or len(set(dims)) != len(dims) or any(not 0 <= d < len(out) for d in dims):
        raise InvalidHlo(
            f"instruction {ins.name!r}: dimensions={list(dims)} do not map {a.shape} into {shape}"
        )
    if any(a.data.shape[i] != out[d] for i, d in enumerate(dims)):
        raise InvalidHlo(
            f"instruction {ins.name!r}: cannot broadcast {a.shape} into {shape} along {list(dims)}"
        )
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    expanded = [1] * len(out)
    for i in order:
        expanded[dims[i]] = out[dims[i]]

    def spread(x):
        return np.broadcast_to(np.transpose(x, order).reshape(expanded), out).copy()

    return spread(a.data), spread(a.defined)


def _concatenate(ins, shape, operands):
    if not operands:
        raise InvalidHlo(f"instruction {ins.name!r}: concatenate needs operands")
    (d,) = _attribute_ints(ins, "dimensions")
    if not 0 <= d < operands[0].data.ndim:  # XLA has no negative dimension numbers (NumPy would count back)
        raise InvalidHlo(
            f"instruction {ins.name!r}: concatenate dimensions={{{d}}} out of range for rank {operands[0].data.ndim}"
        )
    try:
        return (
            np.concatenate([o.data for o in operands], axis=d),
            np.concatenate([o.defined for o in operands], axis=d),
        )
    except (ValueError, np.exceptions.AxisError) as err:
        raise InvalidHlo(f"instruction {ins.name!r}: cannot concatenate along {d}: {err}") from None


def _pad(ins, shape, operands):
    a, value = arity(ins, operands, 2)
    config = ins.padding
    if config is None or len(config) != a.data.ndim or value.data.ndim != 0:
        raise InvalidHlo(
            f"instruction {ins.name!r}: pad needs a scalar value and one low_high[_interior] per dim"
        )
    out_dims, places = [], []
    for n, p in zip(a.data.shape, config, strict=True):
        if p.interior < 0:
            raise InvalidHlo(f"instruction {ins.name!r}: negative interior padding {p.interior}")
        size = p.low + p.high + n + max(n - 1, 0) * p.interior
        if size < 0:
            raise InvalidHlo(f"instruction {ins.name!r}: padding {p} makes a dimension of {n} negative")
        positions = p.low + np.arange(n) * (p.interior + 1)
        keep = (positions >= 0) & (positions < size)
        out_dims.append(size)
        places.append((np.nonzero(keep)[0], positions[keep]))
    src = np.ix_(*(k for k, _ in places))
    dst = np.ix_(*(pos for _, pos in places))

    def place(x, fill):
        out = np.empty(out_dims, x.dtype)
        out[...] = fill
        out[dst] = x[src]
        return out

    return place(a.data, value.data), place(a.defined, bool(value.defined))


def _reverse(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    dims = _attribute_ints(ins, "dimensions")
    if any(not 0 <= d < a.data.ndim for d in dims):
        raise InvalidHlo(f"instruction {ins.name!r}: reverse dimensions {list(dims)} out of range")
    if len(set(dims)) != len(dims):
        raise InvalidHlo(f"instruction {ins.name!r}: reverse dimensions {list(dims)} name a dimension twice")
    return np.flip(a.data, axis=dims).copy(), np.flip(a.defined, axis=dims).copy()


def _start_indices(ins, operands, first: int, rank: int) -> tuple[list[int], bool]:
    """The start indices of a dynamic slice (scalar operands, or one 1-D array), and whether defined."""
    rest = operands[first:]
    if len(rest) == 1 and rest[0].data.ndim == 1 and rank != 1:
        starts, defined = list(rest[0].data), bool(np.all(rest[0].defined))
    else:
        if len(rest) != rank or any(o.data.ndim != 0 for o in rest):
            raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} needs {rank} scalar start indices")
        starts, defined = [o.data[()] for o in rest], all(bool(o.defined) for o in rest)
    for o in rest:
        if o.data.dtype.kind not in "iu":
            raise InvalidHlo(
                f"instruction {ins.name!r}: start indices must be integers, found {o.data.dtype}"
            )
    return [int(s) for s in starts], defined


def _clamped(starts: list[int], dims: Sequence[int], sizes: Sequence[int]) -> tuple[slice, ...]:
    """XLA clamps each start into ``[0, dim - size]``."""
    return tuple(
        slice(min(max(s, 0), d - n), min(max(s, 0), d - n) + n)
        for s, d, n in zip(starts, dims, sizes, strict=True)
    )


def _dynamic_slice(ins, shape, operands):
    if not operands:
        raise InvalidHlo(f"instruction {ins.name!r}: dynamic-slice needs an operand")
    a = operands[0]
    sizes = _attribute_ints(ins, "dynamic_slice_sizes")
    if len(sizes) != a.data.ndim or any(not 0 <= n <= d for n, d in zip(sizes, a.data.shape, strict=True)):
        raise InvalidHlo(f"instruction {ins.name!r}: dynamic_slice_sizes={list(sizes)} do not fit {a.shape}")
    starts, known = _start_indices(ins, operands, 1, a.data.ndim)
    window = _clamped(starts, a.data.shape, sizes)
    defined = a.defined[window] & known
    return a.data[window].copy(), defined


def _dynamic_update_slice(ins, shape, operands):
    if len(operands) < 2:
        raise InvalidHlo(f"instruction {ins.name!r}: dynamic-update-slice needs an operand and an update")
    a, update = operands[0], operands[1]
    if update.data.ndim != a.data.ndim or any(
        u > d for u, d in zip(update.data.shape, a.data.shape, strict=True)
    ):
        raise InvalidHlo(f"instruction {ins.name!r}: update {update.shape} does not fit in {a.shape}")
    if update.data.dtype != a.data.dtype:
        raise InvalidHlo(
            f"instruction {ins.name!r}: update {update.shape} and operand {a.shape} differ in type"
        )
    starts, known = _start_indices(ins, operands, 2, a.data.ndim)
    window = _clamped(starts, a.data.shape, update.data.shape)
    data, defined = a.data.copy(), a.defined.copy()
    data[window] = update.data
    defined[window] = update.defined
    return data, defined & known


def _select(ins, shape, operands):
    p, t, f = arity(ins, operands, 3)
    if p.data.dtype != bool:
        raise InvalidHlo(f"instruction {ins.name!r}: select's predicate must be pred, found {p.shape}")
    try:
        data = np.where(p.data, t.data, f.data)
        defined = p.defined & np.where(p.data, t.defined, f.defined)
    except ValueError as err:
        raise InvalidHlo(f"instruction {ins.name!r}: select operands do not match: {err}") from None
    return np.broadcast_to(data, shape.dimensions).copy(), np.broadcast_to(defined, shape.dimensions).copy()


def _bitcast_convert(ins, shape, operands):
    (a,) = arity(ins, operands, 1)
    dtype = numpy_dtype(shape.element_type)
    if dtype.itemsize != a.data.dtype.itemsize or type_bits(shape) != type_bits(a.shape):
        raise UnsupportedOpError(
            "bitcast-convert",
            f"instruction {ins.name!r}: bitcast-convert between widths ({a.shape} to {shape})",
        )
    return a.data.view(dtype), a.defined


MOVEMENT_SEMANTICS = {
    "reshape": _reshape,
    "transpose": _transpose,
    "copy": _copy,
    "slice": _slice,
    "broadcast": _broadcast,
    "concatenate": _concatenate,
    "pad": _pad,
    "reverse": _reverse,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "select": _select,
    "bitcast-convert": _bitcast_convert,
}


def type_bits(shape: ArrayShape) -> int:
    return shape.element_type.value.bit_width


def type_kind(shape: ArrayShape) -> str:
    return shape.element_type.value.kind


# ------------------------------------------------------------- constants and iota
def _number(token: str, ins: HloInstruction) -> Any:
    low = token.lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"[-+]?[0-9]+", token):
        return int(token)
    if not re.fullmatch(r"[-+]?(?:inf|nan|[0-9.]+(?:e[-+]?[0-9]+)?)", low):
        raise InvalidHlo(f"instruction {ins.name!r}: cannot read the literal entry {token!r}")
    return float(low)


def constant_array(ins: HloInstruction, shape: ArrayShape) -> np.ndarray:
    text = (ins.literal or "").strip()
    if is_tuple_or_complex_literal(text):
        raise UnsupportedOpError("constant", f"instruction {ins.name!r}: tuple or complex literal {text!r}")
    want = tuple(shape.dimensions)
    values = [_number(t, ins) for t in literal_entries(text, want, f"instruction {ins.name!r}")]
    return _from_numbers(values, shape, ins).reshape(want)


def _from_numbers(values: list[Any], shape: ArrayShape, ins: HloInstruction) -> np.ndarray:
    dtype = numpy_dtype(shape.element_type)
    kind = type_kind(shape)
    if kind == "complex":
        raise UnsupportedOpError("constant", f"instruction {ins.name!r}: complex literals are not supported")
    if kind in ("signed", "unsigned", "pred"):
        if any(isinstance(v, float) for v in values):
            raise InvalidHlo(
                f"instruction {ins.name!r}: {shape.element_type.value.name} literal with a fraction"
            )
        bits = type_bits(shape)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if kind == "signed" else (0, (1 << bits) - 1)
        if any(not lo <= int(v) <= hi for v in values):
            raise InvalidHlo(f"instruction {ins.name!r}: a literal value is out of range for {shape}")
        if kind == "pred":
            return np.array([bool(v) for v in values], dtype=bool)
        return _wrap(
            np.array(
                [int(v) for v in values], dtype=np.uint64 if bits == 64 and kind == "unsigned" else np.int64
            ),
            dtype,
            bits,
            kind,
        )
    return np.array([float(v) for v in values], dtype=np.float64).astype(dtype)


def iota_array(ins: HloInstruction, shape: ArrayShape) -> np.ndarray:
    text = ins.attributes.get("iota_dimension")
    if text is None or not re.fullmatch(r"[0-9]+", text.strip()) or not int(text) < len(shape.dimensions):
        raise InvalidHlo(f"instruction {ins.name!r}: iota needs iota_dimension= a dimension of {shape}")
    d = int(text)
    dims = tuple(shape.dimensions)
    counts = np.arange(dims[d], dtype=np.int64).reshape([n if i == d else 1 for i, n in enumerate(dims)])
    counts = np.broadcast_to(counts, dims)
    kind = type_kind(shape)
    dtype = numpy_dtype(shape.element_type)
    if kind in ("signed", "unsigned"):
        return _wrap(counts, dtype, type_bits(shape), kind)
    if kind == "pred":
        return counts != 0
    return counts.astype(np.float64).astype(dtype)


# --------------------------------------------------------------------- elementwise
_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def _wrap(values: np.ndarray, dtype: np.dtype, bits: int, kind: str) -> np.ndarray:
    """Integers reduced to ``bits`` bits (two's complement for signed), as ``dtype``."""
    if bits == 64:
        return values.astype(np.uint64).view(np.int64 if kind == "signed" else np.uint64).astype(dtype)
    v = values.astype(np.int64) & ((1 << bits) - 1)
    if kind == "signed":
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return v.astype(dtype)


def _integers(a: np.ndarray, bits: int, kind: str) -> np.ndarray:
    """Exact integer values (int64, or uint64 for u64)."""
    if bits == 64:
        return a.astype(np.uint64 if kind == "unsigned" else np.int64)
    return a.astype(np.int64)


def _float_compute(dtype: np.dtype) -> np.dtype:
    return dtype if dtype in (np.float16, np.float32, np.float64) else np.dtype(np.float32)


def elementwise(ins: HloInstruction, shape: ArrayShape, operands: list[ArrayValue]):
    op = ins.opcode
    dims = tuple(shape.dimensions)
    for k, o in enumerate(operands):
        scalar_bound = op == "clamp" and k != 1 and o.data.shape == ()
        if o.data.shape != dims and not scalar_bound:
            raise InvalidHlo(f"instruction {ins.name!r}: operand {o.shape} does not match the result {shape}")
    defined = np.ones(dims, bool)
    for o in operands:
        defined = defined & o.defined
    with np.errstate(all="ignore"):
        if op == "convert":
            (a,) = arity(ins, operands, 1)
            return _convert(a, shape), defined
        if op == "compare":
            return _compare_op(ins, shape, operands), defined
        if op == "clamp":
            lo, x, hi = arity(ins, operands, 3)
            _same_types(ins, shape, [lo, x, hi])
            return _clamp(lo, x, hi, shape), defined
        _same_types(ins, shape, operands)
        return _arith(ins, shape, [o.data for o in operands]), defined


def _same_types(ins, shape, operands) -> None:
    for o in operands:
        if o.shape.element_type != shape.element_type:
            raise InvalidHlo(f"instruction {ins.name!r}: operand {o.shape} and result {shape} differ in type")


#: Opcodes as XLA prints them (``exponential``, not ``exp``): no aliases.
_UNARY_FLOAT = {"negate": np.negative, "abs": np.abs, "sign": np.sign, "exponential": np.exp,
                "exponential-minus-one": np.expm1, "log": np.log, "log-plus-one": np.log1p,
                "tanh": np.tanh, "sine": np.sin, "cosine": np.cos, "sqrt": np.sqrt, "floor": np.floor,
                "ceil": np.ceil, "rsqrt": lambda x: 1 / np.sqrt(x)}  # fmt: skip
_BINARY_FLOAT = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                 "remainder": np.fmod, "maximum": np.maximum, "minimum": np.minimum}  # fmt: skip
_BINARY_INT = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
               "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}  # fmt: skip


def _arith(ins: HloInstruction, shape: ArrayShape, xs: list[np.ndarray]) -> np.ndarray:
    op, kind, dtype = ins.opcode, type_kind(shape), numpy_dtype(shape.element_type)
    unary = op in _UNARY_FLOAT or op == "not"
    arity(ins, xs, 1 if unary else 2)
    if kind == "pred":
        table = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor, "not": np.logical_not,
                 "maximum": np.logical_or, "minimum": np.logical_and}  # fmt: skip
        if op not in table:
            raise UnsupportedOpError(op, f"instruction {ins.name!r}: {op} on pred")
        return table[op](*xs)
    if kind == "float":
        compute = _float_compute(dtype)
        ys = [x.astype(compute) for x in xs]
        fn = _UNARY_FLOAT.get(op) or _BINARY_FLOAT.get(op)
        if fn is None:
            raise UnsupportedOpError(op, f"instruction {ins.name!r}: {op} on {shape.element_type.value.name}")
        return np.asarray(fn(*ys)).astype(compute).astype(dtype)
    if kind in ("signed", "unsigned"):
        bits = type_bits(shape)
        ys = [_integers(x, bits, kind) for x in xs]
        if op in _BINARY_INT:
            return _wrap(_BINARY_INT[op](*ys), dtype, bits, kind)
        if op in ("divide", "remainder"):
            return _wrap(_int_divide(op, ys[0], ys[1], bits, kind), dtype, bits, kind)
        if op in ("negate", "abs", "sign", "not"):
            x = ys[0]
            value = {"negate": lambda: 0 - x, "abs": lambda: np.where(x < 0, 0 - x, x),
                     "sign": lambda: np.sign(x), "not": lambda: ~x}[op]()  # fmt: skip
            return _wrap(value, dtype, bits, kind)
        if op.startswith("shift"):
            return _wrap(_shift(op, ys[0], ys[1], bits, kind), dtype, bits, kind)
    raise UnsupportedOpError(op, f"instruction {ins.name!r}: {op} on {shape.element_type.value.name}")


def _int_divide(op: str, a: np.ndarray, b: np.ndarray, bits: int, kind: str) -> np.ndarray:
    """C division (towards zero) with XLA's answers for x/0 (-1) and INT_MIN/-1 (INT_MIN)."""
    if bits == 64:  # |INT64_MIN| does not fit: divide Python integers
        pairs = zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)
        out = [_c_divide(op, x, y, bits, kind) for x, y in pairs]
        return np.array(out, dtype=a.dtype).reshape(a.shape)
    zero = b == 0
    overflow = (a == -(1 << (bits - 1))) & (b == -1) if kind == "signed" else np.zeros(a.shape, bool)
    safe = np.where(zero | overflow, 1, b)
    if kind == "signed":
        q = np.abs(a) // np.abs(safe)
        q = np.where((a < 0) != (safe < 0), -q, q)
    else:
        q = a // safe
    r = a - q * safe
    if op == "divide":
        all_ones = np.array(-1 if kind == "signed" else (1 << bits) - 1).astype(a.dtype)
        return np.where(zero, all_ones, np.where(overflow, a, q))
    return np.where(zero, a, np.where(overflow, 0, r))


def _c_divide(op: str, x: int, y: int, bits: int, kind: str) -> int:
    if y == 0:
        return (-1 if kind == "signed" else (1 << bits) - 1) if op == "divide" else x
    if kind == "signed" and x == -(1 << (bits - 1)) and y == -1:
        return x if op == "divide" else 0
    q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    return q if op == "divide" else x - q * y


def _shift(op: str, a: np.ndarray, n: np.ndarray, bits: int, kind: str) -> np.ndarray:
    """XLA's shifts: a count outside ``[0, bits)`` gives 0 (or -1 for a negative value
    shifted right arithmetically)."""
    count = np.minimum(n, 64).astype(np.int64) if n.dtype == np.uint64 else n.astype(np.int64)
    too_far = (count < 0) | (count >= bits)
    c = np.where(too_far, 0, count).astype(np.uint64)
    u = a.astype(np.uint64) if bits == 64 else (a & ((1 << bits) - 1)).astype(np.uint64)
    if op == "shift-left":
        return np.where(too_far, np.uint64(0), u << c)
    if op == "shift-right-logical":
        return np.where(too_far, np.uint64(0), u >> c)
    if bits == 64:
        signed = u.view(np.int64)
    else:
        v = u.astype(np.int64)
        signed = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return np.where(too_far, np.where(signed < 0, -1, 0), signed >> c.astype(np.int64))


def _values(a: ArrayValue) -> np.ndarray:
    """Exact values for comparisons: int64/uint64 for integers, float64 for floats."""
    kind = type_kind(a.shape)
    if kind in ("signed", "unsigned"):
        return _integers(a.data, type_bits(a.shape), kind)
    if kind == "pred":
        return a.data
    if kind == "complex":
        raise UnsupportedOpError("compare", f"comparing complex values ({a.shape})")
    return a.data.astype(np.float64)


def _compare_op(ins: HloInstruction, shape: ArrayShape, operands: list[ArrayValue]) -> np.ndarray:
    a, b = arity(ins, operands, 2)
    direction = ins.attributes.get("direction", "").strip()
    if direction not in _COMPARE:
        raise InvalidHlo(
            f"instruction {ins.name!r}: compare needs direction=EQ|NE|LT|LE|GT|GE, got {direction!r}"
        )
    kind = ins.attributes.get("type", "").strip()
    if kind not in ("", "FLOAT", "SIGNED", "UNSIGNED", "TOTALORDER"):
        raise UnsupportedOpError("compare", f"instruction {ins.name!r}: compare type={kind}")
    if type_kind(shape) != "pred" or a.shape.element_type != b.shape.element_type:
        raise InvalidHlo(f"instruction {ins.name!r}: compare of {a.shape} and {b.shape} into {shape}")
    if kind == "TOTALORDER" and type_kind(a.shape) == "float":  # -NaN < -inf < -0 < +0 < inf < NaN
        from layout_algebra.hlo.execute_math import total_order_key

        return np.asarray(_COMPARE[direction](total_order_key(a.data), total_order_key(b.data)))
    return np.asarray(_COMPARE[direction](_values(a), _values(b)))


def _clamp(lo: ArrayValue, x: ArrayValue, hi: ArrayValue, shape: ArrayShape) -> np.ndarray:
    v = np.minimum(np.maximum(_values(x), _values(lo)), _values(hi))
    return _from_values(np.broadcast_to(v, shape.dimensions), shape)


def _from_values(v: np.ndarray, shape: ArrayShape) -> np.ndarray:
    kind, dtype = type_kind(shape), numpy_dtype(shape.element_type)
    if kind in ("signed", "unsigned"):
        return _wrap(v, dtype, type_bits(shape), kind)
    return v.astype(dtype)


def _convert(a: ArrayValue, shape: ArrayShape) -> np.ndarray:
    src, dst = type_kind(a.shape), type_kind(shape)
    dtype = numpy_dtype(shape.element_type)
    if "complex" in (src, dst):
        raise UnsupportedOpError("convert", f"convert between {a.shape} and {shape}")
    if dst == "pred":
        return _values(a) != 0
    if src == "pred":
        return _from_values(a.data.astype(np.int64), shape)
    if dst in ("signed", "unsigned"):
        bits = type_bits(shape)
        if src == "float":
            lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dst == "signed" else (0, 2**bits - 1)
            f = a.data.astype(np.float64)
            f = np.where(np.isnan(f), 0.0, np.trunc(f))
            ints = [lo if x <= lo else hi if x >= hi else int(x) for x in f.ravel().tolist()]
            exact = np.array(ints, dtype=np.uint64 if dst == "unsigned" and bits == 64 else np.int64)
            return _wrap(exact.reshape(f.shape), dtype, bits, dst)
        return _wrap(_values(a), dtype, bits, dst)
    if src == "float":
        return a.data.astype(np.float64).astype(dtype) if a.data.dtype != dtype else a.data.copy()
    return _values(a).astype(np.float64).astype(dtype)
