"""The data model: XLA shapes and layouts as plain, immutable values.

A *shape* says what an array is (element type and dimensions); its *layout* says how it
lies in memory. Every class here is a frozen dataclass: hashable, equal by value, and
printed by ``str()`` in XLA's canonical text form, byte for byte.

>>> from layout_algebra import parse_shape
>>> s = parse_shape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
>>> s.element_type, s.dimensions
(PrimitiveType.BF16, (8, 1, 1280, 16384))
>>> s.layout.minor_to_major
(3, 2, 0, 1)
>>> [str(t) for t in s.layout.tiles]
['(8,128)', '(2,1)']
>>> str(s)
'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'

Building values directly works too, and equal values are equal whatever way they were
made:

>>> from layout_algebra.model.shapes import ArrayShape, Layout, Tile
>>> from layout_algebra.model.primitive_types import PrimitiveType
>>> built = ArrayShape(PrimitiveType.F32, (3, 5), layout=Layout((1, 0), (Tile((2, 2)),)))
>>> built == parse_shape("f32[3,5]{1,0:T(2,2)}")
True
>>> str(built)
'f32[3,5]{1,0:T(2,2)}'

Conventions (XLA's, kept so XLA people feel at home): ``minor_to_major[0]`` is the
fastest-varying logical dimension; a combined tile dimension ``*`` is stored as
``COMBINE_DIMENSION`` (XLA's ``Tile::kCombineDimension`` = INT64_MIN); an unbounded
dynamic dimension ``?`` has size ``UNBOUNDED_SIZE`` (``Shape::kUnboundedSize``).

Symbolic dimensions are this package's extension: ``f32[N,M]`` has SymPy symbols as
dimensions (non-negative integers), for the symbolic work of the prover.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard, Union, cast

from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.primitive_types import PrimitiveType

if TYPE_CHECKING:  # pragma: no cover
    import sympy


__all__ = [
    "COMBINE_DIMENSION",
    "UNBOUNDED_SIZE",
    "ArrayShape",
    "BufferShape",
    "Dim",
    "Layout",
    "OpaqueShape",
    "Shape",
    "SplitConfig",
    "Tile",
    "TokenShape",
    "TupleShape",
    "default_layout",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: ``Tile::kCombineDimension``: a tile dimension printed as ``*``.
COMBINE_DIMENSION = INT64_MIN
#: ``Shape::kUnboundedSize``: the stored size of an unbounded dynamic dimension ``?``.
UNBOUNDED_SIZE = INT64_MIN

#: A dimension size: a Python int, or a SymPy symbol/expression for symbolic shapes.
Dim = Union[int, "sympy.Expr"]


def _is_int(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _int_tuple(values: object, what: str) -> tuple[int, ...]:
    try:
        items = tuple(cast("Iterable[object]", values))  # a TypeError below if it is not iterable
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints, got {values!r}") from None
    ints: list[int] = []
    for v in items:
        if not _is_int(v):
            raise TypeError(f"{what} must be a sequence of ints, got {values!r}")
        if not INT64_MIN <= v <= INT64_MAX:
            raise InvalidArgumentError(f"{what} entry {v} does not fit in a 64-bit integer, as XLA stores it")
        ints.append(v)
    return tuple(ints)


@dataclass(frozen=True)
class Tile:
    """One level of tiling, e.g. ``(8,128)``; dimensions are listed major to minor.

    >>> str(Tile((2, COMBINE_DIMENSION, 128)))
    '(2,*,128)'
    """

    dimensions: tuple[int, ...]

    def __post_init__(self) -> None:
        dims = _int_tuple(self.dimensions, "tile dimensions")
        for d in dims:
            if d < 0 and d != COMBINE_DIMENSION:
                raise InvalidArgumentError(
                    f"tile dimension {d} is invalid: a tile dimension is a positive size "
                    "or COMBINE_DIMENSION ('*')"
                )
        object.__setattr__(self, "dimensions", dims)

    def __str__(self) -> str:
        return "(" + ",".join("*" if d == COMBINE_DIMENSION else str(d) for d in self.dimensions) + ")"

    def __len__(self) -> int:
        return len(self.dimensions)

    @property
    def has_combine_dimension(self) -> bool:
        return COMBINE_DIMENSION in self.dimensions


@dataclass(frozen=True)
class SplitConfig:
    """``SC(dimension:i,j,...)``: split a *physical* dimension (0 = most major) at indices.

    >>> str(SplitConfig(1, (0, 4)))
    '(1:0,4)'
    """

    dimension: int
    split_indices: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not _is_int(self.dimension):
            raise TypeError(f"split config dimension must be an int, got {self.dimension!r}")
        object.__setattr__(self, "split_indices", _int_tuple(self.split_indices, "split indices"))

    def __str__(self) -> str:
        return f"({self.dimension}:" + ",".join(str(i) for i in self.split_indices) + ")"


@dataclass(frozen=True)
class Layout:
    """Every field of XLA's layout text form, with XLA's defaults.

    The printed form follows ``Layout::Print``: ``minor_to_major``, then ``:`` and the
    attributes that differ from their defaults, always in the order
    ``T L # * E S SC P M``.

    >>> str(Layout((1, 0), tiles=(Tile((8, 128)),), memory_space=1))
    '{1,0:T(8,128)S(1)}'
    >>> str(Layout((0,), element_size_in_bits=4, tail_padding_alignment_in_elements=1024))
    '{0:L(1024)E(4)}'

    Value equality compares every field. XLA's ``Layout::Equal``, which ignores ``M(n)``
    and has ``Ignore...`` options, is ``layout_algebra.xla.layout_equal``.
    """

    minor_to_major: tuple[int, ...] = ()
    tiles: tuple[Tile, ...] = ()
    tail_padding_alignment_in_elements: int = 1
    index_primitive_type: PrimitiveType | None = None
    pointer_primitive_type: PrimitiveType | None = None
    element_size_in_bits: int = 0
    memory_space: int = 0
    split_configs: tuple[SplitConfig, ...] = ()
    physical_shape: Shape | None = None
    dynamic_shape_metadata_prefix_bytes: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "minor_to_major", _int_tuple(self.minor_to_major, "minor_to_major"))
        tiles = tuple(t if isinstance(t, Tile) else Tile(tuple(t)) for t in self.tiles)
        object.__setattr__(self, "tiles", tiles)
        configs = tuple(self.split_configs)
        for c in configs:
            if not isinstance(c, SplitConfig):
                raise TypeError(f"split_configs must hold SplitConfig values, got {c!r}")
        object.__setattr__(self, "split_configs", configs)
        for name in (
            "tail_padding_alignment_in_elements",
            "element_size_in_bits",
            "memory_space",
            "dynamic_shape_metadata_prefix_bytes",
        ):
            if not _is_int(getattr(self, name)):
                raise TypeError(f"Layout.{name} must be an int, got {getattr(self, name)!r}")
        if not -128 <= self.memory_space <= 127:
            raise InvalidArgumentError(
                f"memory_space {self.memory_space} is outside [-128, 127]: XLA stores it as an int8 "
                f"(its parser turns S({self.memory_space}) into S({(self.memory_space + 128) % 256 - 128}))"
            )
        if self.tail_padding_alignment_in_elements < 1:
            raise InvalidArgumentError(
                "tail_padding_alignment_in_elements must be >= 1, got "
                f"{self.tail_padding_alignment_in_elements}"
            )
        for name in ("index_primitive_type", "pointer_primitive_type"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, PrimitiveType):
                raise TypeError(f"Layout.{name} must be a PrimitiveType or None, got {value!r}")
        if self.physical_shape is not None and not isinstance(self.physical_shape, Shape):
            raise TypeError(f"Layout.physical_shape must be a Shape or None, got {self.physical_shape!r}")

    def __str__(self) -> str:
        attrs = []
        if self.tiles:
            attrs.append("T" + "".join(str(t) for t in self.tiles))
        if self.tail_padding_alignment_in_elements != 1:
            attrs.append(f"L({self.tail_padding_alignment_in_elements})")
        if self.index_primitive_type is not None:
            attrs.append(f"#({_integral_type_text(self.index_primitive_type)})")
        if self.pointer_primitive_type is not None:
            attrs.append(f"*({_integral_type_text(self.pointer_primitive_type)})")
        if self.element_size_in_bits != 0:
            attrs.append(f"E({self.element_size_in_bits})")
        if self.memory_space != 0:
            attrs.append(f"S({self.memory_space})")
        if self.split_configs:
            attrs.append("SC" + "".join(str(c) for c in self.split_configs))
        if self.physical_shape is not None:
            attrs.append(f"P({self.physical_shape})")
        if self.dynamic_shape_metadata_prefix_bytes > 0:
            attrs.append(f"M({self.dynamic_shape_metadata_prefix_bytes})")
        body = ",".join(str(d) for d in self.minor_to_major)
        if attrs:
            body += ":" + "".join(attrs)
        return "{" + body + "}"

    def __repr__(self) -> str:
        return f"parse_layout({str(self)!r})"

    @property
    def is_tiled(self) -> bool:
        return bool(self.tiles)


def _integral_type_text(t: PrimitiveType) -> str:
    # Layout::Print writes "invalid" for a non-integral index/pointer type.
    return t.text if t.is_integral else "invalid"


def default_layout(rank: int) -> Layout:
    """XLA's default layout for ``rank`` dimensions: descending (row-major) ``{rank-1,...,0}``.

    >>> str(default_layout(3))
    '{2,1,0}'
    """
    return Layout(tuple(range(rank - 1, -1, -1)))


class Shape:
    """Base class of every shape: array, tuple, token, opaque and buffer."""

    __slots__ = ()

    @property
    def is_array(self) -> bool:
        return isinstance(self, ArrayShape)

    @property
    def is_tuple(self) -> bool:
        return isinstance(self, TupleShape)

    def __repr__(self) -> str:
        return f"parse_shape({str(self)!r})"


def _dim_text(size: Dim, dynamic: bool) -> str:
    if dynamic and size == UNBOUNDED_SIZE:
        return "?"
    return ("<=" if dynamic else "") + str(size)


@dataclass(frozen=True, repr=False)
class ArrayShape(Shape):
    """A dense array: element type, dimensions, which are dynamic, and (optionally) a layout.

    >>> s = ArrayShape(PrimitiveType.F32, (2, 3), dynamic_dimensions=(False, True))
    >>> str(s)
    'f32[2,<=3]'
    >>> s.rank, s.is_static
    (2, False)
    """

    element_type: PrimitiveType
    dimensions: tuple[Dim, ...]
    dynamic_dimensions: tuple[bool, ...] = field(default=())
    layout: Layout | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.element_type, PrimitiveType) or not self.element_type.is_array_type:
            raise TypeError(f"element_type must be an array PrimitiveType, got {self.element_type!r}")
        dims = tuple(_dimension(d, self.dimensions) for d in self.dimensions)
        object.__setattr__(self, "dimensions", dims)
        dyn = tuple(bool(x) for x in self.dynamic_dimensions) or (False,) * len(dims)
        if len(dyn) != len(dims):
            raise InvalidArgumentError(
                f"dynamic_dimensions has {len(dyn)} entries but the shape has {len(dims)} dimensions"
            )
        object.__setattr__(self, "dynamic_dimensions", dyn)
        for d, is_dyn in zip(dims, dyn, strict=True):
            if _is_int(d) and d < 0 and not (is_dyn and d == UNBOUNDED_SIZE):
                raise InvalidArgumentError(
                    f"dimension size {d} is negative in {self.element_type.text}{list(dims)}"
                )
        if self.layout is not None and not isinstance(self.layout, Layout):
            raise TypeError(f"layout must be a Layout or None, got {self.layout!r}")

    def __str__(self) -> str:
        dims = ",".join(
            _dim_text(d, dyn) for d, dyn in zip(self.dimensions, self.dynamic_dimensions, strict=True)
        )
        text = f"{self.element_type.text}[{dims}]"
        if self.layout is not None:
            layout_text = str(self.layout)
            # ShapeUtil::PrintHumanStringWithLayout omits a scalar's layout printed as "{}".
            if not (self.rank == 0 and layout_text == "{}"):
                text += layout_text
        return text

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    @property
    def is_static(self) -> bool:
        """No dimension is dynamic (bounded ``<=N`` or unbounded ``?``)."""
        return not any(self.dynamic_dimensions)

    @property
    def is_unbounded_dynamic(self) -> bool:
        """Some dimension is ``?``."""
        return any(
            dyn and d == UNBOUNDED_SIZE
            for d, dyn in zip(self.dimensions, self.dynamic_dimensions, strict=True)
        )

    @property
    def is_symbolic(self) -> bool:
        """Some dimension is a SymPy expression rather than an int."""
        return any(not _is_int(d) for d in self.dimensions)

    @property
    def size_symbols(self) -> tuple[sympy.Symbol, ...]:
        """The symbols the dimensions are written in, in order of first appearance (each
        dimension's own symbols sorted by name); ``()`` for a concrete shape.

        >>> from layout_algebra import parse_shape
        >>> parse_shape("f32[N,8,M,N]").size_symbols
        (N, M)
        """
        found: list[sympy.Symbol] = []
        for d in self.dimensions:
            if not isinstance(d, int):
                found += [s for s in sorted(d.free_symbols, key=str) if s not in found]
        return tuple(found)

    @property
    def effective_layout(self) -> Layout:
        """The layout, or XLA's default descending layout ``{rank-1,...,0}`` when unset.

        >>> str(ArrayShape(PrimitiveType.F32, (2, 3)).effective_layout)
        '{1,0}'
        """
        return self.layout if self.layout is not None else default_layout(self.rank)

    def with_layout(self, layout: Layout | None) -> ArrayShape:
        return ArrayShape(self.element_type, self.dimensions, self.dynamic_dimensions, layout)

    def specialize(self, sizes: Mapping[object, int]) -> ArrayShape:
        """The same shape with symbolic dimensions given values (keys: names or symbols).

        >>> from layout_algebra import parse_shape
        >>> parse_shape("f32[N,M]{1,0:T(8,128)}").specialize({"N": 3, "M": 200})
        parse_shape('f32[3,200]{1,0:T(8,128)}')
        """
        from layout_algebra.model.symbols import as_sympy, dim_symbol

        values = {(dim_symbol(k) if isinstance(k, str) else k): v for k, v in sizes.items()}
        dims = []
        for d in self.dimensions:
            if isinstance(d, int):
                dims.append(d)
                continue
            v = as_sympy(d).subs(values)
            if not v.is_Integer:
                if v.free_symbols:
                    raise InvalidArgumentError(
                        f"{self}: no value given for {sorted(map(str, v.free_symbols))}"
                    )
                raise InvalidArgumentError(f"{self}: the dimension {d} is {v} there, not a whole number")
            dims.append(int(v))
        return ArrayShape(self.element_type, tuple(dims), self.dynamic_dimensions, self.layout)


@dataclass(frozen=True, repr=False)
class TupleShape(Shape):
    """A tuple of shapes; printed ``(a, b)`` with ``/*index=N*/`` before every 5th element.

    >>> from layout_algebra import parse_shape
    >>> str(parse_shape("(f32[],f32[],f32[],f32[],f32[],f32[])"))
    '(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])'
    """

    elements: tuple[Shape, ...] = ()

    def __post_init__(self) -> None:
        elements = tuple(self.elements)
        for e in elements:
            if not isinstance(e, Shape):
                raise TypeError(f"tuple elements must be Shapes, got {e!r}")
        object.__setattr__(self, "elements", elements)

    def __str__(self) -> str:
        parts = []
        for i, e in enumerate(self.elements):
            parts.append((f"/*index={i}*/" if i and i % 5 == 0 else "") + str(e))
        return "(" + ", ".join(parts) + ")"


@dataclass(frozen=True, repr=False)
class TokenShape(Shape):
    """``token[]``: an ordering token; it has no dimensions and no layout."""

    def __str__(self) -> str:
        return "token[]"


@dataclass(frozen=True, repr=False)
class OpaqueShape(Shape):
    """``opaque[]``: an opaque handle; it has no dimensions and no layout."""

    def __str__(self) -> str:
        return "opaque[]"


@dataclass(frozen=True, repr=False)
class BufferShape(Shape):
    """``b(shape)``: a buffer holding exactly one array shape."""

    array: ArrayShape

    def __post_init__(self) -> None:
        if not isinstance(self.array, ArrayShape):
            raise TypeError(f"a buffer shape holds an ArrayShape, got {self.array!r}")

    def __str__(self) -> str:
        return f"b({self.array})"


def _dimension(d: object, dims: object) -> Dim:
    """A dimension size as stored: an int, or a SymPy expression that may be a valid size.

    SymPy numbers become ints; expressions SymPy knows to be negative or non-integer are
    rejected (so every stored shape prints as text the parser accepts).
    """
    if _is_sympy_expr(d) and d.is_Integer:  # type: ignore[attr-defined]
        d = int(d)  # type: ignore[call-overload]
    if _is_int(d):
        if d > INT64_MAX:
            raise InvalidArgumentError(f"dimension {d} does not fit in a 64-bit integer, as XLA stores it")
        return d
    if not _is_sympy_expr(d):
        raise TypeError(f"dimensions must be ints or SymPy expressions, got {dims!r}")
    if d.is_number or d.is_negative or d.is_integer is False:  # type: ignore[attr-defined]
        raise InvalidArgumentError(f"dimension {d} is not a non-negative integer size (in {dims!r})")
    return d


def _is_sympy_expr(x: object) -> bool:
    # Avoid importing SymPy for purely concrete shapes.
    mod = type(x).__module__
    if not mod.startswith("sympy"):
        return False
    import sympy

    return isinstance(x, sympy.Expr)
