"""Rewrite verification: two HLO computations of data-movement ops produce the same buffer.

``rewrite(before, after)`` proves that, for every element of the root, both computations
put it at the same bit offset of the root's buffer and take it from the same place: the
same bit of the same parameter's buffer (or the same constant). The ops understood are
the ones that only move data: ``parameter``, ``constant``, ``bitcast``, ``reshape``,
``transpose``, ``copy``, ``slice``, ``broadcast``, ``concatenate`` and ``pad``; a
``bitcast`` reads the operand's buffer through both layouts, so tiles, padding and
packing count. Padding values are unspecified: reading one is never "the same".

>>> before = '''HloModule m
... ENTRY e {
...   p = f32[8,128]{1,0:T(8,128)} parameter(0)
...   ROOT r = f32[1024]{0} reshape(p)
... }'''
>>> after = '''HloModule m
... ENTRY e {
...   p = f32[8,128]{1,0:T(8,128)} parameter(0)
...   ROOT r = f32[1024]{0} bitcast(p)
... }'''
>>> rewrite(before, after).status         # one 8x128 tile is row-major: the reshape is a bitcast
'proved'
>>> tiled_before = before.replace("f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,64)}")
>>> tiled_after = after.replace("f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,64)}")
>>> r = rewrite(tiled_before, tiled_after)   # 8x64 tiles split each row: the bitcast reads other data
>>> r.status, r.counterexample["element"] is not None
('refuted', True)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import z3

from layout_algebra.layout_map import layout_map
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.prove.core import (
    DEFAULT_TIMEOUT_MS,
    Assumptions,
    _assumption_terms,
    _assumptions_hold,
    _differ,
    _in_box,
    _model_int,
    _side_conditions,
    _solver,
    parse_assumptions,
)
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression
from layout_algebra.prove.result import ProofResult
from layout_algebra.references import delinearize_row_major, linear_index_row_major
from layout_algebra.stages.arith import ARITHMETIC

__all__ = ["SUPPORTED_OPCODES", "rewrite"]

#: The data-movement ops the verifier understands.
SUPPORTED_OPCODES = (
    "parameter",
    "constant",
    "bitcast",
    "reshape",
    "transpose",
    "copy",
    "slice",
    "broadcast",
    "concatenate",
    "pad",
)


@dataclass
class _Source:
    """Where an element comes from: parameter ``param`` at element slot ``bit``, or constant ``-2 - k``."""

    param: Any
    bit: Any
    defined: Any  # false where the element would be read from padding


class _Ops:
    """Selection and comparisons for Z3 terms or Python ints."""

    def __init__(self, ar) -> None:
        self.ar = ar
        self.symbolic = isinstance(ar, IntArithmetic)

    def select(self, cond, a, b):
        if self.symbolic:
            return z3.If(cond, a, b) if not isinstance(cond, bool) else (a if cond else b)
        return a if cond else b

    def lt(self, a, b):
        return a < b

    def ge(self, a, b):
        return a >= b

    def both(self, a, b):
        if self.symbolic:
            return z3.And(a, b)
        return a and b

    def const(self, v):
        return z3.IntVal(v) if self.symbolic else v


def _element_source(comp, name: str, index: list, ops: _Ops, constants: dict[str, int]) -> _Source:
    instr = comp.instruction(name)
    shape = instr.shape
    ar = ops.ar
    op = instr.opcode
    if op not in SUPPORTED_OPCODES:
        raise ValueError(
            f"instruction {instr.name} is a {op}; the rewrite verifier supports {', '.join(SUPPORTED_OPCODES)}"
        )
    if not isinstance(shape, ArrayShape):
        raise ValueError(f"instruction {instr.name} has a non-array shape {shape}")
    if op == "parameter":
        # element slot in the parameter's buffer (both sides have the same parameter shapes,
        # so equal slots are equal bits; the slot keeps its mixed-radix digits for the prover)
        m = layout_map(shape)
        slot = m.apply(index, ar, through=len(m.stages) - 1)[0]
        return _Source(ops.const(instr.parameter_number), slot, True)
    if op == "constant":
        key = f"{shape.element_type.text}:{instr.literal}"
        constants.setdefault(key, -2 - len(constants))
        return _Source(ops.const(constants[key]), ops.const(0), True)
    operand = instr.operands[0].name
    operand_shape = comp.instruction(operand).shape
    if op == "copy":
        return _element_source(comp, operand, index, ops, constants)
    if op == "reshape":
        position = linear_index_row_major(index, tuple(shape.dimensions), ar)
        return _element_source(
            comp,
            operand,
            list(delinearize_row_major(position, tuple(operand_shape.dimensions), ar)),
            ops,
            constants,
        )
    if op == "transpose":
        perm = instr.dimensions
        source = [None] * len(perm)
        for k, p in enumerate(perm):
            source[p] = index[k]
        return _element_source(comp, operand, source, ops, constants)
    if op == "broadcast":
        dims = instr.dimensions or ()
        return _element_source(comp, operand, [index[d] for d in dims], ops, constants)
    if op == "slice":
        source = [s.start + j * s.stride for s, j in zip(instr.slice, index, strict=True)]
        return _element_source(comp, operand, source, ops, constants)
    if op == "bitcast":
        out = layout_map(shape)
        src = layout_map(operand_shape)
        if out.element_bits != src.element_bits:
            raise ValueError(f"bitcast {instr.name} changes the element size; not supported")
        position = out.apply(index, ar, through=len(out.stages) - 1)[0]
        source, is_padding = src.unapply((position,), ar, start=len(src.stages) - 1)
        inner = _element_source(comp, operand, list(source), ops, constants)
        outside = ops.ge(position, ar.lift(src.size_in_elements))
        defined = ops.both(inner.defined, _not(ops, is_padding))
        defined = ops.both(defined, _not(ops, outside))
        return _Source(inner.param, inner.bit, defined)
    if op == "concatenate":
        (d,) = instr.dimensions
        offset = 0
        pieces = []
        for o in instr.operands:
            o_shape = comp.instruction(o.name).shape
            source = list(index)
            source[d] = index[d] - offset
            pieces.append(
                (offset + o_shape.dimensions[d], _element_source(comp, o.name, source, ops, constants))
            )
            offset += o_shape.dimensions[d]
        result = pieces[-1][1]
        for end, piece in reversed(pieces[:-1]):
            cond = ops.lt(index[d], end)
            result = _Source(
                ops.select(cond, piece.param, result.param),
                ops.select(cond, piece.bit, result.bit),
                ops.select(cond, piece.defined, result.defined),
            )
        return result
    if op == "pad":
        value = _element_source(comp, instr.operands[1].name, [], ops, constants)
        inside: Any = True
        source = []
        for j, p, size in zip(index, instr.padding, operand_shape.dimensions, strict=True):
            shifted = j - p.low
            step = p.interior + 1
            q = ar.floordiv(shifted + step * (size + 1), step) - (size + 1) if step > 1 else shifted
            ok = ops.both(ops.ge(shifted, 0), ops.lt(q, size))
            if step > 1:
                ok = ops.both(ok, ar.mod(shifted + step * (size + 1), step) == 0)
            inside = ops.both(inside, ok)
            source.append(ops.select(ok, q, 0) if ops.symbolic else (q if ok else 0))
        element = _element_source(comp, instr.operands[0].name, source, ops, constants)
        return _Source(
            ops.select(inside, element.param, value.param),
            ops.select(inside, element.bit, value.bit),
            ops.select(inside, element.defined, value.defined),
        )
    raise AssertionError(op)  # pragma: no cover


def _not(ops: _Ops, value):
    if ops.symbolic:
        return z3.Not(value) if not isinstance(value, bool) else not value
    return not value


def _entry(text_or_module):
    from layout_algebra.hlo import parse_module

    module = parse_module(text_or_module) if isinstance(text_or_module, str) else text_or_module
    return module.entry


def _parameters(comp) -> dict[int, str]:
    return {i.parameter_number: str(i.shape) for i in comp.instructions if i.opcode == "parameter"}


def rewrite(
    before, after, *, assume: Assumptions = None, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> ProofResult:
    """Prove that ``after``'s root buffer equals ``before``'s as a function of the parameters.

    ``before`` and ``after`` are HLO module texts (or parsed modules) whose ENTRY
    computations have the same parameters. Every root element must land at the same bit
    of the root buffer and come from the same bit of the same parameter (or the same
    constant). A refutation names the first differing output element it found, re-checked
    by evaluating both computations on it.
    """
    start = time.perf_counter()
    a, b = _entry(before), _entry(after)
    claim = f"rewrite of {a.name} preserves the root buffer"
    if _parameters(a) != _parameters(b):
        raise ValueError(f"the computations have different parameters: {_parameters(a)} vs {_parameters(b)}")
    root_a, root_b = a.root.shape, b.root.shape
    if not isinstance(root_a, ArrayShape) or not isinstance(root_b, ArrayShape):
        raise ValueError("the roots must be arrays")
    if tuple(root_a.dimensions) != tuple(root_b.dimensions) or root_a.element_type != root_b.element_type:
        raise ValueError(f"the roots differ in type or dimensions: {root_a} vs {root_b}")
    size_a, size_b = layout_map(root_a).size_in_bits, layout_map(root_b).size_in_bits
    if isinstance(size_a, int) and isinstance(size_b, int) and size_a != size_b:
        return ProofResult(
            "refuted",
            claim,
            time.perf_counter() - start,
            "sizes",
            counterexample={"before_bits": size_a, "after_bits": size_b},
        )
    assumptions = parse_assumptions(assume)
    encoding = "integer (stages of every instruction's layout)"
    try:
        ar = IntArithmetic()
        ops = _Ops(ar)
        constants: dict[str, int] = {}
        context = _assumption_terms(assumptions, ar)
        j = [ar.variable(f"j{k}") for k in range(root_a.rank)]
        context += _in_box(j, root_a.dimensions, ar)
        src_a = _element_source(a, a.root.name, j, ops, constants)
        src_b = _element_source(b, b.root.name, j, ops, constants)
        ma, mb = layout_map(root_a), layout_map(root_b)
        pos_a = ma.apply(j, ar, through=len(ma.stages) - 1)[0]
        pos_b = mb.apply(j, ar, through=len(mb.stages) - 1)[0]
        differ = z3.Or(
            _differ(pos_a, pos_b, ar),  # same element bits on both sides (same root type)
            z3.Not(_bool(src_a.defined)),
            z3.Not(_bool(src_b.defined)),
            _ne(src_a.param, src_b.param),
            _differ(src_a.bit, src_b.bit, ar),
        )
        solver = _solver(None, timeout_ms)
        solver.add(*context, differ, *ar.side, *ar.obligations)
        side = _side_conditions(ar, context, timeout_ms)
        answer = solver.check()
    except UnsupportedExpression as err:
        return ProofResult("unknown", claim, time.perf_counter() - start, encoding, reason=str(err))
    if answer == z3.unsat:
        if side is not None and side.check() != z3.unsat:
            return ProofResult(
                "unknown",
                claim,
                time.perf_counter() - start,
                encoding,
                reason="a side condition the query relied on (digits in their box, divisors > 0) was not proved",
            )
        return ProofResult("proved", claim, time.perf_counter() - start, encoding)
    if answer == z3.sat:
        model = solver.model()
        values = {s: _model_int(model, v) for s, v in ar.symbols.items()}
        element = [_model_int(model, v) for v in j]
        cex = _recheck(a, b, root_a, root_b, element, values, assumptions)
        if cex is not None:
            return ProofResult("refuted", claim, time.perf_counter() - start, encoding, counterexample=cex)
        return ProofResult(
            "unknown",
            claim,
            time.perf_counter() - start,
            encoding,
            reason="the solver's model did not survive re-evaluation",
        )
    return ProofResult(
        "unknown", claim, time.perf_counter() - start, encoding, reason=f"solver: {solver.reason_unknown()}"
    )


def _specialized(comp, values: Mapping[Any, int]):
    """The computation with every array shape's symbolic sizes given ``values``."""

    def shape_at(shape):
        return shape.specialize(values) if isinstance(shape, ArrayShape) else shape

    instructions = tuple(
        dataclasses.replace(
            instr,
            shape=shape_at(instr.shape),
            operands=tuple(dataclasses.replace(o, shape=shape_at(o.shape)) for o in instr.operands),
        )
        for instr in comp.instructions
    )
    return dataclasses.replace(comp, instructions=instructions)


def _recheck(a, b, root_a, root_b, element, values, assumptions) -> dict[str, Any] | None:
    if not _assumptions_hold(assumptions, values):
        return None
    if values:  # symbolic sizes: re-evaluate both computations at the model's sizes
        try:
            a, b = _specialized(a, values), _specialized(b, values)
            root_a, root_b = root_a.specialize(values), root_b.specialize(values)
        except (ValueError, TypeError):
            return None
    if any(not 0 <= e < d for e, d in zip(element, root_a.dimensions, strict=True)):
        return None
    ops = _Ops(ARITHMETIC)
    constants: dict[str, int] = {}
    sa = _element_source(a, a.root.name, list(element), ops, constants)
    sb = _element_source(b, b.root.name, list(element), ops, constants)
    ma, mb = layout_map(root_a), layout_map(root_b)
    pa = ma.forward(tuple(element))
    pb = mb.forward(tuple(element))
    same = pa == pb and sa.defined and sb.defined and sa.param == sb.param and sa.bit == sb.bit
    if same:
        return None
    found = {"element": tuple(element), "before": _describe(sa, pa), "after": _describe(sb, pb)}
    return {"sizes": {str(k): v for k, v in sorted(values.items(), key=str)}, **found} if values else found


def _describe(source: _Source, position: int) -> str:
    if not source.defined:
        return f"root slot {position} reads padding (unspecified)"
    if source.param <= -2:
        return f"root slot {position} holds a constant"
    return f"root slot {position} = parameter {source.param} slot {source.bit}"


def _ne(x, y):
    result = x != y
    return z3.BoolVal(result) if isinstance(result, bool) else result


def _bool(x):
    return z3.BoolVal(x) if isinstance(x, bool) else x
