"""What a layout means: the map from a logical index to a place in memory, and back.

:func:`layout_map` builds a :class:`LayoutMap` from a shape's stage pipeline
(:mod:`layout_algebra.meaning.stages`) and interprets it two ways: concretely, on Python ints,
and symbolically, as SymPy closed forms.

The tiled-layout document's Figure 1: ``f32[3,5]`` in 2x2 tiles. Element (2,3) sits in
tile (1,1) at position (0,1) of the tile, so at ``(1*3 + 1)*2*2 + (0*2 + 1) = 17``:

>>> from layout_algebra.meaning.layout_map import layout_map, linear_index
>>> m = layout_map("f32[3,5]{1,0:T(2,2)}")
>>> m.forward((2, 3))
17
>>> m.physical_dimensions
(2, 3, 2, 2)
>>> m.forward_expr()
2*(Mod(i0, 2)) + Mod(i1, 2) + 12*floor(i0/2) + 4*floor(i1/2)

The inverse gives the element at a position, or ``None`` for padding:

>>> m.inverse(17), m.inverse(9)
((2, 3), None)
>>> m.inverse_exprs()
(Mod(floor(p/2), 2) + 2*floor(p/12), Mod(p, 2) + 2*(Mod(floor(p/4), 3)))

The padding predicate, over the tiled index ``(i0, i1, i2, i3)`` in the tiled shape
``(2, 3, 2, 2)``: a slot is padding when its row ``2*i0 + i2`` or column ``2*i1 + i3``
is past the array's edge (``padding_expr_at_offset`` says the same in terms of ``p``):

>>> m.padding_expr()
(2*i0 + i2 >= 3) | (2*i1 + i3 >= 5)

Repeated tiling: bf16 in ``(8,128)(2,1)`` packs rows 2r and 2r+1 of a column into one
32-bit word, so element (1,0) is the second bf16 of word 0:

>>> linear_index("bf16[16,256]{1,0:T(8,128)(2,1)}", (1, 0))
1
>>> layout_map("bf16[16,256]{1,0:T(8,128)(2,1)}").forward((1, 0), unit="bit")
16

Symbolic sizes give formulas in the dimension symbols:

>>> layout_map("f32[N,M]{1,0:T(8,128)}").forward_expr()
128*(Mod(i0, 8)) + Mod(i1, 128) + 1024*ceiling(M/128)*floor(i0/8) + 1024*floor(i1/128)
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.meaning.stages.pipeline import Step, layout_steps
from layout_algebra.meaning.stages.stages import Linearize, Stage, ToBits, Transpose, ceil_div
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.meaning import meaningful_array
from layout_algebra.model.shapes import ArrayShape, Dim, Shape
from layout_algebra.model.syntax import as_shape

if TYPE_CHECKING:  # pragma: no cover - loaded lazily by __getattr__ below
    import sympy

    from layout_algebra.meaning.stages.symbolic import OFFSET_SYMBOL, SYMPY_ARITHMETIC, index_symbols

__all__ = [
    "OFFSET_SYMBOL",
    "SYMPY_ARITHMETIC",
    "UNITS",
    "LayoutMap",
    "delinearize",
    "index_symbols",
    "layout_map",
    "linear_index",
]

#: Units an offset can be measured in.
UNITS = ("element", "bit", "byte")


def __getattr__(name: str) -> Any:
    """The SymPy side (``OFFSET_SYMBOL``, ``SYMPY_ARITHMETIC``, ``index_symbols``, ...), loaded
    from :mod:`layout_algebra.meaning.stages.symbolic` on first use so that SymPy is imported only
    when a formula is asked for."""
    if name in _SYMBOLIC:
        from layout_algebra.meaning.stages import symbolic

        return getattr(symbolic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SYMBOLIC = ("OFFSET_SYMBOL", "SYMPY_ARITHMETIC", "SympyArithmetic", "index_symbols")


def _symbolic() -> ModuleType:
    from layout_algebra.meaning.stages import symbolic

    return symbolic


@dataclass(frozen=True, repr=False)
class LayoutMap:
    """A shape's layout as a composable map; build it with :func:`layout_map`.

    Attributes: ``shape`` (the array shape), ``steps`` (the stage pipeline, grouped by
    layout feature), ``stages`` (the same, flat). Its ``repr`` is the call that builds it
    (``explain(m.shape)`` tells the whole story):

    >>> layout_map("f32[3,5]{1,0:T(2,2)}")
    layout_map('f32[3,5]{1,0:T(2,2)}')
    """

    shape: ArrayShape
    steps: tuple[Step, ...]

    def __repr__(self) -> str:
        return f"layout_map({str(self.shape)!r})"

    # ------------------------------------------------------------------ structure
    @cached_property
    def stages(self) -> tuple[Stage, ...]:
        return tuple(stage for step in self.steps for stage in step.stages)

    @cached_property
    def _linearize_at(self) -> int:
        return next(k for k, s in enumerate(self.stages) if isinstance(s, Linearize))

    @property
    def rank(self) -> int:
        return self.shape.rank

    @property
    def logical_dimensions(self) -> tuple[Dim, ...]:
        return tuple(self.shape.dimensions)

    @property
    def physical_order(self) -> Transpose:
        """The first stage: the dimensions in physical order (``minor_to_major`` reversed);
        logical dimension ``k`` is physical dimension ``physical_order.carried_dimension(k)``.

        >>> layout_map("f32[2,3,4]{0,2,1}").physical_order.carried_dimension(0)
        2
        """
        order = self.stages[0]
        if not isinstance(order, Transpose):  # pragma: no cover - every pipeline starts so
            raise TypeError(f"{self.shape}: the pipeline does not start with the physical order")
        return order

    @property
    def physical_dimensions(self) -> tuple[Dim, ...]:
        """The tiled shape (major to minor) that is linearized row-major."""
        return tuple(self.stages[self._linearize_at].domain)

    @property
    def element_bits(self) -> int:
        """Bits per element in memory (``E(n)``, else the storage width in whole bytes)."""
        last = self.stages[-1]
        assert isinstance(last, ToBits)
        return last.bits

    @property
    def size_in_elements(self) -> Dim:
        """Element slots in the buffer: the tiled shape's product, rounded up to ``L(n)``."""
        return self.stages[-1].domain[0]

    @property
    def size_in_bits(self) -> Dim:
        return self.stages[-1].range[0]

    @property
    def size_in_bytes(self) -> Dim:
        bits = self.size_in_bits
        return ceil_div(bits, 8)

    def size_in(self, unit: str) -> Dim:
        """The buffer's size in ``unit`` (``"element"`` slots, ``"bit"`` or ``"byte"``)."""
        _check_unit(unit)
        return {"element": self.size_in_elements, "bit": self.size_in_bits, "byte": self.size_in_bytes}[unit]

    # ---------------------------------------------- element positions and offsets in a unit
    def offset_of_position(self, position: Any, unit: str, ar: Arithmetic = ARITHMETIC) -> Any:
        """The offset in ``unit`` of the element at ``position`` (its first bit, or the byte
        holding it): ``position``, ``position * bits`` or ``⌊position * bits / 8⌋``.

        Works on ints, NumPy arrays and, with ``ar`` a SymPy arithmetic, expressions:

        >>> m = layout_map("s4[8]{0:E(4)}")
        >>> [m.offset_of_position(5, u) for u in UNITS]
        [5, 20, 2]
        """
        if unit == "element":
            return position
        bits = position * self.element_bits
        return bits if unit == "bit" else ar.floordiv(bits, 8)

    def position_of_offset(self, offset: Any, unit: str, ar: Arithmetic = ARITHMETIC) -> Any:
        """The position of the element whose storage holds ``offset`` (in ``unit``); for
        sub-byte elements and ``unit="byte"``, the first element of that byte.

        >>> m = layout_map("s4[8]{0:E(4)}")
        >>> m.position_of_offset(21, "bit"), m.position_of_offset(2, "byte")
        (5, 4)
        """
        if unit == "element":
            return offset
        bits = offset if unit == "bit" else 8 * offset
        return ar.floordiv(bits, self.element_bits)

    @property
    def is_symbolic(self) -> bool:
        return not all(isinstance(d, int) for d in self.shape.dimensions)

    @property
    def has_padding(self) -> bool:
        """Whether some position of the buffer may hold no element."""
        return any(stage.has_holes for stage in self.stages)

    # --------------------------------------------------------- generic evaluation
    def apply(
        self, index: Sequence[Any], ar: Arithmetic = ARITHMETIC, *, through: int | None = None
    ) -> tuple[Any, ...]:
        """Run ``index`` through the stages (all, or the first ``through``), unchecked.

        Works on any values the arithmetic supports: ints, NumPy index arrays (one
        array per dimension, all elements at once), SymPy expressions.
        """
        value = tuple(index)
        for stage in self.stages[:through]:
            value = stage.forward(value, ar)
        return value

    def unapply(
        self, position: Sequence[Any], ar: Arithmetic = ARITHMETIC, *, start: int | None = None
    ) -> tuple[tuple[Any, ...], Any]:
        """Run a position backwards from stage ``start`` (default: the last) to a logical index.

        Returns ``(index, is_padding)``: ``is_padding`` is the disjunction of every
        stage's hole predicate along the way; where it holds, ``index`` is meaningless.
        """
        stages = self.stages if start is None else self.stages[:start]
        value = tuple(position)
        holes = []
        for stage in reversed(stages):
            if stage.has_holes:
                holes.append(stage.holes(value, ar))
            value = stage.inverse(value, ar)
        return value, ar.any_of(holes)

    def trace(self, index: Sequence[int]) -> list[tuple[Stage, tuple[Any, ...]]]:
        """Each stage with the value it produces for ``index`` (checked), for explanations."""
        value = self._checked_index(index)
        out = []
        for stage in self.stages:
            value = stage.forward(value)
            out.append((stage, value))
        return out

    # --------------------------------------------------------- concrete evaluation
    def forward(self, index: Sequence[int], unit: str = "element") -> Any:
        """The offset of the element at logical ``index``: in element slots, bits or bytes.

        ``"element"`` is the element's position in the tiled buffer (XLA's
        ``LinearIndexForNestedTiling``); ``"bit"`` is that times the element bits;
        ``"byte"`` is the byte holding the element's first bit.
        """
        _check_unit(unit)
        position = self.apply(self._checked_index(index), through=len(self.stages) - 1)[0]
        return self.offset_of_position(position, unit)

    def inverse(self, offset: int, unit: str = "element") -> tuple[int, ...] | None:
        """The logical index stored at ``offset``, or ``None`` if that slot is padding.

        With ``unit="bit"`` any bit inside an element gives that element; with
        ``unit="byte"`` the element whose storage starts in that byte (the first one, for
        sub-byte elements).
        """
        _check_unit(unit)
        position = self._checked_offset(offset, unit)
        index, is_padding = self.unapply((position,), start=len(self.stages) - 1)
        return None if is_padding else tuple(int(v) for v in index)

    def is_padding(self, offset: int, unit: str = "element") -> bool:
        """Whether the slot at ``offset`` holds no element."""
        return self.inverse(offset, unit) is None

    def elements(self) -> Iterator[tuple[int, ...]]:
        """Every logical index, row-major (concrete shapes only)."""
        self._require_concrete("enumerate elements")
        return itertools.product(*(range(d) for d in self.shape.dimensions))

    def specialize(self, sizes: Mapping[str | sympy.Symbol, int]) -> LayoutMap:
        """The map of the same layout with symbolic dimensions given values.

        >>> layout_map("f32[N,M]{1,0:T(8,128)}").specialize({"N": 3, "M": 200}).shape
        parse_shape('f32[3,200]{1,0:T(8,128)}')
        """
        return layout_map(self.shape.specialize(sizes))

    # ------------------------------------------------------------- closed forms
    @cached_property
    def index_symbols(self) -> tuple[sympy.Symbol, ...]:
        from layout_algebra.meaning.stages.symbolic import index_symbols

        return index_symbols(self.rank)

    def forward_expr(self, unit: str = "element") -> sympy.Expr:
        """The offset of element ``(i0, i1, ...)`` as a SymPy expression."""
        _check_unit(unit)
        element = self._symbolic_forward[0]
        return self.offset_of_position(element, unit, _symbolic().SYMPY_ARITHMETIC)

    def tiled_index_exprs(self) -> tuple[sympy.Expr, ...]:
        """The index in the tiled shape (``physical_dimensions``), one expression per dim."""
        return self.apply(self.index_symbols, _symbolic().SYMPY_ARITHMETIC, through=self._linearize_at)

    @cached_property
    def _symbolic_forward(self) -> tuple[sympy.Expr, ...]:
        return self.apply(self.index_symbols, _symbolic().SYMPY_ARITHMETIC, through=len(self.stages) - 1)

    def inverse_exprs(self) -> tuple[sympy.Expr, ...]:
        """The logical index stored at element offset ``p``, one expression per dim."""
        sym = _symbolic()
        index, _ = self.unapply((sym.OFFSET_SYMBOL,), sym.SYMPY_ARITHMETIC, start=len(self.stages) - 1)
        return tuple(index)

    def padding_expr_at_offset(self) -> Any:
        """Whether element slot ``p`` is padding, as a SymPy condition on ``p``."""
        sym = _symbolic()
        _, is_padding = self.unapply((sym.OFFSET_SYMBOL,), sym.SYMPY_ARITHMETIC, start=len(self.stages) - 1)
        return is_padding

    def padding_expr(self) -> Any:
        """Whether a position of the tiled shape is padding, in the tiled index ``i0, i1, ...``.

        Its symbols index ``physical_dimensions``; ``padding_expr_at_offset`` is the same
        predicate over the linear offset.
        """
        sym = _symbolic()
        symbols = sym.index_symbols(len(self.physical_dimensions))
        _, is_padding = self.unapply(symbols, sym.SYMPY_ARITHMETIC, start=self._linearize_at)
        return is_padding

    # ------------------------------------------------------------------ checking
    def _require_concrete(self, what: str) -> None:
        if self.is_symbolic:
            raise InvalidArgumentError(
                f"{self.shape}: cannot {what} of a shape with symbolic dimensions; specialize() it first"
            )

    def _checked_index(self, index: Sequence[int]) -> tuple[int, ...]:
        try:
            values = tuple(operator.index(v) for v in index)
        except TypeError:
            raise InvalidArgumentError(
                f"{self.shape}: index {tuple(index)!r} must be a sequence of integers"
            ) from None
        if len(values) != self.rank:
            raise InvalidArgumentError(
                f"{self.shape}: index {values} has {len(values)} entries, the shape has rank {self.rank}"
            )
        for k, (v, d) in enumerate(zip(values, self.shape.dimensions, strict=True)):
            if v < 0 or (isinstance(d, int) and v >= d):
                raise InvalidArgumentError(
                    f"{self.shape}: index {values} is out of bounds in dimension {k} (size {d})"
                )
        return values

    def _checked_offset(self, offset: int, unit: str) -> int:
        self._require_concrete("invert offsets")
        try:
            value = operator.index(offset)
        except TypeError:
            raise InvalidArgumentError(f"{self.shape}: offset {offset!r} must be an integer") from None
        unit_size = self.size_in(unit)
        if not 0 <= value < unit_size:
            raise InvalidArgumentError(
                f"{self.shape}: offset {offset} is outside the buffer of {unit_size} {unit}s"
            )
        return int(self.position_of_offset(value, unit))


def _check_unit(unit: str) -> None:
    if unit not in UNITS:
        raise InvalidArgumentError(f"unit {unit!r} is not one of {', '.join(UNITS)}")


@lru_cache(maxsize=4096)
def _layout_map(shape: ArrayShape) -> LayoutMap:
    return LayoutMap(shape, layout_steps(shape))


def layout_map(shape: Shape | str) -> LayoutMap:
    """The :class:`LayoutMap` of an array shape (text or ``Shape``); cached.

    Raises ``LayoutSemanticsError`` (a ``ValueError``) with the reason when the shape has no
    single exact map: tuples, tokens, unbounded dims, split configs, invalid tiles.
    """
    array = meaningful_array(as_shape(shape))
    clashes = sorted(
        str(name)
        for d in array.dimensions
        if not isinstance(d, int)
        for name in d.free_symbols
        if str(name) == "p" or re.fullmatch(r"i[0-9]+", str(name))
    )
    if clashes:
        raise InvalidArgumentError(
            f"{array}: dimension names {clashes} are reserved for the closed forms' index (i0, i1, ...) "
            "and offset (p) symbols; rename them"
        )
    return _layout_map(array)


def linear_index(shape: Shape | str, index: Sequence[int]) -> Any:
    """The element's position in the physical buffer: XLA's ``LinearIndexForNestedTiling``.

    Every tile level applies (unlike XLA's older ``LayoutUtil::LinearIndex``, which uses
    the first tile only and ignores tiles on rank-1 shapes; see ``layout_algebra.xla``).

    >>> linear_index("bf16[2048]{0:T(1024)(128)(2,1)}", (128,))
    1
    """
    return layout_map(shape).forward(index)


def delinearize(shape: Shape | str, position: int) -> tuple[int, ...]:
    """The logical index at element position ``position`` (``DelinearizeIndexForNestedTiling``).

    Raises ``ValueError`` if the position is padding or outside the buffer.

    >>> delinearize("bf16[2048]{0:T(1024)(128)(2,1)}", 2)
    (1,)
    """
    m = layout_map(shape)
    index = m.inverse(position)
    if index is None:
        raise InvalidArgumentError(f"{m.shape}: position {position} is padding; no element is stored there")
    return index
