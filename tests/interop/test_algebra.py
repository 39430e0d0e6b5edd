"""CuTe's layout algebra (``layout_algebra.interop.cute.algebra``) against brute-force enumeration of each definition.

Every operation is checked on random small layouts (Hypothesis; see ``strategies_algebra``)
by what it promises on every index, with an oracle that evaluates layouts from the
definition alone; adversarial inputs must give a clear :class:`AlgebraError`, never a
silently wrong layout. The examples of CuTe's own documentation are checked verbatim.
"""

from __future__ import annotations

import itertools
import re

import pytest
import sympy
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.strategies_algebra import (
    compact_layouts,
    compact_ordered,
    cute_text,
    extended,
    is_injective,
    layouts,
    leaves,
    nested_shape_strides,
    offset,
    offsets,
    size_of,
)

from layout_algebra.interop.cute.algebra import (
    coalesce,
    complement,
    composition,
    filter_zeros,
    layout,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    offset_expr,
    right_inverse,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from layout_algebra.interop.cute.export import AlgebraError, Layout, parse_cute, to_cute

EXAMPLES = settings(max_examples=150)


# ------------------------------------------------------------------------ the layout type
@EXAMPLES
@given(layouts(128))
def test_evaluation_is_the_definition(L: Layout) -> None:
    assert L.offsets() == offsets(L)
    assert L.size == size_of(L.shape)
    assert L.cosize == max(offsets(L)) + 1
    for i in (L.size, L.size + 3):  # past the size: the last mode goes on, as in CuTe
        assert L(i) == offset(L.shape, L.stride, i)
    assert layout(str(L)) == L  # the text reads back


def test_coordinates_nested_and_flat() -> None:
    L = layout("(4,(2,8)):(2,(1,8))")
    for x in range(4):
        for y in range(2):
            for z in range(8):
                expected = 2 * x + y + 8 * z
                assert L((x, (y, z))) == expected
                assert L((x, y + 2 * z)) == expected
                assert L(x + 4 * y + 8 * z) == expected
    assert (L.rank, L.depth, len(L), [str(m) for m in L]) == (2, 2, 2, ["4:2", "(2,8):(1,8)"])
    assert (layout("8:1").rank, layout("8:1").depth) == (1, 0)


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "empty text"),
        ("(4,2", "found the end"),
        ("(4,2):", "ends too early"),
        ("(4,2)", "needs ':'"),
        ("(4,2):(1)", "not congruent"),
        ("(4,(2,2)):(1,4,8)", "not congruent"),
        ("(4,2):(1,4", "expected ',' or ')'"),
        ("(4,2):(1,4))", "unexpected ')'"),
        ("(4,-2):(1,4)", "unexpected '-2"),
        ("(4,x):(1,4)", "unexpected 'x"),
        ("(4,0):(1,4)", "integer >= 1"),
        ("4:1:2", "unexpected ':'"),
        ("(,):(1,)", "expected an integer or '('"),
        ("__import__('os')", "has no CuTe layout"),
        ("(f32[4], f32[2])", "XLA tuple shape"),
    ],
)
def test_bad_cute_text_is_a_clear_error(text: str, why: str) -> None:
    with pytest.raises((AlgebraError, ValueError)) as err:
        layout(text)
    assert isinstance(err.value, ValueError)
    assert why in str(err.value)
    assert text.strip()[:6] in str(err.value)


@EXAMPLES
@given(nested_shape_strides(), st.booleans(), st.sampled_from(["", " ", "\t", " \n "]))
def test_cute_text_round_trips_through_the_one_reader(pair, statics: bool, space: str) -> None:
    """Random nested layouts -> text (as CuTe prints it, ``_8`` statics and whitespace too) ->
    ``layout`` -> the same layout, whose ``str`` reads back to itself; ``parse_cute`` (the reader
    ``interop.cute`` uses) gives the same tuples."""
    shape, stride = pair
    text = cute_text(shape, stride, statics=statics, space=space)
    L = layout(text)
    assert (L.shape, L.stride) == (shape, stride)
    assert parse_cute(text) == (shape, stride)
    assert layout(str(L)) == L
    assert str(L) == cute_text(shape, stride)


@pytest.mark.parametrize(
    "text, why",
    [
        # Both readers used to disagree on these; now one reader (interop.cute.parse_cute) reads both.
        ("(4,1 6):(1,4)", "unexpected '1 6'"),  # interop read 16 (it deleted spaces)
        ("(4,\t16):(1,4)", None),  # interop refused a tab; whitespace separates tokens
        ("(_4,_16):(_1,_4)", None),  # CuTe prints a static 4 as _4; both refused it
        ("_8:_1", None),
        ("8:(1)", "not congruent"),  # interop accepted: CuTe needs the same nesting
        ("(8):1", "not congruent"),
        ("((2,4)):(((1,2)))", "not congruent"),
        ("():()", "empty tuple"),
        ("(4,16):(-1,4)", "every stride must be an integer >= 0 here, not -1"),  # read, then refused
    ],
)
def test_cute_text_the_two_readers_disagreed_on(text: str, why: str | None) -> None:
    if why is None:
        assert str(layout(text)) in ("(4,16):(1,4)", "8:1")
        return
    with pytest.raises(AlgebraError, match=re.escape(why)):
        layout(text)


def test_bad_values() -> None:
    with pytest.raises(AlgebraError, match="stride must be an integer >= 0"):
        Layout(4, -1)
    with pytest.raises(AlgebraError, match="not congruent"):
        Layout((4, 2), 1)
    with pytest.raises(AlgebraError, match="not a layout"):
        layout(2.5)  # type: ignore[arg-type]
    with pytest.raises(AlgebraError, match="integers >= 0"):
        layout("4:1")(-1)
    with pytest.raises(AlgebraError, match="does not match the shape"):
        layout("(4,2):(1,4)")((1, 1, 1))
    with pytest.raises(AlgebraError, match="cotarget must be an integer >= 1"):
        complement("4:1", 0)


# ------------------------------------------------------------------------ XLA layouts in and out
@EXAMPLES
@given(layouts(64), st.integers(0, 80))
def test_symbolic_offsets_are_the_definition(L: Layout, i: int) -> None:
    """``offset_expr`` (what the proofs in proofs/cute_*.py evaluate) is the layout, past its size too."""
    x = sympy.Symbol("x", integer=True, nonnegative=True)
    assert offset_expr(L.shape, L.stride, x).subs(x, i) == offset(L.shape, L.stride, i)


@pytest.mark.parametrize(
    "shape",
    [
        "f32[16,384]{1,0:T(8,128)}",
        "bf16[16,256]{1,0:T(8,128)(2,1)}",
        "f32[4,6]{0,1}",
        "f32[5,256]{1,0:T(8,128)}",
        "s8[64,256]{1,0:T(32,128)(4,1)}",
        "f32[2,1,3]{2,1,0}",
    ],
)
def test_xla_layouts_are_read_through_the_cute_export(shape: str) -> None:
    L = layout(shape)
    assert str(L) == to_cute(shape)
    assert str(L.to_xla(shape.split("[")[0])) == str(layout(str(L)).to_xla(shape.split("[")[0]))


def test_xla_refusals_quote_the_shape() -> None:
    with pytest.raises(AlgebraError, match=r"f32\[12,256\].*padding falls inside a mode"):
        layout("f32[12,256]{1,0:T(8,128)}")
    with pytest.raises(AlgebraError, match=r"f32\[N,128\].*symbolic"):
        layout("f32[N,128]{1,0}")
    assert str(layout("f32[]")) == "1:0"
    # CuTe reads indices colexicographically: XLA's {0,1} is one run, row-major {1,0} is not
    assert str(coalesce("f32[8,128]{0,1}")) == "1024:1"
    assert str(coalesce("f32[8,128]{1,0:T(8,128)}")) == "(8,128):(128,1)"
    assert str(layout("(4,6):(1,4)").to_xla("f32")) == "f32[4,6]{0,1}"


# ------------------------------------------------------------------------ coalesce
@EXAMPLES
@given(layouts(128))
def test_coalesce_is_the_same_function_with_fewest_modes(L: Layout) -> None:
    C = coalesce(L)
    assert C.size == L.size and offsets(C) == offsets(L)
    assert C.depth <= 1
    pairs = C.leaves()
    if pairs != [(1, 0)]:
        assert all(s > 1 for s, _ in pairs)
        assert all(d1 != s0 * d0 for (s0, d0), (_, d1) in itertools.pairwise(pairs))
    F = filter_zeros(L)
    assert sorted(set(offsets(F))) == sorted(set(offsets(L))) and is_injective(F) == (
        F.size == len(set(offsets(L)))
    )


# ------------------------------------------------------------------------ composition
def check_composition(A: Layout, B: Layout, R: Layout) -> None:
    assert R.size == B.size
    for i in range(B.size):
        assert R(i) == extended(A, B(i)), (str(A), str(B), str(R), i)
    if isinstance(B.shape, tuple):  # compatible with B: the same modes
        assert R.rank == B.rank and [m.size for m in R] == [m.size for m in B]


@EXAMPLES
@given(layouts(128), layouts(48))
def test_composition_is_function_composition(A: Layout, B: Layout) -> None:
    try:
        R = composition(A, B)
    except AlgebraError as err:
        assert "divisibility fails" in str(err) or "carries into the next mode" in str(err)
        if "at index" in str(err):  # the witness is real
            i = int(str(err).split("at index ")[1].split(",")[0])
            assert f"A(B({i})) = {extended(A, B(i))}," in str(err)
        return
    check_composition(A, B, R)


def test_composition_refuses_modes_of_b_that_carry() -> None:
    # B's two modes both step A's first digit: A(B(3)) = A(2) = 1, but mode by mode 0 + 0
    with pytest.raises(AlgebraError, match=r"carries.*at index 3, A\(B\(3\)\) = 1"):
        composition("(2,2):(0,1)", "(2,2):(1,1)")
    # on A's last mode (linear) the same B is fine
    assert str(composition("6:1", "(2,2):(1,1)")) == "(2,2):(1,1)"


@EXAMPLES
@given(compact_layouts(128), st.integers(1, 8), st.sampled_from((1, 2, 4)))
def test_composition_with_a_strided_slice(A: Layout, n: int, step: int) -> None:
    B = Layout(n, step)
    try:
        R = composition(A, B)
    except AlgebraError as err:
        assert "divisibility fails" in str(err)
        return
    check_composition(A, B, R)


@EXAMPLES
@given(layouts(64), layouts(32), layouts(16))
def test_composition_is_associative(A: Layout, B: Layout, C: Layout) -> None:
    """(A ∘ B) ∘ C and A ∘ (B ∘ C) are A(B(C(i))) wherever every step stays inside the domains."""
    try:
        left, right = composition(composition(A, B), C), composition(A, composition(B, C))
    except AlgebraError:
        return
    for i in range(C.size):
        if C(i) < B.size and B(C(i)) < A.size:
            assert left(i) == right(i) == A(B(C(i)))


def test_composition_refuses_what_is_no_layout() -> None:
    # A(0..5) = 0,1,2,3,10,11: no layout of shape 6 (pycute returns 4:1, wrong at i = 4)
    with pytest.raises(AlgebraError, match="shape divisibility"):
        composition("(4,3):(1,10)", "6:1")
    with pytest.raises(AlgebraError, match="stride divisibility"):
        composition("(6,2):(8,2)", "2:4")


def test_composition_cute_examples() -> None:
    assert str(composition("(6,2):(8,2)", "(4,3):(3,1)")) == "((2,2),3):((24,2),8)"
    assert str(composition("20:2", "(5,4):(4,1)")) == "(5,4):(8,2)"
    # CuTe's dynamic result: ((5,1),(2,2)):((16,4),(80,4)); ours coalesces each mode
    R = composition("(10,2):(16,4)", "(5,4):(1,5)")
    assert str(R) == "(5,(2,2)):(16,(80,4))"
    tiled = composition("(12,(4,8)):(59,(13,1))", ("3:4", "8:2"))
    assert str(tiled) == "(3,(2,4)):(236,(26,1))"


def test_by_mode_composition_is_composition_of_each_mode() -> None:
    A = layout("(12,(4,8)):(59,(13,1))")
    R = composition(A, ("3:4", None))
    assert R[1] == A[1] and str(R[0]) == "3:236"
    with pytest.raises(AlgebraError, match="A has only 2 modes"):
        composition(A, ("3:4", "2:1", "2:1"))


# ------------------------------------------------------------------------ complement
@EXAMPLES
@given(layouts(64), st.integers(1, 300))
@example(Layout((5, 3), (1, 12)), 251)  # 12 is no multiple of 5: CuTe's last mode falls one step short
@example(Layout((2, 2), (3, 1)), 12)  # pycute's 2:6 reaches cosize 11
def test_complement_postconditions(L: Layout, cotarget: int) -> None:
    moving = sorted((d, s) for s, d in zip(leaves(L.shape), leaves(L.stride), strict=True) if s > 1 and d)
    spans = [1] + [s * d for d, s in moving]
    try:
        M = complement(L, cotarget)
    except AlgebraError as err:
        if "inside the" in str(err):  # non-injective
            assert any(d < spans[k] for k, (d, _) in enumerate(moving))
            return
        # outside CuTe's precondition: a stride no multiple of the span below it, and CuTe's
        # answer (floor divisions, then ceil(cotarget / span)) falls short of the cotarget
        assert "not a multiple" in str(err) and any(d % spans[k] for k, (d, _) in enumerate(moving))
        cute = [(d // spans[k], spans[k]) for k, (d, _) in enumerate(moving)] + [
            (-(-cotarget // spans[-1]), spans[-1])
        ]
        cosize = sum((s - 1) * d for s, d in zip(leaves(L.shape), leaves(L.stride), strict=True))
        assert cosize + sum((n - 1) * w for n, w in cute) + 1 < cotarget
        return
    m = offsets(M)
    image = set(offsets(L))
    assert all(a < b for a, b in itertools.pairwise(m))  # ordered
    assert not image & set(m[1:])  # disjoint
    assert max(image) + max(m) + 1 >= cotarget  # cosize((L, M)) >= cotarget
    sums = [a + b for b in m for a in sorted(image)]
    assert len(set(sums)) == len(sums)  # (L without stride 0, M) is injective
    if compact_ordered(L):  # ... and onto [0, size(L')·size(M))
        assert sorted(sums) == list(range(len(sums)))


def test_complement_outside_cutes_precondition_is_refused_and_otherwise_is_cutes() -> None:
    # 3 is no multiple of the 2 offsets below it: CuTe (and pycute) answer 2:6, whose cosize with
    # the layout is 11; for a cotarget of 12 that breaks CuTe's own postcondition: refused, named
    with pytest.raises(AlgebraError, match="stride 3, which is not a multiple of the 2 offsets"):
        complement("(2,2):(3,1)", 12)
    assert str(complement("(2,2):(3,1)", 11)) == "2:6"  # CuTe's answer reaches 11: it is the answer
    with pytest.raises(AlgebraError, match="not a multiple"):
        logical_divide("12:1", "(2,2):(3,1)")  # the divide's complement is that one


def test_complement_cute_examples() -> None:
    assert str(complement("4:1", 24)) == "6:4"
    assert str(complement("6:4", 24)) == "4:1"
    assert str(complement("(4,6):(1,4)", 24)) == "1:0"
    assert str(complement("4:2", 24)) == "(2,3):(1,8)"
    assert str(complement("(2,4):(1,6)", 24)) == "3:2"
    assert str(complement("(2,2):(1,6)", 24)) == "(3,2):(2,12)"


def test_complement_refuses_overlapping_modes() -> None:
    # pycute makes a mode of size 0 here: (2,2):(2,3) sorted gives stride 3 inside span 4
    with pytest.raises(AlgebraError, match=r"complement\(\(2,2\):\(2,3\), 1\).*inside the 4 offsets"):
        complement("(2,2):(2,3)")


# ------------------------------------------------------------------------ inverses
@EXAMPLES
@given(layouts(128))
def test_right_inverse(L: Layout) -> None:
    R = right_inverse(L)
    for i in range(R.size):
        assert L(R(i)) == i
    image = set(offsets(L))
    # nothing longer of CuTe's form: the next offset is missing, or no mode of L starts there
    starts = {d for s, d in L.leaves() if s > 1}
    assert R.size not in image or R.size not in starts


@EXAMPLES
@given(layouts(128))
def test_left_inverse(L: Layout) -> None:
    try:
        Li = left_inverse(L)
    except AlgebraError as err:
        assert "stride 0" in str(err) or "not a multiple" in str(err) or "inside the" in str(err)
        assert not (compact_ordered(L) and is_injective(L))
        return
    assert is_injective(L)
    for i in range(L.size):
        assert Li(L(i)) == i


def test_inverse_examples() -> None:
    assert str(right_inverse("(4,(2,8)):(2,(1,8))")) == "(2,4,8):(4,1,8)"
    Li = left_inverse("(2,2):(1,4)")  # offsets 0, 1, 4, 5 back to 0, 1, 2, 3
    assert str(Li) == "(2,2,2):(1,4,2)" and [Li(o) for o in (0, 1, 4, 5)] == [0, 1, 2, 3]
    with pytest.raises(AlgebraError, match="not a multiple"):
        left_inverse("(2,2):(1,3)")  # injective, but (L, complement(L)) is not compact


# ------------------------------------------------------------------------ divide and product
@EXAMPLES
@given(layouts(128), layouts(16))
def test_logical_divide_is_composition_with_the_complement(A: Layout, B: Layout) -> None:
    try:
        D = logical_divide(A, B)
    except AlgebraError as err:
        assert str(err).startswith(f"logical_divide({A}, {B}): ")
        return
    C = complement(B, A.size)
    assert D.rank == 2 and D[0].size == B.size and D[1].size == C.size
    for j in range(C.size):
        for i in range(B.size):
            assert D((i, j)) == extended(A, B(i) + C(j))


@EXAMPLES
@given(layouts(32), layouts(16))
def test_logical_product_repeats_a(A: Layout, B: Layout) -> None:
    try:
        P = logical_product(A, B)
    except AlgebraError as err:
        assert str(err).startswith(f"logical_product({A}, {B}): ")
        return
    assert P[0] == A and P[1].size == B.size
    C = complement(A, A.size * B.cosize)
    for j in range(B.size):
        assert P((0, j)) == extended(C, B(j))
        for i in range(A.size):
            assert P((i, j)) == A(i) + P((0, j))
    if is_injective(A) and is_injective(B) and compact_ordered(A):
        assert is_injective(P)


def test_divide_and_product_cute_examples() -> None:
    assert str(logical_divide("(4,2,3):(2,1,8)", "4:2")) == "((2,2),(2,3)):((4,1),(2,8))"
    assert str(logical_product("(2,2):(4,1)", "6:1")) == "((2,2),(2,3)):((4,1),(2,8))"
    # the 2-D example: A = (9,(4,8)):(59,(13,1)) tiled by <3:3, (2,4):(1,8)>
    A, tiler = "(9,(4,8)):(59,(13,1))", ("3:3", "(2,4):(1,8)")
    assert str(composition(A, tiler)) == "(3,(2,4)):(177,(13,2))"
    Z = zipped_divide(A, tiler)
    assert Z[0] == composition(A, tiler)
    assert [[m.size for m in Z[0]], [m.size for m in Z[1]]] == [[3, 8], [3, 4]]
    assert str(logical_divide("16:1", 4)) == "(4,4):(1,4)"  # an integer tile is n:1


@settings(max_examples=60)
@given(st.randoms(use_true_random=False), st.integers(1, 4), st.integers(1, 4))
def test_zipped_and_tiled_divide_regroup_the_same_modes(rng, t0: int, t1: int) -> None:
    A = Layout((t0 * rng.randint(1, 3), t1 * rng.randint(1, 3)), (rng.choice((1, 5)), rng.choice((7, 40))))
    tiler = (Layout(t0, 1), Layout(t1, 1))
    D = logical_divide(A, tiler)
    Z = zipped_divide(A, tiler)
    T = tiled_divide(A, tiler)
    assert Z.rank == 2 and T.rank == 1 + Z[1].rank
    for a in range(D[0][0].size):
        for b in range(D[0][1].size):
            for c in range(D[1][0].size):
                for d in range(D[1][1].size):
                    want = D(((a, b), (c, d)))
                    assert Z(((a, c), (b, d))) == want
                    assert T(((a, c), b, d)) == want
    ZP, TP = zipped_product(A, tiler), tiled_product(A, tiler)
    LP = logical_product(A, tiler)
    assert sorted(offsets(ZP)) == sorted(offsets(LP)) == sorted(offsets(TP))


def test_by_mode_divide_keeps_extra_modes() -> None:
    A = layout("(8,6,2):(1,8,48)")
    D = logical_divide(A, ("2:1", None))
    assert D[1] == A[1] and D[2] == A[2] and str(D[0]) == "(2,4):(1,2)"
    assert str(make_layout(A[0], A[1])) == "(8,6):(1,8)"
