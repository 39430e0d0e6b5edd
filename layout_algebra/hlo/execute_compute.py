"""The executor's compute ops: ``dot``, ``convolution``, ``reduce``, ``reduce-window``,
``select-and-scatter``, ``sort``, ``map`` and the elementwise ops of
:mod:`~layout_algebra.hlo.execute_math`, each by XLA's operation semantics
(https://openxla.org/xla/operation_semantics), on logical NumPy arrays.

Every function of :data:`COMPUTE_SEMANTICS` takes the runner, the instruction and its operand
values, and returns the result value (an :class:`ArrayValue`, or a tuple of them). A result
element is *defined* when every element it is computed from is.

Arithmetic, where XLA leaves the order open
-------------------------------------------
* ``dot`` and ``convolution``: products accumulated **exactly** for integers (int64 with
  wrap-around, then reduced to the result type: the same as wrapping at every step) and in
  **float64** for floats (the product of two values of at most f32 is exact in float64; a dot
  sums them by float64 matrix multiplication, a convolution kernel position by kernel
  position in row-major order, input features by ``tensordot``; float64 rounds 2**29 times
  finer than f32, so the order almost never shows), then **rounded once** to the result
  type (through f32 for types narrower than f32, as XLA accumulates those in f32).
  ``precision_config`` and ``algorithm`` are not modelled: the exact products are.
* ``reduce`` / ``reduce-window`` whose computation is exactly ``add`` of its two parameters on
  floats: summed in float64 and rounded once, like a dot (XLA does not fix the order of a
  reduction; summing at higher precision makes the result independent of it except at
  rounding boundaries). Every other computation is *applied*, with the executor's own ops:
  ``reduce`` as ``f(init, tree)``, where ``tree`` combines the reduced elements (row-major
  order) pairwise, neighbours first; ``reduce-window`` folds ``init`` then the window's
  positions in row-major order. Integer and pred ``add``/``multiply``/``maximum``/``minimum``/
  ``and``/``or``/``xor`` reductions are computed directly (their order does not matter).
* ``reduce-window`` and ``convolution`` skip window positions in the padding and in the holes
  of a base (lhs) dilation, as XLA's evaluator and CPU emitter do (for an identity ``init``
  this is the same as padding with ``init``).
* ``sort``: stable whether or not ``is_stable`` is set (an unstable sort may order
  equivalent elements in any way; the stable order is one of them).

>>> import numpy as np
>>> from layout_algebra.hlo.execute import run
>>> text = '''HloModule m
... ENTRY e {
...   a = s8[2,3]{1,0} parameter(0)
...   b = s8[3,2]{1,0} parameter(1)
...   ROOT d = s32[2,2]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
... }'''
>>> a = np.array([[1, 2, 3], [-4, 5, 127]], np.int8)
>>> b = np.array([[1, 0], [0, 1], [100, -128]], np.int8)
>>> run(text, [a, b]).array.tolist()
[[301, -382], [12696, -16251]]
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from layout_algebra.hlo.execute_apply import Runner, apply_computation, called_computation
from layout_algebra.hlo.execute_math import (
    MATH_OPCODES,
    compute_dtype,
    math_elementwise,
    total_order_key,
    wrapped,
)
from layout_algebra.hlo.execute_ops import ArrayValue, UnsupportedOpError, Value, check_result
from layout_algebra.hlo.ir import HloComputation, HloInstruction
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.shapes import ArrayShape, TupleShape
from layout_algebra.packing.formats import numpy_dtype

__all__ = [
    "ACCUMULATION",
    "COMPUTE_SEMANTICS",
    "accumulating",
    "apply_updates",
    "array_operands",
    "batch_value",
    "finished",
    "ints",
    "parse_window",
    "result_shape",
    "round_once",
    "window_positions",
]


# ---------------------------------------------------------------------- attributes
def ints(ins: HloInstruction, name: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The integer list attribute ``name={1,2}`` of ``ins`` (``default`` when absent)."""
    from layout_algebra.hlo.attributes import AttributeValueError, parse_int_list

    if name == "dimensions" and ins.dimensions is not None:
        return ins.dimensions
    text = ins.attributes.get(name)
    if text is None:
        if default is not None:
            return default
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} needs the attribute {name}={{...}}")
    try:
        return parse_int_list(text)
    except AttributeValueError as err:
        raise InvalidHlo(f"instruction {ins.name!r}: {name}={text}: {err}") from None


def parse_window(ins: HloInstruction, rank: int) -> list[dict[str, Any]]:
    """``window={size=2x3 stride=.. pad=l_h x.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}``,
    one dict per window dimension (XLA's defaults filled in; no window: rank 0).

    >>> from layout_algebra.hlo.ir import HloInstruction
    >>> from layout_algebra.model.syntax import parse_shape
    >>> w = HloInstruction("c", parse_shape("f32[1]"), "convolution", attributes={"window": "{size=3 pad=1_2 rhs_reversal=1}"})
    >>> parse_window(w, 1)
    [{'size': 3, 'stride': 1, 'pad': (1, 2), 'lhs_dilate': 1, 'rhs_dilate': 1, 'rhs_reversal': 1}]
    """
    text = ins.attributes.get("window", "{}").strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise InvalidHlo(f"instruction {ins.name!r}: window={text} is not {{...}}")
    fields: dict[str, list[str]] = {}
    for item in text[1:-1].split():
        key, _, value = item.partition("=")
        if key not in ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal") or not value:
            raise UnsupportedOpError(ins.opcode, f"instruction {ins.name!r}: window field {item!r}")
        fields[key] = value.split("x")
    if any(len(v) != rank for v in fields.values()) or (rank and "size" not in fields):
        raise InvalidHlo(f"instruction {ins.name!r}: window={text} does not have {rank} dimensions")
    dims = []
    try:
        for d in range(rank):
            low, _, high = fields.get("pad", ["0_0"] * rank)[d].partition("_")
            dims.append(
                {
                    "size": int(fields["size"][d]),
                    "stride": int(fields.get("stride", ["1"] * rank)[d]),
                    "pad": (int(low), int(high)),
                    "lhs_dilate": int(fields.get("lhs_dilate", ["1"] * rank)[d]),
                    "rhs_dilate": int(fields.get("rhs_dilate", ["1"] * rank)[d]),
                    "rhs_reversal": int(fields.get("rhs_reversal", ["0"] * rank)[d]),
                }
            )
    except ValueError:
        raise InvalidHlo(f"instruction {ins.name!r}: window={text}: not whole numbers") from None
    for w in dims:
        if w["size"] < 0 or w["stride"] < 1 or w["lhs_dilate"] < 1 or w["rhs_dilate"] < 1:
            raise InvalidHlo(
                f"instruction {ins.name!r}: window={text} has a size, stride or dilation out of range"
            )
    return dims


def window_positions(
    window: dict[str, Any], size: int, out_size: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Along one dimension, for window position ``k``: the input index read for each output
    position, and whether it is a real element (not padding, not a dilation hole).

    >>> idx, ok = window_positions({"size": 2, "stride": 1, "pad": (1, 0), "lhs_dilate": 2,
    ...                             "rhs_dilate": 1, "rhs_reversal": 0}, 2, 3, 0)
    >>> idx.tolist(), ok.tolist()
    ([0, 0, 0], [False, True, False])
    """
    out = np.arange(out_size)
    u = out * window["stride"] - window["pad"][0] + k * window["rhs_dilate"]
    dilate = window["lhs_dilate"]
    valid = (u >= 0) & (u % dilate == 0) & (u // dilate < size)
    return np.where(valid, u // dilate, 0), valid


def _window_out(window: dict[str, Any], size: int) -> int:
    dilated = max(size - 1, 0) * window["lhs_dilate"] + 1 if size else 0
    padded = dilated + window["pad"][0] + window["pad"][1]
    span = max(window["size"] - 1, 0) * window["rhs_dilate"] + 1
    return max(0, (padded - span) // window["stride"] + 1) if padded >= span else 0


# ---------------------------------------------------------------------- arithmetic
def _kind(shape: ArrayShape) -> str:
    return shape.element_type.value.kind


#: How float accumulations (dot, convolution, add-reductions) are carried out: ``"float64"``
#: (the default: float64, rounded once) or ``"narrow"`` (in the result's compute type, f32 for
#: types up to f32, in NumPy's order: another order XLA could have chosen). Pass validation runs
#: a difference it found once more the narrow way, to keep only differences that do not hinge
#: on the accumulation order (:mod:`~layout_algebra.hlo.pass_execution`).
ACCUMULATION: contextvars.ContextVar[str] = contextvars.ContextVar("accumulation", default="float64")


@contextlib.contextmanager
def accumulating(kind: str) -> Iterator[None]:
    """Float accumulations done ``kind`` (:data:`ACCUMULATION`) inside the ``with`` block."""
    if kind not in ("float64", "narrow"):
        raise ValueError(f"accumulation must be 'float64' or 'narrow', got {kind!r}")
    token = ACCUMULATION.set(kind)
    try:
        yield
    finally:
        ACCUMULATION.reset(token)


def float_accumulator(result: ArrayShape) -> np.dtype:
    """The float type accumulations into ``result`` are carried in (:data:`ACCUMULATION`)."""
    if ACCUMULATION.get() == "narrow":
        return compute_dtype(numpy_dtype(result.element_type))
    return np.dtype(np.float64)


def exact_values(value: ArrayValue, result: ArrayShape, ins: HloInstruction) -> np.ndarray:
    """An operand's values for exact accumulation into ``result``'s type: int64 (wrapping,
    exact modulo 2**64) for an integer result, float64 for a float result (or the narrow
    type: :data:`ACCUMULATION`)."""
    kind, rkind = _kind(value.shape), _kind(result)
    if rkind in ("signed", "unsigned"):
        if kind not in ("signed", "unsigned", "pred"):
            raise UnsupportedOpError(ins.opcode, f"instruction {ins.name!r}: {value.shape} into {result}")
        data = value.data
        return data.view(np.int64) if data.dtype == np.uint64 else data.astype(np.int64)
    if rkind == "float":
        if kind == "complex":
            raise UnsupportedOpError(ins.opcode, f"instruction {ins.name!r}: complex operands")
        return value.data.astype(float_accumulator(result))
    raise UnsupportedOpError(ins.opcode, f"instruction {ins.name!r}: {ins.opcode} into {result}")


def round_once(values: np.ndarray, result: ArrayShape) -> np.ndarray:
    """Exact (int64) or float64 accumulations as ``result``'s element type: integers wrap,
    floats round to nearest even (through f32 for the types narrower than f32)."""
    dtype = numpy_dtype(result.element_type)
    if _kind(result) in ("signed", "unsigned"):
        bits = result.element_type.value.bit_width
        if bits == 64:
            return values.astype(np.int64).view(np.uint64).astype(dtype) if dtype == np.uint64 else values
        return (
            wrapped(values.astype(np.int64) & ((1 << bits) - 1), result)
            if bits < 8
            else _wrap_fast(values, dtype, bits)
        )
    with np.errstate(all="ignore"):
        return values.astype(compute_dtype(dtype)).astype(dtype)


def _wrap_fast(values: np.ndarray, dtype: np.dtype, bits: int) -> np.ndarray:
    v = values.astype(np.int64) & ((1 << bits) - 1)
    if np.dtype(dtype).kind == "i":
        v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    return v.astype(dtype)


def result_shape(runner: Runner, ins: HloInstruction) -> ArrayShape:
    if isinstance(ins.shape, TupleShape):
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} with a tuple result")
    return runner.shape(ins)


def finished(ins: HloInstruction, shape: ArrayShape, data: np.ndarray, defined: np.ndarray) -> ArrayValue:
    data = np.array(data, copy=True, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    check_result(ins, shape, data)
    return ArrayValue(shape, data, np.broadcast_to(defined, data.shape).copy())


def array_operands(ins: HloInstruction, operands: Sequence[Value]) -> list[ArrayValue]:
    if any(isinstance(o, tuple) for o in operands):
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} of a tuple")
    return list(operands)


# ---------------------------------------------------------------------------- dot
def _dot(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    shape = result_shape(runner, ins)
    if len(operands) != 2:
        raise InvalidHlo(f"instruction {ins.name!r}: dot takes 2 operands, got {len(operands)}")
    a, b = array_operands(ins, operands)
    lb, rb = ints(ins, "lhs_batch_dims", ()), ints(ins, "rhs_batch_dims", ())
    lc, rc = ints(ins, "lhs_contracting_dims", ()), ints(ins, "rhs_contracting_dims", ())
    ra, rb_rank = a.data.ndim, b.data.ndim
    if (
        len(lb) != len(rb) or len(lc) != len(rc)
        or len(set(lb + lc)) != len(lb + lc) or len(set(rb + rc)) != len(rb + rc)
        or any(not 0 <= d < ra for d in lb + lc) or any(not 0 <= d < rb_rank for d in rb + rc)
        or any(a.data.shape[x] != b.data.shape[y] for x, y in zip(lb + lc, rb + rc, strict=True))
    ):  # fmt: skip
        raise InvalidHlo(
            f"instruction {ins.name!r}: dot dimension numbers lhs batch {list(lb)} contracting {list(lc)}, rhs batch "
            f"{list(rb)} contracting {list(rc)} do not fit {a.shape} and {b.shape}"
        )
    lf = [d for d in range(ra) if d not in lb + lc]
    rf = [d for d in range(rb_rank) if d not in rb + rc]
    batch = [a.data.shape[d] for d in lb]
    m, n = [a.data.shape[d] for d in lf], [b.data.shape[d] for d in rf]
    k = math.prod(a.data.shape[d] for d in lc)
    B, M, N = math.prod(batch), math.prod(m), math.prod(n)

    def arrange(x: np.ndarray, order: list[int], rows: int, cols: int) -> np.ndarray:
        return np.transpose(x, order).reshape(B, rows, cols)

    x = arrange(exact_values(a, shape, ins), [*lb, *lf, *lc], M, k)
    y = arrange(exact_values(b, shape, ins), [*rb, *rc, *rf], k, N)
    with np.errstate(all="ignore"):
        acc = np.matmul(x, y) if k else np.zeros((B, M, N), x.dtype)
    bad_a = arrange(~a.defined, [*lb, *lf, *lc], M, k).any(axis=2)
    bad_b = arrange(~b.defined, [*rb, *rc, *rf], k, N).any(axis=1)
    defined = ~(bad_a[:, :, None] | bad_b[:, None, :])
    dims = (*batch, *m, *n)
    return finished(ins, shape, round_once(acc, shape).reshape(dims), defined.reshape(dims))


# --------------------------------------------------------------------- convolution
def _labels(ins: HloInstruction) -> tuple[str, str, str]:
    text = ins.attributes.get("dim_labels", "").strip()
    m = re.fullmatch(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)", text)
    if m is None:
        raise InvalidHlo(
            f"instruction {ins.name!r}: convolution needs dim_labels=<lhs>_<rhs>-><out>, got {text!r}"
        )
    return m.group(1), m.group(2), m.group(3)


def _spatial(labels: str, first: str, second: str, ins: HloInstruction) -> list[int]:
    """``labels``' dimension order as [first, second, spatial 0, spatial 1, ...]."""
    digits = sorted(c for c in labels if c.isdigit())
    if sorted(labels) != sorted([first, second, *digits]) or digits != [str(i) for i in range(len(digits))]:
        raise InvalidHlo(
            f"instruction {ins.name!r}: dim_labels part {labels!r} is not a permutation of {first}{second}0.."
        )
    return [labels.index(first), labels.index(second), *(labels.index(str(i)) for i in range(len(digits)))]


def _group_count(ins: HloInstruction, name: str) -> int:
    text = ins.attributes.get(name, "1").strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidHlo(f"instruction {ins.name!r}: {name}={text} is not a positive integer")
    return int(text)


def _convolution(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    shape = result_shape(runner, ins)
    if len(operands) != 2:
        raise InvalidHlo(f"instruction {ins.name!r}: convolution takes 2 operands, got {len(operands)}")
    a, b = array_operands(ins, operands)
    lhs_l, rhs_l, out_l = _labels(ins)
    lo, ro, oo = (
        _spatial(lhs_l, "b", "f", ins),
        _spatial(rhs_l, "o", "i", ins),
        _spatial(out_l, "b", "f", ins),
    )
    rank = len(lo) - 2
    if len(ro) - 2 != rank or len(oo) - 2 != rank or a.data.ndim != rank + 2 or b.data.ndim != rank + 2:
        raise InvalidHlo(f"instruction {ins.name!r}: dim_labels do not fit {a.shape} and {b.shape}")
    windows = parse_window(ins, rank)
    groups, batch_groups = _group_count(ins, "feature_group_count"), _group_count(ins, "batch_group_count")
    x = np.transpose(exact_values(a, shape, ins), lo)  # [N, C, S...]
    w = np.transpose(exact_values(b, shape, ins), ro)  # [O, I, K...]
    xd, wd = np.transpose(~a.defined, lo), np.transpose(~b.defined, ro)
    n_in, c_in, spatial = x.shape[0], x.shape[1], x.shape[2:]
    o_count, i_count, kernel = w.shape[0], w.shape[1], w.shape[2:]
    if (
        c_in != groups * i_count or o_count % groups or o_count % batch_groups or n_in % batch_groups
        or any(win["size"] != kk for win, kk in zip(windows, kernel, strict=True))
    ):  # fmt: skip
        raise InvalidHlo(
            f"instruction {ins.name!r}: convolution of {a.shape} by {b.shape} with feature_group_count={groups}, "
            f"batch_group_count={batch_groups} and window {ins.attributes.get('window')} does not fit"
        )
    out_spatial = [_window_out(win, s) for win, s in zip(windows, spatial, strict=True)]
    n_out = n_in // batch_groups
    acc = np.zeros((n_out, o_count, *out_spatial), x.dtype)
    bad = np.zeros((n_out, o_count, *out_spatial), bool)
    per_group, per_batch_group = o_count // groups, o_count // batch_groups
    with np.errstate(all="ignore"):
        for kpos in itertools.product(*(range(s) for s in kernel)):  # kernel positions, row-major
            picks = [
                window_positions(win, s, o, kk)
                for win, s, o, kk in zip(windows, spatial, out_spatial, kpos, strict=True)
            ]
            taps = tuple(
                s - 1 - kk if win["rhs_reversal"] else kk
                for win, s, kk in zip(windows, kernel, kpos, strict=True)
            )
            valid = np.ones(out_spatial, bool)
            for d, (_, ok) in enumerate(picks):
                valid = valid & ok.reshape([-1 if e == d else 1 for e in range(rank)])
            index = np.ix_(*(idx for idx, _ in picks)) if rank else ()
            xs = x[(slice(None), slice(None), *index)]  # [N, C, P...]
            xbad = xd[(slice(None), slice(None), *index)]
            for o in range(o_count):
                g, bg = o // per_group, o // per_batch_group
                channels = slice(g * i_count, (g + 1) * i_count)
                rows = slice(bg * n_out, (bg + 1) * n_out)
                tap = w[(o, slice(None), *taps)]  # [I]
                term = np.tensordot(tap, xs[rows, channels], axes=([0], [1]))  # [N_out, P...]
                acc[:, o] = acc[:, o] + np.where(valid, term, 0)
                hole = xbad[rows, channels].any(axis=1) | wd[(o, slice(None), *taps)].any()
                bad[:, o] |= valid & hole
    inverse = np.argsort(oo)
    data = np.transpose(round_once(acc, shape), inverse)
    return finished(ins, shape, data, ~np.transpose(bad, inverse))


# -------------------------------------------------------------------------- reduce
_DIRECT = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
           "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}  # fmt: skip
_DIRECT_PRED = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
                "maximum": np.logical_or, "minimum": np.logical_and}  # fmt: skip


def binary_reducer(comp: HloComputation) -> str | None:
    """The opcode of a computation that is exactly ``op(parameter 0, parameter 1)``, else ``None``."""
    root = comp.root
    params = {i.name: i.parameter_number for i in comp.instructions if i.opcode == "parameter"}
    if len(comp.instructions) != 3 or len(root.operands) != 2 or isinstance(root.shape, TupleShape):
        return None
    if sorted(params.get(o.name, -1) for o in root.operands) != [0, 1]:
        return None
    return root.opcode


def _split(ins: HloInstruction, operands: Sequence[Value]) -> tuple[list[ArrayValue], list[ArrayValue]]:
    arrays = array_operands(ins, operands)
    if len(arrays) % 2 or not arrays:
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} takes inputs and as many init values")
    half = len(arrays) // 2
    inputs, inits = arrays[:half], arrays[half:]
    if any(i.data.ndim != 0 for i in inits) or any(x.data.shape != inputs[0].data.shape for x in inputs):
        raise InvalidHlo(
            f"instruction {ins.name!r}: {ins.opcode} needs inputs of one shape and scalar init values"
        )
    return inputs, inits


def _result_shapes(runner: Runner, ins: HloInstruction, count: int) -> list[ArrayShape]:
    if isinstance(ins.shape, TupleShape):
        shapes = [runner.shape(_leaf(ins, k, s)) for k, s in enumerate(ins.shape.elements)]
    else:
        shapes = [runner.shape(ins)]
    if len(shapes) != count:
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} of {count} inputs has result {ins.shape}")
    return shapes


def _leaf(ins: HloInstruction, k: int, shape: Any) -> HloInstruction:
    import dataclasses

    return dataclasses.replace(ins, name=f"{ins.name}{{{k}}}", shape=shape)


def _results(
    ins: HloInstruction, shapes: list[ArrayShape], values: list[tuple[np.ndarray, np.ndarray]]
) -> Value:
    out = [finished(ins, s, d, m) for s, (d, m) in zip(shapes, values, strict=True)]
    return tuple(out) if isinstance(ins.shape, TupleShape) else out[0]


def batch_value(shape: ArrayShape, data: np.ndarray, defined: np.ndarray) -> ArrayValue:
    return ArrayValue(ArrayShape(shape.element_type, data.shape), data, defined)


def _combine(
    runner: Runner, comp: HloComputation, left: list[ArrayValue], right: list[ArrayValue]
) -> list[ArrayValue]:
    """``comp(left..., right...)`` over the batch of ``left``'s dimensions."""
    batch = tuple(left[0].data.shape)
    out = apply_computation(runner, comp, [*left, *right], batch)
    return list(out) if isinstance(out, tuple) else [out]


def _reduce(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    inputs, inits = _split(ins, operands)
    comp = called_computation(runner, ins)
    dims = ints(ins, "dimensions")
    rank = inputs[0].data.ndim
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise InvalidHlo(
            f"instruction {ins.name!r}: reduce dimensions={list(dims)} out of range for rank {rank}"
        )
    shapes = _result_shapes(runner, ins, len(inputs))
    kept = [d for d in range(rank) if d not in dims]
    out_dims = tuple(inputs[0].data.shape[d] for d in kept)
    count = math.prod(inputs[0].data.shape[d] for d in dims)

    def flat(x: np.ndarray) -> np.ndarray:  # [kept..., reduced (row-major)]
        return np.transpose(x, [*kept, *dims]).reshape(*out_dims, count)

    defined_all = np.ones(out_dims, bool)
    for x in (*inputs, *inits):
        defined_all = defined_all & flat(x.defined).all(axis=-1) if x.data.ndim else defined_all & x.defined
    op = binary_reducer(comp)
    if len(inputs) == 1 and op is not None:
        direct = _direct_reduce(op, flat(inputs[0].data), inits[0].data, shapes[0], inputs[0].shape)
        if direct is not None:
            return _results(ins, shapes, [(direct, defined_all)])
    values = [batch_value(x.shape, flat(x.data), flat(x.defined)) for x in inputs]
    while count > 1:  # neighbours combined pairwise, row-major order kept
        half = count // 2
        left = [
            batch_value(v.shape, v.data[..., 0 : 2 * half : 2], v.defined[..., 0 : 2 * half : 2])
            for v in values
        ]
        right = [
            batch_value(v.shape, v.data[..., 1 : 2 * half : 2], v.defined[..., 1 : 2 * half : 2])
            for v in values
        ]
        merged = _combine(runner, comp, left, right)
        if count % 2:
            merged = [
                batch_value(
                    m.shape,
                    np.concatenate([m.data, v.data[..., -1:]], -1),
                    np.concatenate([m.defined, v.defined[..., -1:]], -1),
                )
                for m, v in zip(merged, values, strict=True)
            ]
        values, count = merged, half + count % 2
    starts = [
        batch_value(
            i.shape, np.broadcast_to(i.data, out_dims).copy(), np.broadcast_to(i.defined, out_dims).copy()
        )
        for i in inits
    ]
    if count == 0:
        return _results(ins, shapes, [(s.data, s.defined) for s in starts])
    last = [batch_value(v.shape, v.data[..., 0], v.defined[..., 0]) for v in values]
    total = _combine(runner, comp, starts, last)
    return _results(ins, shapes, [(t.data, t.defined & defined_all) for t in total])


def _direct_reduce(
    op: str, x: np.ndarray, init: np.ndarray, shape: ArrayShape, source: ArrayShape
) -> np.ndarray | None:
    """An order-free reduction over the last axis of ``x``, or ``None`` if there is none."""
    kind = _kind(shape)
    if source.element_type != shape.element_type:
        return None
    if kind == "pred" and op in _DIRECT_PRED:
        return _DIRECT_PRED[op](_DIRECT_PRED[op].reduce(x, axis=-1), init)
    if kind in ("signed", "unsigned") and op in _DIRECT:
        v = x.view(np.int64) if x.dtype == np.uint64 else x.astype(np.int64)
        i = np.int64(init.view(np.int64) if init.dtype == np.uint64 else init)
        if op in ("maximum", "minimum") and kind == "unsigned":
            v, i = x.astype(np.uint64), np.uint64(init)
        with np.errstate(all="ignore"):
            total = (
                _DIRECT[op](_DIRECT[op].reduce(v, axis=-1), i)
                if x.shape[-1]
                else np.broadcast_to(i, x.shape[:-1])
            )
        return round_once(
            np.asarray(total).view(np.int64) if np.asarray(total).dtype == np.uint64 else np.asarray(total),
            shape,
        )
    if kind == "float" and op == "add":
        with np.errstate(all="ignore"):
            wide = float_accumulator(shape)
            total = np.asarray(init, wide) + x.astype(wide).sum(axis=-1)
        return round_once(total, shape)
    return None


# -------------------------------------------------------------------- reduce-window
def _reduce_window(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    inputs, inits = _split(ins, operands)
    comp = called_computation(runner, ins)
    rank = inputs[0].data.ndim
    windows = parse_window(ins, rank)
    shapes = _result_shapes(runner, ins, len(inputs))
    in_dims = inputs[0].data.shape
    out_dims = tuple(_window_out(w, s) for w, s in zip(windows, in_dims, strict=True))
    op = binary_reducer(comp)
    direct = len(inputs) == 1 and op == "add" and _kind(shapes[0]) in ("float", "signed", "unsigned")
    direct = direct and shapes[0].element_type == inputs[0].shape.element_type
    accs = [
        batch_value(s, np.broadcast_to(i.data, out_dims).copy(), np.broadcast_to(i.defined, out_dims).copy())
        for s, i in zip(shapes, inits, strict=True)
    ]
    total = np.broadcast_to(exact_values(inits[0], shapes[0], ins), out_dims).copy() if direct else None
    for wpos in itertools.product(*(range(w["size"]) for w in windows)):  # row-major window order
        picks = [
            window_positions(w, s, o, k) for w, s, o, k in zip(windows, in_dims, out_dims, wpos, strict=True)
        ]
        valid = np.ones(out_dims, bool)
        for d, (_, ok) in enumerate(picks):
            valid = valid & ok.reshape([-1 if e == d else 1 for e in range(rank)])
        index = np.ix_(*(idx for idx, _ in picks)) if rank else ()
        if total is not None:
            with np.errstate(all="ignore"):
                total = total + np.where(valid, exact_values(inputs[0], shapes[0], ins)[index], 0)
            accs[0].defined &= ~valid | inputs[0].defined[index]
            continue
        xs = [batch_value(x.shape, x.data[index], x.defined[index]) for x in inputs]
        new = _combine(runner, comp, accs, xs)
        accs = [
            batch_value(a.shape, np.where(valid, n.data, a.data), np.where(valid, n.defined, a.defined))
            for a, n in zip(accs, new, strict=True)
        ]
    if total is not None:
        return _results(ins, shapes, [(round_once(total, shapes[0]), accs[0].defined)])
    return _results(ins, shapes, [(a.data, a.defined) for a in accs])


# ---------------------------------------------------------------- select-and-scatter
def _select_and_scatter(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    shape = result_shape(runner, ins)
    if len(operands) != 3:
        raise InvalidHlo(f"instruction {ins.name!r}: select-and-scatter takes operand, source, init value")
    x, source, init = array_operands(ins, operands)
    names = [
        n.strip().lstrip("%") for n in (ins.attributes.get("select", ""), ins.attributes.get("scatter", ""))
    ]
    try:
        select, scatter = (runner.module.computation(n) for n in names)
    except KeyError:
        raise InvalidHlo(
            f"instruction {ins.name!r}: select={names[0]!r} or scatter={names[1]!r} is not defined"
        ) from None
    rank = x.data.ndim
    windows = parse_window(ins, rank)
    out_dims = tuple(_window_out(w, s) for w, s in zip(windows, x.data.shape, strict=True))
    if out_dims != source.data.shape:
        raise InvalidHlo(
            f"instruction {ins.name!r}: source {source.shape} does not have the windows' shape {list(out_dims)}"
        )
    chosen: np.ndarray | None = None  # per window: the flat operand index selected so far
    best: ArrayValue | None = None
    flat_index = np.arange(x.data.size).reshape(x.data.shape)
    for wpos in itertools.product(*(range(w["size"]) for w in windows)):
        picks = [
            window_positions(w, s, o, k)
            for w, s, o, k in zip(windows, x.data.shape, out_dims, wpos, strict=True)
        ]
        valid = np.ones(out_dims, bool)
        for d, (_, ok) in enumerate(picks):
            valid = valid & ok.reshape([-1 if e == d else 1 for e in range(rank)])
        index = np.ix_(*(idx for idx, _ in picks)) if rank else ()
        here = batch_value(x.shape, x.data[index], x.defined[index])
        if best is None or chosen is None:
            best, chosen = here, np.where(valid, flat_index[index], -1)
            continue
        keep = _combine(runner, select, [best], [here])[0]  # select(current, candidate): keep current?
        take = valid & ((chosen < 0) | ~keep.data.astype(bool))
        chosen = np.where(take, flat_index[index], chosen)
        best = batch_value(
            x.shape, np.where(take, here.data, best.data), np.where(take, here.defined, best.defined)
        )
    targets = chosen.ravel() if chosen is not None else np.full(source.data.size, -1)
    data, defined = apply_updates(
        runner, scatter, np.broadcast_to(init.data, x.data.shape).copy(), np.broadcast_to(init.defined, x.data.shape).copy(),
        targets, source.data.ravel(), source.defined.ravel(), x.shape,
    )  # fmt: skip
    return finished(ins, shape, data, defined)


def apply_updates(
    runner: Runner,
    comp: HloComputation,
    data: np.ndarray,
    defined: np.ndarray,
    targets: np.ndarray,
    updates: np.ndarray,
    updates_defined: np.ndarray,
    shape: ArrayShape,
) -> tuple[np.ndarray, np.ndarray]:
    """``data.flat[t] = comp(data.flat[t], u)`` for each (target, update) in order (target -1:
    skipped); rounds of distinct targets are applied together, so each element sees its
    updates in their order."""
    data, defined = data.reshape(-1).copy(), defined.reshape(-1).copy()
    occurrence = np.zeros(len(targets), np.int64)
    seen: dict[int, int] = {}
    for k, t in enumerate(targets.tolist()):
        if t >= 0:
            occurrence[k] = seen.get(t, 0)
            seen[t] = occurrence[k] + 1
    live = targets >= 0
    for round_number in range(max(seen.values(), default=0)):
        pick = np.nonzero(live & (occurrence == round_number))[0]
        t = targets[pick]
        old = batch_value(shape, data[t], defined[t])
        new = batch_value(shape, updates[pick], updates_defined[pick])
        (out,) = _combine(runner, comp, [old], [new])[:1]
        data[t], defined[t] = out.data, out.defined
    return data.reshape(shape.dimensions), defined.reshape(shape.dimensions)


# ---------------------------------------------------------------------------- sort
def _sort(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    arrays = array_operands(ins, operands)
    if not arrays or any(x.data.shape != arrays[0].data.shape for x in arrays):
        raise InvalidHlo(f"instruction {ins.name!r}: sort needs operands of one shape")
    comp = called_computation(runner, ins)
    (d,) = ints(ins, "dimensions")
    rank = arrays[0].data.ndim
    if not 0 <= d < rank:
        raise InvalidHlo(f"instruction {ins.name!r}: sort dimensions={{{d}}} out of range for rank {rank}")
    shapes = _result_shapes(runner, ins, len(arrays))
    moved = [np.moveaxis(x.data, d, -1) for x in arrays]
    lead, n = moved[0].shape[:-1], moved[0].shape[-1]
    rows = [m.reshape(-1, n) for m in moved]
    order = _fast_order(comp, arrays, rows)
    if order is None:
        order = _key_order(runner, comp, arrays, rows)
    if order is None:
        order = _pairwise_order(runner, comp, ins, arrays, rows)
    slice_defined = (
        np.moveaxis(np.logical_and.reduce([x.defined for x in arrays]), d, -1).reshape(-1, n).all(axis=1)
    )
    values = []
    for r in rows:
        out = np.take_along_axis(r, order, axis=1).reshape(*lead, n)
        ok = np.broadcast_to(slice_defined[:, None], r.shape).reshape(*lead, n)
        values.append((np.moveaxis(out, -1, d), np.moveaxis(ok, -1, d)))
    return _results(ins, shapes, values)


def _fast_order(comp: HloComputation, arrays: list[ArrayValue], rows: list[np.ndarray]) -> np.ndarray | None:
    """A comparator that is ``compare(parameter 0, parameter 1)`` (LT or GT, TOTALORDER or on
    integers): the stable argsort of the first operand."""
    root = comp.root
    by_name = {i.name: i for i in comp.instructions}
    if root.opcode != "compare" or len(root.operands) != 2:
        return None
    numbers = [
        by_name[o.name].parameter_number if by_name[o.name].opcode == "parameter" else None
        for o in root.operands
    ]
    direction = root.attributes.get("direction", "").strip()
    kind, compare_type = _kind(arrays[0].shape), root.attributes.get("type", "").strip()
    if sorted(n for n in numbers if n is not None) != [0, 1] or direction not in ("LT", "GT"):
        return None
    if kind == "float" and compare_type == "TOTALORDER":
        key = total_order_key(rows[0])
    elif kind in ("signed", "unsigned"):
        key = rows[0].astype(np.int64) if rows[0].dtype != np.uint64 else None
    else:
        return None
    if key is None:
        return None
    descending = (direction == "GT") == (numbers == [0, 1])
    return np.argsort(np.invert(key) if descending else key, axis=1, kind="stable")


def _cone_text(comp: HloComputation, name: str, rename: dict[int, int]) -> str | None:
    """``name``'s cone as text with parameter numbers mapped by ``rename`` (None: another parameter)."""
    ins = comp.instruction(name)
    if ins.opcode == "parameter":
        number = rename.get(ins.parameter_number if ins.parameter_number is not None else -1)
        return None if number is None else f"p{number}:{ins.shape}"
    parts = [_cone_text(comp, o, rename) for o in ins.operand_names]
    if any(p is None for p in parts):
        return None
    attributes = sorted((k, v) for k, v in ins.attributes.items() if k != "metadata")
    return f"{ins.opcode}:{ins.shape}:{ins.literal}:{attributes}({','.join(p or '' for p in parts)})"


def _key_order(
    runner: Runner, comp: HloComputation, arrays: list[ArrayValue], rows: list[np.ndarray]
) -> np.ndarray | None:
    """A comparator ``compare(f(lhs_k), f(rhs_k))`` (LT or GT; TOTALORDER on floats, or integers):
    the stable argsort of ``f`` of operand k, ``f`` evaluated once per element."""
    from layout_algebra.hlo.execute_apply import evaluate_instruction

    root = comp.root
    direction, compare_type = (
        root.attributes.get("direction", "").strip(),
        root.attributes.get("type", "").strip(),
    )
    if root.opcode != "compare" or len(root.operands) != 2 or direction not in ("LT", "GT"):
        return None
    left, right = root.operand_names
    for k in range(len(arrays)):
        a, b = 2 * k, 2 * k + 1
        for first, second, descending in ((left, right, direction == "GT"), (right, left, direction == "LT")):
            lhs_text = _cone_text(comp, first, {a: 0})
            if lhs_text is None or lhs_text != _cone_text(comp, second, {b: 0}):
                continue
            n = rows[0].shape[1]
            args = []
            for x, r in zip(arrays, rows, strict=True):
                v = batch_value(x.shape, r, np.ones(r.shape, bool))
                args += [v, v]
            key_value = evaluate_instruction(runner, comp, first, args, (rows[0].shape[0], n))
            if isinstance(key_value, tuple):
                return None
            kind = _kind(key_value.shape)
            if kind == "float" and compare_type == "TOTALORDER":
                key = total_order_key(key_value.data)
            elif kind in ("signed", "unsigned") and key_value.data.dtype != np.uint64:
                key = key_value.data.astype(np.int64)
            else:
                return None
            return np.argsort(np.invert(key) if descending else key, axis=1, kind="stable")
    return None


def _pairwise_order(
    runner: Runner,
    comp: HloComputation,
    ins: HloInstruction,
    arrays: list[ArrayValue],
    rows: list[np.ndarray],
) -> np.ndarray:
    """The stable order by any comparator: comp(x_i, x_j) for every pair of a row (a strict weak
    order puts element i after exactly the j with comp(x_j, x_i) and the equivalent j < i)."""
    count, n = rows[0].shape
    chunk = max(1, (1 << 20) // max(n * n, 1))
    order = np.zeros((count, n), np.int64)
    for start in range(0, count, chunk):
        part = [r[start : start + chunk] for r in rows]
        c = part[0].shape[0]
        args: list[ArrayValue] = []
        for x, p in zip(arrays, part, strict=True):
            lhs = np.broadcast_to(p[:, :, None], (c, n, n)).copy()
            rhs = np.broadcast_to(p[:, None, :], (c, n, n)).copy()
            ok = np.ones((c, n, n), bool)
            args += [batch_value(x.shape, lhs, ok), batch_value(x.shape, rhs, ok)]
        less = apply_computation(runner, comp, args, (c, n, n))
        if isinstance(less, tuple) or less.data.dtype != bool:
            raise InvalidHlo(
                f"instruction {ins.name!r}: sort's comparator {comp.name!r} does not return pred"
            )
        lt = less.data  # lt[s, i, j] = comp(x_i, x_j)
        equivalent = ~lt & ~np.swapaxes(lt, 1, 2)
        earlier = np.tril(np.ones((n, n), bool), -1)  # [i, j]: j < i
        position = lt.sum(axis=1) + (equivalent & earlier).sum(axis=2)
        if not all(sorted(p) == list(range(n)) for p in position.tolist()):
            raise UnsupportedOpError(
                "sort",
                f"instruction {ins.name!r}: the comparator {comp.name!r} is not a strict weak order on these values",
            )
        order[start : start + c] = np.argsort(position, axis=1)
    return order


def _topk(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    """XLA's ``topk``: the ``k`` largest (``largest=false``: smallest) along the last dimension
    and their indices, in order, ties to the lower index, floats in total order (NaN largest),
    as TopkDecomposer writes it (a stable sort by ``compare GT, type=TOTALORDER``)."""
    (x,) = array_operands(ins, operands)
    text = ins.attributes.get("k", "").strip()
    if not text.isdigit() or x.data.ndim < 1 or int(text) > x.data.shape[-1]:
        raise InvalidHlo(
            f"instruction {ins.name!r}: topk needs k=<n> at most the last dimension of {x.shape}"
        )
    k = int(text)
    largest = ins.attributes.get("largest", "true").strip() != "false"
    shapes = _result_shapes(runner, ins, 2)
    kind = _kind(x.shape)
    if kind == "float":
        key = total_order_key(x.data)
    elif kind in ("signed", "unsigned") and x.data.dtype != np.uint64:
        key = x.data.astype(np.int64)
    else:
        raise UnsupportedOpError("topk", f"instruction {ins.name!r}: topk of {x.shape}")
    order = np.argsort(np.invert(key) if largest else key, axis=-1, kind="stable")[..., :k]
    ok = np.broadcast_to(x.defined.all(axis=-1, keepdims=True), order.shape)
    return _results(
        ins,
        shapes,
        [
            (np.take_along_axis(x.data, order, axis=-1), ok),
            (order.astype(numpy_dtype(shapes[1].element_type)), ok),
        ],
    )


# ----------------------------------------------------------------------------- map
def _map(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    shape = result_shape(runner, ins)
    arrays = array_operands(ins, operands)
    dims = tuple(shape.dimensions)
    if any(x.data.shape != dims for x in arrays):
        raise InvalidHlo(
            f"instruction {ins.name!r}: map operands do not have the result's dimensions {list(dims)}"
        )
    out = apply_computation(runner, called_computation(runner, ins), arrays, dims)
    if isinstance(out, tuple):
        raise InvalidHlo(f"instruction {ins.name!r}: map's computation returns a tuple")
    return finished(ins, shape, out.data, out.defined)


# ---------------------------------------------------------------------- elementwise
def _math(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    shape = result_shape(runner, ins)
    arrays = array_operands(ins, operands)
    data = math_elementwise(ins, shape, [x.shape for x in arrays], [x.data for x in arrays])
    if data is None:
        raise UnsupportedOpError(
            ins.opcode, f"instruction {ins.name!r}: {ins.opcode} on {shape.element_type.value.name}"
        )
    defined = np.ones(data.shape, bool)
    for x in arrays:
        defined = defined & x.defined
    return finished(ins, shape, data, defined)


#: The compute ops the executor runs: opcode -> (runner, instruction, operand values) -> value.
COMPUTE_SEMANTICS: dict[str, Callable[[Runner, HloInstruction, Sequence[Value]], Value]] = {
    "dot": _dot,
    "convolution": _convolution,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "select-and-scatter": _select_and_scatter,
    "sort": _sort,
    "topk": _topk,
    "map": _map,
    **dict.fromkeys(MATH_OPCODES, _math),
}
