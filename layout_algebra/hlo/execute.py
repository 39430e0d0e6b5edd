"""Run an HLO module on real bytes: an executable oracle for rewrite verification.

The rewrite verifier (``layout_algebra.hlo.verify_rewrite``) answers "do these two modules
produce the same root buffer?" with a proof. This module answers the same question by
*running* both modules, for concrete sizes, on random data, the way a device would:

* every parameter is a logical NumPy array, **packed** into its layout's exact bytes
  (``layout_algebra.packing.numpy_eval.pack``) with random junk in the padding bits;
* every data-movement op (``transpose``, ``reshape``, ``slice``, ``pad``, ...) and every
  elementwise op (``add``, ``compare``, ``convert``, ...) runs on logical arrays, with its
  real semantics in NumPy;
* a ``bitcast`` reads the operand's **bytes** through the result's layout
  (``numpy_eval.unpack``): it is the one op whose meaning depends on layouts. As in XLA's
  verifier, one that changes the shape size (``hlo.validity``) is invalid HLO;
* the root is packed into its own layout: that buffer is the answer.

Alongside every value runs a *defined* mask: an element read from padding (by a
``bitcast`` that reads bits no element of the operand occupies) is undefined, and so is
everything computed from it. Padding values are unspecified in XLA, so an undefined root
element is never "the same" as anything.

A transpose is not a bitcast of ``f32[2,3]{1,0}``: the transpose moves the data, the
bitcast keeps the bytes and reads them as ``f32[3,2]{1,0}``:

>>> import numpy as np
>>> from layout_algebra.hlo.execute_compare import compare   # runs both modules, below
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
``formats.numpy_dtype`` of the element type) in parameter-number order, and returns a
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from layout_algebra.hlo.execute_apply import evaluate_in_order
from layout_algebra.hlo.execute_compute import COMPUTE_SEMANTICS
from layout_algebra.hlo.execute_control import CONTROL_OPCODES, run_control
from layout_algebra.hlo.execute_gather import INDEXING_SEMANTICS
from layout_algebra.hlo.execute_ops import (
    MOVEMENT_SEMANTICS,
    ArrayValue,
    UnsupportedOpError,
    Value,
    arity,
    check_result,
    constant_array,
    elementwise,
    iota_array,
    is_constant_through_copies,
)
from layout_algebra.hlo.float_precision import movement_operands_converted
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.opcodes import EXECUTED_ELEMENTWISE_OPCODES
from layout_algebra.hlo.parser import parse_module
from layout_algebra.hlo.validity import (
    InvalidHlo,
    bitcast_shape_sizes,
    bitcast_size_problem,
    host_memory_problem,
    layout_problem,
)
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape
from layout_algebra.model.symbols import as_sympy, dim_symbol
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack

__all__ = [
    "Buffer",
    "run",
]


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


def ones_bits(dims: tuple[int, ...], dtype: np.dtype, where: np.ndarray | None = None) -> np.ndarray:
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


def _packed(value: ArrayValue, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
    """``value``'s buffer in its layout (junk from ``rng`` in padding) and its defined bits."""
    if value.physical is None:
        shape = value.shape
        data = pack(value.data, shape, fill=0)
        ones = ones_bits(value.shape.dimensions, value.data.dtype)
        occupied = pack(ones, shape, fill=0)  # the bits elements occupy
        if rng is not None and occupied.size:
            junk = rng.integers(0, 256, occupied.size, dtype=np.uint8)
            data = data | (junk & ~occupied)
        defined_ones = ones_bits(value.shape.dimensions, value.data.dtype, where=value.defined)
        value.physical = (data, pack(defined_ones, shape, fill=0))
    return value.physical


def _unpacked(data: np.ndarray, defined_bits: np.ndarray, shape: ArrayShape) -> tuple[np.ndarray, np.ndarray]:
    """Read ``data`` through ``shape``'s layout; elements are defined where all their bits are."""
    m = layout_map(shape)
    array = unpack(data, shape)
    defined = _all_bits_set(unpack(defined_bits, shape), m.element_bits)
    return array, defined


# ------------------------------------------------------------------------ the runner
def as_module(module_or_text: HloModule | str) -> HloModule:
    if isinstance(module_or_text, HloModule):
        return module_or_text
    if isinstance(module_or_text, str):
        return parse_module(module_or_text)
    raise TypeError(f"expected an HloModule or HLO text, got {type(module_or_text).__name__}")


def array_shape_at(shape: Shape, sizes: Mapping[str, int], where: str) -> ArrayShape:
    if not isinstance(shape, ArrayShape):
        raise UnsupportedOpError("tuple", f"{where}: expected an array shape, found {shape}")
    if not all(isinstance(d, int) for d in shape.dimensions):
        missing = sorted({str(x) for d in shape.dimensions for x in as_sympy(d).free_symbols} - set(sizes))
        if missing:
            wanted = ", ".join(f"{m!r}: ..." for m in missing)
            raise InvalidHlo(
                f"{where} is {shape}: no value for the size symbol{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}: pass sizes={{{wanted}}} (run infers a symbol from the parameters' arrays, "
                "and from a bitcast's shape size, where one value fits)"
            )
        try:
            shape = shape.specialize(sizes)
        except ValueError as err:
            raise InvalidHlo(f"{where}: {err} (sizes {dict(sizes)})") from None
    problem = layout_problem(shape)
    if problem is not None:  # XLA's LayoutUtil::ValidateLayoutForShape, on every instruction
        raise InvalidHlo(f"{where}: the layout of {shape} is invalid: {problem}")
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
    nested like the root's shape, for a tuple root). Raises :class:`InvalidHlo` for
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
    module = as_module(module_or_text)
    rng = (
        junk
        if isinstance(junk, np.random.Generator)
        else None
        if junk is None
        else np.random.default_rng(junk)
    )
    declared = sum(1 for i in module.entry.instructions if i.opcode == "parameter")
    if len(parameters) != declared:
        raise InvalidHlo(f"the entry computation takes {declared} parameters, {len(parameters)} were given")
    runner = _Runner(module, inferred_sizes(module, parameters, sizes), rng)
    args = [runner.parameter_value(module.entry, k, a) for k, a in enumerate(parameters)]
    check_bitcast_sizes(module, runner.sizes)
    return _root_buffers(runner.computation(module.entry, args), rng)


def given_sizes(sizes: Mapping[Any, Any] | None) -> dict[str, int]:
    """``sizes`` by symbol name, each value checked to be a whole number (quoted if not)."""
    values: dict[str, int] = {}
    for name, value in (sizes or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer, sympy.Integer)):
            raise InvalidHlo(f"sizes[{str(name)!r}] is {value!r}: a size is a whole number")
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
    module = as_module(module_or_text)
    known = given_sizes(sizes)
    for ins in module.entry.instructions:
        number = ins.parameter_number
        if ins.opcode != "parameter" or number is None or not 0 <= number < len(parameters):
            continue
        if not isinstance(ins.shape, ArrayShape):
            continue  # a tuple parameter is read where it is used
        dims = np.shape(parameters[number])
        if len(dims) != ins.shape.rank:
            raise InvalidHlo(
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


def _root_buffers(value: Value, rng: np.random.Generator | None) -> Buffer | tuple[Any, ...]:
    if isinstance(value, tuple):
        return tuple(_root_buffers(v, rng) for v in value)
    data, defined_bits = _packed(value, rng)
    return Buffer(value.shape, data, defined_bits, value.data, value.defined)


def check_bitcast_sizes(module: HloModule, sizes: Mapping[str, int]) -> None:
    """XLA's verifier checks every bitcast, run or not: each keeps its shape size
    (``hlo.validity``), else the module is invalid HLO."""
    for comp, ins in module.instructions():
        if ins.opcode != "bitcast" or len(ins.operand_names) != 1 or ins.operand_names[0] not in comp:
            continue  # a wrong operand is reported where the bitcast runs
        operand = comp.instruction(ins.operand_names[0])
        if isinstance(ins.shape, ArrayShape) and isinstance(operand.shape, ArrayShape):
            # XLA's verifier checks every bitcast, on the path to the root or not
            where = f"instruction {ins.name!r} (a bitcast: every one is checked, run or not)"
            problem = bitcast_size_problem(
                array_shape_at(operand.shape, sizes, where), array_shape_at(ins.shape, sizes, where)
            )
            if problem is not None:
                raise InvalidHlo(f"instruction {ins.name!r}: bitcast {problem}")


#: The compute ops (dot, convolution, reduce, sort, gather, scatter, ...) and further elementwise ops.
COMPUTE_OPS = {**COMPUTE_SEMANTICS, **INDEXING_SEMANTICS}


class _Runner:
    """Evaluates computations of one module at given sizes."""

    def __init__(self, module: HloModule, sizes: dict[str, int], rng: np.random.Generator | None) -> None:
        self.module = module
        self.sizes = sizes
        self.rng = rng

    def shape(self, instruction: HloInstruction) -> ArrayShape:
        return array_shape_at(instruction.shape, self.sizes, f"instruction {instruction.name!r}")

    def parameter_value(self, comp: HloComputation, number: int, array: Any) -> ArrayValue:
        matches = [i for i in comp.instructions if i.opcode == "parameter" and i.parameter_number == number]
        if not matches:
            raise InvalidHlo(f"computation {comp.name!r} has no parameter({number})")
        if isinstance(matches[0].shape, TupleShape):  # a tuple of arrays, nested like the shape
            return self.tuple_value(matches[0], matches[0].shape, array, f"parameter({number})")
        shape = self.shape(matches[0])
        dtype = numpy_dtype(shape.element_type)
        data = np.asarray(array)
        if data.dtype != dtype or data.shape != tuple(shape.dimensions):
            raise InvalidHlo(
                f"parameter({number}) is {shape}: expected a {dtype} array of shape "
                f"{tuple(shape.dimensions)}, got {data.dtype}{list(data.shape)}"
            )
        return ArrayValue(shape, data, np.ones(data.shape, bool))

    def tuple_value(self, ins: HloInstruction, shape: Shape, array: Any, where: str) -> Value:
        """A tuple-shaped parameter's value from a tuple of logical arrays nested like ``shape``."""
        if isinstance(shape, TupleShape):
            if not isinstance(array, (tuple, list)) or len(array) != len(shape.elements):
                raise InvalidHlo(f"{where} is {shape}: expected a tuple of {len(shape.elements)} arrays")
            return tuple(
                self.tuple_value(ins, s, a, f"{where}{{{k}}}")
                for k, (s, a) in enumerate(zip(shape.elements, array, strict=True))
            )
        leaf = array_shape_at(shape, self.sizes, where)
        data = np.asarray(array)
        if data.dtype != numpy_dtype(leaf.element_type) or data.shape != tuple(leaf.dimensions):
            raise InvalidHlo(f"{where} is {leaf}: got a {data.dtype} array of shape {list(data.shape)}")
        return ArrayValue(leaf, data, np.ones(data.shape, bool))

    # ------------------------------------------------------------ evaluation order
    def computation(self, comp: HloComputation, args: Sequence[Value]) -> Value:
        return evaluate_in_order(
            comp, comp.root.name, lambda ins, operands: self.instruction(comp, ins, operands, args)
        )

    def instruction(
        self, comp: HloComputation, ins: HloInstruction, operands: list[Value], args: Sequence[Value]
    ) -> Value:
        op = ins.opcode
        if op == "parameter":
            k = ins.parameter_number
            if k is None or not 0 <= k < len(args):
                raise InvalidHlo(
                    f"instruction {ins.name!r}: parameter({k}) but {comp.name!r} was given {len(args)} arguments"
                )
            if isinstance(ins.shape, TupleShape) or isinstance(args[k], tuple):
                return args[k]
            value = args[k]
            shape = self.shape(ins)
            check_result(ins, shape, value.data)
            if shape.effective_layout != value.shape.effective_layout:
                raise InvalidHlo(
                    f"instruction {ins.name!r}: parameter {shape} is given an operand laid out as {value.shape}"
                )
            return value
        if op == "tuple":
            return tuple(operands)
        if op == "get-tuple-element":
            (t,) = arity(ins, operands, 1)
            if not isinstance(t, tuple) or ins.index is None or not 0 <= ins.index < len(t):
                raise InvalidHlo(
                    f"instruction {ins.name!r}: index={ins.index} of a non-tuple or out of range"
                )
            return t[ins.index]
        if op in CONTROL_OPCODES:
            return run_control(self, ins, operands)
        if op == "fusion":
            called = ins.calls or ((ins.to_apply,) if ins.to_apply else ())
            if len(called) != 1:
                raise InvalidHlo(f"instruction {ins.name!r}: {op} must call one computation")
            try:
                body = self.module.computation(called[0])
            except KeyError:
                raise InvalidHlo(
                    f"instruction {ins.name!r}: {op} calls {called[0]!r}, which the module does not have"
                ) from None
            return self.computation(body, operands)
        if op in COMPUTE_OPS:  # dot, reduce, sort, gather...: execute_compute, execute_gather
            return COMPUTE_OPS[op](self, ins, operands)
        if isinstance(ins.shape, TupleShape):
            raise UnsupportedOpError(
                op, f"instruction {ins.name!r}: op {op!r} with a tuple result is not supported"
            )
        if any(isinstance(o, tuple) for o in operands):
            raise InvalidHlo(f"instruction {ins.name!r}: {op} of a tuple")
        shape = self.shape(ins)
        if op == "bitcast":
            return self.bitcast(comp, ins, shape, operands)
        if op == "constant":
            data = constant_array(ins, shape)
            return ArrayValue(shape, data, np.ones(data.shape, bool))
        if op == "iota":
            data = iota_array(ins, shape)
            return ArrayValue(shape, data, np.ones(data.shape, bool))
        if op in MOVEMENT_SEMANTICS:
            operands = movement_operands_converted(op, shape, operands)  # XLA:TPU's mixed precision
            data, defined = MOVEMENT_SEMANTICS[op](ins, shape, operands)
        elif op in EXECUTED_ELEMENTWISE_OPCODES:
            data, defined = elementwise(ins, shape, operands)
        else:
            raise UnsupportedOpError(
                op, f"instruction {ins.name!r}: op {op!r} is not interpreted by the executor"
            )
        check_result(ins, shape, data)
        return ArrayValue(shape, data, defined)

    def bitcast(
        self, comp: HloComputation, ins: HloInstruction, shape: ArrayShape, operands: list[Value]
    ) -> ArrayValue:
        (a,) = arity(ins, operands, 1)
        # XLA's layout-sensitive HloVerifier (ShapeVerifier::HandleBitcast): hlo.validity;
        # the shape sizes were checked for every bitcast of the module (check_bitcast_sizes)
        space_in, space_out = a.shape.effective_layout.memory_space, shape.effective_layout.memory_space
        host = host_memory_problem(
            space_in, space_out, is_constant_through_copies(comp, ins.operand_names[0])
        )
        if host is not None:
            raise InvalidHlo(f"instruction {ins.name!r}: bitcast {host}")
        if space_in != space_out:
            # valid HLO (S(0) <-> S(1)), but a bitcast moves no data: what the other memory
            # holds there is unknown, in either mode
            dims = tuple(shape.dimensions)
            return ArrayValue(shape, np.zeros(dims, numpy_dtype(shape.element_type)), np.zeros(dims, bool))
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
        return ArrayValue(shape, array, defined)
