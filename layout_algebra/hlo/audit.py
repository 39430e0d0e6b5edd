"""Audit an HLO module: what every instruction's layout costs, and which ops move data.

For every instruction the audit gives its shape and layout, the logical bytes (elements
times element bits), the physical bytes (the exact buffer of its layout: every tile
level's padding, packing, ``L(n)``), what XLA:TPU allocates (padding to the first tile
only), the padding ratio and XLA's layout-validation problems. A tuple counts the sum
over its array leaves.

>>> from layout_algebra.hlo import parse_module, audit_module
>>> module = parse_module('''
... HloModule tiny
... ENTRY main {
...   p = f32[3,200]{1,0:T(8,128)} parameter(0)
...   t = f32[200,3]{0,1:T(8,128)} transpose(p), dimensions={1,0}
...   ROOT c = f32[200,3]{0,1:T(8,128)S(1)} copy(t)
... }''')
>>> report = audit_module(module)
>>> row = report.row("main", "p")
>>> row.logical_bytes, row.physical_bytes, round(row.padding_ratio, 2)   # 3 rows padded to 8, 200 columns to 256
(2400, 8192, 3.41)
>>> report.totals_by_memory_space[0].physical_bytes, report.totals_by_memory_space[1].physical_bytes
(16384, 8192)
>>> report.row("main", "c").movement
MovementVerdict(refuted: 'moves data')
>>> print(report.row("main", "c").movement)
moves data (refuted): different memory spaces S(0) → S(1): a copy between memories
>>> report.row("main", "t").movement.verdict
'no data movement'

**Which instructions are buffers.** The totals count the values a module stores,
not every instruction it lists. An instruction counts as a buffer when

* its computation *runs as a program*: the entry, or a computation reached from it
  through control flow (``while`` condition and body, ``conditional`` branches, ``call``,
  asynchronous starts). Instructions inside fusion bodies (``calls=`` of a ``fusion``)
  and inside applied computations (the ``to_apply`` reducer of a ``reduce``, a
  ``sort`` comparator, ...) live in registers or scratch, not in buffers of their own;
* and it allocates storage: parameters of non-entry computations, ``get-tuple-element``,
  ``tuple``, ``bitcast``, ``while``, ``call``, ``conditional``, ``optimization-barrier``
  and the ``*-done`` / ``*-update`` halves of asynchronous ops only forward storage
  defined elsewhere (``ALIASING_OPCODES``).

Each buffer's physical bytes are ``physical_size_in_bytes`` summed over its array leaves
(``token[]`` counts 0), so the module totals are exactly the sum of
``physical_size_in_bytes`` over its buffers. This is the memory the module's values
take, not XLA's buffer assignment (which reuses memory between values that are not
live at the same time).

The per-memory-space totals count *arrays* (a tuple buffer counts each leaf in its own
space), so they add up to the total row; ``len(report.buffers)`` counts instructions.
Leaves with symbolic dimensions have formulas, not numbers, for sizes: they are counted
as unsized.

**Data movement.** Each ``bitcast``, ``reshape``, ``transpose`` and ``copy`` gets a
``MovementVerdict`` from ``classify_movement``: ``"moves data"``, ``"no data movement"``
(every element keeps its bit offset: the op could be a bitcast) or ``"unknown"``, with
the reason. The verdicts come from ``layout_algebra.decide.bitcast.decide_movement`` — the same
decision, verdict and reason as ``bitcast_is_valid`` and the ``bitcast`` command (tiles,
padding and packing included, proved or refuted with a counterexample), attached as
``MovementVerdict.bitcast``. They are memoised per (opcode, operand shape, result shape,
dimensions): a real module asks few distinct questions, however many instructions it
has. ``"unknown"`` is left for element-type changes, dynamic sizes and operands of
unknown shape. A ``bitcast`` instruction never moves bytes; one that is not a valid
bitcast is also listed as a problem (``audit --strict`` fails on it).

**Malformed modules.** ``module_errors`` lists operands that name no instruction and
dependency cycles; they are in ``AuditReport.errors`` (the ``audit`` command refuses
such a module with exit status 2).
"""

from __future__ import annotations

import functools
import gc
import heapq
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from layout_algebra.decide.bitcast import BitcastVerdict, decide_movement, memory_space_reason
from layout_algebra.hlo.ir import NATIVE_START_OPCODES, HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.opcodes import ALIASING_OPCODES, AUDITED_MOVEMENT_OPCODES
from layout_algebra.hlo.parser import HloModuleStream
from layout_algebra.hlo.validity import host_memory_problem
from layout_algebra.meaning.sizes import LayoutSemanticsError, SizeReport, size_report
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import ArrayShape, BufferShape, Shape, TupleShape
from layout_algebra.model.validation import layout_problems

__all__ = [
    "MOVES_DATA",
    "NO_DATA_MOVEMENT",
    "UNKNOWN",
    "AuditReport",
    "AuditRow",
    "MemorySpaceTotals",
    "MovementVerdict",
    "array_leaves",
    "audit_module",
    "audit_stream",
    "classify_movement",
    "computation_roles",
    "invalid_bitcast",
    "is_buffer",
    "module_errors",
]

MOVES_DATA = "moves data"
NO_DATA_MOVEMENT = "no data movement"
UNKNOWN = "unknown"
_NOT_IMPLEMENTED = (
    "not decided by the exact check (a reshape, transpose or copy keeps its element type, "
    "and a dynamic size has no fixed buffer)"
)


# ------------------------------------------------------------------------- movement
@dataclass(frozen=True)
class MovementVerdict:
    """Whether a layout-changing op moves data: ``verdict`` is ``"moves data"``,
    ``"no data movement"`` or ``"unknown"``; ``reason`` says why, for people; ``bitcast``
    is the exact decision it rests on (``layout_algebra.decide.bitcast.BitcastVerdict``:
    proved/refuted/unknown, the correspondence, the counterexample), if one was made."""

    verdict: str
    reason: str
    bitcast: BitcastVerdict | None = field(default=None, compare=False, repr=False)

    @property
    def status(self) -> str:
        """The answer to "every element keeps its bit offset": the exact decision's status
        where one was made, else ``"refuted"`` for a move between memories and ``"unknown"``.

        It can differ from the verdict in one case: a ``bitcast`` instruction proved invalid
        is ``"refuted"`` but moves no data (it reinterprets its bytes in place).

        >>> MovementVerdict(MOVES_DATA, "S(0) → S(1)").status, MovementVerdict(UNKNOWN, "dynamic").status
        ('refuted', 'unknown')
        """
        if self.bitcast is not None:
            return self.bitcast.status
        return "refuted" if self.verdict == MOVES_DATA else "unknown"

    def __bool__(self) -> bool:
        return self.status == "proved"

    def __str__(self) -> str:
        return f"{self.verdict} ({self.status}): {self.reason}"

    def __repr__(self) -> str:
        return f"MovementVerdict({self.status}: {self.verdict!r})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``verdict``, ``status``, ``reason`` and ``bitcast`` (its ``to_dict()``, or ``null``)."""
        return {
            "verdict": self.verdict,
            "status": self.status,
            "reason": self.reason,
            "bitcast": None if self.bitcast is None else self.bitcast.to_dict(),
        }


def classify_movement(instruction: HloInstruction, operand_shape: Shape | None) -> MovementVerdict:
    """Does this ``bitcast``/``reshape``/``transpose``/``copy`` move data?

    ``operand_shape`` is the shape of its (only) operand, ``None`` if unknown. The
    answer is ``"no data movement"`` only when every element provably keeps its bit
    offset, ``"moves data"`` only when the bytes provably cannot stay where they are,
    and ``"unknown"`` otherwise (with the reason). The decision is
    ``layout_algebra.decide.bitcast.decide_movement`` — the same verdict and reason as the
    ``bitcast`` command and ``bitcast_is_valid`` — memoised on (opcode, operand shape,
    result shape, dimensions), so a module costs its number of distinct questions.

    >>> from layout_algebra.hlo import HloInstruction
    >>> from layout_algebra import parse_shape
    >>> src = parse_shape("bf16[16,256]{1,0:T(8,128)(2,1)}")
    >>> reshape = HloInstruction("r", parse_shape("bf16[4096]{0:T(1024)(128)(2,1)}"), "reshape")
    >>> classify_movement(reshape, src).verdict                  # the tiles order elements differently
    'moves data'
    >>> merge = HloInstruction("r", parse_shape("bf16[2,8,256]{2,1,0:T(8,128)(2,1)}"), "reshape")
    >>> classify_movement(merge, src).verdict                    # whole tiles: the same bytes
    'no data movement'
    >>> pad = HloInstruction("r", parse_shape("bf16[16,256]{1,0:T(4,128)(2,1)}"), "copy")
    >>> classify_movement(pad, parse_shape("bf16[16,250]{1,0:T(8,128)(2,1)}")).verdict   # not the same elements
    'unknown'
    """
    opcode = instruction.opcode
    if opcode not in AUDITED_MOVEMENT_OPCODES:
        raise InvalidArgumentError(
            f"classify_movement handles {', '.join(AUDITED_MOVEMENT_OPCODES)}; got '{opcode}'"
        )
    return _classify(opcode, operand_shape, instruction.shape, instruction.dimensions)


@functools.lru_cache(maxsize=1 << 14)
def _classify(
    opcode: str, operand_shape: Shape | None, result: Shape, dimensions: tuple[int, ...] | None
) -> MovementVerdict:
    if operand_shape is None:
        return MovementVerdict(
            UNKNOWN, "the operand's shape is not known (an untyped operand not defined here)"
        )
    src, dst = _as_array(operand_shape), _as_array(result)
    if src is None or dst is None:
        return MovementVerdict(UNKNOWN, f"{opcode} between {operand_shape} and {result}: not two arrays")
    space_a, space_b = src.effective_layout.memory_space, dst.effective_layout.memory_space
    if opcode == "copy" and space_a != space_b:
        return MovementVerdict(MOVES_DATA, memory_space_reason(space_a, space_b))
    if opcode != "bitcast" and src.element_type != dst.element_type:
        return MovementVerdict(
            UNKNOWN,
            f"element types differ ({src.element_type.text} vs {dst.element_type.text}); {_NOT_IMPLEMENTED}",
        )
    if not (src.is_static and dst.is_static):
        return MovementVerdict(UNKNOWN, f"dynamic dimensions; {_NOT_IMPLEMENTED}")
    try:
        verdict = decide_movement(opcode, src, dst, dimensions or ())
    except ValueError as err:
        return MovementVerdict(UNKNOWN, f"the exact check does not apply: {err}")
    if opcode == "bitcast":
        if verdict.status == "proved":
            return MovementVerdict(NO_DATA_MOVEMENT, f"a valid bitcast; {verdict.reason}", verdict)
        if verdict.status == "refuted":
            return MovementVerdict(
                NO_DATA_MOVEMENT,
                f"a bitcast reinterprets its operand's bytes in place, but this one is not valid: {verdict.reason}",
                verdict,
            )
        return MovementVerdict(UNKNOWN, verdict.reason, verdict)
    if verdict.status == "proved":
        return MovementVerdict(NO_DATA_MOVEMENT, f"proved: {verdict.reason}", verdict)
    if verdict.status == "refuted":
        return MovementVerdict(MOVES_DATA, verdict.reason, verdict)
    return MovementVerdict(UNKNOWN, verdict.reason, verdict)


def _as_array(shape: Shape) -> ArrayShape | None:
    if isinstance(shape, BufferShape):
        return shape.array
    return shape if isinstance(shape, ArrayShape) else None


def invalid_bitcast(movement: MovementVerdict | None) -> str | None:
    """The problem to report for a ``bitcast`` instruction proved invalid, else ``None``."""
    if movement is None or movement.bitcast is None or movement.bitcast.operation != "bitcast":
        return None
    if movement.bitcast.status != "refuted":
        return None
    return f"invalid bitcast: {movement.bitcast.reason}"


# ----------------------------------------------------------------------- well-formed
def module_errors(module: HloModule) -> tuple[str, ...]:
    """What makes a module meaningless to audit: operands that name no instruction of
    their computation, and instructions that depend on themselves (a cycle).

    >>> from layout_algebra.hlo import parse_module
    >>> module_errors(parse_module("HloModule m\\nENTRY e {\\n  ROOT c = f32[2]{0} copy(q)\\n}"))
    ("e/c: operand 'q' is not an instruction of computation e",)
    """
    return tuple(e for computation in module.computations for e in _computation_errors(computation))


def _computation_errors(computation: HloComputation) -> list[str]:
    """``module_errors`` of one computation (they never reach across computations)."""
    errors: list[str] = []
    defined = {i.name: i for i in computation.instructions}
    position = {i.name: k for k, i in enumerate(computation.instructions)}  # the last, as in defined
    backward_only = True
    for k, instruction in enumerate(computation.instructions):
        for operand in instruction.operands:
            where = position.get(operand.name)
            if where is None:
                errors.append(
                    f"{computation.name}/{instruction.name}: operand {operand.name!r} is not an "
                    f"instruction of computation {computation.name}"
                )
            elif where >= k:
                backward_only = False
    # Dumps list every instruction after its operands: when every operand stands before
    # its user, every dependency points to an earlier position and there is no cycle.
    cycle = None if backward_only else _a_cycle(defined)
    if cycle:
        errors.append(f"{computation.name}: instructions depend on themselves: {' -> '.join(cycle)}")
    return errors


def _a_cycle(defined: dict[str, HloInstruction]) -> list[str] | None:
    """One dependency cycle among ``defined`` (iterative depth-first search), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in defined:
        if start in state:
            continue
        path = [start]
        state[start] = 1
        stack = [iter(o.name for o in defined[start].operands)]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                state[path.pop()] = 2
                continue
            if child not in defined:
                continue
            if state.get(child) == 1:
                return [*path[path.index(child) :], child]
            if child not in state:
                state[child] = 1
                path.append(child)
                stack.append(iter(o.name for o in defined[child].operands))
    return None


# ----------------------------------------------------------------------------- roles
def _is_control_flow(opcode: str) -> bool:
    if opcode in ("while", "conditional", "call", "async-start"):
        return True
    return opcode.endswith("-start") and opcode not in NATIVE_START_OPCODES


#: A call from one computation to another: (callee, by control flow, as a fusion body).
_Call = tuple[str, bool, bool]


def _calls(computation: HloComputation) -> tuple[_Call, ...]:
    """What ``computation`` calls, and how: all that its role decides for its callees."""
    calls: list[_Call] = []
    for instruction in computation.instructions:
        for callee in instruction.called_computations:
            fusion = instruction.opcode == "fusion" and callee in instruction.calls
            calls.append((callee, _is_control_flow(instruction.opcode), fusion))
    return tuple(calls)


def computation_roles(module: HloModule) -> dict[str, str]:
    """How each computation runs: ``"entry"``, ``"control flow"``, ``"fusion"``,
    ``"applied"`` (a reducer, comparator, custom-call body...) or ``"unreachable"``.

    A computation reached in several ways takes the first of that order.
    """
    return _roles(module.entry.name, {c.name: _calls(c) for c in module.computations})


def _roles(entry: str, calls: dict[str, tuple[_Call, ...]]) -> dict[str, str]:
    """``computation_roles`` from the call graph (every computation's ``_calls``, in text order)."""
    rank = {"entry": 0, "control flow": 1, "fusion": 2, "applied": 3}
    roles: dict[str, str] = {entry: "entry"}
    pending = [entry]
    while pending:
        caller = pending.pop()
        program = roles[caller] in ("entry", "control flow")
        for callee, control_flow, fusion in calls[caller]:
            if callee not in calls:
                continue
            if program and control_flow:
                role = "control flow"
            elif fusion:
                role = "fusion"
            else:
                role = "applied"
            old = roles.get(callee)
            if old is None or rank[role] < rank[old]:
                roles[callee] = role
                pending.append(callee)
    return {name: roles.get(name, "unreachable") for name in calls}


def is_buffer(computation: HloComputation, instruction: HloInstruction, role: str) -> bool:
    """The rule of the module docstring: does this instruction's value count as a buffer?"""
    return _is_buffer(instruction.opcode, computation.is_entry, role)


def _is_buffer(opcode: str, in_entry: bool, role: str) -> bool:
    if role not in ("entry", "control flow"):
        return False
    if opcode in ALIASING_OPCODES or opcode.endswith(("-done", "-update")):
        return False
    return not (opcode == "parameter" and not in_entry)


# ------------------------------------------------------------------------------ rows
def array_leaves(shape: Shape) -> Iterator[ArrayShape]:
    """The arrays of a shape: itself, a buffer's array, or a tuple's leaves in order."""
    if isinstance(shape, TupleShape):
        for element in shape.elements:
            yield from array_leaves(element)
    elif isinstance(shape, BufferShape):
        yield shape.array
    elif isinstance(shape, ArrayShape):
        yield shape


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One instruction's layout and memory. Sizes are ``None`` when some leaf has no exact
    size (an unbounded ``?`` dimension, split configs...); ``problems`` says why."""

    computation: str
    name: str
    opcode: str
    shape: Shape
    role: str
    is_buffer: bool
    logical_bytes: int | None
    physical_bytes: int | None
    allocated_bytes: int | None
    memory_spaces: tuple[int, ...]
    problems: tuple[str, ...] = ()
    movement: MovementVerdict | None = None
    leaf_sizes: tuple[tuple[int, SizeReport | None], ...] = field(default=(), repr=False)

    @property
    def padding_bytes(self) -> int | None:
        if self.physical_bytes is None or self.logical_bytes is None:
            return None
        return self.physical_bytes - self.logical_bytes

    @property
    def padding_ratio(self) -> float | None:
        """Physical over logical bytes (1.0: no padding); ``None`` if unknown or empty."""
        if self.physical_bytes is None or not self.logical_bytes:
            return None
        return self.physical_bytes / self.logical_bytes


@dataclass(frozen=True)
class MemorySpaceTotals:
    """Sums over the arrays of buffers that live in one memory space ``S(n)``.

    ``arrays`` counts array leaves (a tuple-shaped buffer with leaves in two spaces counts
    in both), so the spaces' ``arrays`` add up to ``AuditReport.buffer_arrays``."""

    memory_space: int
    arrays: int = 0
    logical_bytes: int = 0
    physical_bytes: int = 0
    allocated_bytes: int = 0
    unsized: int = 0

    @property
    def buffers(self) -> int:
        """The old name of ``arrays`` (it always counted array leaves, not instructions)."""
        return self.arrays


@dataclass(frozen=True)
class AuditReport:
    """The audit of one module: a row per instruction (text order) and buffer totals."""

    module: str
    rows: tuple[AuditRow, ...]
    totals_by_memory_space: dict[int, MemorySpaceTotals] = field(hash=False)
    errors: tuple[str, ...] = ()

    @property
    def buffers(self) -> tuple[AuditRow, ...]:
        return tuple(r for r in self.rows if r.is_buffer)

    @property
    def buffer_arrays(self) -> int:
        """Array leaves of all buffers: the sum of the memory spaces' ``arrays``."""
        return sum(t.arrays for t in self.totals_by_memory_space.values())

    @property
    def has_problems(self) -> bool:
        """Whether ``audit --strict`` fails: a layout problem, an invalid bitcast or a
        malformed module."""
        return bool(self.errors) or any(r.problems for r in self.rows)

    @property
    def physical_bytes(self) -> int:
        return sum(t.physical_bytes for t in self.totals_by_memory_space.values())

    @property
    def logical_bytes(self) -> int:
        return sum(t.logical_bytes for t in self.totals_by_memory_space.values())

    @property
    def allocated_bytes(self) -> int:
        return sum(t.allocated_bytes for t in self.totals_by_memory_space.values())

    def row(self, computation: str, name: str) -> AuditRow:
        for r in self.rows:
            if r.computation == computation and r.name == name:
                return r
        raise KeyError(f"no instruction {name!r} in computation {computation!r}")

    def worst_padding(self, top: int | None = None, buffers_only: bool = False) -> list[AuditRow]:
        """Rows by padding bytes, most first (ties: higher ratio first), sized rows only;
        ``buffers_only`` leaves out fusion internals and values that alias others."""
        sized = [r for r in self.rows if r.padding_bytes is not None and (r.is_buffer or not buffers_only)]
        key = _padding_order
        if top is not None and top < len(sized):  # the first few of a million: no full sort
            return heapq.nsmallest(top, sized, key=key)  # the same rows as sorted(...)[:top]
        sized.sort(key=key)
        return sized

    def movements(self) -> list[AuditRow]:
        return [r for r in self.rows if r.movement is not None]

    def problem_rows(self) -> list[AuditRow]:
        return [r for r in self.rows if r.problems]

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """A JSON-ready summary: totals, then rows worst padding first (``top`` of them)."""
        order = self.worst_padding()
        unsized = [r for r in self.rows if r.padding_bytes is None]
        rows = order + unsized
        if top is not None:
            rows = rows[:top]
        return {
            "module": self.module,
            "instructions": len(self.rows),
            "buffers": len(self.buffers),
            "buffer_arrays": self.buffer_arrays,
            "errors": list(self.errors),
            "totals": {
                "logical_bytes": self.logical_bytes,
                "physical_bytes": self.physical_bytes,
                "xla_allocated_bytes": self.allocated_bytes,
            },
            "by_memory_space": {
                f"S({t.memory_space})": {
                    "arrays": t.arrays,
                    "logical_bytes": t.logical_bytes,
                    "physical_bytes": t.physical_bytes,
                    "xla_allocated_bytes": t.allocated_bytes,
                    "unsized_buffers": t.unsized,
                }
                for t in sorted(self.totals_by_memory_space.values(), key=lambda t: t.memory_space)
            },
            "rows": [_row_json(r) for r in rows],
        }


def _padding_order(r: AuditRow) -> tuple:
    """``worst_padding``'s order: padding bytes, most first; then ratio; then names."""
    return (-r.padding_bytes, -(r.padding_ratio or 1.0), r.computation, r.name)  # type: ignore[operator]


def _row_json(r: AuditRow) -> dict:
    return {
        "computation": r.computation,
        "name": r.name,
        "opcode": r.opcode,
        "shape": str(r.shape),
        "role": r.role,
        "buffer": r.is_buffer,
        "logical_bytes": r.logical_bytes,
        "physical_bytes": r.physical_bytes,
        "xla_allocated_bytes": r.allocated_bytes,
        "padding_ratio": r.padding_ratio,
        "memory_spaces": list(r.memory_spaces),
        "problems": list(r.problems),
        "movement": None if r.movement is None else r.movement.to_dict(),
    }


def audit_module(module: HloModule, progress: Callable[[int, int], None] | None = None) -> AuditReport:
    """Audit every instruction of ``module``; ``progress(done, total)`` is called as it goes
    (instructions audited so far, after each computation).

    One pass over the instructions; sizes and validation problems are computed once per
    distinct shape object (the parser shares one object per shape text) and movement
    verdicts once per distinct question, so the cost grows with the number of distinct
    shapes and questions, not of instructions.
    """
    total = module.instruction_count
    done = 0

    def audited(computation: HloComputation) -> None:
        nonlocal done
        done += len(computation.instructions)
        if progress is not None:
            progress(done, total)

    return _audit(module.name, module.computations, module.entry.name, audited)


def audit_stream(stream: HloModuleStream, progress: Callable[[int, int], None] | None = None) -> AuditReport:
    """``audit_module(parse_module(text))`` for ``stream = HloModuleStream(text)``, one
    computation at a time: the module is never held whole, only each instruction's row
    (its shape, shared with every instruction of the same shape text, sizes and verdict).
    ``progress(characters read, len(text))`` is called after each computation.

    >>> from layout_algebra.hlo import HloModuleStream, parse_module
    >>> text = "HloModule m\\nENTRY e {\\n  p = f32[3,200]{1,0:T(8,128)} parameter(0)\\n  ROOT c = f32[3,200]{1,0} copy(p)\\n}"
    >>> report = audit_stream(HloModuleStream(text))
    >>> report == audit_module(parse_module(text))
    True
    >>> [(r.name, r.physical_bytes, getattr(r.movement, "verdict", None)) for r in report.rows]
    [('p', 8192, None), ('c', 2400, 'moves data')]

    Memory: the text, the rows, and one computation at a time (on a million-instruction
    module, about half of what ``parse_module`` and ``audit_module`` hold together; see
    ``benchmarks/audit.py``).
    """
    size = len(stream.text)

    def audited(_: HloComputation) -> None:
        if progress is not None:
            progress(stream.position, size)

    return _audit(stream.name, stream, None, audited)


def _audit(
    name: str,
    computations: Iterable[HloComputation],
    entry: str | None,
    audited: Callable[[HloComputation], None],
) -> AuditReport:
    """The audit of ``audit_module`` and ``audit_stream``: each computation's role-free facts
    as it comes (sizes, verdicts, calls, errors), then, once every computation is known,
    the roles (who calls whom) and the rows."""
    sizes: dict[ArrayShape, SizeReport | str | None] = {}
    per_shape: dict[int, _ShapeFacts] = {}
    movements: dict[tuple, tuple] = {}  # by object identity: hashing big shapes costs more
    pending: list[_Pending] = []
    calls: dict[str, tuple[_Call, ...]] = {}
    errors: list[str] = []
    rows: list[AuditRow] = []
    totals: dict[int, list[int]] = {}  # space -> [arrays, logical, physical, allocated, unsized]
    # Rows are acyclic records: the cyclic garbage collector, triggered again and again
    # by millions of new rows, would only rescan them (quadratic on huge modules).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for computation in computations:
            pending.append(_pending_rows(computation, sizes, per_shape, movements))
            calls[computation.name] = _calls(computation)
            errors.extend(_computation_errors(computation))
            if entry is None and computation.is_entry:
                entry = computation.name
            audited(computation)
        if entry is None:
            raise InvalidArgumentError(f"module {name!r} has no entry computation")
        roles = _roles(entry, calls)
        pending.reverse()
        while pending:  # in text order, each computation's pending rows freed as its rows are made
            waiting = pending.pop()
            _finish_rows(waiting, roles[waiting.computation], rows, totals)
    finally:
        if collecting:
            gc.enable()
    by_space = {s: MemorySpaceTotals(s, *t) for s, t in sorted(totals.items())}
    return AuditReport(name, tuple(rows), by_space, tuple(errors))


@dataclass(frozen=True, slots=True)
class _Pending:
    """A computation's rows before its role is known: (name, opcode, shape facts, movement)."""

    computation: str
    is_entry: bool
    #: (name, opcode, shape facts, movement, memory spaces (operand, result) of a bitcast)
    items: list[tuple[str, str, _ShapeFacts, MovementVerdict | None, tuple[int, int] | None]]


def _pending_rows(computation: HloComputation, sizes: dict, per_shape: dict, movements: dict) -> _Pending:
    shapes = {i.name: i.shape for i in computation.instructions}
    items = []
    intern = sys.intern  # a million rows share a few dozen opcode strings
    for instruction in computation.instructions:
        facts = per_shape.get(id(instruction.shape))
        if facts is None or facts.shape is not instruction.shape:
            facts = per_shape[id(instruction.shape)] = _shape_facts(instruction.shape, sizes)
        movement = None
        spaces = None
        if instruction.opcode in AUDITED_MOVEMENT_OPCODES:
            movement = _movement(instruction, shapes, movements)
            operand = instruction.operands[0].name if instruction.operands else ""
            constant = operand in computation and computation.instruction(operand).opcode == "constant"
            if instruction.opcode == "bitcast" and not constant:  # XLA exempts a constant's bitcast
                spaces = _memory_spaces(instruction, shapes)
        items.append((instruction.name, intern(instruction.opcode), facts, movement, spaces))
    return _Pending(computation.name, computation.is_entry, items)


def _movement(
    instruction: HloInstruction, shapes: dict[str, Shape], movements: dict[tuple, tuple]
) -> MovementVerdict:
    """``classify_movement`` of the instruction, looked up first among the questions already
    answered (keyed by the shapes' identities)."""
    operand_shape = None
    if len(instruction.operands) == 1:
        operand = instruction.operands[0]
        operand_shape = operand.shape if operand.shape is not None else shapes.get(operand.name)
    key = (instruction.opcode, id(operand_shape), id(instruction.shape), instruction.dimensions)
    known = movements.get(key)
    if known is not None and known[0] is operand_shape and known[1] is instruction.shape:
        return known[2]  # type: ignore[no-any-return]
    movement = classify_movement(instruction, operand_shape)
    movements[key] = (operand_shape, instruction.shape, movement)
    return movement


def _memory_spaces(instruction: HloInstruction, shapes: dict[str, Shape]) -> tuple[int, int] | None:
    """The memory spaces of a bitcast's operand and result, where both are arrays."""
    if len(instruction.operands) != 1:
        return None
    operand = instruction.operands[0]
    src = _as_array(operand.shape if operand.shape is not None else shapes.get(operand.name))  # type: ignore[arg-type]
    dst = _as_array(instruction.shape)
    if src is None or dst is None:
        return None
    return src.effective_layout.memory_space, dst.effective_layout.memory_space


def _fused_bitcast_between_memories(movement: MovementVerdict, spaces: tuple[int, int]) -> MovementVerdict:
    """Inside a fusion, XLA:TPU writes a bitcast between device memory spaces for a fusion that
    copies between them (a "bitcast fusion"): data movement, and valid HLO."""
    return MovementVerdict(
        MOVES_DATA,
        f"a bitcast between memory spaces inside a fusion ({memory_space_reason(*spaces)}): the fusion "
        "copies its operand's bytes into the other memory (XLA:TPU's bitcast fusion)",
        movement.bitcast,
    )


def _finish_rows(pending: _Pending, role: str, rows: list[AuditRow], totals: dict[int, list[int]]) -> None:
    """Append the computation's rows, now that its role is known; add buffers to the totals.

    A bitcast is either data movement or invalid HLO, never both: inside a fusion, one between
    device memory spaces is the fusion's copy between memories (moves data, valid); every other
    bitcast the exact check refutes, and one in or out of host memory ``S(5)`` (XLA's verifier,
    :mod:`layout_algebra.hlo.validity`), is an invalid bitcast, a problem (``audit --strict``)."""
    program = role in ("entry", "control flow")
    for name, opcode, facts, movement, spaces in pending.items:
        problems = facts.problems
        if movement is not None and spaces is not None and spaces[0] != spaces[1]:
            host = host_memory_problem(*spaces, operand_is_constant=False)
            if host is not None:
                problems = (*problems, f"invalid bitcast: {host}")
            elif not program:
                movement = _fused_bitcast_between_memories(movement, spaces)
        if movement is not None:
            invalid = invalid_bitcast(movement)
            if invalid and movement.verdict != MOVES_DATA and invalid not in problems:
                problems = (*problems, invalid)
        row = AuditRow(
            pending.computation,
            name,
            opcode,
            facts.shape,
            role,
            _is_buffer(opcode, pending.is_entry, role),
            facts.logical,
            facts.physical,
            facts.allocated,
            facts.memory_spaces,
            problems,
            movement,
            facts.leaves,
        )
        rows.append(row)
        if row.is_buffer:
            _add_to_totals(totals, row)


@dataclass(frozen=True, slots=True)
class _ShapeFacts:
    """Everything the audit says about a shape alone (shared by its instructions)."""

    shape: Shape
    problems: tuple[str, ...]
    leaves: tuple[tuple[int, SizeReport | None], ...]
    logical: int | None
    physical: int | None
    allocated: int | None
    memory_spaces: tuple[int, ...]


def _shape_facts(shape: Shape, sizes: dict) -> _ShapeFacts:
    problems = list(layout_problems(shape))
    leaves: list[tuple[int, SizeReport | None]] = []
    for leaf in array_leaves(shape):
        report = _leaf_size(leaf, sizes)
        space = leaf.effective_layout.memory_space
        if isinstance(report, str):
            if report not in problems:
                problems.append(report)
            leaves.append((space, None))
        else:
            leaves.append((space, report))
    known = [r for _, r in leaves if r is not None]
    logical: int | None
    physical: int | None
    allocated: int | None
    if len(known) == len(leaves):
        logical = sum(int(r.logical_bytes) for r in known)
        physical = sum(int(r.physical_bytes) for r in known)
        allocated = sum(int(r.first_tile_bytes) for r in known)
    else:
        logical = physical = allocated = None
    spaces = tuple(dict.fromkeys(s for s, _ in leaves))
    return _ShapeFacts(shape, tuple(problems), tuple(leaves), logical, physical, allocated, spaces)


def _add_to_totals(totals: dict[int, list[int]], row: AuditRow) -> None:
    for space, report in row.leaf_sizes:
        t = totals.setdefault(space, [0, 0, 0, 0, 0])
        t[0] += 1
        if report is None:
            t[4] += 1
        else:
            t[1] += int(report.logical_bytes)
            t[2] += int(report.physical_bytes)
            t[3] += int(report.first_tile_bytes)


def _leaf_size(leaf: ArrayShape, sizes: dict) -> SizeReport | str | None:
    """The leaf's size report; a problem text if it has none; ``None`` if its sizes are
    formulas (symbolic dimensions): not a problem, but nothing to add up."""
    if leaf in sizes:
        return sizes[leaf]
    try:
        report: SizeReport | str | None = size_report(leaf)
        if leaf.is_symbolic:
            report = None
    except LayoutSemanticsError as e:
        report = f"no exact size for {leaf}: {e.reason}"
    sizes[leaf] = report
    return report
