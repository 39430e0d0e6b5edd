"""``layout_algebra.target.tpu.default_layout`` against the real XLA:TPU compiler's choices."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ground_truth import GROUND_TRUTH, ground_truth_file

from layout_algebra import layout_problems, parse_shape, size_report
from layout_algebra.cli import main
from layout_algebra.model.shapes import Layout
from layout_algebra.target.tpu import (
    default_layout,
    default_layout_bytes,
    minor_tiles,
    rank1_tiles,
    tile_rows,
    words_per_element_packing,
)


def default_layout_rows() -> list:
    """Rows of ``tpu/default_layouts.jsonl`` as params (one failing param if it is missing)."""
    path = GROUND_TRUTH / "tpu" / "default_layouts.jsonl"
    if not path.is_file():
        return [pytest.param(None, id="ground-truth-missing")]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [pytest.param(r, id=r["layout"]) for r in rows]


def require(row: dict | None) -> dict:
    if row is None:
        ground_truth_file("tpu/default_layouts.jsonl")
    return row  # type: ignore[return-value]


@pytest.mark.parametrize("row", default_layout_rows())
def test_default_layout_matches_the_compiler(row: dict | None) -> None:
    row = require(row)
    shape = default_layout(row["dtype"], row["dims"])
    assert str(shape) == row["layout"]
    assert default_layout_bytes(row["dtype"], row["dims"]) == row["bytes"]


@pytest.mark.parametrize("row", default_layout_rows())
def test_the_compiler_allocates_the_first_tile_padding(row: dict | None) -> None:
    """The data's own consistency: bytes = first-tile allocation of the layout it printed."""
    row = require(row)
    assert size_report(row["layout"]).first_tile_bytes == row["bytes"]
    assert row["result_layout"] == row["layout"]


def test_the_sample_is_what_it_claims() -> None:
    rows = [require(r.values[0]) for r in default_layout_rows()]
    assert len(rows) >= 100
    # the rule is checked on every element width and every rank from scalars to 5-D
    assert {len(r["dims"]) for r in rows} == {0, 1, 2, 3, 4, 5}
    assert {"pred", "s4", "u4", "s8", "u8", "bf16", "f16", "s16", "f32", "s32", "u32", "f64"} <= {
        r["dtype"] for r in rows
    }


# ---------------------------------------------------------------- the rule's parts
def test_packing_follows_the_storage_width() -> None:
    assert [words_per_element_packing(t) for t in ("f64", "f32", "bf16", "s8", "pred", "s4", "u4")] == [
        1,
        1,
        2,
        4,
        4,
        8,
        8,
    ]


def test_small_tiles_of_the_tiled_layout_document_where_the_data_agrees() -> None:
    # docs/tiled_layout.md: (2,128) for a second-minor dimension of 2, (4,128) for 3 or 4
    assert tile_rows("f32", 2) == 2 and tile_rows("f32", 3) == tile_rows("f32", 4) == 4
    assert tile_rows("bf16", 2) == 2 and tile_rows("bf16", 4) == 4
    # ... and where it does not: 1 row for 32-bit, at least the packing for narrow types
    assert tile_rows("f32", 1) == 1
    assert tile_rows("s8", 1) == tile_rows("s8", 2) == 4
    assert tile_rows("s4", 3) == 8


def test_tiles_by_rank() -> None:
    assert [str(t) for t in minor_tiles("f32", 100)] == ["(8,128)"]
    assert [str(t) for t in minor_tiles("pred", 64)] == ["(32,128)", "(4,1)"]
    assert [str(t) for t in rank1_tiles("f32", 3)] == ["(128)"]
    assert [str(t) for t in rank1_tiles("f32", 300)] == ["(512)"]
    assert [str(t) for t in rank1_tiles("bf16", 5000)] == ["(1024)", "(128)", "(2,1)"]
    assert str(default_layout("s4", [])) == "s4[]{:T(1024)E(4)}"


def test_minor_to_major_is_chosen_for_the_fewest_bytes() -> None:
    # 33 columns pad to 128 lanes; 147 rows pad only to 256: column-major wins
    assert str(default_layout("f32", [147, 33])) == "f32[147,33]{0,1:T(8,128)}"
    # equal bytes: the default (descending) layout is kept
    assert str(default_layout("f32", [256, 256])) == "f32[256,256]{1,0:T(8,128)}"


@pytest.mark.parametrize("bad", [("f32", [-1]), ("tuple", [2]), ("f33", [2]), ("f32", [2.5])])
def test_bad_arguments(bad) -> None:
    with pytest.raises(ValueError):
        default_layout(*bad)


_TYPES = st.sampled_from(
    ["pred", "s4", "u4", "s8", "f8e5m2", "bf16", "s16", "f32", "u32", "f64", "s64", "c64"]
)


@pytest.mark.slow
@settings(max_examples=150)
@given(_TYPES, st.lists(st.integers(0, 3000), max_size=5))
def test_properties_of_every_default_layout(dtype: str, dims: list[int]) -> None:
    shape = default_layout(dtype, dims)
    assert list(shape.dimensions) == dims and shape.element_type.text == dtype
    assert layout_problems(shape) == []
    assert parse_shape(str(shape)) == shape
    report = size_report(shape)
    assert report.first_tile_bytes == report.physical_bytes  # later tiles divide the first
    assert report.physical_bytes >= report.logical_bytes
    if len(dims) >= 2:
        # never worse than the default descending order with the same tiling rule
        rank = len(dims)
        descending = shape.with_layout(
            Layout(
                tuple(range(rank - 1, -1, -1)),
                minor_tiles(dtype, dims[-2]),
                element_size_in_bits=shape.layout.element_size_in_bits,
            )
        )
        assert report.first_tile_bytes <= size_report(descending).first_tile_bytes


# ------------------------------------------------------------------------ CLI
def test_cli_prints_the_layout_and_its_bytes(capsys) -> None:
    assert main(["tpu-layout", "bf16", "8", "1280"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bf16[8,1280]{1,0:T(8,128)(2,1)}: XLA:TPU allocates 20,480 bytes")
    assert main(["tpu-layout", "s32", "147", "33", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == {
        "shape": "s32[147,33]{0,1:T(8,128)}",
        "xla_allocated_bytes": 40 * 256 * 4,  # physical [33,147]: 33 rows -> 40, 147 lanes -> 256
        "logical_bytes": 147 * 33 * 4,
    }
    assert main(["tpu-layout", "pred"]) == 0
    assert capsys.readouterr().out.startswith("pred[]{:T(512)}: XLA:TPU allocates 512 bytes")


def test_cli_bad_type_is_one_line_and_status_2(capsys) -> None:
    assert main(["tpu-layout", "f33", "2"]) == 2
    _, err = capsys.readouterr()
    assert err.strip().count("\n") == 0 and err.startswith("layout-algebra tpu-layout: error:")
