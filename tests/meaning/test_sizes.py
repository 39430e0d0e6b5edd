"""Exact physical sizes, checked against XLA:TPU's real allocations and independent arithmetic."""

from __future__ import annotations

import csv
import itertools
import json
import math

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ground_truth import GROUND_TRUTH, TEST_DATA
from support.oracles import nested_linear_index

import layout_algebra as la
from layout_algebra.meaning.sizes import first_tile_dimensions, size_report, tiled_dimensions
from layout_algebra.model.symbols import dim_symbol

EXCEPTIONS_FILE = TEST_DATA / "tpu_size_exceptions.tsv"


def tpu_rows(name: str, key: str) -> list[tuple[str, dict]]:
    path = GROUND_TRUTH / "tpu" / name
    if not path.is_file():  # collection-time: raise so the run fails loudly instead of collecting nothing
        raise FileNotFoundError(
            f"ground-truth data missing: {path} (restore tests/data/ground_truth from git)"
        )
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r[key], r) for r in rows if "error" not in r]


def exceptions() -> dict[str, dict]:
    with EXCEPTIONS_FILE.open() as f:
        return {row["shape"]: row for row in csv.DictReader(f, delimiter="\t")}


ALL_ROWS = tpu_rows("padded_bytes.jsonl", "shape") + tpu_rows("default_layouts.jsonl", "layout")


@pytest.mark.parametrize(("shape", "row"), ALL_ROWS, ids=[s for s, _ in ALL_ROWS])
def test_physical_size_matches_xla_tpu_allocation(shape: str, row: dict) -> None:
    listed = exceptions().get(shape)
    report = size_report(shape)
    if listed is None:
        assert la.physical_size_in_bytes(shape) == row["bytes"]
        assert report.first_tile_bytes == row["bytes"]
    elif listed["kind"] == "first_tile_only":
        # The listed reason must really hold: the compiler pads to the first tile only,
        # and the exact nested buffer is larger.
        assert report.first_tile_bytes == row["bytes"]
        assert report.physical_bytes > row["bytes"]
        assert report.notes, "the size report must say why the two numbers differ"
    elif listed["kind"] == "compiler_relayout":
        assert row["compiled"] != shape
        assert la.physical_size_in_bytes(row["compiled"]) == row["bytes"]
    else:
        pytest.fail(f"unknown exception kind {listed['kind']!r} in {EXCEPTIONS_FILE}")


def test_every_listed_exception_is_a_real_disagreement() -> None:
    shapes = {s for s, _ in ALL_ROWS}
    for shape, listed in exceptions().items():
        assert shape in shapes, f"{shape} is listed in {EXCEPTIONS_FILE.name} but is not an ok TPU row"
        row = next(r for s, r in ALL_ROWS if s == shape)
        assert la.physical_size_in_bytes(shape) != row["bytes"], f"{shape} no longer disagrees; unlist it"
        assert listed["reason"].strip()


def test_exceptions_are_few() -> None:
    assert len(exceptions()) <= 0.05 * len(ALL_ROWS)


# ----------------------------------------------------------- the tiled-layout document
def test_document_figure_1_has_24_slots() -> None:
    # docs/tiled_layout.md Figure 1: a 3x5 f32 array in 2x2 tiles takes 2x3 tiles of 4 slots.
    assert math.prod(tiled_dimensions("f32[3,5]{1,0:T(2,2)}")) == 2 * 3 * 4
    assert la.physical_size_in_bytes("f32[3,5]{1,0:T(2,2)}") == 24 * 4


def test_combined_dimensions_equal_reshape_then_tile() -> None:
    # The document: F32[2,7,8,11,10] with T(*,*,2,*,3) is F32[112,110] tiled by (2,3).
    combined = tiled_dimensions("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    reshaped = tiled_dimensions("f32[112,110]{1,0:T(2,3)}")
    assert combined == reshaped


def test_scalar_tile_pads_virtual_dimensions() -> None:
    # TPU allocates 256 slots for a scalar under T(256); see default_layouts.jsonl.
    assert la.physical_size_in_bytes("f32[]{:T(256)}") == 256 * 4


def test_tail_alignment_rounds_the_element_count() -> None:
    assert la.physical_size_in_bytes("f32[5]{0:L(1024)}") == 1024 * 4
    assert la.physical_size_in_bytes("f32[2048]{0:L(1024)}") == 2048 * 4


def test_sub_byte_packing() -> None:
    assert la.physical_size_in_bytes("s4[3]{0:E(4)}") == 2  # 12 bits round up to 2 bytes
    assert la.physical_size_in_bytes("s4[3]{0}") == 3  # no E(4): a byte each
    assert la.physical_size_in_bytes("pred[16]{0:E(1)}") == 2
    assert la.physical_size_in_bytes("pred[16]{0}") == 16  # pred is stored in a byte


# ----------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("f32[?,3]", "unbounded"),
        ("f32[2,3]{0,0}", "permutation"),
        ("(f32[2], f32[3])", "tuple"),
        ("token[]", "token"),
        ("f32[2,3]{1,0:E(4)}", "cannot hold"),
        ("f32[2,3]{1,0:T(8,*)}", "'*'"),
        ("f32[2,3]{1,0:T(8,0)}", "size-0"),
        ("f32[2,3]{1,0:SC(0:1)}", "split"),
    ],
)
def test_shapes_without_an_exact_size_say_why(text: str, fragment: str) -> None:
    with pytest.raises(la.LayoutSemanticsError) as err:
        la.physical_size_in_bytes(text)
    assert fragment in str(err.value)
    assert str(la.parse_shape(text)) in str(err.value)  # the message quotes the shape


def test_bounded_dynamic_dimensions_use_their_bound() -> None:
    assert la.physical_size_in_bytes("f32[<=10,3]") == la.physical_size_in_bytes("f32[10,3]")


def test_buffer_is_sized_by_its_array() -> None:
    assert la.physical_size_in_bytes("b(f32[3,5]{1,0:T(2,2)})") == 96


# ------------------------------------------------------------- independent reference
def render(dtype: str, dims, m2m, tiles, e: str) -> str:
    """Shape text for the given parts (``dims`` may hold names: symbolic sizes)."""
    attrs = ("T" + "".join("(" + ",".join(map(str, t)) + ")" for t in tiles) if tiles else "") + e
    return f"{dtype}[{','.join(map(str, dims))}]{{{','.join(map(str, m2m))}{':' + attrs if attrs else ''}}}"


@st.composite
def small_tiled_shapes(draw):
    rank = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank))
    m2m = list(draw(st.permutations(range(rank))))
    tiles = []
    for _ in range(draw(st.integers(0, 3))):
        k = draw(st.integers(1, rank + 2))
        tiles.append(tuple(draw(st.lists(st.integers(1, 5), min_size=k, max_size=k))))
    dtype = draw(st.sampled_from(["f32", "bf16", "s8", "pred", "s4"]))
    e = "E(4)" if dtype == "s4" and draw(st.booleans()) else ""
    return dtype, dims, m2m, tiles, e


@pytest.mark.slow
@settings(max_examples=150)
@given(small_tiled_shapes())
def test_every_element_lands_inside_the_exact_buffer(case) -> None:
    dtype, dims, m2m, tiles, e = case
    report = size_report(render(dtype, dims, m2m, tiles, e))
    indices = [
        nested_linear_index(dims, m2m, tiles, index) for index in itertools.product(*(range(d) for d in dims))
    ]
    assert len(set(indices)) == len(indices)  # distinct slots
    assert max(indices) < report.physical_elements  # all inside the buffer
    assert report.logical_bytes <= report.physical_bytes
    assert report.first_tile_bytes <= report.physical_bytes


@pytest.mark.slow
@settings(max_examples=60)
@given(small_tiled_shapes(), st.integers(1, 40), st.integers(1, 40))
def test_symbolic_size_evaluates_to_the_concrete_size(case, n, m) -> None:
    dtype, dims, m2m, tiles, e = case
    if len(dims) < 2:
        return
    expr = la.physical_size_in_bytes(render(dtype, ["N", "M", *dims[2:]], m2m, tiles, e))
    value = expr.subs({dim_symbol("N"): n, dim_symbol("M"): m}) if isinstance(expr, sympy.Expr) else expr
    assert int(value) == la.physical_size_in_bytes(render(dtype, [n, m, *dims[2:]], m2m, tiles, e))


def test_first_tile_dimensions_ignore_later_tiles() -> None:
    assert first_tile_dimensions("bf16[16,256]{1,0:T(8,128)(2,1)}") == (2, 2, 8, 128)
