"""The symbolic bitcast decision on merges and splits of dimensions, against packed bytes.

The symbolic decision reshapes group by group (``correspondence.input_index_by_groups``): where
both row-major readings split at the same place, each group of dimensions is reshaped on
its own, so the solver divides by ``B`` rather than by ``B*128``. These tests check

* that grouping is the reshape: the grouped input index against a row-major unravel
  written here, on every element of random concrete shapes and of symbolic ones given
  sizes (including 1);
* every symbolic verdict against an oracle sharing nothing with the prover: pack arrays of
  distinct ids with ``numpy_eval.pack`` in the input layout, read the bytes back in the
  output layout with ``numpy_eval.unpack``, and compare with the reshape, at every small
  size the assumptions allow, 0 and 1 included (f32, bf16 ``(2,1)``, s4 ``E(4)``, memory
  spaces, user assumptions), on a fixed list of families and on 40 random merges and
  splits over ``A``, ``B`` and numbers, in random orders;
* the regression: the two ``A x B`` merges of ``benchmarks/conditions.py`` (f32 and bf16
  ``T(8,128)``) are proved under ``B % 8 == 0`` with the default timeout (they timed out
  at 30 s after every symbolic divisor of the decision's maps became an obligation), and
  their empty cases ``A == 0`` / ``B == 0`` are decided, correctly.
"""

from __future__ import annotations

import itertools
import math

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import moves_no_data

from layout_algebra.decide import bitcast, correspondence
from layout_algebra.decide.bitcast import bitcast_is_valid, reshape_is_bitcast
from layout_algebra.meaning.stages.arith import Arithmetic
from layout_algebra.model.symbols import as_sympy
from layout_algebra.model.syntax import as_shape

MERGES = [
    ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}"),
    ("bf16[A,B,128]{2,1,0:T(8,128)(2,1)}", "bf16[A*B,128]{1,0:T(8,128)(2,1)}"),
]


# --------------------------------------------------------------- the oracle: real bytes
def _row_major(index, dims) -> int:
    position = 0
    for i, d in zip(index, dims, strict=True):
        position = position * d + i
    return position


def _unravel(position: int, dims) -> list[int]:
    out = []
    for d in reversed(dims):
        out.append(position % d)
        position //= d
    return out[::-1]


def _buffer_bytes(shape) -> int:
    """The bytes of the first tile's padding (or none), times the element bits: XLA's
    allocation, written here (the families below have no ``L(n)`` and later tiles that
    divide the first, so it is also the exact buffer ``pack`` writes)."""
    layout = shape.effective_layout
    physical = [shape.dimensions[d] for d in reversed(layout.minor_to_major)]
    if layout.tiles:
        tile = layout.tiles[0].dimensions
        physical = [1] * max(0, len(tile) - len(physical)) + physical
        for k, t in enumerate(tile):
            p = len(physical) - len(tile) + k
            physical[p] = -(-physical[p] // t) * t
    bits = layout.element_size_in_bits or shape.element_type.bit_width
    return -(-math.prod(physical, start=1) * bits // 8)


def _specialized(text: str, sizes: dict[str, int]) -> str:
    return str(as_shape(text).specialize(sizes))


# --------------------------------------------------------------- grouping is the reshape
class _AtSizes(Arithmetic):
    """Integer arithmetic that gives symbolic sizes their values (the test's own)."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def lift(self, size):
        value = as_sympy(size).subs({s: self.sizes[str(s)] for s in as_sympy(size).free_symbols})
        return int(value)


def _expected_input_index(corr, src_dims, dst_dims, j) -> list[int]:
    """The input index by the row-major unravel, written here: read ``j`` in the output's
    order, unravel its position in the input's order, put the digits back."""
    position = _row_major([j[d] for d in corr.dst_order], [dst_dims[d] for d in corr.dst_order])
    digits = _unravel(position, [src_dims[d] for d in corr.src_order])
    i = [0] * len(src_dims)
    for d, x in zip(corr.src_order, digits, strict=True):
        i[d] = x
    return i


@st.composite
def regroupings(draw):
    """Two shapes over the same factors, cut into dimensions at two sets of places, each
    read in an order of its own (a transpose-reshape-transpose)."""
    factors = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))

    def cut() -> list[int]:
        places = sorted(draw(st.sets(st.integers(1, len(factors) - 1)))) if len(factors) > 1 else []
        bounds = [0, *places, len(factors)]
        return [math.prod(factors[x:y]) for x, y in itertools.pairwise(bounds)]

    src, dst = cut(), cut()
    if draw(st.booleans()):  # a unit dimension somewhere
        dst.insert(draw(st.integers(0, len(dst))), 1)
    src_order = tuple(draw(st.permutations(range(len(src)))))
    dst_order = tuple(draw(st.permutations(range(len(dst)))))
    return src, dst, correspondence.Correspondence("transpose-reshape-transpose", src_order, dst_order)


@pytest.mark.slow
@settings(max_examples=120, derandomize=True)
@given(regroupings())
def test_grouped_input_index_is_the_reshape_on_every_element(case) -> None:
    src, dst, corr = case
    a = as_shape(f"f32[{','.join(map(str, src))}]")
    b = as_shape(f"f32[{','.join(map(str, dst))}]")
    grouped = correspondence.input_index_by_groups(corr, a, b)
    for j in itertools.product(*(range(d) for d in dst)):
        assert [int(x) for x in grouped(list(j), bitcast._INT)] == _expected_input_index(corr, src, dst, j)


@pytest.mark.parametrize(
    ("src", "dst", "cuts"),
    [
        ("f32[A,B,128]", "f32[A*B,128]", [(0, 0), (2, 1), (3, 2)]),
        ("f32[A*B,128]", "f32[A,B,128]", [(0, 0), (1, 2), (2, 3)]),
        ("f32[2,A,B]", "f32[2*A,B]", [(0, 0), (2, 1), (3, 2)]),
        ("f32[A,B,2,64]", "f32[A*B,128]", [(0, 0), (2, 1), (4, 2)]),
        ("f32[A,1,B]", "f32[A,B]", [(0, 0), (1, 1), (3, 2)]),
        ("f32[A,128]", "f32[B,128]", None),  # equal counts only under assumptions: no groups
    ],
)
def test_symbolic_groups_and_their_index_at_sizes(src, dst, cuts) -> None:
    a, b = as_shape(src), as_shape(dst)
    corr = correspondence.reshape_correspondence(a, b)
    assert correspondence._row_major_cuts(tuple(a.dimensions), tuple(b.dimensions)) == cuts
    grouped = correspondence.input_index_by_groups(corr, a, b)
    for sizes in ({"A": 1, "B": 1}, {"A": 2, "B": 3}, {"A": 3, "B": 1}, {"A": 1, "B": 4}):
        ca, cb = a.specialize(sizes), b.specialize(sizes)
        if math.prod(ca.dimensions) != math.prod(cb.dimensions):
            continue
        for j in itertools.product(*(range(d) for d in cb.dimensions)):
            got = [int(x) for x in grouped(list(j), _AtSizes(sizes))]
            assert got == _expected_input_index(corr, ca.dimensions, cb.dimensions, j), (sizes, j)


# ---------------------------------------------------------- symbolic verdicts vs bytes
FAMILIES = [
    # (src, dst, assumptions)
    ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "B % 8 == 0"),
    ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "A == 1"),
    ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "B % 4 == 0"),  # B = 4, A = 2
    ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "A == 0"),
    ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "B == 0"),
    ("f32[A*B,128]{1,0:T(8,128)}", "f32[A,B,128]{2,1,0:T(8,128)}", "B % 8 == 0"),
    ("f32[A,B,128]{2,1,0}", "f32[A*B,128]{1,0}", None),
    ("f32[A,B,128]{2,1,0:T(8,128)S(1)}", "f32[A*B,128]{1,0:T(8,128)S(1)}", "B % 8 == 0"),
    ("f32[A,B,128]{2,1,0:T(8,128)S(1)}", "f32[A*B,128]{1,0:T(8,128)}", "B % 8 == 0"),
    ("f32[A,B,2,64]{3,2,1,0}", "f32[A*B,128]{1,0}", None),
    ("f32[2,A,128]{2,1,0:T(8,128)}", "f32[2*A,128]{1,0:T(8,128)}", "A % 8 == 0"),
    ("f32[2,A,B]{2,1,0}", "f32[2*A,B]{1,0}", None),
    ("f32[A,B,128]{1,2,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "B % 8 == 0"),
    ("bf16[A,B,128]{2,1,0:T(8,128)(2,1)}", "bf16[A*B,128]{1,0:T(8,128)(2,1)}", "B % 8 == 0"),
    ("bf16[A,B,128]{2,1,0:T(8,128)(2,1)}", "bf16[A*B,128]{1,0:T(8,128)(2,1)}", "B % 2 == 0"),
    ("s4[A,B,128]{2,1,0:T(8,128)(8,1)E(4)}", "s4[A*B,128]{1,0:T(8,128)(8,1)E(4)}", "B % 8 == 0"),
    ("s4[A,B,128]{2,1,0:T(8,128)(8,1)E(4)}", "s4[A*B,128]{1,0:T(8,128)(8,1)E(4)}", "B % 4 == 0"),
]
_A_VALUES = (0, 1, 2, 3)
_B_VALUES = (0, 1, 2, 3, 4, 6, 8, 9, 16)


def _allowed(assume: str | None, sizes: dict[str, int]) -> bool:
    """The family's assumption at these sizes (a fixed grammar, read here)."""
    if assume is None:
        return True
    name, op, value = assume.replace("%", " % ").replace("==", " == ").split()[:3]
    if op == "%":
        return sizes[name] % int(value) == 0
    return sizes[name] == int(value)


def _grid(assume: str | None) -> list[dict[str, int]]:
    points = [{"A": x, "B": y} for x in _A_VALUES for y in _B_VALUES]
    return [p for p in points if _allowed(assume, p)]


def assert_agrees_with_the_bytes(verdict, src: str, dst: str, points: list[dict[str, int]]) -> None:
    """A proof: the bytes stay at every point. A refutation: at its sizes, the bytes move
    (or XLA's allocations, written here, differ as it says); one without sizes (memory
    spaces) holds wherever the arrays are not empty. ``unknown`` claims nothing."""
    if verdict.status == "unknown":
        return
    by_bytes = {tuple(p.values()): moves_no_data(_specialized(src, p), _specialized(dst, p)) for p in points}
    if verdict.status == "proved":
        assert all(by_bytes.values()), (str(verdict), by_bytes)
        return
    cex = verdict.counterexample or {}
    if "sizes" in cex:  # a refutation at given sizes: the bytes move there
        full = {"A": 1, "B": 1, **cex["sizes"]}
        ca, cb = as_shape(_specialized(src, full)), as_shape(_specialized(dst, full))
        if "src_allocated_bytes" in cex:  # XLA allocates different sizes (may be huge sizes)
            assert (_buffer_bytes(ca), _buffer_bytes(cb)) == (
                cex["src_allocated_bytes"],
                cex["dst_allocated_bytes"],
            )
            assert _buffer_bytes(ca) != _buffer_bytes(cb)
        else:  # an element moves: at the solver's sizes, packed (its models are not minimal:
            # Z3 4.13.4 gave A = B = 16 for f32[A*128*128,B], 4M elements; bounded to keep the
            # byte check cheap, about a second at 4M)
            assert math.prod(ca.dimensions) <= 1 << 24, cex
            assert not moves_no_data(str(ca), str(cb)), str(verdict)
    else:  # one for every size (memory spaces, element widths): the bytes move wherever non-empty
        assert not any(ok for p, ok in by_bytes.items() if 0 not in p), str(verdict)


@pytest.mark.parametrize(("src", "dst", "assume"), FAMILIES)
def test_a_symbolic_verdict_agrees_with_the_bytes_at_every_small_size(src, dst, assume) -> None:
    verdict = reshape_is_bitcast(src, dst, assume=assume)
    assert verdict.status in ("proved", "refuted"), str(verdict)
    points = _grid(assume)
    assert points
    assert_agrees_with_the_bytes(verdict, src, dst, points)


#: Random merges and splits: factors, each a size symbol or a number, cut into dimensions
#: twice; one layout family for both sides (element type and tiles), each its own order.
_FACTORS = ("A", "B", "2", "8", "128")
_LAYOUTS = (
    ("f32", ""),
    ("f32", ":T(8,128)"),
    ("f32", ":T(2,128)"),
    ("bf16", ":T(8,128)(2,1)"),
    ("s4", ":T(8,128)(8,1)E(4)"),
)
_ASSUMPTIONS = (None, "B % 8 == 0", "A % 8 == 0", "A == 1", "B == 0")


@st.composite
def symbolic_regroupings(draw):
    factors = draw(st.lists(st.sampled_from(_FACTORS), min_size=1, max_size=3))
    factors.insert(draw(st.integers(0, len(factors))), draw(st.sampled_from(("A", "B"))))  # symbolic
    if "128" not in factors:
        factors.append("128")  # a minor dimension the tiles fit

    def dims() -> str:
        places = sorted(draw(st.sets(st.integers(1, len(factors) - 1))))
        bounds = [0, *places, len(factors)]
        return ",".join("*".join(factors[x:y]) for x, y in itertools.pairwise(bounds))

    element, tiles = draw(st.sampled_from(_LAYOUTS))
    src_dims, dst_dims = dims(), dims()
    hypothesis.assume(src_dims != dst_dims)  # a merge or a split, not the same dimensions

    def layout(rank: int) -> str:
        minor_first = draw(st.permutations(range(rank))) if draw(st.booleans()) else range(rank - 1, -1, -1)
        return "{" + ",".join(map(str, minor_first)) + tiles + "}"

    src = f"{element}[{src_dims}]{layout(src_dims.count(',') + 1)}"
    dst = f"{element}[{dst_dims}]{layout(dst_dims.count(',') + 1)}"
    return src, dst, draw(st.sampled_from(_ASSUMPTIONS))


@pytest.mark.slow
@settings(max_examples=40, derandomize=True)
@given(symbolic_regroupings())
def test_random_symbolic_regroupings_agree_with_the_bytes(case) -> None:
    """Random merges and splits over ``A``, ``B`` and numbers (a 5 s solver timeout: an
    ``unknown`` claims nothing; proofs and refutations are checked at sizes 0..9)."""
    src, dst, assume = case
    verdict = reshape_is_bitcast(src, dst, assume=assume, timeout_ms=5_000)
    points = [
        p for p in ({"A": x, "B": y} for x in (0, 1, 2, 3) for y in (0, 1, 2, 8, 9)) if _allowed(assume, p)
    ]
    assert_agrees_with_the_bytes(verdict, src, dst, points)


@pytest.mark.parametrize(("src", "dst"), MERGES)
def test_regression_the_two_merges_are_proved_under_b_divisible_by_8(src, dst) -> None:
    """Sufficiency of ``A == 1 | B % 8 == 0``'s second case, with the default 30 s timeout:
    it timed out (``unknown``) once each division by ``B*128`` in the decision's maps had
    to be proved positive by the solver (commit 22d3190)."""
    bitcast._decided.cache_clear()
    verdict = reshape_is_bitcast(src, dst, assume="B % 8 == 0")
    assert verdict.status == "proved", str(verdict)
    assert bitcast_is_valid(src, dst, assume="B % 8 == 0").status == "proved"
    for sizes in ({"A": 2, "B": 8}, {"A": 3, "B": 16}):
        assert moves_no_data(_specialized(src, sizes), _specialized(dst, sizes))


@pytest.mark.parametrize(("src", "dst"), MERGES)
@pytest.mark.parametrize("empty", ["A == 0", "B == 0"])
def test_the_empty_merges_are_bitcasts_at_every_other_size(src, dst, empty) -> None:
    """With ``A == 0`` or ``B == 0`` both arrays are empty (0 bytes allocated), so the
    reshape moves nothing whatever the other size (``B = 3`` included, where a non-empty
    merge moves data); the symbolic decision proves it, and the concrete decision and the
    bytes agree at sizes 0..9."""
    verdict = reshape_is_bitcast(src, dst, assume=empty)
    assert verdict.status == "proved", str(verdict)
    zero = empty.split()[0]
    for other in range(10):
        sizes = {"A": other, "B": other, zero: 0}
        ca, cb = _specialized(src, sizes), _specialized(dst, sizes)
        assert reshape_is_bitcast(ca, cb).verdict == "bitcast"
        assert moves_no_data(ca, cb)
    assert not moves_no_data(_specialized(src, {"A": 2, "B": 3}), _specialized(dst, {"A": 2, "B": 3}))


def test_the_oracle_sees_a_moved_element_and_a_padding_byte() -> None:
    """The byte oracle is not vacuous: a merge that moves data (B = 3, A = 2: rows padded to
    8 in the input only), a transpose of the minor tile, and a memory-space change fail."""
    assert moves_no_data("f32[2,8,128]{2,1,0:T(8,128)}", "f32[16,128]{1,0:T(8,128)}")
    assert not moves_no_data("f32[2,3,128]{2,1,0:T(8,128)}", "f32[6,128]{1,0:T(8,128)}")
    assert not moves_no_data("f32[2,8,128]{2,1,0:T(8,128)}", "f32[16,128]{0,1:T(8,128)}")
    assert not moves_no_data("f32[2,8,128]{2,1,0:T(8,128)S(1)}", "f32[16,128]{1,0:T(8,128)}")
    assert moves_no_data("s4[2,8,128]{2,1,0:T(8,128)(8,1)E(4)}", "s4[16,128]{1,0:T(8,128)(8,1)E(4)}")
    assert not moves_no_data("s4[2,4,128]{2,1,0:T(8,128)(8,1)E(4)}", "s4[8,128]{1,0:T(8,128)(8,1)E(4)}")


def test_the_grouping_is_used_only_where_products_agree_as_formulas() -> None:
    """``f32[N,8,128] -> f32[M,128]`` with ``M == 8*N``: the counts agree only under the
    assumption, so the decision reshapes the whole (no groups) and still proves it."""
    a, b = as_shape("f32[N,8,128]{2,1,0:T(8,128)}"), as_shape("f32[M,128]{1,0:T(8,128)}")
    assert correspondence._row_major_cuts(tuple(a.dimensions), tuple(b.dimensions)) is None
    assert reshape_is_bitcast(a, b, assume="M == 8*N").status == "proved"
