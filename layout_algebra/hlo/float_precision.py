"""Float precision as the verifier and the executor read it: XLA's excess precision, erased.

XLA lets a backend compute a float value at another precision than the HLO states
(``--xla_allow_excess_precision``, on by default: "allow XLA to increase the output precision
of an instruction"); ``float-normalization-bf16``, ``bfloat16-propagation`` and XLA:TPU's
``float-type-correction`` rewrite modules on that licence. The assumption
:data:`EXCESS_PRECISION` reads a module with every float element type **erased**: one abstract
float type (:data:`ERASED`), a ``convert`` between two float types the identity, every other
op the same op on the abstract value (comparisons and rounding ops such as ``floor`` keep
their meaning; a ``convert`` between an integer and a float type, a ``bitcast-convert`` and
the root's own type are not erased). Two modules equal once erased apply the same operations
to the same values in the same order; only the precision each value is carried at differs.

>>> erased_type("bf16"), erased_type("f32"), erased_type("s32")
('float', 'float', 's32')
>>> erased_suffix("bf16,f32")
'float,float'
>>> is_erased_convert("f32", "bf16"), is_erased_convert("f32", "s8"), is_erased_convert("f16", "bf16")
(True, False, False)

XLA:TPU's verifier allows mixed precision (``allow_mixed_precision``: element types compared
with ``SameElementTypeIgnoringFpPrecision``), and fusions hold data-movement ops whose float
result type differs from their operand's (``bf16`` broadcast into ``f32``). The assumption
:data:`MIXED_PRECISION_MOVEMENT` reads them as the movement followed by a ``convert`` to the
result type (round to nearest, ties to even); :func:`movement_operand_converted` is that for
the executor:

>>> import numpy as np
>>> x = np.array([1.00390625], dtype=np.float32)     # 1 + 2^-8: a tie between two bf16 values
>>> float(movement_operand_converted(x, "bf16")[0])  # rounds to the even one
1.0
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

import numpy as np

from layout_algebra.hlo.ir import HloComputation, HloModule
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape

__all__ = [
    "ERASED",
    "EXCESS_PRECISION",
    "EXCESS_PRECISION_TEXT",
    "FLOAT_TYPES",
    "MIXED_PRECISION_MOVEMENT",
    "MIXED_PRECISION_MOVEMENT_TEXT",
    "erased_module",
    "erased_suffix",
    "erased_text",
    "erased_type",
    "float_types_of",
    "is_erased_convert",
    "is_float_convert",
    "is_float_type",
    "movement_operand_converted",
    "movement_operands_converted",
    "nested",
]

#: The name of the assumption that float values may be carried at another precision.
EXCESS_PRECISION = "excess-precision"

#: What :data:`EXCESS_PRECISION` assumes, as the reports state it.
EXCESS_PRECISION_TEXT = (
    "XLA's --xla_allow_excess_precision (on by default): a float value may be computed and carried at "
    "more precision than the HLO states, as long as the same operations are applied to the same values "
    "in the same order; never at less (a later module that computes more values of a float type narrower "
    "than 32 bits than the earlier one is not proved under it). Proved: the modules are equal with float precision erased (every float element "
    "type one abstract type, a convert between two float types the identity; converts between integer and "
    "float types, bitcast-convert and the root's type are kept; comparisons and rounding ops keep their "
    "meaning on the abstract value; constants keep the value of their stated type). The values at the "
    "stated precision may differ (float-normalization-bf16 and float-type-correction rely on this)"
)

#: The name of the assumption that a data-movement op may change the float type (mixed precision).
MIXED_PRECISION_MOVEMENT = "mixed-precision-movement"

#: What :data:`MIXED_PRECISION_MOVEMENT` assumes.
MIXED_PRECISION_MOVEMENT_TEXT = (
    "a data-movement op (copy, broadcast, pad, slice, ...) whose float operands have another float type "
    "than its result, which XLA:TPU's verifier allows (allow_mixed_precision: SameElementTypeIgnoringFpPrecision), "
    "moves its operands' values and converts each to the result type, rounding to nearest, ties to even "
    "(as a convert does; XLA does not state it)"
)

#: The float element types by the names XLA prints.
FLOAT_TYPES = frozenset(
    "f16 bf16 f32 f64 f8e5m2 f8e4m3fn f8e4m3b11fnuz f8e5m2fnuz f8e4m3fnuz f8e4m3 f8e3m4 f8e8m0fnu "
    "f4e2m1fn f6e2m3fn f6e3m2fn".split()
)

#: The one abstract float type of an erased module.
ERASED = "float"


def is_float_type(type_text: str) -> bool:
    """Is ``type_text`` a (real) float element type? (complex types are not)"""
    return type_text in FLOAT_TYPES


def erased_type(type_text: str) -> str:
    """``type_text`` with float precision erased: :data:`ERASED` for a float type, else itself."""
    return ERASED if type_text in FLOAT_TYPES else type_text


def erased_suffix(types: str) -> str:
    """A comma-separated list of element types, each erased."""
    return ",".join(erased_type(t) for t in types.split(",")) if types else types


def is_float_convert(to: str, source: str) -> bool:
    """A ``convert`` between two float types."""
    return to in FLOAT_TYPES and source in FLOAT_TYPES


@functools.cache
def nested(narrow: str, wide: str) -> bool:
    """Does every value of the float type ``narrow`` exist in ``wide`` (finite values,
    subnormals, infinities)? ``bf16`` and ``f16`` are each in ``f32``, not in one another.

    >>> nested("bf16", "f32"), nested("f16", "f32"), nested("bf16", "f16"), nested("f16", "bf16")
    (True, True, False, False)
    """
    if narrow == wide:
        return True
    from layout_algebra.packing.formats import numpy_dtype

    try:
        import ml_dtypes

        a, b = ml_dtypes.finfo(numpy_dtype(narrow)), ml_dtypes.finfo(numpy_dtype(wide))  # type: ignore[no-untyped-call]
    except (ValueError, TypeError):
        return False
    has_inf = [bool(np.isinf(np.array(np.inf).astype(numpy_dtype(t)))) for t in (narrow, wide)]
    return (
        int(a.nmant) <= int(b.nmant)
        and float(a.max) <= float(b.max)
        and float(a.smallest_subnormal) >= float(b.smallest_subnormal)
        and (has_inf[1] or not has_inf[0])
    )


def is_erased_convert(to: str, source: str) -> bool:
    """A ``convert`` that is the identity once precision is erased: between two float types one
    of which holds every value of the other (a widening, or a narrowing that excess precision
    may skip). A convert between two types neither of which holds the other (``bf16`` and
    ``f16``: range against precision) changes more than precision and stays."""
    return is_float_convert(to, source) and (nested(source, to) or nested(to, source))


def movement_operand_converted(data: np.ndarray, to: str) -> Any:
    """A data-movement operand's float values converted to the result's float type ``to``
    (round to nearest, ties to even), as the executor's ``convert`` computes it (through f64)."""
    from layout_algebra.packing.formats import numpy_dtype

    with np.errstate(all="ignore"):
        target = numpy_dtype(to)
        if data.dtype == target:
            return data
        return data.astype(np.float64).astype(target)


_FLOAT_IN_TEXT = re.compile(r"\b(" + "|".join(sorted(FLOAT_TYPES, key=len, reverse=True)) + r")\[")


def erased_text(text: str) -> str:
    """Every float type of shapes written in ``text`` (``bf16[8,128]``) erased.

    >>> erased_text("dot f32[8,32] (bf16[8,16],s8[16,32])")
    'dot float[8,32] (float[8,16],s8[16,32])'
    """
    return _FLOAT_IN_TEXT.sub(ERASED + "[", text)


def erased_module(module: HloModule) -> HloModule:
    """``module`` with every float element type made ``f32`` (one type standing for the erased
    one: for structural keys of called computations, not to be run)."""
    f32 = PrimitiveType.F32

    def shape_at(shape: Shape) -> Shape:
        if isinstance(shape, ArrayShape) and shape.element_type.is_floating_point:
            return dataclasses.replace(shape, element_type=f32)
        if isinstance(shape, TupleShape):
            return dataclasses.replace(shape, elements=tuple(shape_at(s) for s in shape.elements))
        return shape

    def computation(c: HloComputation) -> HloComputation:
        instructions = tuple(
            dataclasses.replace(
                i,
                shape=shape_at(i.shape),
                operands=tuple(
                    o if o.shape is None else dataclasses.replace(o, shape=shape_at(o.shape))
                    for o in i.operands
                ),
            )
            for i in c.instructions
        )
        return dataclasses.replace(c, instructions=instructions)

    computations = tuple(computation(c) for c in module.computations)
    entry = next(c for c in computations if c.name == module.entry.name)
    return dataclasses.replace(module, computations=computations, entry=entry)


def movement_operands_converted(opcode: str, shape: ArrayShape, operands: list[Any]) -> list[Any]:
    """The executor's operands of a data-movement op, each float operand of another float type
    than the result ``shape`` converted to it (:data:`MIXED_PRECISION_MOVEMENT`): converting
    before moving is converting after, element by element. Other operands as they are."""
    from layout_algebra.hlo.opcodes import TYPE_KEEPING_OPS

    to = shape.element_type
    if opcode not in TYPE_KEEPING_OPS or not to.is_floating_point:
        return operands
    count = TYPE_KEEPING_OPS[opcode] or len(operands)
    converted = list(operands)
    for k, o in enumerate(operands[:count]):
        source = getattr(o, "shape", None)
        if (
            isinstance(source, ArrayShape)
            and source.element_type != to
            and source.element_type.is_floating_point
        ):
            converted[k] = dataclasses.replace(
                o,
                shape=dataclasses.replace(source, element_type=to),
                data=movement_operand_converted(o.data, to.text),
            )
    return converted


def float_types_of(*modules: HloModule) -> set[str]:
    """The float element types the modules' instructions have (tuples included): erasing
    precision can change an answer only where there are two."""
    found: set[str] = set()

    def visit(shape: Shape) -> None:
        if isinstance(shape, ArrayShape) and shape.element_type.is_floating_point:
            found.add(shape.element_type.text)
        elif isinstance(shape, TupleShape):
            for s in shape.elements:
                visit(s)

    for module in modules:
        for _, instr in module.instructions():
            visit(instr.shape)
    return found
