"""Hypothesis strategies for the data model, reusable by every test module.

Everything generated here is a value XLA itself can hold and print (``ParseShape`` would
accept its text), so ``parse_shape(str(s)) == s`` is expected for all of it:

* memory spaces stay in ``int8`` range (XLA stores ``memory_space`` as ``int8_t``,
  xla-facts §1.2);
* ``M(n)`` is 0 or positive (it is printed only when > 0, §1.2);
* ``#(..)``/``*(..)`` are unsigned integer types (the only ones XLA's parser means to
  accept, §1.2); ``P(...)`` appears only where asked for, since ``ParseShape`` rejects it;
* array shapes always carry a layout unless ``layout=None`` is allowed explicitly (the
  parser fills in the default layout, so a layout-less value never round-trips).

Values are kept small (ranks <= 4, dims <= 16 by default, a few tuple elements) so
tests that enumerate elements stay fast; pass larger bounds where only text matters.
"""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import meaningful_array
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import (
    COMBINE_DIMENSION,
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    Layout,
    OpaqueShape,
    Shape,
    SplitConfig,
    Tile,
    TokenShape,
    TupleShape,
)
from layout_algebra.model.syntax import as_shape
from support.oracles import TYPE_BITS, oracle_slots

__all__ = [
    "ARRAY_ELEMENT_TYPES",
    "UNSIGNED_TYPES",
    "array_shapes",
    "buffer_shapes",
    "dimension_sizes",
    "element_types",
    "layouts",
    "permutations",
    "shapes",
    "split_configs",
    "tiles",
    "tuple_shapes",
]

#: Element types an array can have (not tuple/opaque/token/buffer), in a fixed order.
ARRAY_ELEMENT_TYPES: tuple[PrimitiveType, ...] = tuple(t for t in PrimitiveType if t.is_array_type)
#: Unsigned integer types, the ones XLA accepts in ``#(..)`` and ``*(..)``.
UNSIGNED_TYPES: tuple[PrimitiveType, ...] = tuple(t for t in PrimitiveType if t.is_unsigned_integral)

#: Names used for symbolic dimensions (``f32[N,M]``) when ``symbolic=True``.
SYMBOL_NAMES = ("N", "M", "K", "B")


def element_types() -> st.SearchStrategy[PrimitiveType]:
    """A random array element type (any ``PrimitiveType`` but tuple/opaque/token/buffer)."""
    return st.sampled_from(ARRAY_ELEMENT_TYPES)


def dimension_sizes(max_dim: int = 16) -> st.SearchStrategy[int]:
    """A static dimension size in ``[0, max_dim]``, biased towards small values and 1."""
    return st.one_of(st.sampled_from([1, 2]), st.integers(0, max_dim))


def permutations(rank: int) -> st.SearchStrategy[tuple[int, ...]]:
    """A permutation of ``range(rank)`` as a ``minor_to_major`` tuple."""
    return st.permutations(range(rank)).map(tuple)


def tiles(
    rank: int,
    *,
    max_levels: int = 3,
    min_levels: int = 0,
    combine: bool = True,
    max_tile_dim: int = 256,
) -> st.SearchStrategy[tuple[Tile, ...]]:
    """0..``max_levels`` tile levels, each of rank 1..max(rank, 1).

    With ``combine=True`` a tile dimension is sometimes ``*`` (``COMBINE_DIMENSION``).
    Tile dimensions are otherwise >= 1 (XLA's validator rejects 0, §1.4).
    """
    size = st.one_of(st.sampled_from([1, 2, 4, 8, 128]), st.integers(1, max_tile_dim))
    if combine:
        size = st.one_of(size, st.just(COMBINE_DIMENSION))
    one_tile = st.integers(1, max(rank, 1)).flatmap(
        lambda k: st.lists(size, min_size=k, max_size=k).map(lambda ds: Tile(tuple(ds)))
    )
    return st.lists(one_tile, min_size=min_levels, max_size=max_levels).map(tuple)


def split_configs(rank: int, max_dim: int = 16) -> st.SearchStrategy[tuple[SplitConfig, ...]]:
    """0..2 ``SC(d:i,...)`` entries on physical dimensions ``0..rank-1`` (none for scalars)."""
    if rank == 0:
        return st.just(())
    config = st.builds(
        SplitConfig,
        st.integers(0, rank - 1),
        st.lists(st.integers(0, max_dim), max_size=3, unique=True).map(lambda xs: tuple(sorted(xs))),
    )
    return st.lists(config, max_size=2).map(tuple)


@st.composite
def layouts(
    draw: st.DrawFn,
    rank: int | None = None,
    *,
    max_rank: int = 4,
    max_tile_levels: int = 3,
    combine: bool = True,
    index_types: bool = False,
    physical_shape: bool = False,
) -> Layout:
    """A random ``Layout`` for a shape of ``rank`` dimensions (drawn if ``None``).

    ``minor_to_major`` is a permutation; tiles have 0..``max_tile_levels`` levels and
    may contain ``*``; ``L``, ``E``, ``S``, ``SC`` and ``M`` are each sometimes set.
    ``index_types=True`` adds ``#(..)``/``*(..)`` and ``physical_shape=True`` adds
    ``P(...)``: both parse with ``parse_layout`` but not inside ``parse_shape``.
    """
    if rank is None:
        rank = draw(st.integers(0, max_rank))
    fields: dict[str, object] = {
        "minor_to_major": draw(permutations(rank)),
        "tiles": draw(tiles(rank, max_levels=max_tile_levels, combine=combine)),
    }
    if draw(st.booleans()):
        fields["tail_padding_alignment_in_elements"] = draw(
            st.sampled_from([1, 2, 128, 1024]) | st.integers(1, 4096)
        )
    if draw(st.booleans()):
        fields["element_size_in_bits"] = draw(st.sampled_from([0, 1, 2, 4, 8, 16, 32]))
    if draw(st.booleans()):
        fields["memory_space"] = draw(st.sampled_from([0, 1, 2, 5, 6]) | st.integers(-128, 127))
    if draw(st.integers(0, 3)) == 0:
        fields["split_configs"] = draw(split_configs(rank))
    if draw(st.integers(0, 3)) == 0:
        fields["dynamic_shape_metadata_prefix_bytes"] = draw(
            st.sampled_from([0, 8, 1024]) | st.integers(0, 4096)
        )
    if index_types:
        fields["index_primitive_type"] = draw(st.none() | st.sampled_from(UNSIGNED_TYPES))
        fields["pointer_primitive_type"] = draw(st.none() | st.sampled_from(UNSIGNED_TYPES))
    if physical_shape and draw(st.booleans()):
        fields["physical_shape"] = draw(array_shapes(max_rank=2, dynamic=False))
    return Layout(**fields)  # type: ignore[arg-type]


@st.composite
def array_shapes(
    draw: st.DrawFn,
    *,
    element_type: st.SearchStrategy[PrimitiveType] | None = None,
    min_rank: int = 0,
    max_rank: int = 4,
    max_dim: int = 16,
    dynamic: bool = True,
    layout: bool | None = True,
    symbolic: bool = False,
    max_tile_levels: int = 3,
    combine: bool = True,
) -> ArrayShape:
    """A random ``ArrayShape``.

    ``dynamic=True`` makes some dimensions ``<=N`` or ``?``; ``layout=True`` always
    attaches a random layout (``layouts``), ``False`` never, ``None`` sometimes;
    ``symbolic=True`` makes some dimensions SymPy symbols (this package's ``f32[N]``).
    """
    etype = draw(element_type if element_type is not None else element_types())
    rank = draw(st.integers(min_rank, max_rank))
    dims: list[object] = []
    dyn: list[bool] = []
    for _ in range(rank):
        kind = draw(
            st.sampled_from(
                ["static"] * 4
                + (["bounded", "unbounded"] if dynamic else [])
                + (["symbol"] if symbolic else [])
            )
        )
        if kind == "static":
            dims.append(draw(dimension_sizes(max_dim)))
            dyn.append(False)
        elif kind == "bounded":
            dims.append(draw(dimension_sizes(max_dim)))
            dyn.append(True)
        elif kind == "unbounded":
            dims.append(UNBOUNDED_SIZE)
            dyn.append(True)
        else:
            from layout_algebra.model.symbols import dim_symbol

            dims.append(dim_symbol(draw(st.sampled_from(SYMBOL_NAMES))))
            dyn.append(False)
    with_layout = draw(st.booleans()) if layout is None else layout
    lay = draw(layouts(rank, max_tile_levels=max_tile_levels, combine=combine)) if with_layout else None
    return ArrayShape(etype, tuple(dims), tuple(dyn), lay)  # type: ignore[arg-type]


def buffer_shapes(**array_kwargs: object) -> st.SearchStrategy[BufferShape]:
    """``b(array)`` around a random array shape (keyword arguments go to ``array_shapes``)."""
    return array_shapes(**array_kwargs).map(BufferShape)  # type: ignore[arg-type]


def tuple_shapes(elements: st.SearchStrategy[Shape], max_size: int = 7) -> st.SearchStrategy[TupleShape]:
    """A tuple of 0..``max_size`` elements (6+ elements exercise the ``/*index=5*/`` comment)."""
    return st.lists(elements, max_size=max_size).map(lambda es: TupleShape(tuple(es)))


def shapes(*, max_leaves: int = 10, **array_kwargs: object) -> st.SearchStrategy[Shape]:
    """Any shape: arrays, ``token[]``, ``opaque[]``, buffers and (nested) tuples of them."""
    leaves: st.SearchStrategy[Shape] = st.one_of(
        array_shapes(**array_kwargs),  # type: ignore[arg-type]
        st.just(TokenShape()),
        st.just(OpaqueShape()),
        buffer_shapes(**array_kwargs),
    )
    return st.recursive(leaves, lambda inner: tuple_shapes(inner), max_leaves=max_leaves)


ENTRIES = st.sampled_from([1, 2, 3, 4, None])


@st.composite
def small_concrete_layouts(
    draw: st.DrawFn, element_type: str | None = None, rank: int | None = None
) -> ArrayShape:
    """A small concrete array: rank 0-3, tiles of 1-3 levels (entries 1-4 or ``*``, a level
    sometimes repeated), sometimes ``L(n)``, ``E(n)`` and ``S(n)``."""
    etype = element_type or draw(st.sampled_from(sorted(TYPE_BITS)))
    rank = draw(st.integers(0, 3)) if rank is None else rank
    dims = [draw(st.integers(1, 5)) for _ in range(rank)]
    order = draw(st.permutations(range(rank)))
    levels: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        if levels and draw(st.integers(0, 3)) == 0:
            levels.append(levels[-1])  # a repeated tile
            continue
        entries = draw(st.lists(ENTRIES, min_size=1, max_size=max(rank, 1)))
        levels.append("(" + ",".join("*" if e is None else str(e) for e in entries) + ")")
    parts = ("T" + "".join(levels)) if levels else ""
    if draw(st.booleans()):
        parts += f"L({draw(st.sampled_from([2, 3, 4, 8]))})"
    bits = TYPE_BITS[etype]
    e_choices = [bits, 8] if bits < 8 else [bits]
    if draw(st.booleans()):
        parts += f"E({draw(st.sampled_from(e_choices))})"
    if draw(st.integers(0, 3)) == 0:
        parts += f"S({draw(st.sampled_from([1, 5]))})"
    text = f"{etype}[{','.join(map(str, dims))}]{{{','.join(map(str, order))}{':' + parts if parts else ''}}}"
    try:
        shape = meaningful_array(as_shape(text))
        layout_map(shape)
        _, slots = oracle_slots(shape)
    except ValueError:
        assume(False)
        raise
    assume(slots <= 2048)
    return shape
