"""Verify an HLO rewrite: ``before`` and ``after`` compute the same root, for every size.

**The contract.** ``verify_rewrite(before, after, mode=...)`` answers one of two questions.

* ``mode="physical"`` (the default): *given the same parameter buffers, the root buffer
  is the same, bit for bit.* Both modules must have the same parameters, layouts and
  memory spaces included (otherwise the rewrite changes the interface: a ``ValueError``).
  The root buffers must agree in memory space ``S(n)``, element size (``E(n)``), exact
  size in bytes and XLA's allocation size (first-tile padding, ``L(n)``) — for symbolic
  sizes as Z3 obligations under ``assume`` — and every root element must sit at the same
  bit offset and hold the same value, computed from the same parameter elements.
* ``mode="logical"``: *the root's logical array is the same function of the
  parameters' logical arrays*; layouts are free (what layout assignment must preserve),
  except that a ``bitcast`` means "the same bits", so it is read through the layouts of
  its operand and result.

Only data movement is interpreted: ``parameter``, ``constant`` (arrays: element k is the
literal's value k), ``copy``, ``bitcast``, ``reshape``, ``transpose``, ``broadcast``,
``slice``, ``concatenate``, ``pad``, ``reverse``, ``iota``, ``dynamic-slice`` and
``dynamic-update-slice`` (offsets that are scalar parameters or constants, clamped as XLA
clamps them), ``tuple``/``get-tuple-element`` (traced through), ``fusion``/``call``
(inlined). Every elementwise op — unary, binary, ``convert``, ``bitcast-convert``,
``compare``, ``select``, ``clamp`` — is an *uninterpreted function* of its opcode,
attributes and result type, applied element by element: equal inputs give equal outputs,
and nothing more is assumed (``add(a,b)`` and ``add(b,a)`` are not proved equal). Exceptions,
exact: ``compare`` of two known integers (an ``iota`` against a constant) is read as the
comparison, and ``select`` on such a predicate as its choice. With ``float_rules`` (names
from :data:`FLOAT_RULES`, none by default) a narrow float op computed in a wider type
between converts is read as the narrow op where a stated theorem or assumption says so;
a proof that used a rule names it in its ``encoding``.
Deterministic compute ops (``dot``, ``reduce``, ``convolution``, ``gather``, ...) are opaque
arrays: equal when their text (operand subgraphs, attributes, called computations) is.
HLO that XLA's verifier refuses is an error (``InvalidHlo``), for symbolic sizes wherever
the assumptions allow: among others a ``bitcast`` that changes the shape size
(:mod:`layout_algebra.hlo.bitcast_rule`; a ``copy`` of ``f32[N,128]{1,0:T(8,128)}`` into
``f32[N,128]{1,0}`` becomes a bitcast only under ``N % 8 == 0``). A size-keeping bitcast that
changes ``E(n)`` of a sub-byte type (``s4[16]{0:E(4)}`` read as ``s4[8]{0}``) is read bit by
bit: a result slot may hold the next elements above its value (:class:`SlotBits`), which
physical mode compares and logical mode ignores.

**The sizes.** "For every size" means every value >= 0 of each size symbol (XLA allows
zero-size dimensions, so ``assume="N == 0"`` is a question like any other) at which each
parameter's dimension formula is a whole number >= 0 (``f32[N/8,128]``: ``8 | N``, an
implicit fact, as for the layout-level questions), and which satisfies ``assume``.
Assumptions that admit no such sizes raise ``AssumptionsAdmitNoSizes``.

**The answers.** ``proved``: Z3 answered unsat for every size satisfying ``assume``.
``refuted``: a counterexample with concrete ``sizes``, a root ``element`` and what each
side holds there (physical mode: where the element sits on each side, ``placement``, when
the root layouts place it apart — a difference even where the two buffers hold the same
bytes, as the root's layout is part of the result), re-checked by evaluating both modules
at those sizes; a difference that
runs through an uninterpreted op is only reported after the HLO executor
(:mod:`layout_algebra.hlo.execute`) confirms it with the ops' real semantics. ``unknown``:
with the reason (solver timeout, a construct the encoding cannot express, or a difference
under uninterpreted ops that real execution does not show: the rewrite then relies on a
property of those ops, such as commutativity).

>>> before = '''HloModule m
... ENTRY e {
...   p = f32[8,128]{1,0:T(8,128)} parameter(0)
...   ROOT r = f32[1024]{0} reshape(p)
... }'''
>>> verify_rewrite(before, before.replace("reshape", "bitcast")).status  # one tile is row-major
'proved'
>>> wide = before.replace("f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,64)}")
>>> r = verify_rewrite(wide, wide.replace("reshape", "bitcast"))        # 8x64 tiles split rows
>>> r.status, r.counterexample["sizes"]
('refuted', {})
>>> (j,) = r.counterexample["element"]                    # reshape: row-major element j ...
>>> r.counterexample["before"] == f"bit {32 * j}: parameter 0 element {divmod(j, 128)}"
True
>>> r.counterexample["after"].startswith(f"bit {32 * j}: parameter 0 element")  # ... bitcast: another
True

Symbolic sizes: moving a transpose below an elementwise op (what XLA's algebraic
simplifier does) is proved for every N, M; a copy into a tiled layout changes the root's
size unless whole tiles fit, which ``assume`` can say:

>>> sunk = '''HloModule m
... ENTRY e {
...   p = f32[N,M]{1,0} parameter(0)
...   t = f32[M,N]{1,0} transpose(p), dimensions={1,0}
...   ROOT n = f32[M,N]{1,0} negate(t)
... }'''
>>> hoisted = '''HloModule m
... ENTRY e {
...   p = f32[N,M]{1,0} parameter(0)
...   n = f32[N,M]{1,0} negate(p)
...   ROOT t = f32[M,N]{1,0} transpose(n), dimensions={1,0}
... }'''
>>> verify_rewrite(sunk, hoisted).status
'proved'
>>> tiled = '''HloModule m
... ENTRY e {
...   p = f32[N,128]{1,0} parameter(0)
...   ROOT c = f32[N,128]{1,0:T(8,128)} copy(p)
... }'''
>>> plain = tiled.replace("{1,0:T(8,128)} copy", "{1,0} copy")
>>> r = verify_rewrite(tiled, plain)
>>> r.status, r.counterexample["property"], r.counterexample["sizes"]["N"] % 8 != 0
('refuted', 'size in bytes', True)
>>> verify_rewrite(tiled, plain, assume="N % 8 == 0").status
'proved'
>>> verify_rewrite(tiled, plain, mode="logical").status   # the same logical array
'proved'
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy
import z3

from layout_algebra.hlo.attributes import parse_int_list
from layout_algebra.hlo.bitcast_rule import (
    bitcast_shape_sizes,
    bitcast_size_problem,
    host_memory_problem,
    size_text,
)
from layout_algebra.hlo.ir import COMPUTATION_REFERENCE_ATTRIBUTES, HloComputation, HloInstruction, HloModule
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.logical_ops import (
    broadcast_maps_dimensions,
    broadcast_source_index,
    concatenate_source_index,
    concatenate_starts,
    dynamic_slice_clamped_start,
    dynamic_slice_source_index,
    dynamic_update_slice_reads_update,
    dynamic_update_slice_update_index,
    pad_reads_operand,
    pad_size,
    pad_source_index,
    reshape_source_index,
    reverse_dimensions_valid,
    reverse_source_index,
    slice_range_fits,
    slice_size,
    slice_source_index,
    transpose_source_index,
)
from layout_algebra.meaning.sizes import size_report
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.questions import Question
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.assumptions import (
    Assumptions,
    assumption_terms,
    assumptions_hold,
    condition_text,
)
from layout_algebra.prove.core import DEFAULT_TIMEOUT_MS, admitted_assumptions, shape_facts, unless_vacuous
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression, sympy_to_z3
from layout_algebra.prove.query import (
    as_bool,
    differ,
    in_box,
    model_int,
    side_conditions,
    small_model,
    solver_for,
)
from layout_algebra.prove.result import ProofResult

__all__ = [
    "ELEMENTWISE_OPCODES",
    "FLOAT_RULES",
    "MODES",
    "SUPPORTED_OPCODES",
    "InvalidHlo",
    "UnsupportedHlo",
    "float_rules_used",
    "verify_rewrite",
]

#: The two questions a rewrite check can answer.
MODES = ("physical", "logical")

#: Ops read as uninterpreted functions applied element by element.
ELEMENTWISE_OPCODES = frozenset(
    """abs add and atan2 cbrt ceil clamp compare complex convert cosine count-leading-zeros
    divide erf exponential exponential-minus-one floor imag is-finite log log-plus-one logistic
    maximum minimum multiply negate not or popcnt power real reduce-precision remainder
    round-nearest-afz round-nearest-even rsqrt select shift-left shift-right-arithmetic
    shift-right-logical sign sine sqrt subtract tan tanh xor""".split()
)

#: Ops whose index semantics the verifier states exactly.
MOVEMENT_OPCODES = (
    "parameter",
    "constant",
    "copy",
    "bitcast",
    "bitcast-convert",
    "reshape",
    "transpose",
    "broadcast",
    "slice",
    "concatenate",
    "pad",
    "reverse",
    "iota",
    "dynamic-slice",
    "dynamic-update-slice",
    "tuple",
    "get-tuple-element",
    "fusion",
    "call",
)

# Data-movement ops whose result has the element type of their first n operands (None: all).
_TYPE_KEEPING_OPS: dict[str, int | None] = {
    "copy": 1,
    "reshape": 1,
    "transpose": 1,
    "broadcast": 1,
    "slice": 1,
    "reverse": 1,
    "concatenate": None,
    "pad": 2,
    "dynamic-slice": 1,
    "dynamic-update-slice": 2,
}

#: Deterministic ops read as opaque arrays: element j of ``op(operands)`` equals element j of
#: another such op exactly when the op, its attributes and called computations, and its
#: operand subgraphs are the same text (names aside). Enough to carry a ``dot`` or ``reduce``
#: untouched through a rewrite of the data movement around it.
OPAQUE_OPCODES = frozenset(
    "dot convolution reduce reduce-window select-and-scatter scatter gather sort map "
    "cholesky triangular-solve fft".split()
)

#: Ops whose result may differ between two runs of the same text: never "the same".
NONDETERMINISTIC_OPCODES = frozenset(
    "rng rng-bit-generator rng-get-and-update-state infeed recv recv-done custom-call "
    "send send-done outfeed after-all".split()
)

#: Every opcode the verifier understands.
SUPPORTED_OPCODES = tuple(sorted({*MOVEMENT_OPCODES, *ELEMENTWISE_OPCODES, *OPAQUE_OPCODES}))

# Elementwise ops whose operands and result all have one element type.
_SAME_TYPE_OPS = frozenset(
    "add subtract multiply divide maximum minimum power remainder and or xor negate abs "
    "shift-left shift-right-arithmetic shift-right-logical clamp".split()
)
# Attributes that do not change what an op computes.
_INERT_ATTRIBUTES = frozenset(
    {"metadata", "backend_config", "frontend_attributes", "sharding", "statistics", "origin"}
)
#: Named float rules the caller may allow (``verify_rewrite(..., float_rules=...)``); a proof
#: that used one says so in its ``encoding``. Each is a theorem about IEEE-754 rounding, or a
#: stated reading of XLA's semantics; ``tests/hlo/test_float_rules.py`` checks each against exact
#: rational arithmetic on random and special values.
FLOAT_RULES: dict[str, str] = {
    "exact-ops": "a narrow float widened, passed through maximum/minimum/clamp/select/negate/abs/"
    "compare (not TOTALORDER) in the wide type and narrowed again is the narrow op's value (widening is exact and "
    "rounding is monotone and odd); and maximum(x, -inf) = minimum(x, inf) = x; equal up to NaN "
    "payloads, and assuming maximum/minimum pick between +0 and -0 alike in both types",
    "correctly-rounded": "assumes correctly rounded narrow arithmetic: add/subtract/multiply/divide of "
    "two narrow values computed in f32 and rounded to bf16 or f16 equal the narrow op "
    "(double rounding is innocuous when p_wide >= 2 p_narrow + 2); equal up to NaN payloads",
    "mixed-precision": "an op with wide float operands and a narrow float result (allow_mixed_precision) "
    "is the op in the operand type followed by a convert (XLA's float normalization)",
}

# (narrow, wide) float types for which widening is exact and the wide type has at least
# 2 p + 2 bits of precision and the narrow type's exponent range: the pairs tested.
_WIDENINGS = frozenset({("bf16", "f32"), ("f16", "f32")})
# Ops exact on widened values: their wide result is a widened narrow value.
_EXACT_FLOAT_OPS = frozenset({"maximum", "minimum", "clamp", "select", "negate", "abs"})
# Ops rounding commutes with (monotone or odd in each float operand).
_ROUNDING_COMMUTES = _EXACT_FLOAT_OPS
# Binary float ops and their identity elements (Number values).
_IDENTITIES = {"maximum": "-inf", "minimum": "inf"}

# ``compare`` directions on exact integers.
_INTEGER_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "EQ": lambda x, y: x == y,
    "NE": lambda x, y: x != y,
    "LT": lambda x, y: x < y,
    "LE": lambda x, y: x <= y,
    "GT": lambda x, y: x > y,
    "GE": lambda x, y: x >= y,
}


def _is_integer_value(v: Any) -> bool:
    """A Python int or a Z3 integer term (not a string, a fraction or a real)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, z3.ArithRef) and v.sort() == z3.IntSort()


# Correctly rounded basic operations (binary; sqrt is not included: untested).
_ROUNDED_FLOAT_OPS = frozenset({"add", "subtract", "multiply", "divide"})

#: Constants with more elements than this are not expanded (answer: unknown).
MAX_CONSTANT_ELEMENTS = 4096


class InvalidHlo(ValueError):
    """HLO that XLA would reject: the message names the instruction and the problem."""


class UnsupportedHlo(ValueError):
    """HLO the verifier does not read (an opcode, or control flow); the message names it."""


class _Inexpressible(Exception):
    """A construct the encoding cannot express here: the answer is unknown with this reason."""


# ------------------------------------------------------------------------------- values
# The value of one element, as a small tree. Conditions and index terms are Python
# values (concrete evaluation) or Z3 terms (the query).
@dataclass(frozen=True, eq=False)
class Param:
    """Element ``index`` of parameter ``key`` = (number, tuple path)."""

    key: tuple
    index: tuple


@dataclass(frozen=True, eq=False)
class Number:
    """A number of element type ``type``: an exact rational, an index term, or ``'nan'``/``'inf'``/``'-inf'``/``'-0'``."""

    type: str
    value: Any


@dataclass(frozen=True, eq=False)
class App:
    """An uninterpreted elementwise op applied to element values."""

    op: str
    args: tuple


@dataclass(frozen=True, eq=False)
class Choice:
    """``then`` where ``cond`` holds, else ``other`` (index-dependent selection)."""

    cond: Any
    then: Any
    other: Any


@dataclass(frozen=True, eq=False)
class Undefined:
    """Unspecified bits (padding written by an op): never equal to anything."""

    why: str


@dataclass(frozen=True, eq=False)
class SlotBits:
    """The stored bits of one slot wider than its sub-byte element, in ``type``-wide digits,
    low first: ``digits[0]`` is the element's value, the others the bits above it.

    Every op stores a sub-byte element with zeros above it (``numpy_eval.pack``, XLA's
    convention); only a ``bitcast`` into wider slots (``s4[16]{0:E(4)}`` read as ``s4[8]{0}``)
    fills them with the operand's next elements: that result is one of these, made by
    ``bitcast`` (``source`` names it) and read only at the root or by another bitcast."""

    type: str
    digits: tuple
    source: str

    @staticmethod
    def of(value: Any, type_text: str, count: int) -> tuple:
        """``count`` digits of a stored value: its own, or the value and zeros above it."""
        if isinstance(value, SlotBits):
            return (value.digits + (Number(type_text, 0),) * count)[:count]
        return (value, *(Number(type_text, 0) for _ in range(count - 1)))

    @staticmethod
    def pairs(a: Any, b: Any) -> list[tuple[Any, Any]]:
        """The digits of two stored slots, one of them a SlotBits, side by side (as many as
        the wider has; a plain element has zeros above it)."""
        wide = a if isinstance(a, SlotBits) else b
        count = max(len(x.digits) for x in (a, b) if isinstance(x, SlotBits))
        return list(zip(SlotBits.of(a, wide.type, count), SlotBits.of(b, wide.type, count), strict=True))


# ---------------------------------------------------------------- conditions, both kinds
def _known(c: Any) -> bool | None:
    """A condition's truth value when it is known without solving (a bool, or Z3's true/false)."""
    if isinstance(c, bool):
        return c
    if z3.is_true(c):
        return True
    if z3.is_false(c):
        return False
    return None


def _connective(conditions: Sequence[Any], absorbing: bool, combine: Callable[..., Any]) -> Any:
    """``combine`` of the conditions not known without solving: ``absorbing`` as soon as one
    is known to be it (False for "and", True for "or"), the identity if none is left."""
    items = []
    for c in conditions:
        known = _known(c)
        if known is absorbing:
            return absorbing
        if known is None:
            items.append(c)
    return (not absorbing) if not items else items[0] if len(items) == 1 else combine(*items)


def _and(*conditions: Any) -> Any:
    return _connective(conditions, False, z3.And)


def _or(*conditions: Any) -> Any:
    return _connective(conditions, True, z3.Or)


def _not(c: Any) -> Any:
    return (not c) if isinstance(c, bool) else z3.Not(c)


def _ite(c: Any, x: Any, y: Any) -> Any:
    if isinstance(c, bool):
        return x if c else y
    if x is y or (isinstance(x, bool) and isinstance(y, bool) and x == y):
        return x
    return z3.If(c, as_bool(x) if isinstance(x, bool) else x, as_bool(y) if isinstance(y, bool) else y)


def _bool(x: Any) -> Any:
    """A comparison's result: a Python bool for numbers, a Z3 Bool for terms."""
    return bool(x) if isinstance(x, (bool, int)) else x


# ---------------------------------------------------------------------- comparing values
def _differ_values(a: Any, b: Any) -> Any:
    """A condition under which the two element values can differ (uninterpreted ops free)."""
    if isinstance(a, Choice):
        return _ite(a.cond, _differ_values(a.then, b), _differ_values(a.other, b))
    if isinstance(b, Choice):
        return _ite(b.cond, _differ_values(a, b.then), _differ_values(a, b.other))
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        return True
    if isinstance(a, SlotBits) or isinstance(b, SlotBits):  # physical mode, at the root: every digit
        return _or(*(_differ_values(x, y) for x, y in SlotBits.pairs(a, b)))
    if isinstance(a, Param) and isinstance(b, Param):
        if a.key != b.key:
            return True
        return _or(*(_bool(x != y) for x, y in zip(a.index, b.index, strict=True)))
    if isinstance(a, Number) and isinstance(b, Number):
        return _numbers_differ(a, b)
    if isinstance(a, App) and isinstance(b, App):
        if a.op != b.op or len(a.args) != len(b.args):
            return True
        return _or(*(_differ_values(x, y) for x, y in zip(a.args, b.args, strict=True)))
    return True


def _numbers_differ(a: Number, b: Number) -> Any:
    if a.type != b.type:
        return True
    x, y = a.value, b.value
    if isinstance(x, str) or isinstance(y, str):
        return x != y if isinstance(x, str) and isinstance(y, str) else True
    if isinstance(x, (int, Fraction)) and isinstance(y, (int, Fraction)):
        return x != y
    return _bool(_real(x) != _real(y))


def _real(x: Any) -> Any:
    if isinstance(x, Fraction):
        return z3.RealVal(f"{x.numerator}/{x.denominator}")
    if isinstance(x, int):
        return z3.RealVal(x)
    return z3.ToReal(x) if x.sort() == z3.IntSort() else x


def _real_value(v: Any) -> Any:
    """A literal value as a Z3 real; nan, infinities and -0 as named constants (left free:
    a proof then holds whatever they are; a difference is re-checked on exact values)."""
    if isinstance(v, str):
        return z3.Real(f"literal!{v}")
    return _real(v)


def _difference_kind(a: Any, b: Any) -> str | None:
    """Concrete values: ``None`` if equal, ``'data'`` if they differ by data movement alone
    (a real difference), ``'op'`` if the difference runs through an uninterpreted op."""
    if _differ_values(a, b) is False:
        return None
    if isinstance(a, SlotBits) or isinstance(b, SlotBits):
        kinds = {_difference_kind(x, y) for x, y in SlotBits.pairs(a, b)} - {None}
        return "op" if "op" in kinds else "data"
    if isinstance(a, App) or isinstance(b, App):
        return "op"
    return "data"


def _show(v: Any) -> str:
    if isinstance(v, Param):
        number, path = v.key
        where = f"parameter {number}" + "".join(f".{k}" for k in path)
        return f"{where} element {tuple(int(i) for i in v.index)}"
    if isinstance(v, Number):
        value = v.value
        text = (
            str(value) if not isinstance(value, Fraction) or value.denominator != 1 else str(value.numerator)
        )
        return f"{v.type} {text}"
    if isinstance(v, App):
        return f"{v.op.split('|')[0]}({', '.join(_show(a) for a in v.args)})"
    if isinstance(v, Undefined):
        return f"unspecified bits ({v.why})"
    if isinstance(v, SlotBits):
        above = ", ".join(_show(d) for d in v.digits[1:])
        return f"{_show(v.digits[0])} with {above} stored above it in its slot (bitcast {v.source})"
    if isinstance(v, Choice):  # pragma: no cover - concrete values have no choices
        return "a choice"
    return repr(v)


# ------------------------------------------------ slots holding more than their element
def _resized_bitcast_problem(source: ArrayShape, shape: ArrayShape, a: int, b: int) -> str | None:
    """Why a bitcast from ``a``-bit to ``b``-bit slots is beyond the verifier, or ``None``."""
    etype = shape.element_type
    change = f"changes the element size ({a} to {b} bits)"
    if source.element_type != etype:
        return f"{change} and the element type ({source.element_type.text} to {etype.text}), which the verifier does not read"
    w = etype.bit_width
    if etype.text == "pred" or w >= 8:
        return (
            f"{change} of {etype.text} elements: the verifier reads a change of E(n) only for the "
            "sub-byte types other than pred (s4, u4, s2, u2, s1, u1, f4e2m1fn)"
        )
    if a % w or b % w or max(a, b) > 8:
        return (
            f"{change}: the verifier reads a change of E(n) only between slots of whole {w}-bit "
            f"{etype.text} digits, at most 8 bits each"
        )
    return None


def _map_choices(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``leaf`` applied to every alternative of a (possibly index-dependent) value."""
    if isinstance(value, Choice):
        return Choice(value.cond, _map_choices(value.then, leaf), _map_choices(value.other, leaf))
    return leaf(value)


def _digit_of(value: Any, k: int, zero: Number) -> Any:
    """Digit ``k`` (0: the element itself) of a stored slot: zeros above a plain element."""

    def leaf(v: Any) -> Any:
        if isinstance(v, SlotBits):
            return v.digits[k] if k < len(v.digits) else zero
        return v if k == 0 or isinstance(v, Undefined) else zero

    return _map_choices(value, leaf)


def _refuse_slot_bits(value: Any, instr: HloInstruction) -> None:
    """A SlotBits read by anything but the root or a bitcast: beyond the verifier."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Choice):
            stack += [v.then, v.other]
        elif isinstance(v, SlotBits):
            raise UnsupportedHlo(
                f"{instr.opcode} {instr.name} reads the result of bitcast {v.source}, each of whose "
                f"slots holds {len(v.digits)} {v.type} elements (its value and the next ones above "
                "it): the verifier reads such a bitcast only at the root or through another bitcast"
            )


def _defined_where(value: Any) -> Any:
    """The condition under which a (possibly index-dependent) value is not ``Undefined``."""
    if isinstance(value, Choice):
        return _ite(value.cond, _defined_where(value.then), _defined_where(value.other))
    return not isinstance(value, Undefined)


def _whole(value: Any) -> Any:
    """A stored slot as one element: undefined where any of its digits is (an element is
    defined where all the bits of its slot are, as the executor tracks it)."""

    def leaf(v: Any) -> Any:
        if not isinstance(v, SlotBits):
            return v
        defined = _and(*(_defined_where(d) for d in v.digits))
        hole = Undefined(f"bitcast {v.source}: a slot holding unspecified bits")
        if isinstance(defined, bool):
            return v if defined else hole
        return Choice(defined, v, hole)

    return _map_choices(value, leaf)


def _logical_value(value: Any) -> Any:
    """Logical mode: a slot's value is its low digit, defined where every digit is."""
    return _map_choices(_whole(value), lambda v: v.digits[0] if isinstance(v, SlotBits) else v)


# --------------------------------------------------------------------------- literals
_LITERAL_TOKEN = re.compile(r"\s*(\{|\}|,|[^\s{},]+)")


def _literal_elements(text: str, shape: ArrayShape, name: str) -> list:
    """The values of a constant's literal, row-major, checked against its shape."""
    if not all(isinstance(d, int) for d in shape.dimensions):
        raise InvalidHlo(f"constant {name} has symbolic dimensions {shape}")
    count = math.prod(shape.dimensions)
    if count > MAX_CONSTANT_ELEMENTS:
        raise _Inexpressible(f"constant {name} has {count} elements (more than {MAX_CONSTANT_ELEMENTS})")
    if shape.element_type.value.kind not in ("pred", "signed", "unsigned", "float"):
        raise _Inexpressible(f"constant {name}: {shape.element_type.text} literals are not read")
    tokens = [m.group(1) for m in _LITERAL_TOKEN.finditer(text)]
    pos = 0

    def nested(depth: int) -> Any:
        nonlocal pos
        if pos >= len(tokens):
            raise InvalidHlo(f"constant {name}: the literal {text!r} ends early")
        if tokens[pos] == "{":
            pos += 1
            items = []
            while pos < len(tokens) and tokens[pos] != "}":
                items.append(nested(depth + 1))
                if pos < len(tokens) and tokens[pos] == ",":
                    pos += 1
            if pos >= len(tokens):
                raise InvalidHlo(f"constant {name}: '{{' is never closed in {text!r}")
            pos += 1
            return items
        token = tokens[pos]
        pos += 1
        return token

    tree = nested(0)
    if pos != len(tokens):
        raise InvalidHlo(f"constant {name}: unexpected {tokens[pos]!r} in the literal {text!r}")
    flat: list[str] = []

    def walk(node: Any, dims: tuple) -> None:
        if not dims:
            if isinstance(node, list):
                if len(node) == 1 and not isinstance(node[0], list) and shape.rank == 0:
                    flat.append(node[0])
                    return
                raise InvalidHlo(f"constant {name}: the literal {text!r} nests deeper than {shape}")
            flat.append(node)
            return
        if not isinstance(node, list) or len(node) != dims[0]:
            got = len(node) if isinstance(node, list) else "a scalar"
            raise InvalidHlo(
                f"constant {name}: the literal {text!r} has {got} entries where {shape} needs {dims[0]}"
            )
        for item in node:
            walk(item, dims[1:])

    walk(tree, tuple(shape.dimensions))
    return [_literal_value(t, shape.element_type, name) for t in flat]


def _representable(value: Fraction, type_text: str) -> bool:
    """Is ``value`` exactly a finite value of the float type ``type_text``?"""
    import numpy as np

    dtype = _float_dtype(type_text)
    if dtype is None:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = np.asarray(float(value)).astype(dtype)
    return bool(np.isfinite(narrow)) and Fraction(float(narrow)) == value and float(value) == value


def _float_dtype(type_text: str):
    """The NumPy (or ``ml_dtypes``) scalar type that rounds like ``type_text``, or None if none does."""
    from layout_algebra.pack.numpy_eval import numpy_dtype  # lazily: NumPy only when a float literal is read

    try:
        return numpy_dtype(type_text).type
    except ValueError:
        return None


def _literal_value(token: str, etype: PrimitiveType, name: str) -> Any:
    """One literal entry as this element type's value: ints exact, floats rounded to the type."""
    t = token.strip().lower()
    kind = etype.value.kind
    if kind == "pred":
        if t in ("true", "1"):
            return 1
        if t in ("false", "0"):
            return 0
        raise InvalidHlo(f"constant {name}: {token!r} is not a pred value (true or false)")
    if kind in ("signed", "unsigned"):
        try:
            value = int(t)
        except ValueError:
            raise InvalidHlo(f"constant {name}: {token!r} is not an integer ({etype.text})") from None
        bits = etype.bit_width
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if kind == "signed" else (0, (1 << bits) - 1)
        if not lo <= value <= hi:
            raise InvalidHlo(f"constant {name}: {value} is out of the range of {etype.text}")
        return value
    if kind == "float":
        dtype = _float_dtype(etype.text)
        if dtype is None:
            raise _Inexpressible(f"constant {name}: no exact rounding known for {etype.text}")
        if t in ("nan", "+nan"):
            return "nan"
        if t == "-nan":  # a NaN with its sign bit set: other bits than "nan"
            return "-nan"
        try:
            number = float(t)
        except ValueError:
            raise InvalidHlo(f"constant {name}: {token!r} is not a number ({etype.text})") from None
        import numpy as np

        with np.errstate(over="ignore", invalid="ignore"):
            rounded = float(np.asarray(number).astype(dtype))
        if math.isnan(rounded):
            return "nan"
        if math.isinf(rounded):
            return "inf" if rounded > 0 else "-inf"
        if rounded == 0 and math.copysign(1.0, rounded) < 0:
            return "-0"
        return Fraction(rounded)
    raise _Inexpressible(f"constant {name}: {etype.text} literals are not read")


# ----------------------------------------------------------------------------- the module
def _as_module(text_or_module: str | HloModule) -> HloModule:
    from layout_algebra.hlo.parser import parse_module

    return parse_module(text_or_module) if isinstance(text_or_module, str) else text_or_module


def _array(shape: Shape, where: str) -> ArrayShape:
    if not isinstance(shape, ArrayShape):
        raise UnsupportedHlo(f"{where} has the non-array shape {shape}")
    return shape


def _dims_equal(a: Any, b: Any) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return sympy.expand(as_sympy(a) - as_sympy(b)) == 0


def _check_mapped_dims(
    instr: HloInstruction, source: ArrayShape, shape: ArrayShape, pairs: Iterable[tuple[int, int]]
) -> None:
    """Operand dimension ``o`` and result dimension ``r`` have one size, for each ``(o, r)``
    (a transpose's permutation, a broadcast's dimensions); else ``InvalidHlo``."""
    for o, r in pairs:
        if not _dims_equal(source.dimensions[o], shape.dimensions[r]):
            raise InvalidHlo(
                f"{instr.opcode} {instr.name}: operand dimension {o} is {source.dimensions[o]}, "
                f"result dimension {r} is {shape.dimensions[r]}"
            )


def _shape_at(shape: Shape, path: tuple[int, ...], where: str) -> Shape:
    for k in path:
        if not isinstance(shape, TupleShape) or not 0 <= k < len(shape.elements):
            raise InvalidHlo(f"{where}: tuple index {k} does not exist in {shape}")
        shape = shape.elements[k]
    return shape


def _memory_space(shape: ArrayShape) -> int:
    return shape.layout.memory_space if shape.layout is not None else 0


def _instruction(computation: HloComputation, name: str) -> HloInstruction:
    if name not in computation:
        raise InvalidHlo(f"{name!r} is used but not defined in computation {computation.name!r}")
    return computation.instruction(name)


@dataclass
class _Scope:
    """A computation being evaluated; a fused/called one maps its parameters to operands."""

    computation: HloComputation
    bindings: tuple[str, ...] | None = None
    parent: _Scope | None = None


class _Evaluator:
    """The value of any element of any instruction, for index terms of one arithmetic."""

    def __init__(
        self, module: HloModule, mode: str, ar: Any, inputs: dict, rules: frozenset[str] = frozenset()
    ) -> None:
        self.module = module
        self.rules = rules  # the FLOAT_RULES allowed
        self.used: set[str] = set()  # the FLOAT_RULES a value relied on
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
        self._scopes: list[_Scope] = []

    # -------------------------------------------------------------- helpers
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
        with self.ar.branch(cond):
            return thunk()

    def operand(self, scope: _Scope, instr: HloInstruction, k: int) -> HloInstruction:
        if k >= len(instr.operands):
            raise InvalidHlo(f"{instr.opcode} {instr.name} needs at least {k + 1} operands")
        return _instruction(scope.computation, instr.operands[k].name)

    def shape_of(self, scope: _Scope, instr: HloInstruction, path: tuple = ()) -> ArrayShape:
        return _array(_shape_at(instr.shape, path, instr.name), f"{instr.opcode} {instr.name}")

    # -------------------------------------------------------------- elements
    def element(self, scope: _Scope, name: str, index: Sequence[Any], path: tuple = ()) -> Any:
        instr = _instruction(scope.computation, name)
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
            _shape_at(instr.shape, path, instr.name)
            return Param((instr.parameter_number, tuple(path)), tuple(index))
        if op in ("fusion", "call"):
            callee = instr.calls[0] if instr.calls else instr.to_apply
            if callee is None:
                raise InvalidHlo(f"{op} {instr.name} names no computation")
            if not any(c.name == callee for c in self.module.computations):
                raise InvalidHlo(f"{op} {instr.name} calls {callee!r}, which the module does not define")
            inner = _Scope(self.module.computation(callee), instr.operand_names, scope)
            return self.element(inner, inner.computation.root.name, index, path)
        if path:
            raise InvalidHlo(f"{op} {instr.name} is not a tuple but is read as one")
        shape = self.shape_of(scope, instr)
        if len(index) != shape.rank:
            raise InvalidHlo(f"{instr.name} is read with {len(index)} indices but has rank {shape.rank}")
        if op in _TYPE_KEEPING_OPS:
            self.check_element_types(scope, instr, shape)
        return getattr(self, "op_" + op.replace("-", "_"), self.op_elementwise)(
            scope, instr, shape, list(index)
        )

    def fingerprint(self, scope: _Scope, name: str, own_layout: bool = True) -> str:
        """A digest of the text of the subgraph computing ``name`` (names of values left out).

        Every shape is in it with its layout (a ``bitcast`` below reads layouts), except,
        without ``own_layout``, the result's own: an opaque op's values do not depend on it."""
        memo_key = (id(scope), name, own_layout)
        known = self._fingerprints.get(memo_key)
        if known is not None:
            return known
        instr = _instruction(scope.computation, name)
        if instr.opcode in NONDETERMINISTIC_OPCODES:
            raise _Inexpressible(f"{instr.opcode} {instr.name} may give another result on every run")
        if instr.opcode == "parameter" and scope.bindings is not None:
            digest = self.fingerprint(scope.parent, scope.bindings[instr.parameter_number])  # type: ignore[arg-type,index]
        else:
            attributes = sorted(
                (k, v)
                for k, v in instr.attributes.items()
                if k not in _INERT_ATTRIBUTES and k not in COMPUTATION_REFERENCE_ATTRIBUTES
            )
            called = []
            for callee in instr.called_computations:
                if not any(c.name == callee for c in self.module.computations):
                    raise InvalidHlo(
                        f"{instr.opcode} {instr.name} calls {callee!r}, which the module does not define"
                    )
                computation = self.module.computation(callee)
                called.append(self.fingerprint(_Scope(computation), computation.root.name))
            operands = [self.fingerprint(scope, o.name) for o in instr.operands]
            text = repr(
                (
                    instr.opcode,
                    str(instr.shape) if own_layout else _logical_text(instr.shape),
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

    def sub(self, scope: _Scope, instr: HloInstruction, k: int, index: Sequence[Any]) -> Any:
        value = self.element(scope, self.operand(scope, instr, k).name, index)
        if self.slot_bits:
            _refuse_slot_bits(value, instr)
        return value

    def operand_shape(self, scope: _Scope, instr: HloInstruction, k: int) -> ArrayShape:
        o = self.operand(scope, instr, k)
        return self.shape_of(scope, o)

    # -------------------------------------------------------------- data movement
    def op_constant(self, scope, instr, shape, index):
        values = _literal_elements(instr.literal or "", shape, instr.name)
        etype = shape.element_type.text
        if not self.symbolic or all(isinstance(i, int) for i in index):
            flat = 0
            for i, d in zip(index, shape.dimensions, strict=True):
                flat = flat * d + i
            return Number(etype, values[flat])
        if all(v == values[0] for v in values):
            return Number(etype, values[0])
        # one term: the value at the flat index (an If chain), not one choice per element
        flat_term: Any = 0
        for i, d in zip(index, shape.dimensions, strict=True):
            flat_term = flat_term * d + i
        term = _real_value(values[-1])
        for k in range(len(values) - 2, -1, -1):
            term = z3.If(flat_term == k, _real_value(values[k]), term)
        return Number(etype, term)

    def op_copy(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        self.check_same_dims(instr, source, shape)
        return self.sub(scope, instr, 0, index)

    def op_iota(self, scope, instr, shape, index):
        raw = instr.attributes.get("iota_dimension")
        if raw is None or not raw.strip().isdigit() or int(raw) >= shape.rank:
            raise InvalidHlo(f"iota {instr.name} needs iota_dimension in [0, {shape.rank}), got {raw!r}")
        d = int(raw)
        etype = shape.element_type
        size = shape.dimensions[d]
        if etype.value.kind in ("signed", "unsigned") and isinstance(size, int):
            largest = (1 << (etype.bit_width - (etype.value.kind == "signed"))) - 1
            if size - 1 <= largest:  # every index is exactly representable: the value is the index
                return Number(etype.text, index[d])
        # a float, or an index that may not fit: the index converted (uninterpreted)
        return App(f"convert->{etype.text}", (Number("index", index[d]),))

    def op_reshape(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        self.check_count(instr, source, shape)
        return self.sub(
            scope, instr, 0, list(reshape_source_index(index, shape.dimensions, source.dimensions, self.ar))
        )

    def op_transpose(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        perm = instr.dimensions or ()
        if sorted(perm) != list(range(source.rank)) or shape.rank != source.rank:
            raise InvalidHlo(
                f"transpose {instr.name}: dimensions={{{','.join(map(str, perm))}}} is not a permutation of {source.rank} dimensions"
            )
        _check_mapped_dims(instr, source, shape, ((p, k) for k, p in enumerate(perm)))
        return self.sub(scope, instr, 0, list(transpose_source_index(index, perm)))

    def op_broadcast(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        dims = instr.dimensions or ()
        if not broadcast_maps_dimensions(dims, source.rank, shape.rank):
            raise InvalidHlo(
                f"broadcast {instr.name}: dimensions={{{','.join(map(str, dims))}}} does not map the operand's {source.rank} dimensions into {shape.rank}"
            )
        _check_mapped_dims(instr, source, shape, enumerate(dims))
        return self.sub(scope, instr, 0, list(broadcast_source_index(index, dims)))

    def op_reverse(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        self.check_same_dims(instr, source, shape)
        dims = instr.dimensions or ()
        if not reverse_dimensions_valid(dims, shape.rank):
            raise InvalidHlo(
                f"reverse {instr.name}: dimensions={{{','.join(map(str, dims))}}} out of range for rank {shape.rank}"
            )
        sizes = [self.lift(d) for d in shape.dimensions]
        return self.sub(scope, instr, 0, list(reverse_source_index(index, sizes, dims)))

    def op_slice(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        spec = instr.slice or ()
        if len(spec) != source.rank:
            raise InvalidHlo(
                f"slice {instr.name} has {len(spec)} ranges for an operand of rank {source.rank}"
            )
        for k, s in enumerate(spec):
            d = source.dimensions[k]
            if not isinstance(d, int):
                self.requirements.append(
                    (
                        s.limit,
                        d,
                        True,
                        f"slice {instr.name}: [{s.start}:{s.limit}] is out of range for dimension {k} of size {d}",
                    )
                )
            if not slice_range_fits(s.start, s.limit, s.stride, d):
                raise InvalidHlo(
                    f"slice {instr.name}: [{s.start}:{s.limit}:{s.stride}] is out of range for dimension {k} of size {d}"
                )
            size = slice_size(s.start, s.limit, s.stride)
            if not _dims_equal(shape.dimensions[k], size):
                raise InvalidHlo(
                    f"slice {instr.name}: result dimension {k} is {shape.dimensions[k]}, the range [{s.start}:{s.limit}:{s.stride}] has {size}"
                )
        starts, strides = [s.start for s in spec], [s.stride for s in spec]
        return self.sub(scope, instr, 0, list(slice_source_index(index, starts, strides)))

    def op_concatenate(self, scope, instr, shape, index):
        if not instr.dimensions or len(instr.dimensions) != 1:
            raise InvalidHlo(f"concatenate {instr.name} needs one dimension")
        (d,) = instr.dimensions
        if not 0 <= d < shape.rank:
            raise InvalidHlo(
                f"concatenate {instr.name}: dimensions={{{d}}} out of range for rank {shape.rank}"
            )
        sizes = []
        for k in range(len(instr.operands)):
            o_shape = self.operand_shape(scope, instr, k)
            if o_shape.rank != shape.rank or any(
                not _dims_equal(a, b)
                for i, (a, b) in enumerate(zip(o_shape.dimensions, shape.dimensions, strict=False))
                if i != d
            ):
                raise InvalidHlo(
                    f"concatenate {instr.name}: operand {k} {o_shape} does not match {shape} outside dimension {d}"
                )
            sizes.append(o_shape.dimensions[d])
        *starts, total = concatenate_starts(sizes)
        if not _dims_equal(total, shape.dimensions[d]):
            raise InvalidHlo(
                f"concatenate {instr.name}: the operands add up to {total} in dimension {d}, the result has {shape.dimensions[d]}"
            )

        def from_piece(k: int) -> Any:
            src = list(concatenate_source_index(index, d, self.lift(starts[k])))
            if k == len(starts) - 1:
                return self.sub(scope, instr, k, src)
            end = self.lift(starts[k + 1])
            return self.choose(
                _bool(index[d] < end), lambda: self.sub(scope, instr, k, src), lambda: from_piece(k + 1)
            )

        return from_piece(0)

    def op_pad(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        config = instr.padding or ()
        if len(config) != source.rank:
            raise InvalidHlo(f"pad {instr.name} has {len(config)} padding entries for rank {source.rank}")
        if self.operand_shape(scope, instr, 1).rank != 0:
            raise InvalidHlo(f"pad {instr.name}: the padding value must be a scalar")
        for k, (p, d) in enumerate(zip(config, source.dimensions, strict=True)):
            expected = pad_size(p.low, p.high, p.interior, d)
            if p.interior < 0 or not _dims_equal(shape.dimensions[k], expected):
                raise InvalidHlo(
                    f"pad {instr.name}: dimension {k} of {d} padded {p.low}_{p.high}_{p.interior} has {expected} elements, the result has {shape.dimensions[k]}"
                )
        lows, interiors = [p.low for p in config], [p.interior for p in config]
        sizes = [self.lift(d) for d in source.dimensions]
        src = list(pad_source_index(index, lows, interiors, sizes, self.ar))
        inside = _and(*(_bool(c) for c in pad_reads_operand(index, lows, interiors, sizes, self.ar)))
        return self.choose(
            inside, lambda: self.sub(scope, instr, 0, src), lambda: self.sub(scope, instr, 1, [])
        )

    def offsets(
        self, scope, instr, first: int, operand_dims: Sequence[Any], slice_dims: Sequence[Any]
    ) -> list[Any]:
        """Start indices from scalar operands, clamped as XLA does (:func:`dynamic_slice_clamped_start`)."""
        out = []
        for k, (d, s) in enumerate(zip(operand_dims, slice_dims, strict=True)):
            start = self.scalar_int(scope, self.operand(scope, instr, first + k))
            operand_dim, slice_dim = self.lift(d), self.lift(s)
            if isinstance(start, int) and isinstance(operand_dim, int) and isinstance(slice_dim, int):
                out.append(dynamic_slice_clamped_start(start, operand_dim, slice_dim))
            else:
                start = z3.IntVal(start) if isinstance(start, int) else start
                out.append(dynamic_slice_clamped_start(start, operand_dim, slice_dim, z3.If))
        return out

    def is_constant_through_copies(self, scope: _Scope, instr: HloInstruction) -> bool:
        """Whether ``instr`` is a ``constant`` or a chain of ``copy`` of one (XLA's bitcast exemption)."""
        seen: set[str] = set()
        while instr.opcode == "copy" and instr.name not in seen and instr.operands:
            seen.add(instr.name)
            instr = self.operand(scope, instr, 0)
        return instr.opcode == "constant"

    def scalar_int(self, scope: _Scope, instr: HloInstruction) -> Any:
        shape = self.shape_of(scope, instr)
        if shape.rank != 0 or shape.element_type.value.kind not in ("signed", "unsigned"):
            raise InvalidHlo(f"{instr.name} is used as a start index but is {shape}, not an integer scalar")
        if instr.opcode == "constant":
            (value,) = _literal_elements(instr.literal or "", shape, instr.name)
            return value
        if instr.opcode == "copy":
            return self.scalar_int(scope, self.operand(scope, instr, 0))
        if instr.opcode == "parameter":
            if scope.bindings is not None:
                return self.scalar_int(
                    scope.parent,
                    _instruction(scope.parent.computation, scope.bindings[instr.parameter_number]),
                )  # type: ignore[union-attr,index]
            n = instr.parameter_number
            if n not in self.inputs:
                if not self.symbolic:
                    raise _Inexpressible(f"no value for start-index parameter {n}")
                self.inputs[n] = z3.Int(f"param{n}!")  # "!": no size has that name
            return self.inputs[n]
        raise _Inexpressible(
            f"start index {instr.name} is computed by a {instr.opcode}; only parameters and constants are read"
        )

    def op_dynamic_slice(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        raw = instr.attributes.get("dynamic_slice_sizes")
        sizes = parse_int_list(raw) if raw else tuple(shape.dimensions)
        if len(sizes) != source.rank or len(instr.operands) != 1 + source.rank:
            raise InvalidHlo(
                f"dynamic-slice {instr.name} needs {source.rank} sizes and {source.rank} start indices"
            )
        for k, (s, d) in enumerate(zip(sizes, shape.dimensions, strict=True)):
            if not _dims_equal(s, d):
                raise InvalidHlo(
                    f"dynamic-slice {instr.name}: size {s} of dimension {k} but the result has {d}"
                )
            self.require_at_most(
                s,
                source.dimensions[k],
                f"dynamic-slice {instr.name}: size {s} exceeds dimension {k} ({source.dimensions[k]})",
            )
        starts = self.offsets(scope, instr, 1, source.dimensions, sizes)
        return self.sub(scope, instr, 0, list(dynamic_slice_source_index(index, starts)))

    def op_dynamic_update_slice(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        update = self.operand_shape(scope, instr, 1)
        self.check_same_dims(instr, source, shape)
        if update.rank != source.rank or len(instr.operands) != 2 + source.rank:
            raise InvalidHlo(
                f"dynamic-update-slice {instr.name} needs an update of rank {source.rank} and {source.rank} start indices"
            )
        for k, (u, d) in enumerate(zip(update.dimensions, source.dimensions, strict=True)):
            self.require_at_most(
                u, d, f"dynamic-update-slice {instr.name}: the update's dimension {k} ({u}) exceeds {d}"
            )
        starts = self.offsets(scope, instr, 2, source.dimensions, update.dimensions)
        update_dims = [self.lift(u) for u in update.dimensions]
        inside = _and(
            *(_bool(c) for c in dynamic_update_slice_reads_update(index, starts, update_dims, self.ar))
        )
        return self.choose(
            inside,
            lambda: self.sub(scope, instr, 1, list(dynamic_update_slice_update_index(index, starts))),
            lambda: self.sub(scope, instr, 0, index),
        )

    def op_bitcast(self, scope, instr, shape, index):
        operand = self.operand(scope, instr, 0)
        source = self.shape_of(scope, operand)
        out, src = layout_map(shape), layout_map(source)
        # XLA's layout-sensitive verifier (ShapeVerifier::HandleBitcast): hlo.bitcast_rule; the
        # shape sizes are checked for every bitcast of the module first (_check_bitcast_sizes)
        host = host_memory_problem(
            _memory_space(source), _memory_space(shape), self.is_constant_through_copies(scope, operand)
        )
        if host is not None:
            raise InvalidHlo(f"bitcast {instr.name} {host}")
        if _memory_space(shape) != _memory_space(source):  # in either mode: no such array exists
            return Undefined(
                f"bitcast {instr.name} reads a buffer in S({_memory_space(source)}) as if it were in "
                f"S({_memory_space(shape)}): a bitcast cannot move data between memories"
            )
        if out.element_bits != src.element_bits:
            return self.resized_bitcast(scope, instr, operand, shape, source, index)
        position = out.apply(index, self.ar, through=len(out.stages) - 1)[0]
        src_index, is_padding = src.unapply((position,), self.ar, start=len(src.stages) - 1)
        outside = _bool(position >= self.lift(src.size_in_elements))
        hole = _or(_bool(is_padding), outside)

        def padding() -> Any:
            # padding values are unspecified (DESIGN.md), even a parameter's: never "the same"
            return Undefined(
                f"bitcast {instr.name} reads a slot of {operand.name}'s buffer that holds no element"
            )

        if shape.element_type != source.element_type:
            value = self.choose(hole, padding, lambda: self.sub(scope, instr, 0, list(src_index)))
            return App(f"bitcast-convert->{shape.element_type.text}", (value,))
        # the same slots: a slot's stored bits (SlotBits included) are read as they are
        return self.choose(hole, padding, lambda: _whole(self.element(scope, operand.name, list(src_index))))

    def resized_bitcast(self, scope, instr, operand, shape, source, index):
        """A bitcast between slots of two sizes (``E(n)``) of one sub-byte type, both whole
        numbers of the type's w bits and at most a byte (so one divides the other): the buffer
        is a stream of w-bit digits, operand slots of na digits, result slots of nb. A slot
        holding more than its element is a :class:`SlotBits`; an element stored by any other
        op has zeros above it, so a digit above it reads 0."""
        out, src = layout_map(shape), layout_map(source)
        a, b = src.element_bits, out.element_bits
        problem = _resized_bitcast_problem(source, shape, a, b)
        if problem is not None:
            raise UnsupportedHlo(f"bitcast {instr.name} {problem}")
        etype = shape.element_type.text
        w = shape.element_type.bit_width
        na, nb = a // w, b // w
        position = out.apply(index, self.ar, through=len(out.stages) - 1)[0]
        zero = Number(etype, 0)

        def stored(slot: Any) -> Any:  # what operand slot ``slot`` stores
            src_index, is_padding = src.unapply((slot,), self.ar, start=len(src.stages) - 1)
            hole = _or(_bool(is_padding), _bool(slot >= self.lift(src.size_in_elements)))
            return self.choose(
                hole,
                lambda: Undefined(
                    f"bitcast {instr.name} reads bits of {operand.name}'s buffer that hold no element"
                ),
                lambda: _whole(self.element(scope, operand.name, list(src_index))),
            )

        if nb >= na:  # wider slots: result slot q is operand slots q*k .. q*k+k-1, k = nb/na
            k = nb // na
            values = [stored(position * k + s) for s in range(k)]
            digits = tuple(_digit_of(v, d, zero) for v in values for d in range(na))
        else:  # narrower: result slot q is digits (q % r)*nb .. of operand slot q // r, r = na/nb
            r = na // nb
            value, part = stored(self.ar.floordiv(position, r)), self.ar.mod(position, r)

            def digit(t: int) -> Any:
                choice = _digit_of(value, (r - 1) * nb + t, zero)
                for m in range(r - 2, -1, -1):
                    choice = self.choose(
                        _bool(part == m), lambda m=m: _digit_of(value, m * nb + t, zero), lambda c=choice: c
                    )
                return choice

            digits = tuple(digit(t) for t in range(nb))
        if nb == 1:
            return digits[0]
        self.slot_bits.add(instr.name)
        return SlotBits(etype, digits, instr.name)

    def op_bitcast_convert(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        a, b = source.element_type.bit_width, shape.element_type.bit_width
        to = shape.element_type.text
        if source.element_type == shape.element_type:
            self.check_same_dims(instr, source, shape)
            return self.sub(scope, instr, 0, index)
        if a == b:
            self.check_same_dims(instr, source, shape)
            return App(f"bitcast-convert->{to}", (self.sub(scope, instr, 0, index),))
        if a > b:  # narrower result: one more minor dimension, of size a/b
            ratio = a // b
            if (
                a % b
                or shape.rank != source.rank + 1
                or not _dims_equal(shape.dimensions[-1], ratio)
                or any(
                    not _dims_equal(x, y) for x, y in zip(source.dimensions, shape.dimensions, strict=False)
                )
            ):
                raise InvalidHlo(
                    f"bitcast-convert {instr.name}: {source} to {shape} must add a minor dimension of {ratio}"
                )
            inner = self.sub(scope, instr, 0, index[:-1])
            k = index[-1]
            result: Any = App(f"bitcast-convert[{ratio - 1}]->{to}", (inner,))
            for piece in range(ratio - 2, -1, -1):
                result = self.choose(
                    _bool(k == piece),
                    lambda p=piece: App(f"bitcast-convert[{p}]->{to}", (inner,)),
                    lambda r=result: r,
                )
            return result
        ratio = b // a
        if (
            b % a
            or source.rank != shape.rank + 1
            or not _dims_equal(source.dimensions[-1], ratio)
            or any(not _dims_equal(x, y) for x, y in zip(source.dimensions, shape.dimensions, strict=False))
        ):
            raise InvalidHlo(
                f"bitcast-convert {instr.name}: {source} to {shape} must remove a minor dimension of {ratio}"
            )
        return App(
            f"bitcast-convert->{to}", tuple(self.sub(scope, instr, 0, [*index, p]) for p in range(ratio))
        )

    def op_elementwise(self, scope, instr, shape, index):
        op = instr.opcode
        shapes = [self.operand_shape(scope, instr, k) for k in range(len(instr.operands))]
        if not shapes:
            raise InvalidHlo(f"{op} {instr.name} has no operands")
        for k, s in enumerate(shapes):
            # XLA broadcasts a scalar predicate of select and scalar bounds of clamp
            scalar_ok = s.rank == 0 and ((op == "select" and k == 0) or (op == "clamp" and k in (0, 2)))
            if not scalar_ok and (
                s.rank != shape.rank
                or any(not _dims_equal(x, y) for x, y in zip(s.dimensions, shape.dimensions, strict=False))
            ):
                raise InvalidHlo(
                    f"{op} {instr.name}: operand {k} is {s}, the result is {shape} (elementwise ops keep the dimensions)"
                )
        mixed = any(s.element_type != shape.element_type for s in shapes)
        # XLA allows mixed floating-point precision (allow_mixed_precision: TPU's bfloat16
        # propagation writes f32 x f32 -> bf16): then the operand types are part of the op.
        floats = all(t.is_floating_point for t in (shape.element_type, *(s.element_type for s in shapes)))
        compared = {
            s.element_type for s in (shapes if op == "compare" else shapes[1:3] if op == "select" else ())
        }
        if len(compared) > 1 and not all(t.is_floating_point for t in compared):
            raise InvalidHlo(
                f"{op} {instr.name}: its operands have the element types "
                f"{[s.element_type.text for s in shapes]}; {'the compared' if op == 'compare' else 'the chosen'} "
                "operands must have one type"
            )
        if (
            op == "select"
            and len(shapes) == 3
            and shapes[1].element_type != shape.element_type
            and not floats
        ):
            raise InvalidHlo(
                f"select {instr.name}: it chooses {shapes[1].element_type.text} values but its result is {shape}"
            )
        if op in _SAME_TYPE_OPS and mixed and not floats:
            raise InvalidHlo(
                f"{op} {instr.name}: operand types {[s.element_type.text for s in shapes]} differ from the result's {shape.element_type.text}"
            )
        if op == "convert" and shapes[0].element_type == shape.element_type:
            return self.sub(scope, instr, 0, index)
        attributes = ",".join(
            f"{k}={v}" for k, v in sorted(instr.attributes.items()) if k not in _INERT_ATTRIBUTES
        )
        result_type = shape.element_type.text
        types = [s.element_type.text for s in shapes]
        suffix = ""
        if op in _SAME_TYPE_OPS and mixed:
            suffix = ",".join(types)
        elif op == "convert":
            suffix = types[0]
        args = tuple(
            self.sub(scope, instr, k, [] if s.rank == 0 and shape.rank else index)
            for k, s in enumerate(shapes)
        )
        exact = self.integer_compare_or_select(instr, op, shapes, args)
        if exact is not None:
            return exact
        if self.rules:
            normal = self.float_normal_form(op, attributes, result_type, types, args, mixed)
            if normal is not None:
                value, used = normal
                self.used |= used
                return value
        return self.app(op, attributes, result_type, args, suffix)

    # -------------------------------------------------------------- exact integer compares
    def integer_compare_or_select(
        self, instr: HloInstruction, op: str, shapes: list[ArrayShape], args: tuple
    ) -> Any:
        """``compare`` of two known integers is their comparison (exact: integers are not
        rounded), a ``pred`` value; ``select`` on such a known ``pred`` picks its operand.
        ``None`` for every other case (the op stays uninterpreted)."""
        if op == "compare" and len(args) == 2 and all(isinstance(a, Number) for a in args):
            kind = shapes[0].element_type.value.kind
            direction = instr.attributes.get("direction", "")
            extra = set(instr.attributes) - {"direction", "type"} - _INERT_ATTRIBUTES
            compare_type = instr.attributes.get("type", "SIGNED" if kind == "signed" else "UNSIGNED")
            if (
                kind not in ("signed", "unsigned")
                or extra
                or compare_type != ("SIGNED" if kind == "signed" else "UNSIGNED")
                or direction not in _INTEGER_COMPARISONS
                or not all(_is_integer_value(a.value) for a in args)
            ):
                return None
            holds = _INTEGER_COMPARISONS[direction](args[0].value, args[1].value)
            if isinstance(holds, bool):
                return Number("pred", int(holds))
            return Number("pred", z3.If(holds, 1, 0))
        if op == "select" and len(args) == 3 and isinstance(args[0], Number) and args[0].type == "pred":
            value = args[0].value
            if isinstance(value, int):
                return args[1] if value else args[2]
            if _is_integer_value(value):
                return Choice(value == 1, args[1], args[2])
        return None

    # -------------------------------------------------------------- float rules
    def app(self, op: str, attributes: str, result_type: str, args: Sequence[Any], suffix: str = "") -> App:
        """The uninterpreted ``op`` applied to ``args``; its key names op, attributes and types."""
        key = f"{op}|{attributes}|{result_type}" + (f"|{suffix}" if suffix else "")
        self.app_info[key] = (op, attributes, result_type)
        return App(key, tuple(args))

    def float_normal_form(
        self, op: str, attributes: str, result_type: str, types: list[str], args: tuple, mixed: bool
    ) -> tuple[Any, frozenset[str]] | None:
        """An elementwise op's value rewritten by the allowed FLOAT_RULES, or ``None``.

        ``convert`` to a narrow type of a wide computation on widened narrow values is read
        as the narrow computation; ``compare`` of two widened values as the compare of the
        narrow ones; a mixed-precision op as the op in the wide type, then ``convert``."""
        if op in _SAME_TYPE_OPS and mixed and "mixed-precision" in self.rules:
            (wide, *others) = types
            if any(t != wide for t in others) or (result_type, wide) not in _WIDENINGS:
                return None
            inner = self.app(op, attributes, wide, args)
            narrowed = self.rounded(inner, result_type, wide)
            if narrowed is not None:
                return narrowed[0], narrowed[1] | {"mixed-precision"}
            return self.app("convert", "", result_type, (inner,), wide), frozenset({"mixed-precision"})
        if op == "convert" and (result_type, types[0]) in _WIDENINGS:
            return self.rounded(args[0], result_type, types[0])
        if op in _IDENTITIES and len(args) == 2 and not mixed and "exact-ops" in self.rules:
            return self.identity_dropped(op, attributes, result_type, args)
        # (not TOTALORDER: a conversion may quiet a signaling NaN, which reorders NaN payloads)
        if op == "compare" and len(args) == 2 and types[0] == types[1] and "TOTALORDER" not in attributes:
            for narrow, wide in sorted(_WIDENINGS):
                if wide != types[0]:
                    continue
                x, y = self.exactly_narrow(args[0], narrow, wide), self.exactly_narrow(args[1], narrow, wide)
                if x is not None and y is not None:
                    return self.app(op, attributes, result_type, (x[0], y[0])), x[1] | y[1]
        return None

    def identity_dropped(
        self, op: str, attributes: str, result_type: str, args: tuple
    ) -> tuple[Any, frozenset[str]] | None:
        """``maximum(x, -inf)`` is ``x``, ``minimum(x, inf)`` is ``x`` (for every float ``x``,
        NaN too, up to its payload): where an operand is the op's identity (under the
        index conditions of pads and selects), the other operand. ``None`` if none is."""
        identity = _IDENTITIES[op]

        def is_identity(v: Any) -> bool:
            return isinstance(v, Number) and v.type == result_type and v.value == identity

        def leaves(v: Any) -> list[Any]:
            return leaves(v.then) + leaves(v.other) if isinstance(v, Choice) else [v]

        x_leaves, y_leaves = leaves(args[0]), leaves(args[1])
        if not any(map(is_identity, x_leaves + y_leaves)) or len(x_leaves) * len(y_leaves) > 64:
            return None

        def combine(x: Any, y: Any) -> Any:
            if isinstance(x, Choice):
                return Choice(x.cond, combine(x.then, y), combine(x.other, y))
            if isinstance(y, Choice):
                return Choice(y.cond, combine(x, y.then), combine(x, y.other))
            if is_identity(x):
                return y
            if is_identity(y):
                return x
            return self.app(op, attributes, result_type, (x, y))

        return combine(*args), frozenset({"exact-ops"})

    def exactly_narrow(self, u: Any, narrow: str, wide: str) -> tuple[Any, frozenset[str]] | None:
        """``v`` with ``u == widen(v)`` exactly (``u`` of type ``wide``, ``v`` of ``narrow``), or None."""
        if "exact-ops" not in self.rules:
            return None
        exact = frozenset({"exact-ops"})
        if isinstance(u, Number):
            if u.type != wide:
                return None
            if isinstance(u.value, str):  # nan, inf, -inf, -0 exist in both types
                return Number(narrow, u.value), exact
            if isinstance(u.value, (int, Fraction)) and _representable(Fraction(u.value), narrow):
                return Number(narrow, u.value), exact
            return None
        if isinstance(u, Choice):
            then = self.exactly_narrow(u.then, narrow, wide)
            other = self.exactly_narrow(u.other, narrow, wide)
            if then is None or other is None:
                return None
            return Choice(u.cond, then[0], other[0]), then[1] | other[1]
        if not isinstance(u, App) or u.op not in self.app_info:
            return None
        op, attributes, result_type = self.app_info[u.op]
        if result_type != wide:
            return None
        if op == "convert" and u.op == f"convert|{attributes}|{wide}|{narrow}":
            return u.args[0], exact
        if op in _EXACT_FLOAT_OPS and u.op == f"{op}|{attributes}|{wide}":
            return self.narrow_args(u, op, attributes, narrow, lambda a: self.exactly_narrow(a, narrow, wide))
        return None

    def rounded(self, u: Any, narrow: str, wide: str) -> tuple[Any, frozenset[str]] | None:
        """``v`` with ``convert_narrow(u) == v`` (``u`` of type ``wide``), by the rules, or None."""
        exact = self.exactly_narrow(u, narrow, wide)
        if exact is not None:
            return exact
        if isinstance(u, Choice):
            then, other = self.rounded(u.then, narrow, wide), self.rounded(u.other, narrow, wide)
            if then is None or other is None:
                return None
            return Choice(u.cond, then[0], other[0]), then[1] | other[1]
        if not isinstance(u, App) or u.op not in self.app_info or "exact-ops" not in self.rules:
            return None
        op, attributes, result_type = self.app_info[u.op]
        if result_type != wide or u.op != f"{op}|{attributes}|{wide}":
            return None
        if op in _ROUNDING_COMMUTES:  # round(max(x, y)) = max(round(x), round(y)), ...
            return self.narrow_args(u, op, attributes, narrow, lambda a: self.rounded(a, narrow, wide))
        if op in _ROUNDED_FLOAT_OPS and "correctly-rounded" in self.rules:
            found = self.narrow_args(
                u, op, attributes, narrow, lambda a: self.exactly_narrow(a, narrow, wide)
            )
            if found is not None:
                return found[0], found[1] | {"correctly-rounded"}
        return None

    def narrow_args(
        self, u: App, op: str, attributes: str, narrow: str, each: Callable[[Any], Any]
    ) -> tuple[Any, frozenset[str]] | None:
        """``op`` in the narrow type on ``each`` of ``u``'s float arguments (a select's
        predicate kept), or None if one has no narrow form."""
        args: list[Any] = []
        used: frozenset[str] = frozenset({"exact-ops"})
        for k, a in enumerate(u.args):
            if op == "select" and k == 0:
                args.append(a)
                continue
            found = each(a)
            if found is None:
                return None
            args.append(found[0])
            used |= found[1]
        if op in _IDENTITIES and len(args) == 2:
            dropped = self.identity_dropped(op, attributes, narrow, tuple(args))
            if dropped is not None:
                return dropped[0], used
        return self.app(op, attributes, narrow, args), used

    # -------------------------------------------------------------- checks
    def check_element_types(self, scope: _Scope, instr: HloInstruction, shape: ArrayShape) -> None:
        """A data-movement op's result has its data operands' element type (XLA rejects
        ``s32[4] copy(f32[4])``; a bitcast or a convert is the op that changes it)."""
        count = _TYPE_KEEPING_OPS[instr.opcode] or len(instr.operands)
        for k in range(min(count, len(instr.operands))):
            source = self.operand_shape(scope, instr, k)
            if source.element_type != shape.element_type:
                raise InvalidHlo(
                    f"{instr.opcode} {instr.name}: operand {k} is {source}, but the result {shape} has "
                    f"another element type (a data-movement op keeps it; convert or bitcast changes it)"
                )

    def check_same_dims(self, instr, source: ArrayShape, shape: ArrayShape) -> None:
        if source.rank != shape.rank or any(
            not _dims_equal(x, y) for x, y in zip(source.dimensions, shape.dimensions, strict=False)
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


# ------------------------------------------------------------------- specialization
def _specialize_module(module: HloModule, values: Mapping[Any, int]) -> HloModule:
    """The module with every array shape's symbolic sizes given ``values``."""
    return map_array_shapes(module, lambda shape: shape.specialize(values))


def map_array_shapes(module: HloModule, f: Callable[[ArrayShape], ArrayShape]) -> HloModule:
    """The module with ``f`` applied to every array shape (inside tuples too) of every
    instruction and operand: sizes given values, or symbols replaced by expressions."""

    def shape_at(shape: Any) -> Any:
        if isinstance(shape, ArrayShape):
            return f(shape)
        if isinstance(shape, TupleShape):
            return dataclasses.replace(shape, elements=tuple(shape_at(s) for s in shape.elements))
        return shape

    def computation(c: HloComputation) -> HloComputation:
        instructions = tuple(
            dataclasses.replace(
                i,
                shape=shape_at(i.shape),
                operands=tuple(dataclasses.replace(o, shape=shape_at(o.shape)) for o in i.operands),
            )
            for i in c.instructions
        )
        return dataclasses.replace(c, instructions=instructions)

    computations = tuple(computation(c) for c in module.computations)
    entry = next(c for c in computations if c.name == module.entry.name)
    return dataclasses.replace(module, computations=computations, entry=entry)


# ------------------------------------------------------------------------ the checks
def _parameters(module: HloModule) -> dict[int, Shape]:
    return {i.parameter_number: i.shape for i in module.entry.instructions if i.opcode == "parameter"}  # type: ignore[misc]


def _parameter_arrays(*modules: HloModule) -> tuple[ArrayShape, ...]:
    """The array shapes of the entry parameters (inside tuples too) of the modules: their
    dimension formulas must be sizes for the modules to have any input."""
    leaves = (
        leaf for m in modules for _, shape in sorted(_parameters(m).items()) for _, leaf in _leaves_any(shape)
    )
    return tuple({str(leaf): leaf for leaf in leaves}.values())


def _check_interface(a: HloModule, b: HloModule, mode: str) -> None:
    pa, pb = _parameters(a), _parameters(b)
    if sorted(pa) != sorted(pb):
        raise ValueError(f"the rewrite changes the interface: parameters {sorted(pa)} vs {sorted(pb)}")
    for n in sorted(pa):
        x, y = pa[n], pb[n]
        if mode == "physical":
            same = str(x) == str(y)
            what = "shape, layout or memory space"
        else:
            same = _logically_equal(x, y)
            what = "element type or dimensions"
        if not same:
            raise ValueError(
                f"the rewrite changes the interface: parameter {n} is {x} before and {y} after (its {what} differ)"
            )


def _logically_equal(x: Shape, y: Shape) -> bool:
    if isinstance(x, ArrayShape) and isinstance(y, ArrayShape):
        return (
            x.element_type == y.element_type
            and x.rank == y.rank
            and all(_dims_equal(p, q) for p, q in zip(x.dimensions, y.dimensions, strict=False))
        )
    if isinstance(x, TupleShape) and isinstance(y, TupleShape):
        return len(x.elements) == len(y.elements) and all(
            _logically_equal(p, q) for p, q in zip(x.elements, y.elements, strict=False)
        )
    return str(x) == str(y)


def _logical_text(shape: Shape) -> str:
    """A shape without its layouts: element types and dimensions."""
    if isinstance(shape, ArrayShape):
        return f"{shape.element_type.text}{list(shape.dimensions)}"
    if isinstance(shape, TupleShape):
        return "(" + ", ".join(_logical_text(s) for s in shape.elements) + ")"
    return str(shape)


def _leaves(shape: Shape, path: tuple = ()) -> list[tuple[tuple, ArrayShape]]:
    if isinstance(shape, TupleShape):
        return [leaf for k, s in enumerate(shape.elements) for leaf in _leaves(s, (*path, k))]
    if isinstance(shape, ArrayShape):
        return [(path, shape)]
    raise UnsupportedHlo(f"the root has the shape {shape}, which is neither an array nor a tuple of arrays")


def _symbols_of(*modules: HloModule) -> set[sympy.Symbol]:
    found: set[sympy.Symbol] = set()
    for m in modules:
        for _, i in m.instructions():
            for _, leaf in _leaves_any(i.shape):
                for d in leaf.dimensions:
                    if not isinstance(d, int):
                        found |= as_sympy(d).free_symbols
    return found


def _check_layouts(module: HloModule) -> None:
    """Every array's layout is one XLA accepts (``LayoutUtil::ValidateLayoutForShape``, and an
    ``E(n)`` that holds the element), also where no proof reads it (logical mode): a module
    with ``{2,0}`` on a rank-2 array is invalid HLO, not a rewrite to prove."""
    from layout_algebra.model.validation import layout_problems

    for _, instr in module.instructions():
        for _, leaf in _leaves_any(instr.shape):
            problems = layout_problems(leaf)
            e = leaf.layout.element_size_in_bits if leaf.layout is not None else 0
            if e and e < leaf.element_type.bit_width:
                problems.append(
                    f"E({e}) cannot hold a {leaf.element_type.text} element ({leaf.element_type.bit_width} bits)"
                )
            if problems:
                raise InvalidHlo(
                    f"{instr.opcode} {instr.name}: the layout of {leaf} is invalid: {problems[0]}"
                )


def _leaves_any(shape: Shape) -> list[tuple[tuple, ArrayShape]]:
    try:
        return _leaves(shape)
    except UnsupportedHlo:
        return []


@dataclass
class _Context:
    before: HloModule
    after: HloModule
    mode: str
    assumptions: tuple
    timeout_ms: int
    claim: str
    start: float
    float_rules: frozenset[str] = frozenset()
    #: the float rules the values relied on (named in a proof's encoding)
    used_rules: set[str] = dataclasses.field(default_factory=set)

    def result(self, status: str, encoding: str, **kwargs: Any) -> ProofResult:
        if status == "proved" and self.used_rules and "; float rules: " not in encoding:
            encoding = f"{encoding}; float rules: {', '.join(sorted(self.used_rules))}"
        return ProofResult(status, self.claim, time.perf_counter() - self.start, encoding, **kwargs)  # type: ignore[arg-type]


def _concrete_sizes(ctx: _Context, values: Mapping[Any, int] | None = None) -> dict[str, int] | None:
    """Sizes satisfying the assumptions: ``values`` if given, else any (a model)."""
    symbols = _symbols_of(ctx.before, ctx.after)
    if not symbols:
        return {}
    if values is None:
        ar = IntArithmetic()
        s = solver_for(None, ctx.timeout_ms)
        s.add(*assumption_terms(ctx.assumptions, ar), *ar.side, *(ar.symbol(x) >= 0 for x in symbols))
        if s.check() != z3.sat:
            return None
        model = small_model(s, [ar.symbol(x) for x in symbols])
        values = {x: model_int(model, ar.symbol(x)) for x in symbols}
    return {str(k): int(v) for k, v in sorted(values.items(), key=lambda kv: str(kv[0]))}


def _property_differs(ctx: _Context, a: Any, b: Any, at_most: bool = False) -> tuple[str, dict | None]:
    """Whether two size expressions can differ under the assumptions: ('equal'|'differ'|'unknown', sizes).

    With ``at_most``, the question is whether ``a <= b`` can fail ('equal' then means it holds)."""
    holds = (lambda x, y: x <= y) if at_most else (lambda x, y: x == y)
    if isinstance(a, int) and isinstance(b, int):
        return ("equal", None) if holds(a, b) else ("differ", _concrete_sizes(ctx))
    if not at_most and sympy.expand(as_sympy(a) - as_sympy(b)) == 0:
        return "equal", None
    ar = IntArithmetic()
    for symbol in sorted(_symbols_of(ctx.before, ctx.after), key=str):  # the model sizes them all
        ar.symbol(symbol)
    context = assumption_terms(ctx.assumptions, ar)
    try:
        ta, tb = sympy_to_z3(as_sympy(a), ar), sympy_to_z3(as_sympy(b), ar)
    except UnsupportedExpression as err:
        return f"unknown: {err}", None
    s = solver_for(None, ctx.timeout_ms)
    s.add(*context, *ar.side, ta > tb if at_most else ta != tb)
    answer = s.check()
    if answer == z3.unsat:
        side = side_conditions(ar, context, ctx.timeout_ms)
        if side is not None and side.check() != z3.unsat:
            return "unknown: a side condition of the size comparison (divisors > 0) was not proved", None
        return "equal", None
    if answer == z3.sat:
        model = small_model(s, list(ar.symbols.values()))
        values = {sym: model_int(model, v) for sym, v in ar.symbols.items()}
        for sym in _symbols_of(ctx.before, ctx.after):
            values.setdefault(sym, 1)
        if not assumptions_hold(ctx.assumptions, values):
            return "unknown: the solver's sizes do not satisfy the assumptions", None
        ca, cb = as_sympy(a).subs(values), as_sympy(b).subs(values)
        if not holds(ca, cb):
            return "differ", _concrete_sizes(ctx, values)
        return "unknown: the solver's sizes give equal values when evaluated", None
    return f"unknown: solver: {s.reason_unknown()}", None


def _buffer_properties(ctx: _Context, path: tuple, ra: ArrayShape, rb: ArrayShape) -> ProofResult | None:
    """Physical mode: memory space, element size, exact and allocated sizes of the two roots."""
    ma, mb = layout_map(ra), layout_map(rb)
    checks = [
        ("memory space", _memory_space(ra), _memory_space(rb), "S({})"),
        ("element size in bits", ma.element_bits, mb.element_bits, "{} bits per element"),
        ("size in bytes", ma.size_in_bytes, mb.size_in_bytes, "{} bytes"),
        (
            "allocation in bytes",
            size_report(ra).first_tile_bytes,
            size_report(rb).first_tile_bytes,
            "{} bytes (XLA's allocation)",
        ),
    ]
    for name, a, b, form in checks:
        verdict, sizes = _property_differs(ctx, a, b)
        if verdict == "equal":
            continue
        encoding = f"buffer property: {name}"
        if verdict == "differ" and sizes is not None:
            values = {k: v for k, v in sizes.items()}
            ca = as_sympy(a).subs(
                {sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in values.items()}
            )
            cb = as_sympy(b).subs(
                {sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in values.items()}
            )
            cex = {
                "sizes": sizes,
                "element": None,
                "output": path,
                "property": name,
                "before": form.format(ca),
                "after": form.format(cb),
            }
            return ctx.result("refuted", encoding, counterexample=cex)
        if verdict == "differ":
            return ctx.result(
                "unknown", encoding, reason=f"the {name} differs, but no sizes satisfy the assumptions"
            )
        return ctx.result("unknown", encoding, reason=verdict.removeprefix("unknown: "))
    return None


def _root_slot(shape: ArrayShape, index: Sequence[Any], ar: Any) -> Any:
    m = layout_map(shape)
    return m.apply(index, ar, through=len(m.stages) - 1)[0]


def _check_requirements(ctx: _Context, evaluators: Sequence[_Evaluator]) -> None:
    """Symbolic sizes: a reshape keeps the element count, a slice stays inside its operand, ...
    for every size the assumptions allow (else the HLO is invalid at some sizes)."""
    for ev in evaluators:
        for a, b, at_most, problem in ev.requirements:
            verdict, sizes = _property_differs(ctx, a, b, at_most)
            if verdict == "differ":
                raise InvalidHlo(f"{problem}, e.g. at {sizes}")


def _check_bitcast_sizes(ctx: _Context) -> str | None:
    """XLA's rule (``hlo.bitcast_rule``): every ``bitcast`` of both modules keeps its shape
    size, for every size the assumptions allow. A bitcast that changes it is invalid HLO
    (``InvalidHlo``; for symbolic sizes at sizes Z3 finds, re-checked on the shapes at those
    sizes); the reason when that cannot be decided, for an ``unknown`` answer."""
    for module in (ctx.before, ctx.after):
        for computation, instr in module.instructions():
            if instr.opcode != "bitcast" or len(instr.operands) != 1:
                continue  # the wrong arity is reported where the bitcast is read
            operand = _instruction(computation, instr.operands[0].name).shape
            if not (isinstance(operand, ArrayShape) and isinstance(instr.shape, ArrayShape)):
                continue
            problem = bitcast_size_problem(operand, instr.shape)
            if problem is not None:
                raise InvalidHlo(f"bitcast {instr.name} {problem}")
            a, b = bitcast_shape_sizes(operand, instr.shape)
            verdict, sizes = _property_differs(ctx, a, b)
            if verdict.startswith("unknown"):
                return f"whether bitcast {instr.name} keeps its shape size ({a} vs {b} bytes) is {verdict}"
            if verdict == "differ" and sizes is not None:
                at = ", ".join(f"{k}={v}" for k, v in sizes.items())
                concrete = bitcast_size_problem(operand.specialize(sizes), instr.shape.specialize(sizes))
                if concrete is None:  # the solver's sizes do not show it: no claim either way
                    return (
                        f"bitcast {instr.name}: the solver's sizes {at} give equal shape sizes when evaluated"
                    )
                raise InvalidHlo(
                    f"bitcast {instr.name} at {at} (sizes the assumptions allow) {concrete}; for every "
                    f"size: {size_text(a)} against {size_text(b)}"
                )
    return None


def _check_dimension_formulas(ctx: _Context) -> str | None:
    """Every array of both modules has whole dimensions >= 0 at every size the assumptions
    allow (the parameters' formulas are facts: ``ctx.assumptions``): ``t = f32[N/8,8,128]
    reshape(p)`` of ``p = f32[N,128]`` is invalid HLO at N = 3. Raises ``InvalidHlo`` at
    sizes Z3 finds (re-checked by evaluating the formula there); returns the reason when
    that cannot be decided, for an ``unknown`` answer."""
    checked = set(ctx.assumptions)  # each fact once (many arrays share their formulas)
    for module in (ctx.before, ctx.after):
        for _, instr in module.instructions():
            for _, leaf in _leaves_any(instr.shape):
                for fact in shape_facts([leaf]):
                    if fact in checked:
                        continue
                    checked.add(fact)
                    if isinstance(fact, sympy.Eq):  # a divisibility: Mod(formula, k) == 0
                        verdict, sizes = _property_differs(ctx, fact.lhs, fact.rhs)
                    else:  # formula >= 0
                        verdict, sizes = _property_differs(ctx, 0, fact.lhs, at_most=True)
                    if verdict.startswith("unknown"):
                        return f"whether {instr.opcode} {instr.name} ({leaf}) has whole dimensions >= 0 is {verdict}"
                    if verdict == "differ" and sizes is not None:
                        at = ", ".join(f"{k}={v}" for k, v in sizes.items())
                        raise InvalidHlo(
                            f"{instr.opcode} {instr.name}: {leaf} has a dimension that is not a whole number "
                            f">= 0 at {at} (sizes the assumptions allow): {condition_text(fact)} fails there"
                        )
    return None


def _element_query(
    ctx: _Context,
    a: HloModule,
    b: HloModule,
    path: tuple,
    ra: ArrayShape,
    rb: ArrayShape,
    concrete: bool,
):
    """Solve for a root element where the two modules differ (physical mode: or where the
    roots' layouts place it apart). Returns (answer, details)."""
    ar = IntArithmetic()
    for symbol in sorted(_symbols_of(a, b), key=str):  # the model sizes them all
        ar.symbol(symbol)
    context = assumption_terms(ctx.assumptions, ar)
    j = [ar.variable(f"j{k}") for k in range(ra.rank)]
    context += in_box(j, ra.dimensions, ar)
    inputs: dict = {}
    ea, eb, va, vb = _root_values(a, b, ctx.mode, ar, inputs, j, path, ctx.float_rules)
    ctx.used_rules |= ea.used | eb.used
    if not concrete:
        _check_requirements(ctx, (ea, eb))
    condition = _differ_values(va, vb)
    if ctx.mode == "physical":
        condition = _or(condition, differ(_root_slot(ra, j, ar), _root_slot(rb, j, ar), ar))
    solver = solver_for(None, ctx.timeout_ms)
    solver.add(*context, as_bool(condition), *ar.side, *ar.obligations)
    side = side_conditions(ar, context, ctx.timeout_ms)
    answer = solver.check()
    if answer == z3.unsat:
        if side is not None and side.check() != z3.unsat:
            return (
                "unknown",
                "the main query is unsat, but a side condition it relied on (digits in their box, divisors > 0) was not proved",
            )
        return "proved", None
    if answer == z3.sat:
        model = small_model(solver, list(ar.symbols.values()))
        values = {s: model_int(model, v) for s, v in ar.symbols.items()}
        element = tuple(model_int(model, v) for v in j)
        offsets = {n: model_int(model, t) for n, t in inputs.items()}
        return "sat", (values, element, offsets)
    return "unknown", f"solver: {solver.reason_unknown()}"


def _root_values(
    a: HloModule,
    b: HloModule,
    mode: str,
    ar: Any,
    inputs: dict,
    index: Sequence[Any],
    path: tuple,
    rules: frozenset[str] = frozenset(),
) -> tuple[_Evaluator, _Evaluator, Any, Any]:
    """The evaluators of both modules (one arithmetic ``ar``, shared start-index ``inputs``)
    and the values of their root element ``index`` (tuple leaf ``path``)."""
    ea = _Evaluator(a, mode, ar, inputs, rules)
    eb = _Evaluator(b, mode, ar, inputs, rules)
    va = ea.element(_Scope(a.entry), a.entry.root.name, list(index), path)
    vb = eb.element(_Scope(b.entry), b.entry.root.name, list(index), path)
    if mode == "logical":  # a root slot's bits above its value are no part of the array
        va, vb = _logical_value(va), _logical_value(vb)
    return ea, eb, va, vb


def _concrete_difference(
    ctx: _Context,
    a: HloModule,
    b: HloModule,
    path: tuple,
    ra: ArrayShape,
    rb: ArrayShape,
    element: tuple,
    offsets: dict,
):
    """Evaluate both (concrete) modules at ``element``: None if equal there, else (kind, cex)."""
    if any(not 0 <= e < d for e, d in zip(element, ra.dimensions, strict=True)):
        return None
    _, _, va, vb = _root_values(a, b, ctx.mode, ARITHMETIC, dict(offsets), element, path, ctx.float_rules)
    cex: dict[str, Any] = {"element": tuple(element), "output": path}
    if offsets:
        cex["start_indices"] = {f"parameter {n}": v for n, v in sorted(offsets.items())}
    if ctx.mode == "physical":
        bits = layout_map(ra).element_bits
        sa, sb = _root_slot(ra, element, ARITHMETIC), _root_slot(rb, element, ARITHMETIC)
        shown = [_show(v) for v in (va, vb)]
        if isinstance(va, SlotBits) != isinstance(vb, SlotBits):  # the plain one has zeros above it
            k = 1 if isinstance(va, SlotBits) else 0
            shown[k] += " with zeros above it in its slot"
        cex["before"] = f"bit {sa * bits}: {shown[0]}"
        cex["after"] = f"bit {sb * bits}: {shown[1]}"
        if sa != sb:  # the roots' layouts place the element apart: a difference whatever the values
            cex["placement"] = (
                f"root element {tuple(element)} is at bit {sa * bits} before, bit {sb * bits} after"
            )
            return "data", cex
    else:
        cex["before"], cex["after"] = _show(va), _show(vb)
    kind = _difference_kind(va, vb)
    return None if kind is None else (kind, cex)


def _ops_of(value_text: str) -> list[str]:
    return sorted(set(re.findall(r"([a-z][a-z\-]*(?:->\w+)?)\(", value_text)))


def _confirm_by_execution(
    ctx: _Context,
    a: HloModule,
    b: HloModule,
    sizes: dict,
    cex: dict,
    describe: Callable[[tuple], dict | None],
) -> ProofResult:
    """A difference under uninterpreted ops: real only if executing the modules shows one.

    The refutation then names the element where execution found the difference (described
    with ``describe``, symbolically, and by the executor's values in ``execution``)."""
    ops = ", ".join(_ops_of(cex.get("before", "") + " " + cex.get("after", ""))) or "elementwise ops"
    encoding = "integer + uninterpreted elementwise ops, confirmed by execution"
    try:
        from layout_algebra.hlo.execute import compare  # the independent NumPy executor
    except ImportError:
        return ctx.result(
            "unknown",
            encoding,
            reason=f"the modules differ under uninterpreted {ops} at {sizes or 'these sizes'}, element {cex['element']}, "
            "but no executor is available to confirm the difference with the real ops",
        )
    try:
        comparison = compare(a, b, mode=ctx.mode, sizes=sizes or None)
    except (ValueError, NotImplementedError) as err:
        return ctx.result("unknown", encoding, reason=f"the executor could not run the modules: {err}")
    if comparison.same is False:
        confirmed = dict(cex)
        if comparison.element is not None and tuple(comparison.element) != tuple(cex["element"]):
            there = describe(tuple(comparison.element))
            confirmed = dict(there) if there is not None else dict(cex, before="", after="")
            confirmed["element"] = tuple(comparison.element)
        confirmed["sizes"] = dict(sizes)
        confirmed["execution"] = comparison.detail
        return ctx.result("refuted", encoding, counterexample=confirmed)
    if comparison.same is None:
        return ctx.result(
            "unknown",
            encoding,
            reason=f"the executor does not run these modules: {comparison.reason or comparison.detail}",
        )
    return ctx.result(
        "unknown",
        encoding,
        reason=f"the modules differ only as uninterpreted functions ({ops}); executing them with the real ops "
        f"at {sizes or 'these sizes'} shows no difference: the rewrite relies on properties of {ops} "
        "(e.g. commutativity) that the verifier does not assume",
    )


def float_rules_used(result: ProofResult) -> tuple[str, ...]:
    """The :data:`FLOAT_RULES` a proof of :func:`verify_rewrite` relied on (its encoding names them)."""
    if result.status != "proved" or "; float rules: " not in result.encoding:
        return ()
    names = result.encoding.rsplit("; float rules: ", 1)[1].split(", ")
    return tuple(n for n in names if n in FLOAT_RULES)


def _why(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "the module's chains of instructions are too deep for the encoding (Python's recursion limit)"
    return str(err)


def _verify_leaf(ctx: _Context, path: tuple, ra: ArrayShape, rb: ArrayShape) -> ProofResult:
    encoding = "integer (layout stages of every instruction) + uninterpreted elementwise ops"
    a, b = ctx.before, ctx.after
    symbolic = bool(_symbols_of(a, b))
    try:
        answer, details = _element_query(ctx, a, b, path, ra, rb, concrete=not symbolic)
    except (UnsupportedExpression, _Inexpressible, RecursionError) as err:
        return ctx.result("unknown", encoding, reason=_why(err))
    if answer == "proved":
        return ctx.result("proved", encoding)
    if answer == "unknown":
        return ctx.result("unknown", encoding, reason=details)
    values, element, offsets = details
    for sym in _symbols_of(a, b):
        values.setdefault(sym, 1)
    if not assumptions_hold(ctx.assumptions, values):
        return ctx.result(
            "unknown", encoding, reason=f"the solver's sizes {values} do not satisfy the assumptions"
        )
    sizes = _concrete_sizes(ctx, values) if symbolic else {}
    try:
        ca, cb = (_specialize_module(a, values), _specialize_module(b, values)) if symbolic else (a, b)
        cra = _leaves(ca.entry.root.shape)[[p for p, _ in _leaves(a.entry.root.shape)].index(path)][1]
        crb = _leaves(cb.entry.root.shape)[[p for p, _ in _leaves(b.entry.root.shape)].index(path)][1]
        found = _concrete_difference(ctx, ca, cb, path, cra, crb, element, offsets)
        if found is None and symbolic:  # the symbolic model's element is not one: solve again at its sizes
            sub = dataclasses.replace(ctx, before=ca, after=cb)
            answer, details = _element_query(sub, ca, cb, path, cra, crb, concrete=True)
            if answer == "proved":
                return ctx.result(
                    "unknown",
                    encoding,
                    reason=f"the symbolic query found a difference at {sizes}, but the modules at those sizes are proved equal",
                )
            if answer == "unknown":
                return ctx.result("unknown", encoding, reason=f"at {sizes}: {details}")
            _, element, offsets = details
            found = _concrete_difference(ctx, ca, cb, path, cra, crb, element, offsets)
    except (UnsupportedExpression, _Inexpressible, RecursionError) as err:
        return ctx.result("unknown", encoding, reason=_why(err))
    if found is None:
        return ctx.result(
            "unknown",
            encoding,
            reason="the solver's element shows no difference when the modules are evaluated (an encoding gap)",
        )
    kind, cex = found
    cex = {"sizes": sizes, **cex} if symbolic else {"sizes": {}, **cex}
    if kind == "data":
        return ctx.result("refuted", encoding, counterexample=cex)

    def describe(at: tuple) -> dict | None:
        found = _concrete_difference(ctx, ca, cb, path, cra, crb, at, offsets)
        return None if found is None else found[1]

    return _confirm_by_execution(ctx, ca, cb, sizes, cex, describe)


def _answering_rewrite(verify: Callable[..., ProofResult]) -> Callable[..., ProofResult]:
    """The result remembers its question (``before``, ``after``, ``mode``), so that
    ``result.condition`` can find the sizes for which the rewrite is safe (on first use)."""

    @functools.wraps(verify)
    def answered(before: str | HloModule, after: str | HloModule, **options: Any) -> ProofResult:
        result = verify(before, after, **options)
        question = Question("rewrite", (before, after), (("mode", options.get("mode", "physical")),))
        return dataclasses.replace(result, question=question)

    return answered


@_answering_rewrite
def verify_rewrite(
    before: str | HloModule,
    after: str | HloModule,
    *,
    assume: Assumptions = None,
    mode: str = "physical",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    float_rules: Collection[str] = (),
) -> ProofResult:
    """Prove or refute that rewriting ``before`` into ``after`` is safe (module docstring: the contract).

    ``before``/``after``: HLO module texts or parsed modules. ``assume``: conditions on the
    symbolic sizes (``"N % 8 == 0"``). ``mode``: ``"physical"`` (same root buffer, bit for
    bit) or ``"logical"`` (same root array, layouts free). Raises ``ValueError``
    (``InvalidHlo``, ``UnsupportedHlo``, ``HloParseError``) for bad input, quoting it.
    A refutation's counterexample has ``sizes`` (name -> int), ``element`` (a root index,
    or ``None`` when a buffer property differs) and ``before``/``after`` descriptions.
    ``float_rules``: names from :data:`FLOAT_RULES` the proof may use (none by default:
    elementwise ops stay uninterpreted); a proof that used one names it in its ``encoding``.
    """
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    unknown_rules = sorted(set(float_rules) - set(FLOAT_RULES))
    if unknown_rules:
        raise ValueError(f"float rules {unknown_rules} are not among {', '.join(FLOAT_RULES)}")
    start = time.perf_counter()
    a, b = _as_module(before), _as_module(after)
    _check_interface(a, b, mode)
    _check_layouts(a)
    _check_layouts(b)
    leaves_a, leaves_b = _leaves(a.entry.root.shape), _leaves(b.entry.root.shape)
    if [p for p, _ in leaves_a] != [p for p, _ in leaves_b]:
        raise ValueError(
            f"the roots have different tuple structures: {a.entry.root.shape} vs {b.entry.root.shape}"
        )
    for (_, ra), (_, rb) in zip(leaves_a, leaves_b, strict=True):
        if (
            ra.element_type != rb.element_type
            or ra.rank != rb.rank
            or not all(_dims_equal(x, y) for x, y in zip(ra.dimensions, rb.dimensions, strict=False))
        ):
            raise ValueError(f"the roots differ in element type or dimensions: {ra} vs {rb}")
    # none admitting no sizes (no vacuous proof); the parameters' dimension formulas are
    # implicit facts: f32[N/8,128] is an array only where 8 | N (and N/8 >= 0)
    parameter_arrays = _parameter_arrays(a, b)
    assumptions, caveat = admitted_assumptions(assume, shapes=parameter_arrays)
    ctx = _Context(
        a,
        b,
        mode,
        (*assumptions, *shape_facts(parameter_arrays)),
        timeout_ms,
        f"rewrite of {a.entry.name} preserves the root {'buffer' if mode == 'physical' else 'array'}",
        start,
        frozenset(float_rules),
    )
    for check, checked in (
        (_check_dimension_formulas, "dimension formulas (Z3)"),
        (_check_bitcast_sizes, "shape sizes of the bitcasts (Z3)"),  # XLA's bitcast rule
    ):
        undecided = check(ctx)  # valid HLO at every size allowed, before any answer
        if undecided is not None:
            return ctx.result("unknown", checked, reason=undecided)
    results = []
    for (path, ra), (_, rb) in zip(leaves_a, leaves_b, strict=True):
        if mode == "physical":
            refused = _buffer_properties(ctx, path, ra, rb)
            if refused is not None:
                if refused.status == "refuted":
                    return refused
                results.append(refused)
                continue
        result = _verify_leaf(ctx, path, ra, rb)
        if result.status == "refuted":
            return result
        results.append(result)
    unknown = [r for r in results if r.status == "unknown"]
    if unknown:
        return unknown[0]
    return unless_vacuous(ctx.result("proved", results[0].encoding if results else "no outputs"), caveat)


# ------------------------------------------------ hooks for size conditions (rewrite_conditions)
def rewrite_modules(
    before: str | HloModule, after: str | HloModule, mode: str = "physical"
) -> tuple[HloModule, HloModule]:
    """The two modules of a rewrite, parsed, with the checks :func:`verify_rewrite` makes
    before any proof (mode, interface, root structure); ``ValueError`` quoting what is wrong."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    a, b = _as_module(before), _as_module(after)
    _check_interface(a, b, mode)
    if [p for p, _ in _leaves(a.entry.root.shape)] != [p for p, _ in _leaves(b.entry.root.shape)]:
        raise ValueError(
            f"the roots have different tuple structures: {a.entry.root.shape} vs {b.entry.root.shape}"
        )
    return a, b


def specialize_module(module: HloModule, values: Mapping[Any, int]) -> HloModule:
    """The module at concrete sizes (every array shape's symbols given ``values``)."""
    return _specialize_module(module, values)


def root_element_differs(a: HloModule, b: HloModule, element: Sequence[Any], mode: str, ar: Any) -> Any:
    """The verifier's condition (a bool, or a Z3 term with ``ar`` an ``IntArithmetic``) that
    root element ``element`` of the two modules has different values, uninterpreted ops
    free. (Physical mode: the element's slot is not compared; see ``_element_query``.)
    Raises ``UnsupportedExpression`` where the encoding cannot state it."""
    try:
        _, _, va, vb = _root_values(a, b, mode, ar, {}, element, ())
    except (_Inexpressible, RecursionError) as err:
        raise UnsupportedExpression(_why(err)) from err
    return _differ_values(va, vb)
