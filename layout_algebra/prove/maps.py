"""Index maps the prover compares: a layout's stage pipeline, the two references, or your own.

An :class:`IndexMap` is a function from a logical index of ``shape`` to an element
position, written against an :class:`~layout_algebra.meaning.stages.arith.Arithmetic` so it can be
evaluated on ints (to re-check counterexamples), intervals (to size bit-vectors) and Z3
terms (to prove).

>>> m = layout_index_map("f32[3,5]{1,0:T(2,2)}")
>>> m.evaluate((2, 3))
17
>>> formula_reference("f32[3,5]{1,0:T(2,2)}").evaluate((2, 3))
17
>>> broken = function_map("f32[3,5]", lambda i, ar: i[0] * 4 + i[1], name="stride 4 (too small)")
>>> broken.evaluate((1, 0)) == broken.evaluate((0, 4))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.references import by_formula, by_pad_reshape_transpose
from layout_algebra.meaning.sizes import meaningful_array
from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.meaning.stages.stages import Stage
from layout_algebra.model.shapes import ArrayShape, Dim, Shape
from layout_algebra.prove.encode import UnsupportedExpression

__all__ = [
    "IndexMap",
    "as_index_map",
    "formula_reference",
    "function_map",
    "layout_index_map",
    "pad_reshape_transpose_reference",
    "position_stages",
]

Evaluator = Callable[[ArrayShape, Sequence[Any], Arithmetic], Any]


@dataclass(frozen=True)
class IndexMap:
    """``evaluator(shape, index, arithmetic) -> element position`` on ``shape``'s logical index box."""

    name: str
    shape: ArrayShape
    evaluator: Evaluator
    symbolic_ok: bool = True  # whether specialize() can rebuild it for concrete sizes
    kind: str = "function"  # "layout", "formula", "pad_reshape_transpose" or "function"

    @property
    def dimensions(self) -> tuple[Dim, ...]:
        return tuple(self.shape.dimensions)

    @property
    def is_symbolic(self) -> bool:
        return not all(isinstance(d, int) for d in self.shape.dimensions)

    @property
    def is_layout(self) -> bool:
        """Whether this is a layout's own map, so that proofs may reason on its stages."""
        return self.kind == "layout" and self.evaluator is _layout_position

    def evaluate(self, index: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
        return self.evaluator(self.shape, index, ar)

    def size_in_elements(self) -> Dim:
        """Slots of the buffer the positions must fall in: the layout's exact size."""
        return layout_map(self.shape).size_in_elements

    def specialize(self, values: Mapping[sympy.Symbol, int]) -> IndexMap:
        """The same map with symbolic sizes given values."""
        return IndexMap(self.name, self.shape.specialize(values), self.evaluator, self.symbolic_ok, self.kind)

    def __str__(self) -> str:
        return self.name


def position_stages(shape: ArrayShape) -> tuple[Stage, ...]:
    """The stages from a logical index to the element position: all but the last (to bits)."""
    return layout_map(shape).stages[:-1]


def _layout_position(shape: ArrayShape, index: Sequence[Any], ar: Arithmetic) -> Any:
    value = tuple(index)
    for stage in position_stages(shape):
        value = stage.forward(value, ar)
    return value[0]


def layout_index_map(shape: Shape | str) -> IndexMap:
    """The layout's own map: its stage pipeline, up to the element position."""
    array = meaningful_array(shape)
    layout_map(array)  # a clear error now, not inside a proof
    return IndexMap(f"layout {array}", array, _layout_position, kind="layout")


def formula_reference(shape: Shape | str) -> IndexMap:
    """The tiled-layout document's formula applied tile by tile (``references.by_formula``)."""
    array = meaningful_array(shape)
    return IndexMap(f"document formula for {array}", array, by_formula, kind="formula")


def pad_reshape_transpose_reference(shape: Shape | str) -> IndexMap:
    """Tiling as pad → reshape → transpose (``references.by_pad_reshape_transpose``)."""
    array = meaningful_array(shape)
    return IndexMap(
        f"pad-reshape-transpose for {array}", array, by_pad_reshape_transpose, kind="pad_reshape_transpose"
    )


def function_map(
    shape: Shape | str,
    function: Callable[[Sequence[Any], Arithmetic], Any],
    *,
    name: str = "function",
) -> IndexMap:
    """Your own map ``function(index, arithmetic)`` on ``shape``'s logical index box.

    Use ``arithmetic.floordiv``/``mod`` for division (Python's ``//``/``%`` do not work on
    Z3 terms) and ``arithmetic.lift(size)`` for symbolic sizes.
    """
    array = meaningful_array(shape)
    return IndexMap(
        name, array, lambda _shape, index, ar: _guarded(function, name, index, ar), symbolic_ok=False
    )


def _guarded(
    function: Callable[[Sequence[Any], Arithmetic], Any], name: str, index: Sequence[Any], ar: Any
) -> Any:
    """``function(index, ar)``; Python operations a solver term does not support become ``unknown``.

    On Z3 terms, ``//``, ``%``, ``max``, ``if`` and the like raise ``TypeError`` or a
    ``Z3Exception``: the map is then outside what the encoding can express, which the
    prover reports as ``unknown`` with this reason, never as a crash or a verdict.
    """
    import z3

    try:
        return function(index, _positive_divisors(ar))
    except (TypeError, z3.Z3Exception, sympy.SympifyError) as err:
        raise UnsupportedExpression(
            f"the map {name!r} uses a Python operation the solver's terms do not support ({err}); "
            "use the arithmetic's floordiv/mod/lift"
        ) from None


def _positive_divisors(ar: Any) -> Any:
    """``ar``, with every division your function makes required to be by a divisor > 0.

    ``floordiv``/``mod`` are floor division for ``b > 0`` only (Python's ``7 // -2 == -4``
    and ``7 % 0`` raises); the solver's terms give ``b <= 0`` another meaning. So a
    symbolic divisor (``N - 5``) becomes a proof obligation ``b > 0`` (the prover answers
    ``unknown`` unless the assumptions imply it), and on the bounds that size bit-vectors
    a divisor that may be 0 or negative is refused (``unknown``). A layout's own stages
    divide by tile sizes >= 1 and are not wrapped.
    """
    if hasattr(ar, "obligations") or hasattr(ar, "tracker"):  # Z3 integers, bit-vector bounds
        return _PositiveDivisors(ar)
    return ar


class _PositiveDivisors:
    """Delegates to an arithmetic; its ``floordiv``/``mod`` first require ``b > 0``."""

    def __init__(self, ar: Any) -> None:
        self._ar = ar

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ar, name)

    def _require_positive(self, b: Any) -> None:
        from layout_algebra.prove.encode import Interval

        if isinstance(b, int):
            if b <= 0:
                raise UnsupportedExpression(f"a division by {b} (floordiv and mod need a divisor > 0)")
        elif isinstance(b, Interval):
            if b.lo <= 0:
                raise UnsupportedExpression(
                    f"a divisor that may be {b.lo} (floordiv and mod need a divisor > 0 on the whole box)"
                )
        elif hasattr(self._ar, "obligations"):
            self._ar.obligations.append(b > 0)

    def floordiv(self, a: Any, b: Any) -> Any:
        self._require_positive(b)
        return self._ar.floordiv(a, b)

    def mod(self, a: Any, b: Any) -> Any:
        self._require_positive(b)
        return self._ar.mod(a, b)


def as_index_map(value: IndexMap | Shape | str) -> IndexMap:
    """An ``IndexMap`` as is; a shape (or its text) as its layout's map."""
    if isinstance(value, IndexMap):
        return value
    return layout_index_map(value)
