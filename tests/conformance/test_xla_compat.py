"""``layout_algebra.xla`` checked against XLA's own answers.

Expected values come from three places only:

* ``tests/data/ground_truth/xla_vectors.json``: cases from XLA's C++ tests and docs (every case of
  the kinds this module implements is run);
* ``tests/data/ground_truth/tpu/*.jsonl``: bytes the real XLA:TPU compiler allocated, which its
  README says follow ``ShapeUtil::ArraySize``'s rule;
* arithmetic worked out by hand in a comment next to the assertion.

The reference data must be present: without it these tests FAIL (never skip), since a
green run would otherwise claim a conformance that was never checked.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.ground_truth import GROUND_TRUTH

from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import ArrayShape, Layout, SplitConfig, Tile
from layout_algebra.xla import (
    LAYOUT_EQUAL_IGNORABLE,
    XlaInputError,
    array_data_size,
    array_size,
    byte_size_of,
    byte_size_of_elements,
    byte_size_of_elements_recursive,
    byte_size_of_primitive_type,
    byte_strides,
    byte_strides_is_major_to_minor,
    dimension_stride,
    is_untiled_layout,
    layout_equal,
    layout_util_linear_index,
    max_elements_in_per_split,
    max_split_size,
    string_to_primitive_type,
    unpacked_byte_strides,
)

VECTORS_FILE = GROUND_TRUTH / "xla_vectors.json"
TPU_DIR = GROUND_TRUTH / "tpu"


def _missing_data_message(path: Path) -> str | None:
    if not path.is_file():
        return (
            f"ground-truth file {path} is missing. These tests check layout_algebra.xla against "
            "XLA's own outputs and must not pass without them; restore tests/data/ground_truth from git."
        )
    return None


VECTORS: list[dict] = []
if _missing_data_message(VECTORS_FILE) is None:
    VECTORS = json.loads(VECTORS_FILE.read_text())


def cases(kind: str, describe) -> list:
    """One ``pytest.param`` per case of ``kind``, or one failing placeholder if there are none."""
    found = [c for c in VECTORS if c.get("kind") == kind]
    if not found:
        return [pytest.param(None, id=f"{kind}-NO-DATA")]
    return [pytest.param(c, id=f"{i}-{describe(c['input'])}") for i, c in enumerate(found)]


def need(case: dict | None, kind: str) -> dict:
    """The case, or a clear failure if the data (or every case of ``kind``) is missing."""
    if case is None:
        problem = _missing_data_message(VECTORS_FILE) or (
            f"{VECTORS_FILE} has no case of kind {kind!r}; the test data changed, so this "
            "conformance check would silently run nothing"
        )
        pytest.fail(problem, pytrace=False)
    return case


# ----------------------------------------------------------------- xla_vectors.json
BYTE_SIZE_FUNCTIONS = {
    "ShapeUtil::ByteSizeOf": lambda i: byte_size_of(i["shape"], i.get("pointer_size", -1)),
    "ShapeUtil::ArraySize": lambda i: array_size(i["shape"]),
    "ShapeUtil::ArrayDataSize": lambda i: array_data_size(i["shape"]),
    "ShapeUtil::ByteSizeOfElementsRecursive": lambda i: byte_size_of_elements_recursive(i["shape"]),
}


def _dispatch(table: dict, case: dict):
    function = case["input"].get("function")
    if function not in table:
        pytest.fail(f"no implementation is mapped to XLA function {function!r} (case {case})", pytrace=False)
    return table[function](case["input"])


@pytest.mark.parametrize(
    "case", cases("byte_size", lambda i: f"{i['function'].split('::')[-1]}:{i['shape']}")
)
def test_byte_size(case: dict | None) -> None:
    case = need(case, "byte_size")
    assert _dispatch(BYTE_SIZE_FUNCTIONS, case) == case["expected"], case.get("source")


@pytest.mark.parametrize(
    "case", cases("layout_equal", lambda i: f"{i['lhs']}=={i['rhs']}-ignore{','.join(i['ignore'])}")
)
def test_layout_equal(case: dict | None) -> None:
    case = need(case, "layout_equal")
    i = case["input"]
    assert layout_equal(i["lhs"], i["rhs"], ignore=i["ignore"]) is case["expected"]
    # Layout::Equal compares field by field, so it is symmetric.
    assert layout_equal(i["rhs"], i["lhs"], ignore=i["ignore"]) is case["expected"]


@pytest.mark.parametrize("case", cases("primitive_type_name", lambda i: i["text"]))
def test_primitive_type_name(case: dict | None) -> None:
    case = need(case, "primitive_type_name")
    name = case["input"]["text"]
    if case["expected"]:
        assert string_to_primitive_type(name).text == name
    else:
        with pytest.raises(XlaInputError, match=repr(name)):
            string_to_primitive_type(name)


@pytest.mark.parametrize("case", cases("max_split_size", lambda i: f"{i['shape']}-dim{i['dim']}"))
def test_max_split_size(case: dict | None) -> None:
    case = need(case, "max_split_size")
    assert max_split_size(case["input"]["shape"], case["input"]["dim"]) == case["expected"]


@pytest.mark.parametrize("case", cases("max_elements_in_per_split", lambda i: i["shape"]))
def test_max_elements_in_per_split(case: dict | None) -> None:
    case = need(case, "max_elements_in_per_split")
    assert max_elements_in_per_split(case["input"]["shape"]) == case["expected"]


BYTE_STRIDES_FUNCTIONS = {
    "ShapeUtil::UnpackedByteStrides": lambda i: unpacked_byte_strides(i["shape"]),
    "ShapeUtil::ByteStrides": lambda i: byte_strides(i["shape"]),
}


@pytest.mark.parametrize(
    "case", cases("byte_strides", lambda i: f"{i['function'].split('::')[-1]}:{i['shape']}")
)
def test_byte_strides(case: dict | None) -> None:
    case = need(case, "byte_strides")
    expected = case["expected"]
    got = _dispatch(BYTE_STRIDES_FUNCTIONS, case)
    assert got == (None if expected is None else tuple(expected))


@pytest.mark.parametrize(
    "case",
    cases("byte_strides_is_major_to_minor", lambda i: f"{i['element_type']}{i['dims']}:{i['byte_strides']}"),
)
def test_byte_strides_is_major_to_minor(case: dict | None) -> None:
    case = need(case, "byte_strides_is_major_to_minor")
    i = case["input"]
    assert byte_strides_is_major_to_minor(i["byte_strides"], i["dims"], i["element_type"]) is case["expected"]


@pytest.mark.parametrize("case", cases("dimension_stride", lambda i: f"{i['shape']}-dim{i['dimension']}"))
def test_dimension_stride(case: dict | None) -> None:
    case = need(case, "dimension_stride")
    assert dimension_stride(case["input"]["shape"], case["input"]["dimension"]) == case["expected"]


@pytest.mark.parametrize(
    "case", cases("is_untiled_layout", lambda i: f"{i['physical_dims_major_to_minor']}-T{i['tiles']}")
)
def test_is_untiled_layout(case: dict | None) -> None:
    case = need(case, "is_untiled_layout")
    i = case["input"]
    assert is_untiled_layout(i["tiles"], i["physical_dims_major_to_minor"]) is case["expected"]


def _linear_index_cases_with_the_same_answer() -> list:
    """``linear_index`` cases whose expected value is also ``LayoutUtil::LinearIndex``'s.

    The file holds cases of three XLA functions. ``LayoutUtil::LinearIndex`` cases are
    used as they are. ``IndexUtil::MultidimensionalIndexToLinearIndex`` and
    ``LayoutUtil::LinearIndexForNestedTiling`` agree with it on every shape with at most
    one tile level of rank <= the shape's rank, except rank-1 tiled shapes (which
    ``LinearIndex`` does not tile): xla-facts §5.2 and §6.
    """
    from layout_algebra import parse_shape

    kept = []
    for c in VECTORS:
        if c.get("kind") != "linear_index":
            continue
        shape = parse_shape(c["input"]["shape"])
        tiles = shape.layout.tiles
        same = c["input"]["function"] == "LayoutUtil::LinearIndex" or (
            len(tiles) <= 1 and all(len(t) <= shape.rank for t in tiles) and not (shape.rank == 1 and tiles)
        )
        if same:
            kept.append(c)
    if not kept:
        return [pytest.param(None, id="linear_index-NO-DATA")]
    return [pytest.param(c, id=f"{c['input']['shape']}@{c['input']['index']}") for c in kept]


@pytest.mark.parametrize("case", _linear_index_cases_with_the_same_answer())
def test_layout_util_linear_index(case: dict | None) -> None:
    case = need(case, "linear_index")
    assert layout_util_linear_index(case["input"]["shape"], case["input"]["index"]) == case["expected"]


# ------------------------------------------------------------ XLA:TPU allocations
def _tpu_rows() -> list:
    rows = []
    for name, key in (("padded_bytes.jsonl", "compiled"), ("default_layouts.jsonl", "result_layout")):
        path = TPU_DIR / name
        if not path.is_file():
            return [pytest.param(None, None, id=f"{name}-NO-DATA")]
        for line in path.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if row and "error" not in row:
                rows.append(pytest.param(row[key], row["bytes"], id=row[key]))
    return rows


@pytest.mark.parametrize(("layout_text", "allocated"), _tpu_rows())
def test_array_size_matches_xla_tpu_allocation(layout_text: str | None, allocated: int | None) -> None:
    # The compiler's own layout (it may add e.g. L(1024)) sized by ArraySize's rule gives
    # exactly what XLA:TPU allocated (tests/data/ground_truth/README.md: "the same rule as ArraySize").
    if layout_text is None:
        pytest.fail(_missing_data_message(TPU_DIR / "padded_bytes.jsonl") or "no TPU rows", pytrace=False)
    assert array_size(layout_text) == allocated


# ------------------------------------------------------------- hand-derived quirks
def test_linear_index_uses_only_the_top_level_tile() -> None:
    # bf16[16,256]{1,0:T(8,128)(2,1)}, element (1,0); LinearIndex ignores (2,1):
    # tile_multiplier starts at 8*128 = 1024. Minor dim 1 (index 0) adds 0, then
    # tile_multiplier *= ceil(256/128) = 2048 and within_tile = 128. Dim 0 (index 1, tile 8)
    # adds 2048*(1//8) + 128*(1%8) = 128.
    assert layout_util_linear_index("bf16[16,256]{1,0:T(8,128)(2,1)}", (1, 0)) == 128


def test_linear_index_of_rank_1_ignores_tiles() -> None:
    # 1-D shapes return idx[0] whatever the tiling (xla-facts §5.2).
    for i in (0, 1, 127, 128, 999):
        assert layout_util_linear_index("bf16[1000]{0:T(1024)(128)(2,1)}", (i,)) == i
    # It shows with a 2-D tile: the tile loop would put element 128 of f32[300] under
    # T(2,128) after one whole 2x128 tile, at 256 (the tile's second row is padding);
    # LinearIndex answers 128.
    assert layout_util_linear_index("f32[300]{0:T(2,128)}", (128,)) == 128


def test_array_size_ignores_sub_tiles() -> None:
    # T(2,128)(4,1) on f32[2,128]: the first tile needs no padding (2 x 128 elements, 4 bytes
    # each = 1024); the (4,1) sub-tile would pad 2 rows to 4, but ArraySize never looks.
    assert array_size("f32[2,128]{1,0:T(2,128)(4,1)}") == 2 * 128 * 4
    # A '*' in a later tile is ignored for the same reason.
    assert array_size("f32[8,128]{1,0:T(8,128)(*,1)}") == array_size("f32[8,128]{1,0:T(8,128)}")


def test_array_size_honours_tail_padding_only_when_tiled() -> None:
    # f32[3] tiled by (1): 3 elements, rounded up to L(1024) = 1024 elements * 4 bytes.
    assert array_size("f32[3]{0:T(1)L(1024)}") == 1024 * 4
    # Untiled: ArraySize returns ByteSizeOfElements, which ignores L: 3 * 4 bytes.
    assert array_size("f32[3]{0:L(1024)}") == 3 * 4


def test_array_data_size_stops_at_the_last_element() -> None:
    # f32[3,5]{1,0:T(2,2)}, last element (2,4). LinearIndex: tile_multiplier = 2*2 = 4.
    # Dim 1 (index 4, tile 2): 4*(4//2) + 1*(4%2) = 8; then tile_multiplier = 4*ceil(5/2) = 12
    # and within_tile = 2. Dim 0 (index 2, tile 2): 12*(2//2) + 2*(2%2) = 12. Slot 20, so
    # 21 slots of 4 bytes (xla-facts §4.3: 84), against 24 slots allocated.
    assert array_data_size("f32[3,5]{1,0:T(2,2)}") == 21 * 4


def test_byte_size_of_tuple_counts_top_level_pointers_only() -> None:
    # Two top-level elements, pointer size 8: 2 * 8, whatever the nested tuple holds.
    assert byte_size_of("(f32[1000], (f32[], f32[], f32[]))", pointer_size=8) == 2 * 8
    assert byte_size_of("()", pointer_size=8) == 0


def test_byte_size_of_buffer_is_its_array() -> None:
    assert byte_size_of("b(s32[3,4]{1,0})") == byte_size_of("s32[3,4]{1,0}") == 3 * 4 * 4


def test_byte_size_of_elements_recursive_sums_leaves() -> None:
    # s32[] = 4, f32[3] = 12, token = 0, s4[3] with E(4) = ceil(12 bits / 8) = 2, opaque = 0.
    assert byte_size_of_elements_recursive("(s32[], (f32[3], token[]), s4[3]{0:E(4)}, opaque[])") == 18


def test_sub_byte_and_pred_cost_a_byte_without_e() -> None:
    # ByteWidth = ceil(bit_width / 8): 1 for pred (1 bit) and s4 (4 bits).
    assert byte_size_of_primitive_type("pred") == byte_size_of_primitive_type("s4") == 1
    assert byte_size_of("s4[64,128]") == 64 * 128
    assert byte_size_of("s4[64,128]{1,0:E(4)}") == 64 * 128 // 2


def test_bounded_dynamic_dimensions_count_their_bound() -> None:
    assert byte_size_of("f32[<=10,3]") == byte_size_of("f32[10,3]")
    assert array_size("f32[<=10,3]{1,0:T(8,128)}") == array_size("f32[10,3]{1,0:T(8,128)}")


def test_byte_strides_ignores_whole_byte_element_sizes() -> None:
    # ByteStrides returns UnpackedByteStrides whenever E % 8 == 0: s8 with E(16) still
    # reports ByteWidth(s8) = 1 byte per step.
    assert byte_strides("s8[3]{0:E(16)}") == (1,)
    assert byte_strides("s4[10,20]{1,0:E(4)}") is None
    assert unpacked_byte_strides("s4[10,20]{1,0:E(4)}") == (20, 1)


def test_minor_to_major_only_ignores_every_other_field() -> None:
    rich = "{1,0:T(8,128)L(2)E(4)S(1)SC(0:3)M(8)}"
    assert layout_equal(rich, "{1,0}", ignore=["minor_to_major_only"])
    assert not layout_equal(rich, "{0,1}", ignore=["minor_to_major_only"])
    every_field = [n for n in LAYOUT_EQUAL_IGNORABLE if n != "minor_to_major_only"]
    assert layout_equal(rich, "{1,0}", ignore=every_field)
    # Leave one differing field compared (the memory space S(1) vs 0): not equal.
    assert not layout_equal(rich, "{1,0}", ignore=[n for n in every_field if n != "memory_space"])


def test_physical_shape_is_compared() -> None:
    assert layout_equal("{0,1:P(s32[10,20]{1,0})}", "{0,1:P(s32[10,20]{1,0:M(4)})}")
    assert not layout_equal("{0,1:P(s32[10,20]{1,0})}", "{0,1:P(s32[10,20]{0,1})}")
    assert not layout_equal("{0,1:P(s32[10,20]{1,0})}", "{0,1}")
    assert layout_equal("{0,1:P(s32[10,20]{1,0})}", "{0,1}", ignore="physical_shape")


# ----------------------------------------------------------------------- properties
ELEMENT_TYPES = [t for t in PrimitiveType if t.is_array_type]


@st.composite
def shapes(draw, *, tiled: bool, split_configs: bool = False, max_rank: int = 4, max_dim: int = 12):
    """A static array shape with a layout; one or two tile levels if ``tiled`` (no '*')."""
    rank = draw(st.integers(1 if tiled else 0, max_rank))
    dims = tuple(draw(st.lists(st.integers(0, max_dim), min_size=rank, max_size=rank)))
    m2m = tuple(draw(st.permutations(range(rank))))
    tiles: tuple[Tile, ...] = ()
    if tiled:
        levels = draw(st.integers(1, 2))
        tiles = tuple(
            Tile(tuple(draw(st.lists(st.integers(1, 8), min_size=1, max_size=rank + 1))))
            for _ in range(levels)
        )
    configs: tuple[SplitConfig, ...] = ()
    if split_configs and rank:
        p = draw(st.integers(0, rank - 1))
        size = dims[m2m[rank - 1 - p]]
        if size > 1:
            cuts = draw(st.lists(st.integers(1, size - 1), unique=True, max_size=3))
            configs = (SplitConfig(p, tuple(sorted(cuts))),)
    layout = Layout(
        m2m,
        tiles,
        tail_padding_alignment_in_elements=draw(st.sampled_from([1, 2, 128, 1024])),
        element_size_in_bits=draw(st.sampled_from([0, 1, 2, 4, 8, 16, 32])),
        split_configs=configs,
        dynamic_shape_metadata_prefix_bytes=draw(st.sampled_from([0, 8])),
    )
    return ArrayShape(draw(st.sampled_from(ELEMENT_TYPES)), dims, layout=layout)


@given(shapes(tiled=False, split_configs=True))
def test_untiled_array_size_is_byte_size_of(shape: ArrayShape) -> None:
    # Without tiles ArraySize is ByteSizeOfElements: L(n) and split configs do not count.
    assert array_size(shape) == byte_size_of(shape) == byte_size_of_elements(shape)
    # ...and ArrayDataSize telescopes to the same number for an untiled layout.
    assert array_data_size(shape) == array_size(shape)


@given(shapes(tiled=True))
def test_padding_only_adds(shape: ArrayShape) -> None:
    assert byte_size_of(shape) <= array_data_size(shape) <= array_size(shape)


@given(shapes(tiled=False, max_dim=5))
def test_untiled_linear_index_is_the_dimension_stride_sum(shape: ArrayShape) -> None:
    for index in itertools.product(*(range(d) for d in shape.dimensions)):
        expected = sum(i * dimension_stride(shape, d) for d, i in enumerate(index))
        assert layout_util_linear_index(shape, index) == expected


@given(shapes(tiled=True, max_rank=3, max_dim=6))
def test_single_tile_linear_index_is_injective_and_in_bounds(shape: ArrayShape) -> None:
    tile = shape.layout.tiles[0]
    assume(shape.rank >= 2 and len(tile) <= shape.rank)  # rank 1 is not tiled by LinearIndex
    one_level = shape.with_layout(
        replace(shape.layout, tiles=(tile,), tail_padding_alignment_in_elements=1, element_size_in_bits=0)
    )
    slots = [layout_util_linear_index(one_level, i) for i in itertools.product(*map(range, shape.dimensions))]
    assert len(set(slots)) == len(slots)
    elements = array_size(one_level) // one_level.element_type.byte_width
    assert all(0 <= s < elements for s in slots)


@given(shapes(tiled=False))
def test_unpacked_strides_are_element_strides_in_bytes(shape: ArrayShape) -> None:
    width = byte_size_of_primitive_type(shape.element_type)
    expected = tuple(dimension_stride(shape, d) * width for d in range(shape.rank))
    assert unpacked_byte_strides(shape) == expected
    descending = shape.with_layout(Layout(tuple(range(shape.rank - 1, -1, -1))))
    assert byte_strides_is_major_to_minor(
        unpacked_byte_strides(descending), shape.dimensions, shape.element_type
    )


@given(shapes(tiled=False, split_configs=True))
def test_largest_split_is_at_most_the_dimension(shape: ArrayShape) -> None:
    sizes = [max_split_size(shape, d) for d in range(shape.rank)]
    assert all(0 <= s <= d for s, d in zip(sizes, shape.dimensions, strict=True))
    product = 1
    for s in sizes:
        product *= s
    assert max_elements_in_per_split(shape) == product


@given(shapes(tiled=True), st.integers(1, 4096))
def test_layout_equal_ignores_m(shape: ArrayShape, prefix_bytes: int) -> None:
    layout = shape.layout
    assert layout_equal(layout, layout)
    assert layout_equal(layout, replace(layout, dynamic_shape_metadata_prefix_bytes=prefix_bytes))
    other_space = replace(layout, memory_space=layout.memory_space + 1)
    assert not layout_equal(layout, other_space)
    assert layout_equal(layout, other_space, ignore=["memory_space"])


@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_tiles_of_ones_and_no_tiles_are_untiled(dims: list[int], data: st.DataObject) -> None:
    k = data.draw(st.integers(1, len(dims)))
    assert is_untiled_layout([], dims)
    assert is_untiled_layout([(1,) * k], dims)


# ------------------------------------------------------------------------- errors
def test_unbounded_dimension_has_no_size() -> None:
    with pytest.raises(XlaInputError, match=r"'f32\[\?,784\]'.*unbounded dynamic \('\?'\) and has no size"):
        array_size("f32[?,784]")
    with pytest.raises(XlaInputError, match="unbounded"):
        byte_size_of("f32[?,784]")


def test_symbolic_dimensions_need_concrete_sizes() -> None:
    with pytest.raises(XlaInputError, match=r"'f32\[N,128\]'.*symbolic \(N\).*concrete sizes"):
        byte_size_of("f32[N,128]")


def test_combined_tile_dimension_is_not_supported_by_array_size() -> None:
    with pytest.raises(XlaInputError, match=r"'bf16\[2,3,1004\]\{2,1,0:T\(2,\*,128\)\}'.*'\*'.*ArraySize"):
        array_size("bf16[2,3,1004]{2,1,0:T(2,*,128)}")
    with pytest.raises(XlaInputError, match=r"'\*'.*LinearIndex"):
        layout_util_linear_index("bf16[2,3,1004]{2,1,0:T(2,*,128)}", (0, 0, 0))


def test_tuple_needs_a_pointer_size() -> None:
    with pytest.raises(XlaInputError, match=r"'\(f32\[\], f32\[\]\)' is a tuple.*pointer_size > 0"):
        byte_size_of("(f32[], f32[])")
    with pytest.raises(XlaInputError, match="pointer_size > 0"):
        byte_size_of("opaque[]")


def test_array_functions_reject_other_shapes() -> None:
    with pytest.raises(XlaInputError, match=r"needs an array shape, but '\(f32\[2\]\)' is a tuple shape"):
        array_size("(f32[2])")
    with pytest.raises(XlaInputError, match="token shape"):
        dimension_stride("token[]", 0)
    with pytest.raises(XlaInputError, match="not an array element type"):
        byte_size_of_primitive_type("tuple")


def test_linear_index_checks_rank_and_bounds() -> None:
    with pytest.raises(XlaInputError, match=r"\[1\] has length 1, but 'f32\[3,5\]' has 2"):
        layout_util_linear_index("f32[3,5]", [1])
    with pytest.raises(XlaInputError, match=r"out of range for 'f32\[3,5\]': entry 1 is 5"):
        layout_util_linear_index("f32[3,5]", [0, 5])
    with pytest.raises(XlaInputError, match="entry 0 is -1"):
        layout_util_linear_index("f32[3,5]", [-1, 0])


def test_bad_layouts_are_reported() -> None:
    with pytest.raises(
        XlaInputError, match=r"minor_to_major \{0,0\} of 'f32\[2,3\]\{0,0\}' is not a permutation"
    ):
        array_size("f32[2,3]{0,0}")
    with pytest.raises(XlaInputError, match="has no layout"):
        array_size(ArrayShape(PrimitiveType.F32, (2, 3)))
    with pytest.raises(XlaInputError, match="names physical dimension 5"):
        max_split_size("f32[2,3]{1,0:SC(5:1)}", 0)
    with pytest.raises(XlaInputError, match=r"dimension 3 is out of range for 'f32\[2,3\]'"):
        max_split_size("f32[2,3]", 3)


def test_layout_equal_rejects_unknown_field_names() -> None:
    with pytest.raises(XlaInputError, match="cannot ignore 'tile'; valid names are 'tiles', "):
        layout_equal("{1,0}", "{1,0}", ignore=["tile"])


def test_is_untiled_layout_rejects_impossible_tiles() -> None:
    with pytest.raises(
        XlaInputError, match=r"tile \(8,128\) has 2 dimensions but is applied to the 1 dimension"
    ):
        is_untiled_layout([(8, 128)], [1024])
    with pytest.raises(XlaInputError, match="not a positive size"):
        is_untiled_layout([(0, 128)], [8, 128])


def test_type_names_are_exact() -> None:
    with pytest.raises(XlaInputError, match="did you mean 'f32'"):
        string_to_primitive_type("F32")
    with pytest.raises(XlaInputError, match="'opaque_type'"):
        string_to_primitive_type("opaque_type")


def test_errors_are_value_errors_and_parse_errors_pass_through() -> None:
    assert issubclass(XlaInputError, ValueError)
    with pytest.raises(ValueError, match="cannot parse shape"):
        array_size("f32[2,3")
