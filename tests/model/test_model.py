"""The data model: immutable values, value equality, constructor checks, XLA's printing rules,
symbolic dimensions and the primitive-type facts.

Expected values come from ``tests/data/ground_truth/xla-facts.md`` (cited as §n) and the
``primitive_type_name`` cases of ``xla_vectors.json``, never from the package's output.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import sympy
from hypothesis import given, settings
from support.ground_truth import require_vector, vector_params
from support.strategies import layouts, shapes

from layout_algebra import parse_layout, parse_shape
from layout_algebra.model.primitive_types import ARRAY_TYPE_NAMES, PrimitiveType, primitive_type
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
from layout_algebra.model.symbols import dim_symbol

P = PrimitiveType
INT64_MIN = -(2**63)


def f32(*dims: int, layout: Layout | None = None) -> ArrayShape:
    return ArrayShape(P.F32, dims, layout=layout)


# --------------------------------------------------------------------------------------
# Immutability, equality and hashing
# --------------------------------------------------------------------------------------

SAMPLE_VALUES = [
    (Tile((8, 128)), "dimensions", (1,)),
    (SplitConfig(0, (3,)), "split_indices", ()),
    (Layout((1, 0), tiles=(Tile((8, 128)),)), "minor_to_major", (0, 1)),
    (Layout((1, 0)), "memory_space", 1),
    (ArrayShape(P.F32, (2, 3), layout=Layout((1, 0))), "dimensions", (3, 2)),
    (ArrayShape(P.F32, (2, 3)), "layout", Layout((1, 0))),
    (TupleShape((TokenShape(),)), "elements", ()),
    (BufferShape(ArrayShape(P.S32, (3, 4))), "array", ArrayShape(P.S32, (4,))),
    (TokenShape(), "anything", 1),
    (OpaqueShape(), "anything", 1),
]


@pytest.mark.parametrize(("value", "attribute", "new"), SAMPLE_VALUES, ids=lambda v: type(v).__name__)
def test_values_are_frozen(value: object, attribute: str, new: object) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, attribute, new)
    if hasattr(value, attribute):
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(value, attribute)


def test_sequences_are_copied_into_tuples() -> None:
    # Mutating the list a value was built from must not change the value.
    dims, m2m, tile_dims, elements = [2, 3], [1, 0], [8, 128], [TokenShape()]
    shape = ArrayShape(P.F32, dims, [False, False], Layout(m2m, tiles=[Tile(tile_dims)]))
    tup = TupleShape(elements)
    dims.append(4)
    m2m.append(2)
    tile_dims.append(1)
    elements.append(OpaqueShape())
    assert shape.dimensions == (2, 3) and isinstance(shape.dimensions, tuple)
    assert isinstance(shape.dynamic_dimensions, tuple)
    assert shape.layout is not None
    assert shape.layout.minor_to_major == (1, 0) and isinstance(shape.layout.minor_to_major, tuple)
    assert shape.layout.tiles == (Tile((8, 128)),) and isinstance(shape.layout.tiles, tuple)
    assert tup.elements == (TokenShape(),)


def test_equality_and_hash_by_value() -> None:
    a = ArrayShape(P.BF16, [8, 128], [False, False], Layout([1, 0], tiles=[(8, 128), (2, 1)]))
    b = ArrayShape(P.BF16, (8, 128), (), Layout((1, 0), tiles=(Tile((8, 128)), Tile((2, 1)))))
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert {a: "x"}[b] == "x"
    assert a != ArrayShape(P.F16, (8, 128), layout=b.layout)  # element type
    assert a != ArrayShape(P.BF16, (8, 128), layout=Layout((0, 1), tiles=b.layout.tiles))  # type: ignore[union-attr]
    assert a != ArrayShape(P.BF16, (8, 128), (False, True), b.layout)  # dynamic flag
    assert a != ArrayShape(P.BF16, (8, 128))  # no layout
    assert TupleShape((a, TokenShape())) == TupleShape((b, TokenShape()))
    assert hash(TupleShape((a,))) == hash(TupleShape((b,)))
    assert BufferShape(a) == BufferShape(b) and hash(BufferShape(a)) == hash(BufferShape(b))


def test_different_kinds_of_shape_are_unequal() -> None:
    kinds = [TokenShape(), OpaqueShape(), TupleShape(()), f32(), BufferShape(f32())]
    for i, x in enumerate(kinds):
        for j, y in enumerate(kinds):
            assert (x == y) == (i == j), (x, y)
    assert TokenShape() == TokenShape() and hash(TokenShape()) == hash(TokenShape())


#: A non-default value for every Layout field (§1.2 table). Value equality covers all of
#: them -- including M(n), which XLA's Layout::Equal ignores (§2); that comparison is a
#: separate function, not ``==``.
NON_DEFAULT_LAYOUT_FIELDS = {
    "minor_to_major": (0, 1),
    "tiles": (Tile((8, 128)),),
    "tail_padding_alignment_in_elements": 2,
    "index_primitive_type": P.U32,
    "pointer_primitive_type": P.U16,
    "element_size_in_bits": 4,
    "memory_space": 1,
    "split_configs": (SplitConfig(0, (3,)),),
    "physical_shape": ArrayShape(P.S32, (10, 20), layout=Layout((1, 0))),
    "dynamic_shape_metadata_prefix_bytes": 123,
}


def test_layout_fields_and_defaults() -> None:
    # §1.2 defaults: no tiles, L=1, no #/*, E=0, S=0, no SC, no P, M=0.
    assert {f.name for f in dataclasses.fields(Layout)} == set(NON_DEFAULT_LAYOUT_FIELDS)
    base = Layout((1, 0))
    assert base.tiles == () and base.split_configs == ()
    assert base.tail_padding_alignment_in_elements == 1
    assert base.index_primitive_type is None and base.pointer_primitive_type is None
    assert base.element_size_in_bits == 0 and base.memory_space == 0
    assert base.physical_shape is None and base.dynamic_shape_metadata_prefix_bytes == 0


@pytest.mark.parametrize(
    ("field", "value"), NON_DEFAULT_LAYOUT_FIELDS.items(), ids=list(NON_DEFAULT_LAYOUT_FIELDS)
)
def test_every_layout_field_takes_part_in_equality(field: str, value: object) -> None:
    base = Layout((1, 0))
    changed = dataclasses.replace(base, **{field: value})
    assert changed != base
    assert changed == dataclasses.replace(base, **{field: value})
    assert hash(changed) == hash(dataclasses.replace(base, **{field: value}))


@pytest.mark.slow
@settings(max_examples=200)
@given(shapes())
def test_generated_shapes_equal_their_copies(shape: Shape) -> None:
    twin = copy.deepcopy(shape)
    assert twin == shape and hash(twin) == hash(shape)
    assert len({shape, twin}) == 1


@pytest.mark.slow
@settings(max_examples=200)
@given(layouts(index_types=True, physical_shape=True))
def test_generated_layouts_equal_their_copies(layout: Layout) -> None:
    twin = copy.deepcopy(layout)
    assert twin == layout and hash(twin) == hash(layout)


# --------------------------------------------------------------------------------------
# Constructor checks
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "error"),
    [
        # §1.1: size >= 0, or (dynamic and size == INT64_MIN)
        (lambda: f32(-1), ValueError),
        (lambda: f32(2, -7), ValueError),
        (lambda: ArrayShape(P.F32, (UNBOUNDED_SIZE,)), ValueError),  # `?` size without the flag
        (lambda: ArrayShape(P.F32, (-5,), (True,)), ValueError),  # only INT64_MIN may be dynamic<0
        (lambda: ArrayShape(P.F32, (2, 3), (True,)), ValueError),  # dynamic_dimensions length
        (lambda: ArrayShape(P.F32, (2,), (True, False)), ValueError),
        (lambda: ArrayShape("f32", (2,)), TypeError),  # type: ignore[arg-type]
        (lambda: ArrayShape(P.TUPLE, ()), TypeError),  # not an array element type (§3)
        (lambda: ArrayShape(P.TOKEN, ()), TypeError),
        (lambda: ArrayShape(P.F32, (2.0,)), TypeError),  # type: ignore[arg-type]
        (lambda: ArrayShape(P.F32, (True,)), TypeError),
        (lambda: ArrayShape(P.F32, ("2",)), TypeError),  # type: ignore[arg-type]
        (lambda: ArrayShape(P.F32, (2,), layout="{0}"), TypeError),  # type: ignore[arg-type]
        (lambda: Tile((8, -1)), ValueError),  # only INT64_MIN (`*`) may be negative (§1.3)
        (lambda: Tile((8, 1.5)), TypeError),  # type: ignore[arg-type]
        (lambda: Tile(8), TypeError),  # type: ignore[arg-type]
        (lambda: Layout((1, "0")), TypeError),  # type: ignore[arg-type]
        (lambda: Layout((0,), tail_padding_alignment_in_elements=0), ValueError),  # L >= 1 (§1.2)
        (lambda: Layout((0,), memory_space="1"), TypeError),  # type: ignore[arg-type]
        (lambda: Layout((0,), element_size_in_bits=4.0), TypeError),  # type: ignore[arg-type]
        (lambda: Layout((0,), index_primitive_type="u32"), TypeError),  # type: ignore[arg-type]
        (lambda: Layout((0,), physical_shape="s32[2]"), TypeError),  # type: ignore[arg-type]
        (lambda: Layout((0,), split_configs=((0, (3,)),)), TypeError),  # type: ignore[arg-type]
        (lambda: SplitConfig("0", (3,)), TypeError),  # type: ignore[arg-type]
        (lambda: TupleShape((f32(), "f32[]")), TypeError),  # type: ignore[arg-type]
        (lambda: BufferShape(TupleShape(())), TypeError),  # type: ignore[arg-type]
        (lambda: BufferShape(TokenShape()), TypeError),  # type: ignore[arg-type]
    ],
)
def test_constructor_rejects_invalid_values(build: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        build()  # type: ignore[operator]


def test_constructor_accepts_xla_edge_values() -> None:
    # §1.1: `?` is INT64_MIN with the dynamic flag; zero-size dims are fine.
    s = ArrayShape(P.F32, (UNBOUNDED_SIZE, 0), (True, False))
    assert str(s) == "f32[?,0]"
    # §1.3: `*` is Tile::kCombineDimension = INT64_MIN (not -1).
    assert COMBINE_DIMENSION == INT64_MIN
    assert str(Tile((COMBINE_DIMENSION, 128))) == "(*,128)"


def test_negative_sympy_dimension_is_rejected() -> None:
    # Regression: the negative-size check (§1.1) used to look at Python ints only, so a
    # concrete negative SymPy number, or an expression SymPy knows is negative, was accepted
    # and printed as text the parser rejects (`f32[-1]`).
    n = dim_symbol("N")
    for bad in (sympy.Integer(-1), -n - 1, sympy.Rational(1, 2)):
        with pytest.raises(ValueError):
            ArrayShape(P.F32, (bad,))


@pytest.mark.parametrize(
    "build",
    [
        lambda: ArrayShape(P.F32, (2**63,), layout=Layout((0,))),  # > INT64_MAX
        lambda: Layout((0,), tiles=(Tile((2**63,)),)),
        lambda: Layout((2**63,)),
        lambda: ArrayShape(P.F32, (sympy.Float(2.0),), layout=Layout((0,))),
    ],
    ids=["dim-2**63", "tile-2**63", "minor_to_major-2**63", "sympy-Float-dim"],
)
def test_constructors_refuse_values_xla_cannot_hold(build: object) -> None:
    """XLA's sizes, tile dimensions and minor_to_major entries are int64 (§1.1, §1.2), and a
    dimension is an integer. Values outside that (2**63, SymPy ``Float(2.0)``) would print
    as text the parser rejects, so the constructors refuse them with a clear error."""
    with pytest.raises((TypeError, ValueError)) as err:
        build()  # type: ignore[operator]
    assert "64-bit" in str(err.value) or "integer" in str(err.value)


# --------------------------------------------------------------------------------------
# Printing rules (§1.1 "Printing", §1.2 table, §8.10)
# --------------------------------------------------------------------------------------


def test_scalar_layout_printing() -> None:
    # §1.1: a scalar's layout is omitted only when it prints exactly as `{}`.
    assert str(ArrayShape(P.F32, ())) == "f32[]"
    assert str(ArrayShape(P.F32, (), layout=Layout(()))) == "f32[]"
    assert str(ArrayShape(P.F32, (), layout=Layout((), tiles=(Tile((256,)),)))) == "f32[]{:T(256)}"
    assert str(ArrayShape(P.U32, (), layout=Layout((), memory_space=2))) == "u32[]{:S(2)}"


def test_array_printing() -> None:
    # §1.1/§1.2: dims and minor_to_major joined by ',' with no spaces; layout only if present.
    assert str(f32(123, 456)) == "f32[123,456]"
    assert str(f32(123, 456, layout=Layout((1, 0)))) == "f32[123,456]{1,0}"
    assert str(ArrayShape(P.C64, (5, 10), (False, True), Layout((1, 0)))) == "c64[5,<=10]{1,0}"
    assert str(ArrayShape(P.F32, (UNBOUNDED_SIZE, 784), (True, False))) == "f32[?,784]"
    assert str(f32(0)) == "f32[0]"


def test_layout_printing_examples() -> None:
    # The printed examples of §1.2 (XLA layout_test.cc), built from fields.
    m = (3, 2, 1, 0)
    cases = [
        (Layout(()), "{}"),
        (Layout((1, 2, 0)), "{1,2,0}"),
        (Layout(m, tiles=(Tile((42, 123)), Tile((4, 5)))), "{3,2,1,0:T(42,123)(4,5)}"),
        (
            Layout(m, tiles=(Tile((COMBINE_DIMENSION, COMBINE_DIMENSION, 42, 123)),)),
            "{3,2,1,0:T(*,*,42,123)}",
        ),
        (Layout(m, tail_padding_alignment_in_elements=100), "{3,2,1,0:L(100)}"),
        (Layout(m, index_primitive_type=P.U32), "{3,2,1,0:#(u32)}"),
        (Layout(m, pointer_primitive_type=P.U16), "{3,2,1,0:*(u16)}"),
        (Layout(m, element_size_in_bits=42), "{3,2,1,0:E(42)}"),
        (Layout(m, memory_space=3), "{3,2,1,0:S(3)}"),
        (
            Layout((0, 1), split_configs=(SplitConfig(0, (3,)), SplitConfig(1, (0, 4)))),
            "{0,1:SC(0:3)(1:0,4)}",
        ),
        (
            Layout((0, 1), physical_shape=ArrayShape(P.S32, (10, 20), layout=Layout((1, 0)))),
            "{0,1:P(s32[10,20]{1,0})}",
        ),
        (Layout((0, 1), dynamic_shape_metadata_prefix_bytes=123), "{0,1:M(123)}"),
        (
            Layout(m, (Tile((42, 123)), Tile((4, 5))), 100, element_size_in_bits=42),
            "{3,2,1,0:T(42,123)(4,5)L(100)E(42)}",
        ),
    ]
    for layout, expected in cases:
        assert str(layout) == expected


def test_layout_printing_order_with_every_attribute() -> None:
    # §1.2 "Printing order": T, L, #, *, E, S, SC, P, M.
    layout = Layout(**NON_DEFAULT_LAYOUT_FIELDS | {"minor_to_major": (1, 0)})  # type: ignore[arg-type]
    assert str(layout) == "{1,0:T(8,128)L(2)#(u32)*(u16)E(4)S(1)SC(0:3)P(s32[10,20]{1,0})M(123)}"


def test_defaults_are_not_printed() -> None:
    # §1.2 table / §8.8: L=1, E=0, S=0 and M<=0 are omitted.
    plain = "{1,0}"
    assert str(Layout((1, 0), tail_padding_alignment_in_elements=1)) == plain
    assert str(Layout((1, 0), element_size_in_bits=0)) == plain
    assert str(Layout((1, 0), memory_space=0)) == plain
    assert str(Layout((1, 0), dynamic_shape_metadata_prefix_bytes=0)) == plain  # M(0) not printed
    assert str(Layout((1, 0), dynamic_shape_metadata_prefix_bytes=-1)) == plain  # printed iff > 0
    assert str(parse_shape("f32[4096]{0:S(0)}")) == "f32[4096]{0}"  # TSV row
    assert str(parse_layout("{1,0:M(0)}")) == plain


@pytest.mark.parametrize("t", [t for t in PrimitiveType if t.is_array_type], ids=str)
def test_index_and_pointer_types_print_invalid_unless_integral(t: PrimitiveType) -> None:
    # §1.2: `#(..)`/`*(..)` print the type if integral (s1..s64, u1..u64, §3), else `invalid`.
    integral = t.text[0] in "su" and t.text[1:].isdigit()
    name = t.text if integral else "invalid"
    assert str(Layout((0,), index_primitive_type=t)) == f"{{0:#({name})}}"
    assert str(Layout((0,), pointer_primitive_type=t)) == f"{{0:*({name})}}"


def test_hash_f32_index_type_prints_invalid_after_parsing() -> None:
    # §1.2/§8.9: `#(f32)` is accepted by the parser and printed `#(invalid)`.
    assert str(parse_layout("{0:#(f32)}")) == "{0:#(invalid)}"
    assert parse_layout("{0:#(f32)}").index_primitive_type is P.F32


@pytest.mark.parametrize(
    ("written", "stored"),
    [(200, -56), (128, -128), (255, -1), (256, 0), (-129, 127), (127, 127), (-128, -128), (5, 5)],
)
def test_parsed_memory_space_wraps_as_int8(written: int, stored: int) -> None:
    # §1.2: memory_space is stored as int8_t; values above 127 wrap.
    layout = parse_layout(f"{{0:S({written})}}")
    assert layout.memory_space == stored
    assert str(layout) == ("{0}" if stored == 0 else f"{{0:S({stored})}}")
    assert str(parse_shape(f"f32[2]{{0:S({written})}}")) == f"f32[2]{layout!s}"


def test_layout_rejects_memory_spaces_outside_int8() -> None:
    """XLA stores ``memory_space`` as ``int8_t`` (§1.2). The parser wraps like XLA's
    (``S(200)`` is ``S(-56)``); a constructed ``Layout`` refuses an out-of-range value
    rather than silently changing it, and says what XLA would store."""
    with pytest.raises(ValueError, match=r"outside \[-128, 127\].*S\(-56\)"):
        Layout((0,), memory_space=200)
    assert parse_layout("{0:S(200)}") == Layout((0,), memory_space=-56)


def test_element_size_equal_to_byte_width_is_kept() -> None:
    # §2: the parser does not normalize E(8) on s8 to 0 (only MakeShapeWithDenseLayout does).
    s = parse_shape("s8[2]{0:E(8)}")
    assert isinstance(s, ArrayShape) and s.layout is not None
    assert s.layout.element_size_in_bits == 8
    assert str(s) == "s8[2]{0:E(8)}"


def test_tuple_printing() -> None:
    # §1.1: `(a, b)` with ", "; empty `()`; `, /*index=N*/` before every non-zero multiple of 5.
    assert str(TupleShape(())) == "()"
    assert str(TupleShape((f32(),))) == "(f32[])"
    assert str(TupleShape((f32(2, layout=Layout((0,))), TokenShape()))) == "(f32[2]{0}, token[])"
    assert str(TupleShape((f32(),) * 5)) == "(f32[], f32[], f32[], f32[], f32[])"
    assert str(TupleShape((f32(),) * 6)) == "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])"
    eleven = str(TupleShape(tuple(ArrayShape(P.S32, (i,)) for i in range(11))))
    expected = ", ".join((f"/*index={i}*/" if i in (5, 10) else "") + f"s32[{i}]" for i in range(11))
    assert eleven == f"({expected})"
    nested = TupleShape((TupleShape(()), TupleShape((OpaqueShape(),))))
    assert str(nested) == "((), (opaque[]))"


def test_token_opaque_and_buffer_printing() -> None:
    # §1.1: non-array shapes print `[]`; buffers print as `b(s32[3,4]{1,0})`.
    assert str(TokenShape()) == "token[]"
    assert str(OpaqueShape()) == "opaque[]"
    assert str(BufferShape(ArrayShape(P.S32, (3, 4), layout=Layout((1, 0))))) == "b(s32[3,4]{1,0})"


# --------------------------------------------------------------------------------------
# Symbolic dimensions (this package's extension: f32[N,M])
# --------------------------------------------------------------------------------------


def test_symbolic_dimensions_are_shared_nonnegative_integer_symbols() -> None:
    s = parse_shape("f32[N,M,N]")
    assert isinstance(s, ArrayShape)
    n, m, n2 = s.dimensions
    assert isinstance(n, sympy.Symbol) and isinstance(m, sympy.Symbol)
    assert str(n) == "N" and str(m) == "M"
    assert n is n2  # same name within one parse: same object
    assert n is not m and n != m
    t = parse_shape("s32[K,N]{0,1:T(8,128)}")
    assert isinstance(t, ArrayShape)
    assert t.dimensions[1] is n  # and across parses
    assert dim_symbol("N") is n
    for sym in (n, m):
        assert sym.is_integer is True and sym.is_nonnegative is True
    assert s.is_symbolic and not parse_shape("f32[2]").is_symbolic  # type: ignore[union-attr]
    assert s.dynamic_dimensions == (False, False, False)


def test_symbolic_shapes_are_values() -> None:
    n = dim_symbol("N")
    built = ArrayShape(P.F32, (n, 8), layout=Layout((1, 0)))
    assert built == parse_shape("f32[N,8]")
    assert hash(built) == hash(parse_shape("f32[N,8]"))
    assert str(built) == "f32[N,8]{1,0}"
    assert ArrayShape(P.F32, (2 * n + 1,)).dimensions == (2 * n + 1,)


# --------------------------------------------------------------------------------------
# Primitive types (§3)
# --------------------------------------------------------------------------------------

#: §3 table: text name, enum number, BitWidth, ByteWidth, kind.
TYPE_TABLE = """
pred 1 1 1 boolean
s1 30 1 1 int
u1 31 1 1 int
s2 26 2 1 int
u2 27 2 1 int
s4 21 4 1 int
u4 22 4 1 int
s8 2 8 1 int
u8 6 8 1 int
s16 3 16 2 int
u16 7 16 2 int
s32 4 32 4 int
u32 8 32 4 int
s64 5 64 8 int
u64 9 64 8 int
f16 10 16 2 float
bf16 16 16 2 float
f32 11 32 4 float
f64 12 64 8 float
f8e5m2 19 8 1 float
f8e4m3 28 8 1 float
f8e4m3fn 20 8 1 float
f8e4m3b11fnuz 23 8 1 float
f8e3m4 29 8 1 float
f8e5m2fnuz 24 8 1 float
f8e4m3fnuz 25 8 1 float
f4e2m1fn 32 4 1 float
f8e8m0fnu 33 8 1 float
c64 15 64 8 complex
c128 18 128 16 complex
"""
ARRAY_TYPES = [tuple(line.split()) for line in TYPE_TABLE.strip().splitlines()]
#: §3: tuple, opaque, token and buffer are not array element types.
NON_ARRAY_TYPES = {"tuple": 13, "opaque": 14, "token": 17, "buffer": 34}


@pytest.mark.parametrize(
    ("name", "enum", "bits", "nbytes", "kind"), ARRAY_TYPES, ids=[r[0] for r in ARRAY_TYPES]
)
def test_primitive_type_facts(name: str, enum: str, bits: str, nbytes: str, kind: str) -> None:
    t = primitive_type(name)
    assert t.text == str(t) == name
    assert t.value.proto_number == int(enum)
    assert t.is_array_type
    assert t.bit_width == int(bits)
    assert t.byte_width == int(nbytes) == -(-int(bits) // 8)  # ByteWidth = ceil(BitWidth/8)
    # StorageBitWidth(PRED) = 8, else BitWidth (§3, §8.7)
    assert t.storage_bit_width == (8 if name == "pred" else int(bits))
    assert t.is_integral == (kind == "int")
    assert t.is_unsigned_integral == (kind == "int" and name.startswith("u"))
    assert t.is_floating_point == (kind == "float")
    assert t.is_complex == (kind == "complex")
    # IsSubByteNonPredType: array type, not PRED, BitWidth < 8
    assert t.is_sub_byte_non_pred == (name != "pred" and int(bits) < 8)


def test_type_table_is_complete() -> None:
    names = {t.text for t in PrimitiveType}
    assert names == {r[0] for r in ARRAY_TYPES} | set(NON_ARRAY_TYPES)
    assert len({t.value.proto_number for t in PrimitiveType}) == len(PrimitiveType)
    # §3 "Names": lowercase(enum name), except OPAQUE_TYPE, which is `opaque`.
    for t in PrimitiveType:
        assert t.text == ("opaque" if t is P.OPAQUE_TYPE else t.name.lower())


def test_sub_byte_non_pred_types() -> None:
    # §3: exactly s1, u1, s2, u2, s4, u4, f4e2m1fn.
    assert {t.text for t in PrimitiveType if t.is_sub_byte_non_pred} == {
        "s1",
        "u1",
        "s2",
        "u2",
        "s4",
        "u4",
        "f4e2m1fn",
    }


def test_pred_widths() -> None:
    # §8.7: BitWidth(PRED) == 1, ByteWidth 1, StorageBitWidth 8.
    pred = P.PRED
    assert (pred.bit_width, pred.byte_width, pred.storage_bit_width) == (1, 1, 8)
    assert not pred.is_integral and not pred.is_sub_byte_non_pred


@pytest.mark.parametrize(("name", "enum"), NON_ARRAY_TYPES.items())
def test_non_array_types_have_no_width(name: str, enum: int) -> None:
    # §3: BitWidth/ByteWidth LOG(FATAL) on tuple, opaque, token, buffer.
    t = primitive_type(name)
    assert t.value.proto_number == enum
    assert not t.is_array_type
    for attribute in ("bit_width", "byte_width", "storage_bit_width"):
        with pytest.raises(ValueError):
            getattr(t, attribute)


def test_type_names_that_shapes_can_be_written_with() -> None:
    # §1.1: tuple and buffer are type names but not lexed as type tokens.
    assert {"tuple", "buffer"}.isdisjoint(ARRAY_TYPE_NAMES)
    assert {"token", "opaque"} <= ARRAY_TYPE_NAMES
    assert {r[0] for r in ARRAY_TYPES} <= ARRAY_TYPE_NAMES


@pytest.mark.parametrize("name", ["F32", "Pred", "preD", "opaque_type", "", "f32 ", "float32", "int8"])
def test_unknown_type_names(name: str) -> None:
    # §1.1 [test]: StringToPrimitiveType("F32"), "Pred" and "preD" fail; `opaque_type` too (§3).
    with pytest.raises(ValueError):
        primitive_type(name)


@pytest.mark.parametrize("case", vector_params("primitive_type_name"))
def test_vector_primitive_type_name(case: dict | None) -> None:
    case = require_vector(case, "primitive_type_name")
    name = case["input"]["text"]
    if case["expected"]:
        assert primitive_type(name).text == name
    else:
        with pytest.raises(ValueError):
            primitive_type(name)
