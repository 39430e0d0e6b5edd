"""Triton linear layouts (layout_algebra.interop.triton) against the layout map, element by element.

Oracles: ``LayoutMap.forward`` / ``inverse`` on every element (Python ints), and the
GF(2) definition itself (XOR of bases, enumerated) for rank, injectivity and inverses.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.strategies_linear import gf2_layouts, power_of_two_layouts

from layout_algebra.interop import NotExpressible
from layout_algebra.interop.triton import LinearLayout, from_linear_layout, to_linear_layout
from layout_algebra.meaning.layout_map import layout_map


@settings(max_examples=100)
@given(power_of_two_layouts())
def test_xor_of_bases_is_the_layout_on_every_element(case: tuple[str, str, int]) -> None:
    text, _, _ = case
    m = layout_map(text)
    ll = to_linear_layout(text)
    bits = to_linear_layout(text, unit="bit")
    assert ll.out_dims == (("offset", m.size_in_elements),)
    assert ll.is_injective and ll.is_surjective
    for i in m.elements():
        assert ll.apply(i) == (m.forward(i),), (text, i)
        assert bits.apply(i) == (m.forward(i, unit="bit"),), (text, i)
    inverse = ll.inverse()
    for p in range(m.size_in_elements):
        assert inverse.apply((p,)) == m.inverse(p)


@pytest.mark.slow
@settings(max_examples=100)
@given(power_of_two_layouts())
# (2,1) takes i1 mod 2 whole (tile number of extent 1) and stores it under i0 mod 2 (once refused)
@example(("bf16[4,4,2]{0,1,2:T(2,2,2)(2,1)}", "bf16", 0))
def test_round_trip_gives_a_layout_with_the_same_map(case: tuple[str, str, int]) -> None:
    text, dtype, e = case
    m = layout_map(text)
    for unit in ("element", "bit"):
        ll = to_linear_layout(text, unit=unit)
        back = from_linear_layout(ll, dtype, unit=unit, element_size_in_bits=e)
        n = layout_map(back)
        assert n.size_in_bits == m.size_in_bits
        assert all(n.forward(i, unit="bit") == m.forward(i, unit="bit") for i in m.elements()), (
            text,
            str(back),
        )
    # Triton's shared-memory direction (offset -> dim0, dim1, ...) reads back the same (in elements:
    # in bits the map is not onto, the bits inside an element are never an element's first)
    ll = to_linear_layout(text)
    assert str(from_linear_layout(ll.inverse(), dtype, element_size_in_bits=e)) == str(
        from_linear_layout(ll, dtype, element_size_in_bits=e)
    )


def test_round_trip_examples() -> None:
    for text in (
        "bf16[4,4,2]{0,1,2:T(2,2,2)(2,1)}",  # a tile level whose tile number has extent 1
        "f32[16,256]{1,0:T(8,128)}",
        "bf16[16,256]{1,0:T(8,128)(2,1)}",
        "s8[64,256]{1,0:T(32,128)(4,1)}",
        "f32[8,4]{0,1}",
    ):
        dtype = text.split("[")[0]
        e = 4 if "E(4)" in text else 0
        assert str(from_linear_layout(to_linear_layout(text), dtype, element_size_in_bits=e)) == text
    # s4 in (8,128)(8,1): 8 rows of a column per word, columns in order, tile rows in order: that
    # is T(8,1) alone (every element at the same bit), and the import returns the simpler layout
    s4 = "s4[64,256]{1,0:T(8,128)(8,1)E(4)}"
    back = from_linear_layout(to_linear_layout(s4), "s4", element_size_in_bits=4)
    assert str(back) == "s4[64,256]{1,0:T(8,1)E(4)}"
    m, n = layout_map(s4), layout_map(back)
    assert m.size_in_bits == n.size_in_bits
    assert all(m.forward(i) == n.forward(i) for i in m.elements())


def test_bit_offsets_for_sub_byte_types() -> None:
    ll = to_linear_layout("s4[16,128]{1,0:T(8,128)(8,1)E(4)}", unit="bit")
    # a word packs 8 rows of a column: row bits go to bits 2..4 of the bit offset, column bits above
    assert ll.bases[0] == ("dim0", ((4,), (8,), (16,), (4096,)))
    assert ll.bases[1][1][0] == (32,)
    assert ll.out_dims == (("offset", 16 * 128 * 4),)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("f32[6,128]", r"dimension 0 has size 6, not a power of two"),
        ("f32[4,128]{1,0:T(8,128)}", r"512 elements \(padding"),
        ("f32[1024]{0:L(3000)}", r"3000 element slots for 1024 elements"),
        ("f32[N,128]", r"symbolic"),
        ("f32[4,8]{1,0:T(2,*,4)}", r"combines dimensions"),
        ("f32[8,6]{1,0:T(2,3)}", r"size 6, not a power of two"),
    ],
)
def test_refusals_say_why(text: str, match: str) -> None:
    with pytest.raises(NotExpressible, match=match):
        to_linear_layout(text)


def test_non_power_of_two_bit_width_is_refused_for_bits_only() -> None:
    assert to_linear_layout("f32[4]").bases == (("dim0", ((1,), (2,))),)
    with pytest.raises(ValueError, match="unit 'byte'"):
        to_linear_layout("f32[4]", unit="byte")


@pytest.mark.parametrize(
    ("bases", "out", "match"),
    [
        ({"dim0": [[4], [8]], "dim1": [[1], [6]]}, {"offset": 16}, r"dim1=2 -> \(6\) sets several bits"),
        (
            {"dim0": [[0], [1]], "dim1": [[2], [4]]},
            {"offset": 8},
            r"size 8 for 16 elements of 1 elements each",
        ),
        ({"dim0": [[1], [2]], "dim1": [[0], [4]]}, {"offset": 16}, r"size 16 for 16|zero \(a broadcast\)"),
        ({"lane": [[1], [2]]}, {"offset": 4}, r"an XLA layout maps dim0, dim1"),
        # (both dims' bits swapped used to be refused here: every bit permutation of a 4x4 is a
        # layout, found by the deep search: tests/meaning/test_recover_oracle.py)
    ],
)
def test_import_refusals(bases, out, match: str) -> None:
    with pytest.raises(NotExpressible, match=match):
        from_linear_layout(LinearLayout.from_bases(bases, out), "f32")


def test_broadcast_is_refused() -> None:
    ll = LinearLayout.from_bases({"dim0": [[1], [0]], "dim1": [[2], [4]]}, {"offset": 16})
    with pytest.raises(NotExpressible, match=r"dim0=2 -> \(0\) is zero \(a broadcast\)"):
        from_linear_layout(ll, "f32")


def test_interleaved_bits_are_a_tiling() -> None:
    """dim0's bit 0 below dim1's bits and bit 1 above: T(1,2)-like tiles of a 4x4, found back."""
    ll = LinearLayout.from_bases({"dim0": [[4], [8]], "dim1": [[1], [2]]}, {"offset": 16})
    assert str(from_linear_layout(ll, "f32")) == "f32[4,4]{1,0}"
    ll = LinearLayout.from_bases({"dim0": [[2], [8]], "dim1": [[1], [4]]}, {"offset": 16})
    shape = from_linear_layout(ll, "f32")
    m = layout_map(shape)
    assert all(ll.apply(i) == (m.forward(i),) for i in m.elements()), str(shape)


@st.composite
def permutation_layouts(draw: st.DrawFn) -> LinearLayout:
    """A random bijective bit permutation from dim0, dim1 (, dim2) to one offset."""
    logs = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(1, 3)))]
    total = sum(logs)
    places = draw(st.permutations(range(total)))
    bases, at = {}, 0
    for k, n in enumerate(logs):
        bases[f"dim{k}"] = [[1 << places[at + j]] for j in range(n)]
        at += n
    return LinearLayout.from_bases(bases, {"offset": 1 << total})


@pytest.mark.slow
@settings(max_examples=200)
@given(permutation_layouts())
def test_import_is_exact_or_refused(ll: LinearLayout) -> None:
    """Every bit permutation either comes back as a layout with exactly its map, or is refused."""
    try:
        shape = from_linear_layout(ll, "f32")
    except NotExpressible:
        return
    m = layout_map(shape)
    assert m.size_in_elements == ll.out_dims[0][1]
    assert all(ll.apply(i) == (m.forward(i),) for i in m.elements()), str(shape)


def test_bit_permutations_of_a_4x4() -> None:
    """Every permutation of the 4 bits of a 4x4 f32 array: each answer is exact, and every one that
    keeps each dimension's bits in increasing order (an interleaving: a tiling) is found."""
    found = set()
    for perm in itertools.permutations(range(4)):
        ll = LinearLayout.from_bases(
            {"dim0": [[1 << perm[0]], [1 << perm[1]]], "dim1": [[1 << perm[2]], [1 << perm[3]]]},
            {"offset": 16},
        )
        try:
            shape = from_linear_layout(ll, "f32")
        except NotExpressible:
            continue
        found.add(perm)
        m = layout_map(shape)
        assert all(ll.apply(i) == (m.forward(i),) for i in m.elements())
    increasing = {p for p in itertools.permutations(range(4)) if p[0] < p[1] and p[2] < p[3]}
    assert increasing <= found, increasing - found
    assert len(found) == 24, sorted(found)  # every one is a layout (tests/meaning/test_recover_oracle.py)


@settings(max_examples=200)
@given(gf2_layouts())
def test_rank_injectivity_and_inverse_by_enumeration(ll: LinearLayout) -> None:
    inputs = list(itertools.product(*(range(size) for _, size in ll.in_dims)))
    image = {ll.apply(i) for i in inputs}
    out_count = 1
    for _, size in ll.out_dims:
        out_count *= size
    assert ll.is_injective == (len(image) == len(inputs))
    assert ll.is_surjective == (len(image) == out_count)
    assert 1 << ll.rank == len(image)
    if ll.is_injective and ll.is_surjective:
        inverse = ll.inverse()
        assert all(inverse.apply(ll.apply(i)) == i for i in inputs)
    else:
        with pytest.raises(ValueError, match="bijective"):
            ll.inverse()


def test_apply_is_xor_linear() -> None:
    ll = LinearLayout.from_bases({"a": [[1, 2], [3, 0]], "b": [[2, 1]]}, {"x": 4, "y": 4})
    assert ll.apply((3, 1)) == (1 ^ 3 ^ 2, 2 ^ 0 ^ 1)
    assert ll.apply({"b": 1, "a": 0}) == (2, 1)
    with pytest.raises(ValueError, match="outside its size 4"):
        ll.apply((4, 0))
    with pytest.raises(ValueError, match="one value per in dim"):
        ll.apply((1,))


def test_printing_follows_triton() -> None:
    """Triton's LinearLayout::toString, written out by hand from its source for this layout."""
    ll = LinearLayout.from_bases({"dim0": [[2]], "dim1": [], "dim2": [[1], [4]]}, {"offset": 8})
    assert str(ll) == (
        " - dim0=1 -> (2)\n"
        " - dim1 is a size 1 dimension\n"
        " - dim2=1 -> (1)\n"
        "   dim2=2 -> (4)\n"
        "where out dims are: [offset (size 8)]"
    )
    assert str(LinearLayout.from_bases({}, {})) == "(empty layout)"
    assert ll.bases_text() == "{dim0 = [[2]], dim1 = [], dim2 = [[1], [4]]}"
    assert LinearLayout.from_dict(ll.to_dict()) == ll
    assert ll.to_dict() == {
        "bases": {"dim0": [[2]], "dim1": [], "dim2": [[1], [4]]},
        "out_dims": {"offset": 8},
    }


def test_scalar_and_unit_dimensions() -> None:
    ll = to_linear_layout("f32[]")
    assert ll.bases == () and ll.out_dims == (("offset", 1),)
    ll = to_linear_layout("f32[1,8]{0,1}")
    assert ll.bases == (("dim0", ()), ("dim1", ((1,), (2,), (4,))))
    assert str(from_linear_layout(ll, "f32")).startswith("f32[1,8]")


@pytest.mark.parametrize(
    ("bases", "out", "match"),
    [
        ({"dim0": [[1, 0]]}, {"offset": 2}, r"2 entries for 1 out dims"),
        ({"dim0": [[-1]]}, {"offset": 2}, r"entry -1 is not below"),
        ({"dim0": [[1]]}, {"offset": 3}, r"size 3; sizes must be powers of two"),
        ([("dim0", [[1]])], {"offset": 2}, r"must be mappings"),
        ({"dim0": [1]}, {"offset": 2}, r"basis dim0=1 must be a list of integers, got 1"),
        ({"dim0": 1}, {"offset": 2}, r"must be a list of vectors"),
    ],
)
def test_bad_bases_are_clear_errors(bases, out, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LinearLayout.from_bases(bases, out)
    with pytest.raises(ValueError, match="a linear layout is"):
        LinearLayout.from_dict({"bases": {}})
    with pytest.raises(ValueError, match="is not a LinearLayout"):
        from_linear_layout("{offset = [[1]]}", "f32")  # type: ignore[arg-type]


# ------------------------------------------------------------------ Triton's MLIR text
@pytest.mark.slow
@settings(max_examples=100)
@given(power_of_two_layouts())
def test_shared_linear_text_reads_back_to_the_same_map(case: tuple[str, str, int]) -> None:
    text, dtype, e = case
    m = layout_map(text)
    ll = to_linear_layout(text)
    parsed = LinearLayout.parse(ll.shared_linear_text(alignment=128), dims=m.shape.dimensions)
    assert parsed == ll.inverse()
    if all(d > 1 for d in m.shape.dimensions):  # out sizes inferred as Triton does: the tensor's dims
        assert LinearLayout.parse(ll.shared_linear_text()) == parsed
    back = layout_map(from_linear_layout(parsed, dtype, element_size_in_bits=e))
    assert all(back.forward(i) == m.forward(i) for i in m.elements())


def test_triton_attributes_as_written_in_its_tests() -> None:
    """Attribute texts in the forms Triton's own lit tests write them."""
    row_major = "#ttg.shared_linear<{offset = [[0, 1], [0, 2], [1, 0], [2, 0]], block = [], alignment = 16}>"
    assert str(from_linear_layout(LinearLayout.parse(row_major, dims=(4, 4)), "f32")) == "f32[4,4]{1,0}"
    swizzled = "#ttg.shared_linear<{offset = [[0, 1], [0, 2], [1, 0], [2, 2]]}, alignment = 16>"
    with pytest.raises(NotExpressible, match="sets several bits"):
        from_linear_layout(LinearLayout.parse(swizzled), "f32")
    registers = LinearLayout.parse(
        "#ttg.linear<{register = [[0, 1]], lane = [[1, 0], [2, 0]], warp = [], block = []}>"
    )
    assert registers.in_dims == (("register", 2), ("lane", 4), ("warp", 1), ("block", 1))
    assert registers.out_dims == (("dim0", 4), ("dim1", 2))
    with pytest.raises(NotExpressible, match="an XLA layout maps dim0, dim1"):
        from_linear_layout(registers, "f32")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("offset = [[1]]", r"has no '\{\.\.\.\}'"),
        ("{offset = [[1]]", r"never closed"),
        ("{offset = [[1], [x]]}", r"not a list of lists of non-negative integers"),
        ("{offset = [[1], [-2]]}", r"non-negative"),
        ("{offset [[1]]}", r"is not 'name = \[\[\.\.\.\], \.\.\.\]'"),
        ("{offset = [[1]], offset = [[2]]}", r"given twice"),
        ("{a = [[1, 0]], b = [[1]]}", r"different lengths"),
        ("{offset = [[1]]]}", r"unbalanced"),
        ("{offset = [[1], [__import__('os')]]}", r"not a list of lists"),
    ],
)
def test_bad_linear_layout_text_is_a_clear_error(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LinearLayout.parse(text)


def test_parse_with_the_tensor_shape() -> None:
    ll = LinearLayout.parse("{offset = [[1, 0], [0, 1]]}", dims=(2, 4))
    assert ll.out_dims == (("dim0", 2), ("dim1", 4)) and not ll.is_surjective
    with pytest.raises(ValueError, match="2 entries for 3 dims"):
        LinearLayout.parse("{offset = [[1, 0]]}", dims=(2, 2, 2))
