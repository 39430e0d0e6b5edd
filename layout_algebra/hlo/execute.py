"""Run an HLO module on real bytes: an executable oracle for rewrite verification.

The rewrite verifier (``layout_algebra.hlo.verify_rewrite``) answers "do these two modules
produce the same root buffer?" with a proof. This module answers the same question by
*running* both modules, for concrete sizes, on random data, the way a device would:

* every parameter is a logical NumPy array, **packed** into its layout's exact bytes
  (``layout_algebra.pack.numpy_eval.pack``) with random junk in the padding bits;
* every data-movement op (``transpose``, ``reshape``, ``slice``, ``pad``, ...) and every
  elementwise op (``add``, ``compare``, ``convert``, ...) runs on logical arrays, with its
  real semantics in NumPy;
* a ``bitcast`` reads the operand's **bytes** through the result's layout
  (``numpy_eval.unpack``): it is the one op whose meaning depends on layouts. As in XLA's
  verifier, one that changes the shape size (``hlo.bitcast_rule``) is invalid HLO;
* the root is packed into its own layout: that buffer is the answer.

Alongside every value runs a *defined* mask: an element read from padding (by a
``bitcast`` that reads bits no element of the operand occupies) is undefined, and so is
everything computed from it. Padding values are unspecified in XLA, so an undefined root
element is never "the same" as anything.

A transpose is not a bitcast of ``f32[2,3]{1,0}``: the transpose moves the data, the
bitcast keeps the bytes and reads them as ``f32[3,2]{1,0}``:

>>> import numpy as np
>>> transposed = '''HloModule m
... ENTRY e {
...   p = f32[2,3]{1,0} parameter(0)
...   ROOT t = f32[3,2]{1,0} transpose(p), dimensions={1,0}
... }'''
>>> bitcast = transposed.replace("transpose(p), dimensions={1,0}", "bitcast(p)")
>>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> run(transposed, [x]).array
array([[0., 3.],
       [1., 4.],
       [2., 5.]], dtype=float32)
>>> run(bitcast, [x]).array
array([[0., 1.],
       [2., 3.],
       [4., 5.]], dtype=float32)
>>> c = compare(transposed, bitcast)
>>> c.same, c.element
(False, (0, 1))
>>> c.detail.startswith("root element (0, 1): before ")   # then the two values
True

With the operand column-major (``{0,1}``), its bytes already are the transpose, and the
two modules agree, bit for bit, on every trial:

>>> col = transposed.replace("f32[2,3]{1,0} parameter", "f32[2,3]{0,1} parameter")
>>> compare(col, col.replace("transpose(p), dimensions={1,0}", "bitcast(p)")).same
True

A bitcast that reads padding is never the same: ``f32[3]{0:T(2)}`` has 4 slots, and
``f32[4]`` read through its bytes takes the 4th slot from the padding.

>>> padded = '''HloModule m
... ENTRY e {
...   p = f32[3]{0:T(2)} parameter(0)
...   ROOT b = f32[4]{0} bitcast(p)
... }'''
>>> r = run(padded, [np.ones(3, np.float32)])
>>> r.defined.tolist()
[True, True, True, False]
>>> compare(padded, padded).same      # even against itself
False

Parameters and results
----------------------
:func:`run` takes the entry parameters as **logical** arrays (dtype exactly
``numpy_eval.numpy_dtype`` of the element type) in parameter-number order, and returns a
:class:`Buffer`: the root's packed bytes, the bits of those bytes that hold defined
elements, and the root's logical array with its defined mask (a tuple root gives a tuple of
:class:`Buffer`). :func:`compare` runs both modules on the same random parameters and says
whether the roots are the same (``Comparison.same``: ``True``, ``False``, or ``None`` with a
``reason`` when an op is not supported).

What "the same" means (the contract of ``DESIGN.md``)
-----------------------------------------------------
``mode="physical"``: same parameter buffers in (the modules must declare identical
parameter shapes, layouts and memory spaces), same root buffer out: the roots have the same
element type and dimensions, the same exact size and XLA allocation
(``layout_algebra.meaning.sizes.size_report``), the same memory space ``S(n)``, every root element
in the same bits (checked deterministically, by packing element numbers), holding the same
value (compared bit for bit) and defined. Root padding is not compared; the bits of a slot
above a sub-byte value (``s4`` without ``E(4)``: a byte per element) are compared, as every op
stores zeros there and a bitcast from packed slots the next element.

``mode="logical"``: the roots' logical arrays are the same function of the parameters'
logical arrays (same type, dimensions, values, all defined: a sub-byte value is the type's
own low bits of its slot); layouts only matter through ``bitcast``. Parameters may have
different layouts on the two sides.

Why random trials are enough here
---------------------------------
For data movement each root element is a fixed choice, independent of the data (except
through ``dynamic-slice`` offsets and ``select`` predicates, which are data too): a copy of
one parameter element, a constant, or undefined. If the two modules choose differently
for some element, the two choices are distinct parameter elements drawn independently and
uniformly over the type's codes (floats of 16 bits or more: normal values and 5% specials),
so one trial misses the difference with the probability that two independent draws are
equal, ``2**-b`` for ``b`` bits of collision entropy: 1 for ``pred``, 4 for ``s4``, 8 for
``s8`` and the f8 types, 16 (capped) for wider integers, and 9 for wider floats (measured:
9.7 bits for bf16, 11.1 for f16, 11.5 for f32 with this distribution). :func:`compare` runs ``max(trials, ceil(48 / b))`` trials, ``b`` the
smallest over every type in both modules, so a real difference is missed with probability
at most ``2**-48`` per element (48 trials for ``pred``, 12 for ``s4``, 6 for floats). Parameter padding
holds fresh random junk per trial and per module, and undefined elements are tracked
exactly besides. Elementwise ops compute their real results, so a rewrite that changes
them is seen on inputs where the functions differ; random inputs find differences that show
on a positive fraction of inputs (``add`` vs ``subtract``), not a difference at one single
input value.

Semantics chosen where XLA leaves a choice: integer arithmetic wraps; integer division by
zero gives -1 (all bits set) and remainder by zero the dividend, ``INT_MIN / -1`` is
``INT_MIN``; float to integer ``convert`` truncates, saturates and maps NaN to 0; bf16 and
the f8/f4 types compute in f32 and round once; ``dynamic-slice`` and
``dynamic-update-slice`` clamp their start indices into ``[0, dim - size]`` as XLA does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import sympy

from layout_algebra.hlo.bitcast_rule import bitcast_shape_sizes, bitcast_size_problem, host_memory_problem
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.parser import parse_module
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import size_report
from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape
from layout_algebra.model.symbols import as_sympy, dim_symbol
from layout_algebra.model.validation import layout_problems
from layout_algebra.pack.numpy_eval import numpy_dtype, pack, unpack

__all__ = [
    "ELEMENTWISE_OPCODES",
    "MOVEMENT_OPCODES",
    "Buffer",
    "Comparison",
    "ExecutionError",
    "InvalidHloError",
    "UnsupportedOpError",
    "compare",
    "run",
]

#: Ops that move data, interpreted exactly.
MOVEMENT_OPCODES = (
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
    "reverse",
    "iota",
    "dynamic-slice",
    "dynamic-update-slice",
    "get-tuple-element",
    "tuple",
    "select",
    "bitcast-convert",
    "fusion",
    "call",
)


class ExecutionError(LayoutAlgebraError, ValueError):
    """A module this executor cannot run (base class)."""


class InvalidHloError(ExecutionError):
    """The module is not valid HLO: an op's operands do not fit its result shape, etc.

    The message names the instruction, quotes its shape and says what is wrong.
    """


class UnsupportedOpError(ExecutionError):
    """An op (or a form of it) the executor does not interpret; ``opcode`` names it."""

    def __init__(self, opcode: str, message: str) -> None:
        self.opcode = opcode
        super().__init__(message)


# ---------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Buffer:
    """The root of a run: its packed bytes and its logical array, each with what is defined.

    ``data`` is the root packed in ``shape``'s layout (1-D ``uint8``; padding holds junk),
    ``defined_bits`` has the same size and a 1 bit exactly where ``data`` holds a bit of a
    defined element. ``array`` is the logical root, ``defined`` its per-element mask.
    """

    shape: ArrayShape
    data: np.ndarray
    defined_bits: np.ndarray
    array: np.ndarray
    defined: np.ndarray


@dataclass
class _Array:
    """An array value during execution: its declared shape, logical data, defined mask."""

    shape: ArrayShape
    data: np.ndarray
    defined: np.ndarray
    physical: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)


_Value = Any  # _Array | tuple[_Value, ...]


def _ones_bits(dims: tuple[int, ...], dtype: np.dtype, where: np.ndarray | None = None) -> np.ndarray:
    """An array of ``dtype`` whose elements have every byte 0xFF (all bits set), or, with
    ``where``, only the elements where it is true (the others all zero bits). Built as bytes,
    so no dtype (``bool`` included) gets the chance to normalise the pattern."""
    raw = np.full((*dims, dtype.itemsize), 0xFF, np.uint8)
    if where is not None:
        raw[~where] = 0
    return raw.view(dtype).reshape(dims)


def _all_bits_set(array: np.ndarray, element_bits: int) -> np.ndarray:
    """Per element: are all of its ``element_bits`` stored bits set (as ``unpack`` returns them)?"""
    raw = array.reshape(*array.shape, 1).view(np.uint8)
    if element_bits < 8:
        mask = (1 << element_bits) - 1
        return (raw[..., 0] & mask) == mask
    return np.all(raw == 0xFF, axis=-1)


def _packed(value: _Array, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
    """``value``'s buffer in its layout (junk from ``rng`` in padding) and its defined bits."""
    if value.physical is None:
        shape = value.shape
        data = pack(value.data, shape, fill=0)
        ones = _ones_bits(value.shape.dimensions, value.data.dtype)
        occupied = pack(ones, shape, fill=0)  # the bits elements occupy
        if rng is not None and occupied.size:
            junk = rng.integers(0, 256, occupied.size, dtype=np.uint8)
            data = data | (junk & ~occupied)
        defined_ones = _ones_bits(value.shape.dimensions, value.data.dtype, where=value.defined)
        value.physical = (data, pack(defined_ones, shape, fill=0))
    return value.physical


def _unpacked(data: np.ndarray, defined_bits: np.ndarray, shape: ArrayShape) -> tuple[np.ndarray, np.ndarray]:
    """Read ``data`` through ``shape``'s layout; elements are defined where all their bits are."""
    m = layout_map(shape)
    array = unpack(data, shape)
    defined = _all_bits_set(unpack(defined_bits, shape), m.element_bits)
    return array, defined


# ------------------------------------------------------------------------ the runner
def _as_module(module_or_text: HloModule | str) -> HloModule:
    if isinstance(module_or_text, HloModule):
        return module_or_text
    if isinstance(module_or_text, str):
        return parse_module(module_or_text)
    raise TypeError(f"expected an HloModule or HLO text, got {type(module_or_text).__name__}")


def _array_shape(shape: Shape, sizes: Mapping[str, int], where: str) -> ArrayShape:
    if not isinstance(shape, ArrayShape):
        raise UnsupportedOpError("tuple", f"{where}: expected an array shape, found {shape}")
    if not all(isinstance(d, int) for d in shape.dimensions):
        missing = sorted({str(x) for d in shape.dimensions for x in as_sympy(d).free_symbols} - set(sizes))
        if missing:
            wanted = ", ".join(f"{m!r}: ..." for m in missing)
            raise InvalidHloError(
                f"{where} is {shape}: no value for the size symbol{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}: pass sizes={{{wanted}}} (run infers a symbol from the parameters' arrays, "
                "and from a bitcast's shape size, where one value fits)"
            )
        try:
            shape = shape.specialize(sizes)
        except ValueError as err:
            raise InvalidHloError(f"{where}: {err} (sizes {dict(sizes)})") from None
    problems = layout_problems(shape)
    e = shape.layout.element_size_in_bits if shape.layout is not None else 0
    if e and e < shape.element_type.bit_width:
        problems.append(f"E({e}) cannot hold a {shape.element_type.text} element")
    if problems:  # XLA's LayoutUtil::ValidateLayoutForShape, on every instruction
        raise InvalidHloError(f"{where}: the layout of {shape} is invalid: {problems[0]}")
    return shape


def run(
    module_or_text: HloModule | str,
    parameters: Sequence[Any],
    *,
    sizes: Mapping[str, int] | None = None,
    junk: np.random.Generator | int | None = None,
) -> Buffer | tuple[Any, ...]:
    """Execute the entry computation on logical ``parameters``; the root's packed buffer.

    ``parameters[k]`` is the logical array of ``parameter(k)`` (dtype exactly
    ``numpy_dtype`` of its element type; a scalar for a rank-0 parameter). Symbolic
    dimensions are given values by ``sizes``. ``junk`` seeds the random bits written into
    every buffer's padding (``None``: zeros). Returns a :class:`Buffer` (a tuple of them,
    nested like the root's shape, for a tuple root). Raises :class:`InvalidHloError` for
    invalid modules and :class:`UnsupportedOpError` for ops it does not interpret.

    >>> import numpy as np
    >>> text = '''HloModule m
    ... ENTRY e {
    ...   p = s32[2,3]{1,0} parameter(0)
    ...   ROOT s = s32[2,2]{0,1} slice(p), slice={[0:2], [1:3]}
    ... }'''
    >>> out = run(text, [np.arange(6, dtype=np.int32).reshape(2, 3)])
    >>> out.array.tolist(), out.data.view(np.int32).tolist()   # {0,1}: column-major bytes
    ([[1, 2], [4, 5]], [1, 4, 2, 5])
    """
    module = _as_module(module_or_text)
    rng = (
        junk
        if isinstance(junk, np.random.Generator)
        else None
        if junk is None
        else np.random.default_rng(junk)
    )
    declared = sum(1 for i in module.entry.instructions if i.opcode == "parameter")
    if len(parameters) != declared:
        raise InvalidHloError(
            f"the entry computation takes {declared} parameters, {len(parameters)} were given"
        )
    runner = _Runner(module, inferred_sizes(module, parameters, sizes), rng)
    args = [runner.parameter_value(module.entry, k, a) for k, a in enumerate(parameters)]
    _check_bitcast_sizes(module, runner.sizes)
    return _root_buffers(runner.computation(module.entry, args), rng)


def _given_sizes(sizes: Mapping[Any, Any] | None) -> dict[str, int]:
    """``sizes`` by symbol name, each value checked to be a whole number (quoted if not)."""
    values: dict[str, int] = {}
    for name, value in (sizes or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer, sympy.Integer)):
            raise InvalidHloError(f"sizes[{str(name)!r}] is {value!r}: a size is a whole number")
        values[str(name)] = int(value)
    return values


def _solved(formula: Any, value: int, known: Mapping[str, int]) -> tuple[str, int] | None:
    """The one unknown symbol of ``formula == value`` and its value, when that is the only
    whole number >= 0 satisfying it (re-checked by substitution); else ``None``."""
    expr = as_sympy(formula).subs({dim_symbol(k): v for k, v in known.items()})
    free = sorted(expr.free_symbols, key=str)
    if len(free) != 1:
        return None
    try:
        roots = sympy.solve(sympy.Eq(expr, value), free[0])
    except (NotImplementedError, TypeError, ValueError):
        return None
    whole = {
        int(r) for r in roots if getattr(r, "is_Integer", False) and r >= 0 and expr.subs(free[0], r) == value
    }
    return (str(free[0]), whole.pop()) if len(whole) == 1 else None


def inferred_sizes(
    module_or_text: HloModule | str, parameters: Sequence[Any], sizes: Mapping[Any, Any] | None = None
) -> dict[str, int]:
    """``sizes``, completed with what the module determines: a parameter's dimension
    formula equals its array's dimension (``f32[N,128]`` given an ``(8, 128)`` array: N = 8;
    ``f32[2*N]`` given 16 elements: N = 8), and a bitcast keeps its shape size, so a symbol
    that only a bitcast carries is the size at which it does (``f32[K]{0} bitcast`` of an
    ``f32[8,128]``: K = 1024). Only a single whole solution is taken; the rest stays unknown.

    >>> text = '''HloModule m
    ... ENTRY e {
    ...   p = f32[2*N,128]{1,0} parameter(0)
    ...   b = f32[K]{0} bitcast(p)
    ...   ROOT c = f32[2*N,128]{1,0} copy(p)
    ... }'''
    >>> inferred_sizes(text, [np.zeros((8, 128), np.float32)])
    {'N': 4, 'K': 1024}
    """
    module = _as_module(module_or_text)
    known = _given_sizes(sizes)
    for ins in module.entry.instructions:
        number = ins.parameter_number
        if ins.opcode != "parameter" or number is None or not 0 <= number < len(parameters):
            continue
        if not isinstance(ins.shape, ArrayShape):
            continue  # a tuple parameter is read where it is used
        dims = np.shape(parameters[number])
        if len(dims) != ins.shape.rank:
            raise InvalidHloError(
                f"parameter({number}) {ins.name!r} is {ins.shape}: expected an array of rank "
                f"{ins.shape.rank}, got one of shape {dims}"
            )
        for formula, actual in zip(ins.shape.dimensions, dims, strict=True):
            found = None if isinstance(formula, int) else _solved(formula, int(actual), known)
            if found is not None:
                known[found[0]] = found[1]
    progress = True
    while progress:  # a symbol only bitcasts carry: the size at which the shape size is kept
        progress = False
        for comp, ins in module.instructions():
            if ins.opcode != "bitcast" or len(ins.operand_names) != 1 or ins.operand_names[0] not in comp:
                continue
            operand = comp.instruction(ins.operand_names[0]).shape
            if not (isinstance(ins.shape, ArrayShape) and isinstance(operand, ArrayShape)):
                continue
            try:
                a, b = bitcast_shape_sizes(operand, ins.shape)
            except (ValueError, TypeError):
                continue  # an invalid shape is reported where it is read
            found = _solved(as_sympy(a) - as_sympy(b), 0, known)
            if found is not None:
                known[found[0]] = found[1]
                progress = True
    return known


def _root_buffers(value: _Value, rng: np.random.Generator | None) -> Buffer | tuple[Any, ...]:
    if isinstance(value, tuple):
        return tuple(_root_buffers(v, rng) for v in value)
    data, defined_bits = _packed(value, rng)
    return Buffer(value.shape, data, defined_bits, value.data, value.defined)


def _check_bitcast_sizes(module: HloModule, sizes: Mapping[str, int]) -> None:
    """XLA's verifier checks every bitcast, run or not: each keeps its shape size
    (``hlo.bitcast_rule``), else the module is invalid HLO."""
    for comp, ins in module.instructions():
        if ins.opcode != "bitcast" or len(ins.operand_names) != 1 or ins.operand_names[0] not in comp:
            continue  # a wrong operand is reported where the bitcast runs
        operand = comp.instruction(ins.operand_names[0])
        if isinstance(ins.shape, ArrayShape) and isinstance(operand.shape, ArrayShape):
            # XLA's verifier checks every bitcast, on the path to the root or not
            where = f"instruction {ins.name!r} (a bitcast: every one is checked, run or not)"
            problem = bitcast_size_problem(
                _array_shape(operand.shape, sizes, where), _array_shape(ins.shape, sizes, where)
            )
            if problem is not None:
                raise InvalidHloError(f"instruction {ins.name!r}: bitcast {problem}")


class _Runner:
    """Evaluates computations of one module at given sizes."""

    def __init__(self, module: HloModule, sizes: dict[str, int], rng: np.random.Generator | None) -> None:
        self.module = module
        self.sizes = sizes
        self.rng = rng

    def shape(self, instruction: HloInstruction) -> ArrayShape:
        return _array_shape(instruction.shape, self.sizes, f"instruction {instruction.name!r}")

    def parameter_value(self, comp: HloComputation, number: int, array: Any) -> _Array:
        matches = [i for i in comp.instructions if i.opcode == "parameter" and i.parameter_number == number]
        if not matches:
            raise InvalidHloError(f"computation {comp.name!r} has no parameter({number})")
        shape = self.shape(matches[0])
        dtype = numpy_dtype(shape.element_type)
        data = np.asarray(array)
        if data.dtype != dtype or data.shape != tuple(shape.dimensions):
            raise InvalidHloError(
                f"parameter({number}) is {shape}: expected a {dtype} array of shape "
                f"{tuple(shape.dimensions)}, got {data.dtype}{list(data.shape)}"
            )
        return _Array(shape, data, np.ones(data.shape, bool))

    # ------------------------------------------------------------ evaluation order
    def computation(self, comp: HloComputation, args: Sequence[_Value]) -> _Value:
        values: dict[str, _Value] = {}
        stack: list[tuple[str, bool]] = [(comp.root.name, False)]
        while stack:
            name, ready = stack.pop()
            if name in values:
                continue
            if name not in comp:
                raise InvalidHloError(f"computation {comp.name!r} has no instruction {name!r}")
            instruction = comp.instruction(name)
            if not ready:
                stack.append((name, True))
                stack.extend((o, False) for o in instruction.operand_names if o not in values)
                continue
            if any(o not in values for o in instruction.operand_names):
                raise InvalidHloError(f"instruction {name!r} depends on itself")
            operands = [values[o] for o in instruction.operand_names]
            values[name] = self.instruction(comp, instruction, operands, args)
        return values[comp.root.name]

    def instruction(
        self, comp: HloComputation, ins: HloInstruction, operands: list[_Value], args: Sequence[_Value]
    ) -> _Value:
        op = ins.opcode
        if op == "parameter":
            k = ins.parameter_number
            if k is None or not 0 <= k < len(args):
                raise InvalidHloError(
                    f"instruction {ins.name!r}: parameter({k}) but {comp.name!r} was given {len(args)} arguments"
                )
            if isinstance(ins.shape, TupleShape) or isinstance(args[k], tuple):
                return args[k]
            value = args[k]
            shape = self.shape(ins)
            _check_result(ins, shape, value.data)
            if shape.effective_layout != value.shape.effective_layout:
                raise InvalidHloError(
                    f"instruction {ins.name!r}: parameter {shape} is given an operand laid out as {value.shape}"
                )
            return value
        if op == "tuple":
            return tuple(operands)
        if op == "get-tuple-element":
            (t,) = _arity(ins, operands, 1)
            if not isinstance(t, tuple) or ins.index is None or not 0 <= ins.index < len(t):
                raise InvalidHloError(
                    f"instruction {ins.name!r}: index={ins.index} of a non-tuple or out of range"
                )
            return t[ins.index]
        if op in ("fusion", "call"):
            called = ins.calls or ((ins.to_apply,) if ins.to_apply else ())
            if len(called) != 1:
                raise InvalidHloError(f"instruction {ins.name!r}: {op} must call one computation")
            try:
                body = self.module.computation(called[0])
            except KeyError:
                raise InvalidHloError(
                    f"instruction {ins.name!r}: {op} calls {called[0]!r}, which the module does not have"
                ) from None
            return self.computation(body, operands)
        if isinstance(ins.shape, TupleShape):
            raise UnsupportedOpError(
                op, f"instruction {ins.name!r}: op {op!r} with a tuple result is not supported"
            )
        if any(isinstance(o, tuple) for o in operands):
            raise InvalidHloError(f"instruction {ins.name!r}: {op} of a tuple")
        shape = self.shape(ins)
        if op == "bitcast":
            return self.bitcast(comp, ins, shape, operands)
        if op == "constant":
            data = _constant(ins, shape)
            return _Array(shape, data, np.ones(data.shape, bool))
        if op == "iota":
            data = _iota(ins, shape)
            return _Array(shape, data, np.ones(data.shape, bool))
        if op in _MOVEMENT:
            data, defined = _MOVEMENT[op](ins, shape, operands)
        elif op in _ELEMENTWISE:
            data, defined = _elementwise(ins, shape, operands)
        else:
            raise UnsupportedOpError(
                op, f"instruction {ins.name!r}: op {op!r} is not interpreted by the executor"
            )
        _check_result(ins, shape, data)
        return _Array(shape, data, defined)

    def bitcast(
        self, comp: HloComputation, ins: HloInstruction, shape: ArrayShape, operands: list[_Value]
    ) -> _Array:
        (a,) = _arity(ins, operands, 1)
        # XLA's layout-sensitive HloVerifier (ShapeVerifier::HandleBitcast): hlo.bitcast_rule;
        # the shape sizes were checked for every bitcast of the module (_check_bitcast_sizes)
        space_in, space_out = a.shape.effective_layout.memory_space, shape.effective_layout.memory_space
        host = host_memory_problem(
            space_in, space_out, _is_constant_through_copies(comp, ins.operand_names[0])
        )
        if host is not None:
            raise InvalidHloError(f"instruction {ins.name!r}: bitcast {host}")
        if space_in != space_out:
            # valid HLO (S(0) <-> S(1)), but a bitcast moves no data: what the other memory
            # holds there is unknown, in either mode
            dims = tuple(shape.dimensions)
            return _Array(shape, np.zeros(dims, numpy_dtype(shape.element_type)), np.zeros(dims, bool))
        data, defined_bits = _packed(a, self.rng)
        need = layout_map(shape).size_in_bytes
        if need > data.size:
            # the same shape size (XLA's allocation: the first tile, L(n)), but the result's
            # exact nested buffer is larger (a later tile that does not divide the first, or an
            # untiled L(n), which XLA's size ignores): the bits past the operand's buffer are unknown
            extra = need - data.size
            junk = self.rng.integers(0, 256, extra, dtype=np.uint8) if self.rng else np.zeros(extra, np.uint8)
            data = np.concatenate([data, junk])
            defined_bits = np.concatenate([defined_bits, np.zeros(extra, np.uint8)])
        array, defined = _unpacked(data[:need], defined_bits[:need], shape)
        return _Array(shape, array, defined)


def _is_constant_through_copies(comp: HloComputation, name: str) -> bool:
    """Whether instruction ``name`` is a ``constant``, or a chain of ``copy`` of one."""
    seen: set[str] = set()
    while name in comp and name not in seen:
        seen.add(name)
        ins = comp.instruction(name)
        if ins.opcode != "copy" or not ins.operand_names:
            return ins.opcode == "constant"
        name = ins.operand_names[0]
    return False


def _arity(ins: HloInstruction, operands: list[_Value], n: int) -> list[_Value]:
    if len(operands) != n:
        raise InvalidHloError(
            f"instruction {ins.name!r}: {ins.opcode} takes {n} operands, got {len(operands)}"
        )
    return operands


def _check_result(ins: HloInstruction, shape: ArrayShape, data: np.ndarray) -> None:
    dims = tuple(shape.dimensions)
    if data.shape != dims:
        raise InvalidHloError(
            f"instruction {ins.name!r}: {ins.opcode} gives dimensions {list(data.shape)}, "
            f"but its shape is {shape}"
        )
    if data.dtype != numpy_dtype(shape.element_type):
        raise InvalidHloError(
            f"instruction {ins.name!r}: {ins.opcode} gives elements of type {data.dtype}, but its shape is {shape}"
        )


def _attribute_ints(ins: HloInstruction, name: str) -> tuple[int, ...]:
    from layout_algebra.hlo.attributes import AttributeValueError, parse_int_list

    if name == "dimensions" and ins.dimensions is not None:
        return ins.dimensions
    text = ins.attributes.get(name)
    if text is None:
        raise InvalidHloError(f"instruction {ins.name!r}: {ins.opcode} needs the attribute {name}={{...}}")
    try:
        return parse_int_list(text)
    except AttributeValueError as err:
        raise InvalidHloError(f"instruction {ins.name!r}: {name}={text}: {err}") from None


def _permutation(ins: HloInstruction, dims: tuple[int, ...], rank: int) -> tuple[int, ...]:
    if sorted(dims) != list(range(rank)):
        raise InvalidHloError(
            f"instruction {ins.name!r}: dimensions={{{','.join(map(str, dims))}}} is not a permutation of {rank} dims"
        )
    return dims


# ------------------------------------------------------------------ data movement
# Each takes (instruction, result shape, operands) and returns (data, defined).


def _reshape(ins, shape, operands):
    (a,) = _arity(ins, operands, 1)
    dims = tuple(shape.dimensions)
    if math.prod(dims) != a.data.size:
        raise InvalidHloError(
            f"instruction {ins.name!r}: reshape of {a.data.size} elements ({a.shape}) into {shape} "
            f"({math.prod(dims)} elements)"
        )
    return a.data.reshape(dims), a.defined.reshape(dims)


def _transpose(ins, shape, operands):
    (a,) = _arity(ins, operands, 1)
    perm = _permutation(ins, _attribute_ints(ins, "dimensions"), a.data.ndim)
    return np.transpose(a.data, perm), np.transpose(a.defined, perm)


def _copy(ins, shape, operands):
    (a,) = _arity(ins, operands, 1)
    return a.data, a.defined


def _slice(ins, shape, operands):
    (a,) = _arity(ins, operands, 1)
    config = ins.slice
    if config is None or len(config) != a.data.ndim:
        raise InvalidHloError(f"instruction {ins.name!r}: slice needs one [start:limit:stride] per dimension")
    for d, s in zip(a.data.shape, config, strict=True):
        if not (0 <= s.start <= s.limit <= d and s.stride >= 1):
            raise InvalidHloError(
                f"instruction {ins.name!r}: slice [{s.start}:{s.limit}:{s.stride}] does not fit a dimension of {d}"
            )
    index = tuple(slice(s.start, s.limit, s.stride) for s in config)
    return a.data[index], a.defined[index]


def _broadcast(ins, shape, operands):
    (a,) = _arity(ins, operands, 1)
    dims = _attribute_ints(ins, "dimensions") if a.data.ndim else ()
    out = tuple(shape.dimensions)
    if len(dims) != a.data.ndim or len(set(dims)) != len(dims) or any(not 0 <= d < len(out) for d in dims):
        raise InvalidHloError(
            f"instruction {ins.name!r}: dimensions={list(dims)} do not map {a.shape} into {shape}"
        )
    if any(a.data.shape[i] != out[d] for i, d in enumerate(dims)):
        raise InvalidHloError(
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
        raise InvalidHloError(f"instruction {ins.name!r}: concatenate needs operands")
    (d,) = _attribute_ints(ins, "dimensions")
    if not 0 <= d < operands[0].data.ndim:  # XLA has no negative dimension numbers (NumPy would count back)
        raise InvalidHloError(
            f"instruction {ins.name!r}: concatenate dimensions={{{d}}} out of range for rank {operands[0].data.ndim}"
        )
    try:
        return (
            np.concatenate([o.data for o in operands], axis=d),
            np.concatenate([o.defined for o in operands], axis=d),
        )
    except (ValueError, np.exceptions.AxisError) as err:
        raise InvalidHloError(f"instruction {ins.name!r}: cannot concatenate along {d}: {err}") from None


def _pad(ins, shape, operands):
    a, value = _arity(ins, operands, 2)
    config = ins.padding
    if config is None or len(config) != a.data.ndim or value.data.ndim != 0:
        raise InvalidHloError(
            f"instruction {ins.name!r}: pad needs a scalar value and one low_high[_interior] per dim"
        )
    out_dims, places = [], []
    for n, p in zip(a.data.shape, config, strict=True):
        if p.interior < 0:
            raise InvalidHloError(f"instruction {ins.name!r}: negative interior padding {p.interior}")
        size = p.low + p.high + n + max(n - 1, 0) * p.interior
        if size < 0:
            raise InvalidHloError(f"instruction {ins.name!r}: padding {p} makes a dimension of {n} negative")
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
    (a,) = _arity(ins, operands, 1)
    dims = _attribute_ints(ins, "dimensions")
    if any(not 0 <= d < a.data.ndim for d in dims):
        raise InvalidHloError(f"instruction {ins.name!r}: reverse dimensions {list(dims)} out of range")
    if len(set(dims)) != len(dims):
        raise InvalidHloError(
            f"instruction {ins.name!r}: reverse dimensions {list(dims)} name a dimension twice"
        )
    return np.flip(a.data, axis=dims).copy(), np.flip(a.defined, axis=dims).copy()


def _start_indices(ins, operands, first: int, rank: int) -> tuple[list[int], bool]:
    """The start indices of a dynamic slice (scalar operands, or one 1-D array), and whether defined."""
    rest = operands[first:]
    if len(rest) == 1 and rest[0].data.ndim == 1 and rank != 1:
        starts, defined = list(rest[0].data), bool(np.all(rest[0].defined))
    else:
        if len(rest) != rank or any(o.data.ndim != 0 for o in rest):
            raise InvalidHloError(f"instruction {ins.name!r}: {ins.opcode} needs {rank} scalar start indices")
        starts, defined = [o.data[()] for o in rest], all(bool(o.defined) for o in rest)
    for o in rest:
        if o.data.dtype.kind not in "iu":
            raise InvalidHloError(
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
        raise InvalidHloError(f"instruction {ins.name!r}: dynamic-slice needs an operand")
    a = operands[0]
    sizes = _attribute_ints(ins, "dynamic_slice_sizes")
    if len(sizes) != a.data.ndim or any(not 0 <= n <= d for n, d in zip(sizes, a.data.shape, strict=True)):
        raise InvalidHloError(
            f"instruction {ins.name!r}: dynamic_slice_sizes={list(sizes)} do not fit {a.shape}"
        )
    starts, known = _start_indices(ins, operands, 1, a.data.ndim)
    window = _clamped(starts, a.data.shape, sizes)
    defined = a.defined[window] & known
    return a.data[window].copy(), defined


def _dynamic_update_slice(ins, shape, operands):
    if len(operands) < 2:
        raise InvalidHloError(
            f"instruction {ins.name!r}: dynamic-update-slice needs an operand and an update"
        )
    a, update = operands[0], operands[1]
    if update.data.ndim != a.data.ndim or any(
        u > d for u, d in zip(update.data.shape, a.data.shape, strict=True)
    ):
        raise InvalidHloError(f"instruction {ins.name!r}: update {update.shape} does not fit in {a.shape}")
    if update.data.dtype != a.data.dtype:
        raise InvalidHloError(
            f"instruction {ins.name!r}: update {update.shape} and operand {a.shape} differ in type"
        )
    starts, known = _start_indices(ins, operands, 2, a.data.ndim)
    window = _clamped(starts, a.data.shape, update.data.shape)
    data, defined = a.data.copy(), a.defined.copy()
    data[window] = update.data
    defined[window] = update.defined
    return data, defined & known


def _select(ins, shape, operands):
    p, t, f = _arity(ins, operands, 3)
    if p.data.dtype != bool:
        raise InvalidHloError(f"instruction {ins.name!r}: select's predicate must be pred, found {p.shape}")
    try:
        data = np.where(p.data, t.data, f.data)
        defined = p.defined & np.where(p.data, t.defined, f.defined)
    except ValueError as err:
        raise InvalidHloError(f"instruction {ins.name!r}: select operands do not match: {err}") from None
    return np.broadcast_to(data, shape.dimensions).copy(), np.broadcast_to(defined, shape.dimensions).copy()


def _bitcast_convert(ins, shape, operands):
    (a,) = _arity(ins, operands, 1)
    dtype = numpy_dtype(shape.element_type)
    if dtype.itemsize != a.data.dtype.itemsize or _type_bits(shape) != _type_bits(a.shape):
        raise UnsupportedOpError(
            "bitcast-convert",
            f"instruction {ins.name!r}: bitcast-convert between widths ({a.shape} to {shape})",
        )
    return a.data.view(dtype), a.defined


_MOVEMENT = {
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


def _type_bits(shape: ArrayShape) -> int:
    return shape.element_type.value.bit_width


def _kind(shape: ArrayShape) -> str:
    return shape.element_type.value.kind


# ------------------------------------------------------------- constants and iota
_LITERAL_TOKEN = re.compile(
    r"\s*(?:([{}(),])|([-+]?(?:inf|nan|[0-9.]+(?:[eE][-+]?[0-9]+)?)|true|false))", re.I
)


def _literal_values(ins: HloInstruction) -> tuple[list[Any], tuple[int, ...]]:
    """The flat values and the nesting dimensions of a ``constant``'s literal text (never eval'd)."""
    text = (ins.literal or "").strip()
    pos, stack = 0, [[]]
    while pos < len(text):
        m = _LITERAL_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise InvalidHloError(
                f"instruction {ins.name!r}: cannot read the literal {text!r} at {text[pos : pos + 10]!r}"
            )
        pos = m.end()
        if m.group(1) in ("(", ")"):
            raise UnsupportedOpError(
                "constant", f"instruction {ins.name!r}: tuple or complex literal {text!r}"
            )
        if m.group(1) == "{":
            stack.append([])
        elif m.group(1) == "}":
            if len(stack) < 2:
                raise InvalidHloError(f"instruction {ins.name!r}: unbalanced braces in the literal {text!r}")
            done = stack.pop()
            stack[-1].append(done)
        elif m.group(2) is not None:
            stack[-1].append(_number(m.group(2)))
        if text[pos:].strip() == "":
            break
    if len(stack) != 1 or len(stack[0]) != 1:
        raise InvalidHloError(
            f"instruction {ins.name!r}: the literal {text!r} is not one value or one nested list"
        )
    top = stack[0][0]
    dims: list[int] = []
    probe = top
    while isinstance(probe, list):
        dims.append(len(probe))
        probe = probe[0] if probe else None
    flat: list[Any] = []

    def walk(node, depth):
        if depth == len(dims):
            if isinstance(node, list):
                raise InvalidHloError(f"instruction {ins.name!r}: ragged literal {text!r}")
            flat.append(node)
            return
        if not isinstance(node, list) or len(node) != dims[depth]:
            raise InvalidHloError(f"instruction {ins.name!r}: ragged literal {text!r}")
        for child in node:
            walk(child, depth + 1)

    walk(top, 0)
    return flat, tuple(dims)


def _number(token: str) -> Any:
    low = token.lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"[-+]?[0-9]+", token):
        return int(token)
    return float(low)


def _constant(ins: HloInstruction, shape: ArrayShape) -> np.ndarray:
    values, dims = _literal_values(ins)
    want = tuple(shape.dimensions)
    if dims != want and not (math.prod(want) == 0 and not values):
        raise InvalidHloError(
            f"instruction {ins.name!r}: the literal has dimensions {list(dims)}, its shape is {shape}"
        )
    return _from_numbers(values, shape, ins).reshape(want)


def _from_numbers(values: list[Any], shape: ArrayShape, ins: HloInstruction) -> np.ndarray:
    dtype = numpy_dtype(shape.element_type)
    kind = _kind(shape)
    if kind == "complex":
        raise UnsupportedOpError("constant", f"instruction {ins.name!r}: complex literals are not supported")
    if kind in ("signed", "unsigned", "pred"):
        if any(isinstance(v, float) for v in values):
            raise InvalidHloError(
                f"instruction {ins.name!r}: {shape.element_type.value.name} literal with a fraction"
            )
        bits = _type_bits(shape)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if kind == "signed" else (0, (1 << bits) - 1)
        if any(not lo <= int(v) <= hi for v in values):
            raise InvalidHloError(f"instruction {ins.name!r}: a literal value is out of range for {shape}")
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


def _iota(ins: HloInstruction, shape: ArrayShape) -> np.ndarray:
    text = ins.attributes.get("iota_dimension")
    if text is None or not re.fullmatch(r"[0-9]+", text.strip()) or not int(text) < len(shape.dimensions):
        raise InvalidHloError(f"instruction {ins.name!r}: iota needs iota_dimension= a dimension of {shape}")
    d = int(text)
    dims = tuple(shape.dimensions)
    counts = np.arange(dims[d], dtype=np.int64).reshape([n if i == d else 1 for i, n in enumerate(dims)])
    counts = np.broadcast_to(counts, dims)
    kind = _kind(shape)
    dtype = numpy_dtype(shape.element_type)
    if kind in ("signed", "unsigned"):
        return _wrap(counts, dtype, _type_bits(shape), kind)
    if kind == "pred":
        return counts != 0
    return counts.astype(np.float64).astype(dtype)


# --------------------------------------------------------------------- elementwise
ELEMENTWISE_OPCODES = (
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor",
    "negate", "abs", "sign", "not", "exponential", "exponential-minus-one", "log", "log-plus-one",
    "tanh", "sine", "cosine", "sqrt", "rsqrt", "floor", "ceil", "convert", "compare", "clamp", "shift-left", "shift-right-arithmetic", "shift-right-logical",
)  # fmt: skip
_ELEMENTWISE = frozenset(ELEMENTWISE_OPCODES)
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


def _elementwise(ins: HloInstruction, shape: ArrayShape, operands: list[_Array]):
    op = ins.opcode
    dims = tuple(shape.dimensions)
    for k, o in enumerate(operands):
        scalar_bound = op == "clamp" and k != 1 and o.data.shape == ()
        if o.data.shape != dims and not scalar_bound:
            raise InvalidHloError(
                f"instruction {ins.name!r}: operand {o.shape} does not match the result {shape}"
            )
    defined = np.ones(dims, bool)
    for o in operands:
        defined = defined & o.defined
    with np.errstate(all="ignore"):
        if op == "convert":
            (a,) = _arity(ins, operands, 1)
            return _convert(a, shape), defined
        if op == "compare":
            return _compare_op(ins, shape, operands), defined
        if op == "clamp":
            lo, x, hi = _arity(ins, operands, 3)
            _same_types(ins, shape, [lo, x, hi])
            return _clamp(lo, x, hi, shape), defined
        _same_types(ins, shape, operands)
        return _arith(ins, shape, [o.data for o in operands]), defined


def _same_types(ins, shape, operands) -> None:
    for o in operands:
        if o.shape.element_type != shape.element_type:
            raise InvalidHloError(
                f"instruction {ins.name!r}: operand {o.shape} and result {shape} differ in type"
            )


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
    op, kind, dtype = ins.opcode, _kind(shape), numpy_dtype(shape.element_type)
    unary = op in _UNARY_FLOAT or op == "not"
    _arity(ins, xs, 1 if unary else 2)
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
        bits = _type_bits(shape)
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


def _values(a: _Array) -> np.ndarray:
    """Exact values for comparisons: int64/uint64 for integers, float64 for floats."""
    kind = _kind(a.shape)
    if kind in ("signed", "unsigned"):
        return _integers(a.data, _type_bits(a.shape), kind)
    if kind == "pred":
        return a.data
    if kind == "complex":
        raise UnsupportedOpError("compare", f"comparing complex values ({a.shape})")
    return a.data.astype(np.float64)


def _compare_op(ins: HloInstruction, shape: ArrayShape, operands: list[_Array]) -> np.ndarray:
    a, b = _arity(ins, operands, 2)
    direction = ins.attributes.get("direction", "").strip()
    if direction not in _COMPARE:
        raise InvalidHloError(
            f"instruction {ins.name!r}: compare needs direction=EQ|NE|LT|LE|GT|GE, got {direction!r}"
        )
    kind = ins.attributes.get("type", "").strip()
    if kind not in ("", "FLOAT", "SIGNED", "UNSIGNED"):
        raise UnsupportedOpError("compare", f"instruction {ins.name!r}: compare type={kind}")
    if _kind(shape) != "pred" or a.shape.element_type != b.shape.element_type:
        raise InvalidHloError(f"instruction {ins.name!r}: compare of {a.shape} and {b.shape} into {shape}")
    return np.asarray(_COMPARE[direction](_values(a), _values(b)))


def _clamp(lo: _Array, x: _Array, hi: _Array, shape: ArrayShape) -> np.ndarray:
    v = np.minimum(np.maximum(_values(x), _values(lo)), _values(hi))
    return _from_values(np.broadcast_to(v, shape.dimensions), shape)


def _from_values(v: np.ndarray, shape: ArrayShape) -> np.ndarray:
    kind, dtype = _kind(shape), numpy_dtype(shape.element_type)
    if kind in ("signed", "unsigned"):
        return _wrap(v, dtype, _type_bits(shape), kind)
    return v.astype(dtype)


def _convert(a: _Array, shape: ArrayShape) -> np.ndarray:
    src, dst = _kind(a.shape), _kind(shape)
    dtype = numpy_dtype(shape.element_type)
    if "complex" in (src, dst):
        raise UnsupportedOpError("convert", f"convert between {a.shape} and {shape}")
    if dst == "pred":
        return _values(a) != 0
    if src == "pred":
        return _from_values(a.data.astype(np.int64), shape)
    if dst in ("signed", "unsigned"):
        bits = _type_bits(shape)
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


# ------------------------------------------------------------------------ compare
@dataclass(frozen=True)
class Comparison:
    """Whether two modules' roots are the same, decided by running them.

    ``same`` is ``True`` (same on every trial and in every check), ``False`` (with the
    first difference: ``element``, the root index, and ``detail``), or ``None`` when the
    executor cannot decide (``reason`` says why, naming the op). ``sizes`` are the values
    the symbolic dimensions had; ``trials`` how many random parameter sets were run.
    """

    same: bool | None
    element: tuple[int, ...] | None = None
    detail: str = ""
    reason: str = ""
    sizes: dict[str, int] = field(default_factory=dict)
    trials: int = 0

    @property
    def status(self) -> str:
        """The package's answer: ``refuted`` when a run found a difference; ``unknown`` otherwise,
        for random trials that agree prove nothing (``same`` says whether they agreed)."""
        return "refuted" if self.same is False else "unknown"

    def __bool__(self) -> bool:
        return False  # an answer is truthy exactly when proved, and running never proves

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the status, ``same``, the first difference, the sizes and trials."""
        return {
            "status": self.status,
            "same": self.same,
            "element": None if self.element is None else [int(i) for i in self.element],
            "detail": self.detail,
            "reason": self.reason,
            "sizes": {str(k): int(v) for k, v in self.sizes.items()},
            "trials": self.trials,
        }


Mode = Literal["physical", "logical"]


def _leaves(shape: Shape, where: str) -> list[Shape]:
    if isinstance(shape, TupleShape):
        return [leaf for s in shape.elements for leaf in _leaves(s, where)]
    return [shape]


def _entry_parameters(module: HloModule, sizes: Mapping[str, int]) -> dict[int, ArrayShape]:
    params = {}
    for ins in module.entry.instructions:
        if ins.opcode == "parameter":
            params[ins.parameter_number] = _array_shape(ins.shape, sizes, f"parameter {ins.name!r}")
    if sorted(params) != list(range(len(params))):
        raise InvalidHloError(
            f"module {module.name!r}: parameter numbers {sorted(params)} are not 0..{len(params) - 1}"
        )
    return params


def _entropy_bits(shape: ArrayShape) -> int:
    """A lower bound on the collision entropy of one element of ``random_array``'s data:
    ``-log2 P(two independent draws are equal)``."""
    kind, bits = _kind(shape), _type_bits(shape)
    if kind == "pred":
        return 1
    if kind in ("float", "complex") and bits > 8:
        return 9  # normal values and 5% specials: measured 9.7 bits for bf16, more for wider types
    return min(bits, 16)


def _module_types(module: HloModule, sizes: Mapping[str, int]) -> list[ArrayShape]:
    shapes = []
    for _, ins in module.instructions():
        for leaf in _leaves(ins.shape, ins.name):
            if isinstance(leaf, ArrayShape):
                shapes.append(leaf)
    return shapes


def random_array(shape: ArrayShape, rng: np.random.Generator) -> np.ndarray:
    """Random logical data for ``shape``: uniform codes for integers, pred and types of at
    most 8 bits; normal values with 5% specials (0, -0, ±1, ±inf, NaN) for wider floats."""
    dims = tuple(int(d) for d in shape.dimensions)
    dtype = numpy_dtype(shape.element_type)
    kind, bits = _kind(shape), _type_bits(shape)
    n = math.prod(dims)
    if kind == "pred":
        return rng.integers(0, 2, dims).astype(bool)
    if kind in ("signed", "unsigned") or bits <= 8:  # uniform codes (ml_dtypes keeps them in the low bits)
        codes = rng.integers(0, 1 << min(bits, 8), (n, dtype.itemsize), dtype=np.uint8)
        return codes.view(dtype).reshape(dims)
    if kind == "complex":
        parts = rng.normal(0.0, 3.0, (n, 2))
        return (parts[:, 0] + 1j * parts[:, 1]).astype(dtype).reshape(dims)
    values = rng.normal(0.0, 3.0, n)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    pick = rng.random(n) < 0.05
    values[pick] = specials[rng.integers(0, len(specials), int(pick.sum()))]
    return values.astype(dtype).reshape(dims)


def _element_order(shape: ArrayShape) -> np.ndarray:
    """Deterministic check data: for each bit of the root buffer, which element holds it.

    Element numbers are written in base ``2**b`` digits, one ``pack`` per digit (``b`` the
    element's bits, at most 8), so each packed buffer names the element at every slot.
    Returns the stacked packed digit buffers (one row per digit)."""
    dims = tuple(shape.dimensions)
    dtype = numpy_dtype(shape.element_type)
    n = math.prod(dims)
    bits = 1 if _kind(shape) == "pred" else min(layout_map(shape).element_bits, 8)
    numbers = np.arange(n, dtype=np.int64)
    rows = []
    digit_count = max(1, math.ceil(math.log2(max(n, 2)) / bits))
    for k in range(digit_count):
        digit = ((numbers >> (k * bits)) & ((1 << bits) - 1)).astype(np.uint8)
        carrier = np.zeros((n, dtype.itemsize), np.uint8)
        carrier[:, 0] = digit  # little-endian: the low byte of the element
        if _kind(shape) == "pred":
            data = digit.astype(bool)
        else:
            data = carrier.view(dtype).reshape(n)
        rows.append(pack(data.reshape(dims), shape, fill=0))
    return np.stack(rows) if rows else np.zeros((0, 0), np.uint8)


def _occupied(shape: ArrayShape) -> np.ndarray:
    dtype = numpy_dtype(shape.element_type)
    return pack(_ones_bits(tuple(shape.dimensions), dtype), shape, fill=0)


def _physical_checks(ra: ArrayShape, rb: ArrayShape) -> tuple[str, tuple[int, ...] | None] | None:
    """Why the two root shapes cannot hold the same buffer, or ``None``."""
    sa, sb = ra.effective_layout.memory_space, rb.effective_layout.memory_space
    if sa != sb:
        return f"root memory spaces differ: S({sa}) before, S({sb}) after", None
    a, b = size_report(ra), size_report(rb)
    if a.element_bits != b.element_bits:  # E(n): part of the buffer, even an empty one
        return f"root element sizes differ: {a.element_bits} bits before, {b.element_bits} after", None
    if (a.physical_bytes, a.first_tile_bytes) != (b.physical_bytes, b.first_tile_bytes):
        return (
            f"root buffer sizes differ: {a.physical_bytes} bytes exact / {a.first_tile_bytes} allocated before, "
            f"{b.physical_bytes} / {b.first_tile_bytes} after",
            None,
        )
    if not np.array_equal(_occupied(ra), _occupied(rb)):
        return "the root elements occupy different bits of the buffer", _first_moved(ra, rb)
    oa, ob = _element_order(ra), _element_order(rb)
    if not np.array_equal(oa & _occupied(ra), ob & _occupied(rb)):
        return "a root element lies at different bits before and after", _first_moved(ra, rb)
    return None


def _first_moved(ra: ArrayShape, rb: ArrayShape) -> tuple[int, ...] | None:
    ma, mb = layout_map(ra), layout_map(rb)
    for index in np.ndindex(*tuple(ra.dimensions)):
        if ma.forward(index, "bit") != mb.forward(index, "bit"):
            return tuple(int(i) for i in index)
    return None


def _bits_equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per element: the same bytes (values compared bit for bit, NaN payloads included)."""
    bx = np.ascontiguousarray(x).reshape(*x.shape, 1).view(np.uint8)
    by = np.ascontiguousarray(y).reshape(*y.shape, 1).view(np.uint8)
    return np.all(bx == by, axis=-1)


def _show(value: Any) -> str:
    item = value.item() if hasattr(value, "item") else value
    return repr(item) if not isinstance(item, float) else str(item)


def compare(
    before: HloModule | str,
    after: HloModule | str,
    *,
    mode: Mode = "physical",
    sizes: Mapping[str, int] | None = None,
    trials: int = 4,
    seed: int = 0,
) -> Comparison:
    """Run ``before`` and ``after`` on the same random parameters; are their roots the same?

    See the module docstring for what "the same" means in each ``mode`` and for the number of
    trials actually run. Raises :class:`InvalidHloError` for invalid modules and
    ``ValueError`` for a bad ``mode``; an op the executor does not interpret gives
    ``same=None`` with the reason.
    """
    if mode not in ("physical", "logical"):
        raise InvalidArgumentError(f"mode must be 'physical' or 'logical', got {mode!r}")
    a, b = _as_module(before), _as_module(after)
    values = _given_sizes(sizes)
    for module in (a, b):  # a symbol only bitcasts carry: where they keep their shape sizes
        values = inferred_sizes(module, (), values)
    try:
        return _compare(a, b, mode, values, trials, seed)
    except UnsupportedOpError as err:
        return Comparison(None, reason=str(err), sizes=values)


def _compare(
    a: HloModule, b: HloModule, mode: str, sizes: dict[str, int], trials: int, seed: int
) -> Comparison:
    for module in (a, b):  # invalid HLO before any answer, as the verifier does
        _check_bitcast_sizes(module, sizes)
    pa, pb = _entry_parameters(a, sizes), _entry_parameters(b, sizes)
    if len(pa) != len(pb) or any(
        pa[k].element_type != pb[k].element_type or tuple(pa[k].dimensions) != tuple(pb[k].dimensions)
        for k in pa
    ):
        raise InvalidHloError(
            f"the modules take different parameters: {[str(pa[k]) for k in sorted(pa)]} before, "
            f"{[str(pb[k]) for k in sorted(pb)]} after"
        )
    if mode == "physical" and any(pa[k] != pb[k] for k in pa):
        k = next(k for k in pa if pa[k] != pb[k])
        return Comparison(
            None, reason=f"physical mode compares modules with the same parameter buffers: parameter({k}) "
            f"is {pa[k]} before, {pb[k]} after", sizes=sizes,
        )  # fmt: skip
    roots_a = [_array_shape(s, sizes, "the root") for s in _leaves(a.entry.root.shape, "root")]
    roots_b = [_array_shape(s, sizes, "the root") for s in _leaves(b.entry.root.shape, "root")]
    if len(roots_a) != len(roots_b):
        return Comparison(
            False, detail=f"the roots have {len(roots_a)} and {len(roots_b)} arrays", sizes=sizes
        )
    for k, (ra, rb) in enumerate(zip(roots_a, roots_b, strict=True)):
        leaf = f" (tuple element {k})" if len(roots_a) > 1 else ""
        if ra.element_type != rb.element_type or tuple(ra.dimensions) != tuple(rb.dimensions):
            return Comparison(
                False, detail=f"the roots differ in type or dimensions: {ra} vs {rb}{leaf}", sizes=sizes
            )
        if mode == "physical":
            problem = _physical_checks(ra, rb)
            if problem is not None:
                return Comparison(False, element=problem[1], detail=problem[0] + leaf, sizes=sizes)
    types = _module_types(a, sizes) + _module_types(b, sizes)
    entropy = min((_entropy_bits(s) for s in types), default=16)
    count = max(trials, math.ceil(48 / entropy))
    rng = np.random.default_rng(seed)
    for trial in range(count):
        params = [random_array(pa[k], rng) for k in sorted(pa)]
        out_a = run(a, params, sizes=sizes, junk=rng)
        out_b = run(b, params, sizes=sizes, junk=rng)
        flat_a, flat_b = _flatten(out_a), _flatten(out_b)
        for k, (xa, xb) in enumerate(zip(flat_a, flat_b, strict=True)):
            leaf = f" (tuple element {k})" if len(flat_a) > 1 else ""
            ca, cb = _compared(xa, mode), _compared(xb, mode)
            bad = ~(xa.defined & xb.defined & _bits_equal(ca, cb))
            if bad.any():
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                return Comparison(
                    False, index, _difference(index, xa, xb, ca, cb) + leaf, sizes=sizes, trials=trial + 1
                )
    return Comparison(True, detail=f"same on {count} random trials", sizes=sizes, trials=count)


def _flatten(value: Any) -> list[Buffer]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _compared(x: Buffer, mode: str) -> np.ndarray:
    """What each root element is compared by (bit for bit, one array element per element).

    Physical mode: the bits its slot stores in the root buffer (``unpack`` of the buffer: for
    a sub-byte type in a wider slot, the bits above the value too; an op stores zeros there,
    a bitcast from packed slots the next elements). Logical mode: its value, the type's own
    bits (for a sub-byte type, the low bits of the slot)."""
    etype = x.shape.element_type
    if mode == "physical":  # whole-byte values fill their slot's bits: the array holds them
        return unpack(x.data, x.shape) if etype.bit_width < 8 else x.array
    if etype.text != "pred" and etype.bit_width < 8:
        codes = np.ascontiguousarray(x.array).view(np.uint8) & ((1 << etype.bit_width) - 1)
        return codes
    return x.array


def _stored_text(values: np.ndarray, index: tuple[int, ...]) -> str:
    raw = np.ascontiguousarray(values[index]).reshape(1)
    code = int.from_bytes(raw.view(np.uint8).tobytes(), "little")
    return f"0x{code:0{2 * raw.dtype.itemsize}x}"


def _difference(index: tuple[int, ...], xa: Buffer, xb: Buffer, ca: np.ndarray, cb: np.ndarray) -> str:
    def side(x: Buffer) -> str:
        return _show(x.array[index]) if x.defined[index] else "undefined (read from padding)"

    before, after = side(xa), side(xb)
    text = f"root element {index}: before {before}, after {after}"
    if before == after and xa.defined[index] and xb.defined[index]:  # equal as printed: show the bits
        text += f" (stored bits {_stored_text(ca, index)} before, {_stored_text(cb, index)} after"
        etype = xa.shape.element_type
        bits = layout_map(xa.shape).element_bits
        if etype.text != "pred" and etype.bit_width < bits:
            text += f": the same {etype.bit_width}-bit value, other bits above it in its {bits}-bit slot"
        text += ")"
    return text
