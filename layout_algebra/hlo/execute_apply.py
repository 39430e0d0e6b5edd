"""Applying a called computation (a reducer, a comparator, a ``map`` body) to many argument
sets at once: the executor's evaluation of ``to_apply`` computations.

``reduce``, ``sort``, ``scatter``, ``map``... call a computation on scalars, element by
element. :func:`apply_computation` evaluates it once on whole *batches*: every argument is an
array with leading batch dimensions and the computation's own (usually scalar) shape after
them. A computation of elementwise ops (the reducers and comparators XLA writes: ``add``,
``maximum``, ``compare``/``select`` chains, ``tuple``...) is evaluated instruction by
instruction on the batched arrays with the executor's own elementwise ops, so each batch
element gets exactly what a scalar call would give. Any other computation is called once per
batch element by the executor itself (:data:`MAX_SCALAR_CALLS` at most, then it gives up).

>>> import numpy as np
>>> from layout_algebra.hlo.parser import parse_module
>>> from layout_algebra.hlo.execute import run
>>> m = parse_module('''HloModule m
... ENTRY e {
...   p = f32[3]{0} parameter(0)
...   ROOT r = f32[3]{0} map(p, p), dimensions={0}, to_apply=f
... }
... f {
...   a = f32[] parameter(0)
...   b = f32[] parameter(1)
...   ROOT m = f32[] multiply(a, b)
... }''')
>>> run(m, [np.array([1, 2, 3], np.float32)]).array.tolist()
[1.0, 4.0, 9.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from layout_algebra.hlo.execute_math import MATH_OPCODES, math_elementwise
from layout_algebra.hlo.execute_ops import (
    ArrayValue,
    UnsupportedOpError,
    Value,
    constant_array,
    elementwise,
)
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.opcodes import EXECUTED_ELEMENTWISE_OPCODES
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.shapes import ArrayShape, TupleShape

__all__ = [
    "MAX_SCALAR_CALLS",
    "Runner",
    "apply_computation",
    "called_computation",
    "evaluate_in_order",
    "evaluate_instruction",
]

#: At most this many one-element calls of a computation that is not elementwise, per op.
MAX_SCALAR_CALLS = 200_000


class Runner(Protocol):
    """What the compute ops need of the executor's runner (``execute._Runner``)."""

    module: HloModule

    def shape(self, instruction: HloInstruction) -> ArrayShape: ...

    def computation(self, comp: HloComputation, args: Sequence[Value]) -> Value: ...


def called_computation(runner: Runner, ins: HloInstruction) -> HloComputation:
    """The computation ``ins`` applies (``to_apply=``, or its one ``calls=``)."""
    name = ins.to_apply or (ins.calls[0] if len(ins.calls) == 1 else None)
    if name is None:
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} needs to_apply=<computation>")
    try:
        return runner.module.computation(name)
    except KeyError:
        raise InvalidHlo(
            f"instruction {ins.name!r}: {ins.opcode} calls {name!r}, which the module does not define"
        ) from None


_BATCHABLE = frozenset({*EXECUTED_ELEMENTWISE_OPCODES, *MATH_OPCODES, "select", "parameter", "constant",
                        "tuple", "get-tuple-element", "copy", "bitcast-convert"})  # fmt: skip


def _batchable(module: HloModule, comp: HloComputation, depth: int = 0) -> bool:
    for ins in comp.instructions:
        if ins.opcode in ("call", "fusion") and depth < 8:
            names = ins.calls or ((ins.to_apply,) if ins.to_apply else ())
            if len(names) != 1 or names[0] not in {c.name for c in module.computations}:
                return False
            if not _batchable(module, module.computation(names[0]), depth + 1):
                return False
        elif ins.opcode not in _BATCHABLE:
            return False
        elif not all(isinstance(s, ArrayShape) for s in _leaf_shapes(ins.shape)):
            return False
    return True


def _leaf_shapes(shape: Any) -> list[Any]:
    if isinstance(shape, TupleShape):
        return [leaf for s in shape.elements for leaf in _leaf_shapes(s)]
    return [shape]


def _batched_shape(shape: ArrayShape, batch: tuple[int, ...]) -> ArrayShape:
    return ArrayShape(shape.element_type, (*batch, *shape.dimensions))


def apply_computation(
    runner: Runner, comp: HloComputation, args: Sequence[Value], batch: tuple[int, ...]
) -> Value:
    """``comp`` applied to every batch element of ``args`` (each an :class:`ArrayValue` of
    dimensions ``batch + the parameter's own``, or a tuple of them); the result likewise."""
    if _batchable(runner.module, comp):
        return _batched(runner, comp, args, batch)
    count = math.prod(batch)
    if count > MAX_SCALAR_CALLS:
        raise UnsupportedOpError(
            "computation",
            f"computation {comp.name!r} is not elementwise and would be called {count} times "
            f"(at most {MAX_SCALAR_CALLS})",
        )
    results = [runner.computation(comp, [_pick(a, index) for a in args]) for index in np.ndindex(*batch)]
    if not results:
        return _empty_result(runner, comp, batch)
    return _stacked(results, batch)


def _pick(value: Value, index: tuple[int, ...]) -> Value:
    if isinstance(value, tuple):
        return tuple(_pick(v, index) for v in value)
    rest = value.shape.dimensions[len(index) :]
    return ArrayValue(
        ArrayShape(value.shape.element_type, tuple(rest), layout=None),
        np.asarray(value.data[index]),
        np.asarray(value.defined[index]),
    )


def _stacked(results: list[Value], batch: tuple[int, ...]) -> Value:
    first = results[0]
    if isinstance(first, tuple):
        return tuple(_stacked([r[k] for r in results], batch) for k in range(len(first)))
    data = np.stack([r.data for r in results]).reshape(*batch, *first.data.shape)
    defined = np.stack([r.defined for r in results]).reshape(*batch, *first.data.shape)
    return ArrayValue(_batched_shape(first.shape, batch), data, defined)


def _empty_result(runner: Runner, comp: HloComputation, batch: tuple[int, ...]) -> Value:
    def empty(shape: Any) -> Value:
        if isinstance(shape, TupleShape):
            return tuple(empty(s) for s in shape.elements)
        full = _batched_shape(shape, batch)
        from layout_algebra.packing.formats import numpy_dtype

        dims = tuple(full.dimensions)
        return ArrayValue(full, np.zeros(dims, numpy_dtype(shape.element_type)), np.ones(dims, bool))

    return empty(comp.root.shape)


def _batched(
    runner: Runner,
    comp: HloComputation,
    args: Sequence[Value],
    batch: tuple[int, ...],
    want: str | None = None,
) -> Value:
    return evaluate_in_order(
        comp,
        want or comp.root.name,
        lambda ins, operands: _batched_instruction(runner, comp, ins, operands, args, batch),
    )


def evaluate_in_order(
    comp: HloComputation, want: str, evaluate: Callable[[HloInstruction, list[Value]], Value]
) -> Value:
    """The value of instruction ``want`` of ``comp``: every instruction it depends on evaluated
    once, operands first (``evaluate(instruction, operand values)``), without recursion; a
    missing operand or a cycle is invalid HLO."""
    values: dict[str, Value] = {}
    stack: list[tuple[str, bool]] = [(want, False)]
    while stack:  # operands first, each instruction once
        name, ready = stack.pop()
        if name in values:
            continue
        if name not in comp:
            raise InvalidHlo(f"computation {comp.name!r} has no instruction {name!r}")
        ins = comp.instruction(name)
        if not ready:
            stack.append((name, True))
            stack.extend((o, False) for o in ins.operand_names if o not in values)
            continue
        if any(o not in values for o in ins.operand_names):
            raise InvalidHlo(f"instruction {name!r} depends on itself")
        values[name] = evaluate(ins, [values[o] for o in ins.operand_names])
    return values[want]


def evaluate_instruction(
    runner: Runner, comp: HloComputation, name: str, args: Sequence[Value], batch: tuple[int, ...]
) -> Value:
    """The value of instruction ``name`` of an elementwise computation ``comp`` on batched ``args``."""
    if not _batchable(runner.module, comp):
        raise UnsupportedOpError("computation", f"computation {comp.name!r} is not elementwise")
    return _batched(runner, comp, args, batch, want=name)


def _batched_instruction(
    runner: Runner,
    comp: HloComputation,
    ins: HloInstruction,
    operands: list[Value],
    args: Sequence[Value],
    batch: tuple[int, ...],
) -> Value:
    op = ins.opcode
    if op == "parameter":
        k = ins.parameter_number
        if k is None or not 0 <= k < len(args):
            raise InvalidHlo(
                f"computation {comp.name!r}: parameter({k}) but it is given {len(args)} arguments"
            )
        return args[k]
    if op == "tuple":
        return tuple(operands)
    if op == "get-tuple-element":
        (t,) = operands
        if not isinstance(t, tuple) or ins.index is None or not 0 <= ins.index < len(t):
            raise InvalidHlo(f"instruction {ins.name!r}: index={ins.index} of a non-tuple or out of range")
        return t[ins.index]
    if op in ("call", "fusion"):
        names = ins.calls or ((ins.to_apply,) if ins.to_apply else ())
        return _batched(runner, runner.module.computation(names[0]), operands, batch)
    shape = runner.shape(ins)
    full = _batched_shape(shape, batch)
    dims = tuple(full.dimensions)
    if any(isinstance(o, tuple) for o in operands):
        raise InvalidHlo(f"instruction {ins.name!r}: {op} of a tuple")
    if op == "constant":
        data = np.broadcast_to(constant_array(ins, shape), dims).copy()
        return ArrayValue(full, data, np.ones(dims, bool))
    if op in MATH_OPCODES:
        data = math_elementwise(ins, full, [o.shape for o in operands], [o.data for o in operands])
        if data is None:
            raise UnsupportedOpError(op, f"instruction {ins.name!r}: {op} on {shape.element_type.value.name}")
        defined = np.ones(dims, bool)
        for o in operands:
            defined = defined & o.defined
        return ArrayValue(full, data, defined)
    if op == "copy":
        (a,) = operands
        return ArrayValue(full, a.data, a.defined)
    if op == "select":
        p, t, f = operands
        return ArrayValue(
            full, np.where(p.data, t.data, f.data), p.defined & np.where(p.data, t.defined, f.defined)
        )
    if op == "bitcast-convert":
        (a,) = operands
        from layout_algebra.packing.formats import numpy_dtype

        dtype = numpy_dtype(shape.element_type)
        if dtype.itemsize != a.data.dtype.itemsize:
            raise UnsupportedOpError(op, f"instruction {ins.name!r}: bitcast-convert between widths")
        return ArrayValue(full, a.data.view(dtype), a.defined)
    batched_ins = ins
    data, defined = elementwise(batched_ins, full, operands)
    return ArrayValue(full, data, defined)
