"""The rewrite verifier's element values: small trees (parameters, numbers, applications, choices,
undefined, sub-byte slot bits), the conditions both kinds of evaluation build, how two values
are compared, and the scope an instruction is read in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy
import z3

from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.literals import is_tuple_or_complex_literal, literal_entries
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.internal_names import literal_name
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.query import (
    as_bool,
)


class UnsupportedHlo(LayoutAlgebraError, ValueError):
    """HLO the verifier does not read (an opcode, or control flow); the message names it."""


class Inexpressible(LayoutAlgebraError):
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
def known_truth(c: Any) -> bool | None:
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
        known = known_truth(c)
        if known is absorbing:
            return absorbing
        if known is None:
            items.append(c)
    return (not absorbing) if not items else items[0] if len(items) == 1 else combine(*items)


def all_of(*conditions: Any) -> Any:
    return _connective(conditions, False, z3.And)


def any_of(*conditions: Any) -> Any:
    return _connective(conditions, True, z3.Or)


def _not(c: Any) -> Any:
    return (not c) if isinstance(c, bool) else z3.Not(c)


def _ite(c: Any, x: Any, y: Any) -> Any:
    if isinstance(c, bool):
        return x if c else y
    if x is y or (isinstance(x, bool) and isinstance(y, bool) and x == y):
        return x
    return z3.If(c, as_bool(x) if isinstance(x, bool) else x, as_bool(y) if isinstance(y, bool) else y)


def as_condition(x: Any) -> Any:
    """A comparison's result: a Python bool for numbers, a Z3 Bool for terms."""
    return bool(x) if isinstance(x, (bool, int)) else x


# ---------------------------------------------------------------------- comparing values
def differ_values(a: Any, b: Any) -> Any:
    """A condition under which the two element values can differ (uninterpreted ops free).

    Values are DAGs (an element read twice is one object): each pair of nodes is compared once,
    so the work grows with the number of nodes, not with the number of paths through them."""
    memo: dict[tuple[int, int], Any] = {}

    def differ(a: Any, b: Any) -> Any:
        key = (id(a), id(b))
        if key not in memo:
            memo[key] = _differ_once(a, b, differ)
        return memo[key]

    return differ(a, b)


def _differ_once(a: Any, b: Any, differ: Callable[[Any, Any], Any]) -> Any:
    if isinstance(a, Choice):
        return _ite(a.cond, differ(a.then, b), differ(a.other, b))
    if isinstance(b, Choice):
        return _ite(b.cond, differ(a, b.then), differ(a, b.other))
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        return True
    if isinstance(a, SlotBits) or isinstance(b, SlotBits):  # physical mode, at the root: every digit
        return any_of(*(differ(x, y) for x, y in SlotBits.pairs(a, b)))
    if isinstance(a, Param) and isinstance(b, Param):
        if a.key != b.key:
            return True
        return any_of(*(as_condition(x != y) for x, y in zip(a.index, b.index, strict=True)))
    if isinstance(a, Number) and isinstance(b, Number):
        return _numbers_differ(a, b)
    if isinstance(a, App) and isinstance(b, App):
        if a.op != b.op or len(a.args) != len(b.args):
            return True
        return any_of(*(differ(x, y) for x, y in zip(a.args, b.args, strict=True)))
    return True


def _numbers_differ(a: Number, b: Number) -> Any:
    if a.type != b.type:
        return True
    x, y = a.value, b.value
    if isinstance(x, str) or isinstance(y, str):
        return x != y if isinstance(x, str) and isinstance(y, str) else True
    if isinstance(x, (int, Fraction)) and isinstance(y, (int, Fraction)):
        return x != y
    return as_condition(_real(x) != _real(y))


def _real(x: Any) -> Any:
    if isinstance(x, Fraction):
        return z3.RealVal(f"{x.numerator}/{x.denominator}")
    if isinstance(x, int):
        return z3.RealVal(x)
    return z3.ToReal(x) if x.sort() == z3.IntSort() else x


def real_value(v: Any) -> Any:
    """A literal value as a Z3 real; nan, infinities and -0 as named constants (left free:
    a proof then holds whatever they are; a difference is re-checked on exact values)."""
    if isinstance(v, str):
        return z3.Real(literal_name(v))
    return _real(v)


def difference_kind(a: Any, b: Any) -> str | None:
    """Concrete values: ``None`` if equal, ``'data'`` if they differ by data movement alone
    (a real difference), ``'op'`` if the difference runs through an uninterpreted op."""
    if differ_values(a, b) is False:
        return None
    if isinstance(a, SlotBits) or isinstance(b, SlotBits):
        kinds = {difference_kind(x, y) for x, y in SlotBits.pairs(a, b)} - {None}
        return "op" if "op" in kinds else "data"
    if isinstance(a, App) or isinstance(b, App):
        return "op"
    return "data"


#: How much of a value :func:`show_value` writes out (a DAG written as a tree can be huge).
MAX_SHOWN = 600


def show_value(v: Any) -> str:
    """A value in words, at most about :data:`MAX_SHOWN` characters (each shared node written once)."""
    memo: dict[int, str] = {}

    def show(v: Any) -> str:
        if id(v) not in memo:
            text = _show_once(v, show)
            memo[id(v)] = text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"
        return memo[id(v)]

    return show(v)


def _show_once(v: Any, show_value: Callable[[Any], str]) -> str:
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
        return f"{v.op.split('|')[0]}({', '.join(show_value(a) for a in v.args)})"
    if isinstance(v, Undefined):
        return f"unspecified bits ({v.why})"
    if isinstance(v, SlotBits):
        above = ", ".join(show_value(d) for d in v.digits[1:])
        return f"{show_value(v.digits[0])} with {above} stored above it in its slot (bitcast {v.source})"
    if isinstance(v, Choice):  # pragma: no cover - concrete values have no choices
        return "a choice"
    return repr(v)


# ------------------------------------------------ slots holding more than their element
def resized_bitcast_problem(source: ArrayShape, shape: ArrayShape, a: int, b: int) -> str | None:
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


def digit_of(value: Any, k: int, zero: Number) -> Any:
    """Digit ``k`` (0: the element itself) of a stored slot: zeros above a plain element."""

    def leaf(v: Any) -> Any:
        if isinstance(v, SlotBits):
            return v.digits[k] if k < len(v.digits) else zero
        return v if k == 0 or isinstance(v, Undefined) else zero

    return _map_choices(value, leaf)


def refuse_slot_bits(value: Any, instr: HloInstruction) -> None:
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


def whole_value(value: Any) -> Any:
    """A stored slot as one element: undefined where any of its digits is (an element is
    defined where all the bits of its slot are, as the executor tracks it)."""

    def leaf(v: Any) -> Any:
        if not isinstance(v, SlotBits):
            return v
        defined = all_of(*(_defined_where(d) for d in v.digits))
        hole = Undefined(f"bitcast {v.source}: a slot holding unspecified bits")
        if isinstance(defined, bool):
            return v if defined else hole
        return Choice(defined, v, hole)

    return _map_choices(value, leaf)


def logical_value(value: Any) -> Any:
    """Logical mode: a slot's value is its low digit, defined where every digit is."""
    return _map_choices(whole_value(value), lambda v: v.digits[0] if isinstance(v, SlotBits) else v)


# ----------------------------------------------------------------------------- the module
def as_module(text_or_module: str | HloModule) -> HloModule:
    from layout_algebra.hlo.parser import parse_module

    return parse_module(text_or_module) if isinstance(text_or_module, str) else text_or_module


def array_shape_of(shape: Shape, where: str) -> ArrayShape:
    if not isinstance(shape, ArrayShape):
        raise UnsupportedHlo(f"{where} has the non-array shape {shape}")
    return shape


def dims_equal(a: Any, b: Any) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return sympy.expand(as_sympy(a) - as_sympy(b)) == 0


def check_mapped_dims(
    instr: HloInstruction, source: ArrayShape, shape: ArrayShape, pairs: Iterable[tuple[int, int]]
) -> None:
    """Operand dimension ``o`` and result dimension ``r`` have one size, for each ``(o, r)``
    (a transpose's permutation, a broadcast's dimensions); else ``InvalidHlo``."""
    for o, r in pairs:
        if not dims_equal(source.dimensions[o], shape.dimensions[r]):
            raise InvalidHlo(
                f"{instr.opcode} {instr.name}: operand dimension {o} is {source.dimensions[o]}, "
                f"result dimension {r} is {shape.dimensions[r]}"
            )


def shape_at_path(shape: Shape, path: tuple[int, ...], where: str) -> Shape:
    for k in path:
        if not isinstance(shape, TupleShape) or not 0 <= k < len(shape.elements):
            raise InvalidHlo(f"{where}: tuple index {k} does not exist in {shape}")
        shape = shape.elements[k]
    return shape


def memory_space_of(shape: ArrayShape) -> int:
    return shape.layout.memory_space if shape.layout is not None else 0


def instruction_named(computation: HloComputation, name: str) -> HloInstruction:
    if name not in computation:
        raise InvalidHlo(f"{name!r} is used but not defined in computation {computation.name!r}")
    return computation.instruction(name)


@dataclass
class Scope:
    """A computation being evaluated; a fused/called one maps its parameters to operands."""

    computation: HloComputation
    bindings: tuple[str, ...] | None = None
    parent: Scope | None = None


def logical_text(shape: Shape) -> str:
    """A shape without its layouts: element types and dimensions."""
    if isinstance(shape, ArrayShape):
        return f"{shape.element_type.text}{list(shape.dimensions)}"
    if isinstance(shape, TupleShape):
        return "(" + ", ".join(logical_text(s) for s in shape.elements) + ")"
    return str(shape)


#: Constants with more elements than this are not expanded (answer: unknown).
MAX_CONSTANT_ELEMENTS = 4096


# --------------------------------------------------------------------------- literals
def literal_elements(text: str, shape: ArrayShape, name: str) -> list:
    """The values of a constant's literal, row-major, checked against its shape: exact numbers
    (ints, or floats rounded to the type as :class:`fractions.Fraction`) for the rewrite verifier."""
    if not all(isinstance(d, int) for d in shape.dimensions):
        raise InvalidHlo(f"constant {name} has symbolic dimensions {shape}")
    count = math.prod(shape.dimensions)
    if count > MAX_CONSTANT_ELEMENTS:
        raise Inexpressible(f"constant {name} has {count} elements (more than {MAX_CONSTANT_ELEMENTS})")
    if shape.element_type.value.kind not in ("pred", "signed", "unsigned", "float"):
        raise Inexpressible(f"constant {name}: {shape.element_type.text} literals are not read")
    if is_tuple_or_complex_literal(text):
        raise Inexpressible(f"constant {name}: the tuple or complex literal {text!r} is not read")
    flat = literal_entries(text, tuple(shape.dimensions), f"constant {name}")
    return [_literal_value(t, shape.element_type, name) for t in flat]


def representable(value: Fraction, type_text: str) -> bool:
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
    from layout_algebra.packing.formats import numpy_dtype  # lazily: NumPy only when a float literal is read

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
            raise Inexpressible(f"constant {name}: no exact rounding known for {etype.text}")
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
    raise Inexpressible(f"constant {name}: {etype.text} literals are not read")
