"""The rewrite verifier's evaluator: the value of any element of any instruction of a module."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import z3

from layout_algebra.hlo.evaluate_elementwise import ElementwiseOps
from layout_algebra.hlo.evaluate_movement import MovementOps
from layout_algebra.hlo.float_precision import (
    EXCESS_PRECISION,
    MIXED_PRECISION_MOVEMENT,
    erased_type,
    is_erased_convert,
    is_float_convert,
)
from layout_algebra.hlo.ir import COMPUTATION_REFERENCE_ATTRIBUTES, HloInstruction, HloModule
from layout_algebra.hlo.opcodes import (
    INERT_ATTRIBUTES,
    MOVEMENT_OPCODES,
    NONDETERMINISTIC_OPCODES,
    OPAQUE_OPCODES,
    SUPPORTED_OPCODES,
    TYPE_KEEPING_OPS,
)
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.hlo.verify_values import (
    App,
    Choice,
    Inexpressible,
    Number,
    Param,
    Scope,
    UnsupportedHlo,
    array_shape_of,
    dims_equal,
    instruction_named,
    logical_text,
    refuse_slot_bits,
    shape_at_path,
)
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.encode import IntArithmetic


class Evaluator(MovementOps, ElementwiseOps):
    """The value of any element of any instruction, for index terms of one arithmetic."""

    def __init__(
        self, module: HloModule, mode: str, ar: Any, inputs: dict, rules: frozenset[str] = frozenset()
    ) -> None:
        self.module = module
        self.rules = rules  # the FLOAT_RULES allowed
        self.used: set[str] = set()  # the FLOAT_RULES a value relied on
        #: float precision erased (EXCESS_PRECISION), and the real float types it erased
        self.erasing = EXCESS_PRECISION in rules
        self.float_types: set[str] = set()
        #: data-movement ops whose float operands have another float type than their result:
        #: (scope id, name) -> {operand: (operand type, result type)}
        self.mixed_movement: dict[tuple[int, str], dict[int, tuple[str, str]]] = {}
        self.app_info: dict[str, tuple[str, str, str]] = {}  # App key -> (op, attributes, result type)
        self.mode = mode
        self.ar = ar
        self.symbolic = isinstance(ar, IntArithmetic)
        self.inputs = inputs  # scalar integer parameters used as offsets: number -> term or value
        #: size relations valid HLO needs, checked for every size allowed: (a, b, a <= b?, problem)
        self.requirements: list[tuple[Any, Any, bool, str]] = []
        self._fingerprints: dict[tuple[int, str, bool], str] = {}
        #: bitcasts that made SlotBits (read only at the root or by another bitcast)
        self.slot_bits: set[str] = set()
        self._scopes: list[Scope] = []
        #: element values already computed, by (scope, name, index, path, open branches): a DAG
        #: that shares sub-expressions is evaluated once per node, not once per path through it
        self._elements: dict[tuple[Any, ...], Any] = {}
        self._alive: list[Any] = []  # what the ids in those keys name, kept alive
        self._branches: tuple[int, ...] = ()  # the guarded() calls open now, by serial number
        self._serial = 0

    # -------------------------------------------------------------- helpers
    def value_type(self, type_text: str) -> str:
        """The type a value of element type ``type_text`` carries: erased under ``excess-precision``."""
        if not self.erasing:
            return type_text
        erased = erased_type(type_text)
        if erased != type_text:
            self.float_types.add(type_text)
        return erased

    def lift(self, d: Any) -> Any:
        return self.ar.lift(d) if self.symbolic else d

    def choose(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        if isinstance(cond, bool):
            return then() if cond else other()
        if z3.is_true(cond):
            return then()
        if z3.is_false(cond):
            return other()
        return Choice(cond, self.guarded(cond, then), self.guarded(z3.Not(cond), other))

    def guarded(self, cond: Any, thunk: Callable[[], Any]) -> Any:
        """``thunk()``, with what its encoding relied on required only where ``cond`` holds."""
        if not self.symbolic:
            return thunk()
        # a value computed in another branch recorded its obligations under that branch's
        # condition: values are reused only within the branch they were computed in
        self._serial += 1
        outer, self._branches = self._branches, (*self._branches, self._serial)
        try:
            with self.ar.branch(cond):
                return thunk()
        finally:
            self._branches = outer

    def operand(self, scope: Scope, instr: HloInstruction, k: int) -> HloInstruction:
        if k >= len(instr.operands):
            raise InvalidHlo(f"{instr.opcode} {instr.name} needs at least {k + 1} operands")
        return instruction_named(scope.computation, instr.operands[k].name)

    def shape_of(self, scope: Scope, instr: HloInstruction, path: tuple = ()) -> ArrayShape:
        return array_shape_of(shape_at_path(instr.shape, path, instr.name), f"{instr.opcode} {instr.name}")

    # -------------------------------------------------------------- elements
    def element(self, scope: Scope, name: str, index: Sequence[Any], path: tuple = ()) -> Any:
        """The value of element ``index`` of instruction ``name`` (at tuple ``path``), computed once."""
        key = self._element_key(scope, name, index, path)
        if key is None:
            return self._element(scope, name, index, path)
        if key not in self._elements:
            self._elements[key] = self._element(scope, name, index, path)
            self._alive.append((scope, tuple(index)))
        return self._elements[key]

    def _element_key(self, scope: Scope, name: str, index: Sequence[Any], path: tuple) -> tuple | None:
        terms: list[Any] = []
        for i in index:
            if isinstance(i, int):
                terms.append(i)
            elif isinstance(i, z3.AstRef):
                terms.append(("z3", i.get_id()))
            else:
                return None
        return (id(scope), name, tuple(terms), path, self._branches)

    def _element(self, scope: Scope, name: str, index: Sequence[Any], path: tuple = ()) -> Any:
        instr = instruction_named(scope.computation, name)
        op = instr.opcode
        if op not in SUPPORTED_OPCODES:
            raise UnsupportedHlo(
                f"instruction {instr.name} is a {op}, which the rewrite verifier does not read "
                f"(it reads {', '.join(MOVEMENT_OPCODES)} and elementwise ops)"
            )
        if op in OPAQUE_OPCODES:
            self.shape_of(scope, instr, path)
            key = f"{op}#{self.fingerprint(scope, instr.name, own_layout=False)}{''.join(f'.{k}' for k in path)}"
            return App(key, tuple(Number("index", i) for i in index))
        if op == "tuple":
            if not path:
                raise UnsupportedHlo(f"tuple {instr.name} is used as an array")
            return self.element(scope, self.operand(scope, instr, path[0]).name, index, path[1:])
        if op == "get-tuple-element":
            if instr.index is None:
                raise InvalidHlo(f"get-tuple-element {instr.name} has no index")
            return self.element(scope, self.operand(scope, instr, 0).name, index, (instr.index, *path))
        if op == "parameter":
            if scope.bindings is not None:
                n = instr.parameter_number
                if n is None or n >= len(scope.bindings):
                    raise InvalidHlo(f"parameter {instr.name} of {scope.computation.name} has no operand")
                return self.element(scope.parent, scope.bindings[n], index, path)  # type: ignore[arg-type]
            shape_at_path(instr.shape, path, instr.name)
            return Param((instr.parameter_number, tuple(path)), tuple(index))
        if op in ("fusion", "call"):
            callee = instr.calls[0] if instr.calls else instr.to_apply
            if callee is None:
                raise InvalidHlo(f"{op} {instr.name} names no computation")
            if not any(c.name == callee for c in self.module.computations):
                raise InvalidHlo(f"{op} {instr.name} calls {callee!r}, which the module does not define")
            inner = Scope(self.module.computation(callee), instr.operand_names, scope)
            return self.element(inner, inner.computation.root.name, index, path)
        if path:
            raise InvalidHlo(f"{op} {instr.name} is not a tuple but is read as one")
        shape = self.shape_of(scope, instr)
        if len(index) != shape.rank:
            raise InvalidHlo(f"{instr.name} is read with {len(index)} indices but has rank {shape.rank}")
        if op in TYPE_KEEPING_OPS:
            self.check_element_types(scope, instr, shape)
        return getattr(self, "op_" + op.replace("-", "_"), self.op_elementwise)(
            scope, instr, shape, list(index)
        )

    def fingerprint(self, scope: Scope, name: str, own_layout: bool = True) -> str:
        """A digest of the text of the subgraph computing ``name`` (names of values left out).

        Every shape is in it with its layout (a ``bitcast`` below reads layouts), except,
        without ``own_layout``, the result's own: an opaque op's values do not depend on it."""
        memo_key = (id(scope), name, own_layout)
        known = self._fingerprints.get(memo_key)
        if known is not None:
            return known
        instr = instruction_named(scope.computation, name)
        if instr.opcode in NONDETERMINISTIC_OPCODES:
            raise Inexpressible(f"{instr.opcode} {instr.name} may give another result on every run")
        if instr.opcode == "parameter" and scope.bindings is not None:
            digest = self.fingerprint(scope.parent, scope.bindings[instr.parameter_number])  # type: ignore[arg-type,index]
        else:
            attributes = sorted(
                (k, v)
                for k, v in instr.attributes.items()
                if k not in INERT_ATTRIBUTES and k not in COMPUTATION_REFERENCE_ATTRIBUTES
            )
            called = []
            for callee in instr.called_computations:
                if not any(c.name == callee for c in self.module.computations):
                    raise InvalidHlo(
                        f"{instr.opcode} {instr.name} calls {callee!r}, which the module does not define"
                    )
                computation = self.module.computation(callee)
                called.append(self.fingerprint(Scope(computation), computation.root.name))
            operands = [self.fingerprint(scope, o.name) for o in instr.operands]
            text = repr(
                (
                    instr.opcode,
                    str(instr.shape) if own_layout else logical_text(instr.shape),
                    attributes,
                    instr.literal,
                    instr.parameter_number,
                    operands,
                    called,
                )
            )
            digest = hashlib.sha256(text.encode()).hexdigest()[:20]
        self._fingerprints[memo_key] = digest
        self._scopes.append(scope)  # keep the scope alive: its id is part of the key
        return digest

    def sub(self, scope: Scope, instr: HloInstruction, k: int, index: Sequence[Any]) -> Any:
        value = self.element(scope, self.operand(scope, instr, k).name, index)
        if self.slot_bits:
            refuse_slot_bits(value, instr)
        if self.mixed_movement:
            converted = self.mixed_movement.get((id(scope), instr.name), {}).get(k)
            if converted is not None:
                value = self.movement_convert(value, *converted)
        return value

    def movement_convert(self, value: Any, source: str, to: str) -> Any:
        """A moved float value converted to the movement op's result type (MIXED_PRECISION_MOVEMENT),
        the identity once float precision is erased."""
        if self.erasing and is_erased_convert(to, source):
            self.used.add(EXCESS_PRECISION)
            return value
        self.used.add(MIXED_PRECISION_MOVEMENT)
        normal = self.float_normal_form("convert", "", to, [source], (value,), False) if self.rules else None
        if normal is not None:
            self.used |= normal[1]
            return normal[0]
        return self.app("convert", "", to, (value,), source)

    def operand_shape(self, scope: Scope, instr: HloInstruction, k: int) -> ArrayShape:
        o = self.operand(scope, instr, k)
        return self.shape_of(scope, o)

    # -------------------------------------------------------------- data movement
    def check_element_types(self, scope: Scope, instr: HloInstruction, shape: ArrayShape) -> None:
        """A data-movement op's result has its data operands' element type (XLA rejects
        ``s32[4] copy(f32[4])``; a bitcast or a convert is the op that changes it), or another
        float type (XLA:TPU's mixed precision): read as a convert of each such operand under
        ``mixed-precision-movement`` or ``excess-precision``, beyond the verifier otherwise."""
        count = TYPE_KEEPING_OPS[instr.opcode] or len(instr.operands)
        for k in range(min(count, len(instr.operands))):
            source = self.operand_shape(scope, instr, k)
            if source.element_type != shape.element_type and is_float_convert(
                shape.element_type.text, source.element_type.text
            ):
                erased = self.erasing and is_erased_convert(shape.element_type.text, source.element_type.text)
                if not (erased or MIXED_PRECISION_MOVEMENT in self.rules):
                    raise Inexpressible(
                        f"{instr.opcode} {instr.name}: operand {k} is {source}, the result {shape}: a data-movement "
                        f"op between float types (XLA:TPU's mixed precision) has a meaning only under "
                        f"{MIXED_PRECISION_MOVEMENT} or {EXCESS_PRECISION}"
                    )
                self.mixed_movement.setdefault((id(scope), instr.name), {})[k] = (
                    source.element_type.text,
                    shape.element_type.text,
                )
                self._scopes.append(scope)  # keep the scope alive: its id is part of the key
                continue
            if source.element_type != shape.element_type:
                raise InvalidHlo(
                    f"{instr.opcode} {instr.name}: operand {k} is {source}, but the result {shape} has "
                    f"another element type (a data-movement op keeps it; convert or bitcast changes it)"
                )

    def check_same_dims(self, instr, source: ArrayShape, shape: ArrayShape) -> None:
        if source.rank != shape.rank or any(
            not dims_equal(x, y) for x, y in zip(source.dimensions, shape.dimensions, strict=False)
        ):
            raise InvalidHlo(
                f"{instr.opcode} {instr.name}: operand {source} and result {shape} differ in dimensions"
            )

    def require_at_most(self, a: Any, b: Any, problem: str) -> None:
        """``a <= b``: an error now if both are numbers, else a requirement for every size."""
        if isinstance(a, int) and isinstance(b, int):
            if a > b:
                raise InvalidHlo(problem)
        else:
            self.requirements.append((a, b, True, problem))

    def check_count(self, instr, source: ArrayShape, shape: ArrayShape) -> None:
        a = math.prod(source.dimensions, start=sympy.Integer(1)) if source.dimensions else 1
        b = math.prod(shape.dimensions, start=sympy.Integer(1)) if shape.dimensions else 1
        difference = sympy.expand(as_sympy(a) - as_sympy(b))
        if difference.is_Integer and difference != 0:
            raise InvalidHlo(f"reshape {instr.name}: {source} has {a} elements, {shape} has {b}")
        if not difference.is_Integer:
            self.requirements.append(
                (a, b, False, f"reshape {instr.name} changes the element count ({a} vs {b})")
            )
