"""Exact bitcast checks against the XLA:TPU compiler's decisions and exhaustive enumeration."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from conftest import TEST_DATA, ground_truth_file
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies_maps import small_layout_shapes

from layout_algebra.bitcast import (
    bitcast_is_valid,
    reshape_is_bitcast,
    suggest_bitcast_layout,
    transpose_is_bitcast,
)
from layout_algebra.layout_map import layout_map
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.sizes import size_report


def bit_offsets(shape) -> np.ndarray:
    """Bit offset of every element, in row-major logical order (independent of the prover)."""
    m = layout_map(shape)
    if m.rank == 0:
        return np.array([m.forward(()) * m.element_bits])
    index = tuple(np.indices(m.logical_dimensions).reshape(m.rank, -1))
    return np.asarray(m.apply(index, through=len(m.stages) - 1)[0]).reshape(-1) * m.element_bits


def enumerated_reshape_bitcast(src, dst) -> bool:
    same_size = layout_map(src).size_in_bits == layout_map(dst).size_in_bits
    same_alloc = size_report(src).first_tile_bytes == size_report(dst).first_tile_bytes
    return same_size and same_alloc and np.array_equal(bit_offsets(src), bit_offsets(dst))


def _disagreements() -> dict[tuple[str, str, str], dict]:
    with open(TEST_DATA / "tpu_bitcast_disagreements.tsv", encoding="utf-8") as f:
        return {(r["kind"], r["src"], r["dst"]): r for r in csv.DictReader(f, delimiter="\t")}


def _rows(kind: str) -> list[dict]:
    path = ground_truth_file(f"tpu/{kind}_bitcast.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("kind", ["reshape", "transpose"])
def test_agrees_with_the_tpu_compiler_except_where_a_proof_says_otherwise(kind) -> None:
    known = _disagreements()
    seen = set()
    for row in _rows(kind):
        if "bitcast" not in row:  # the compiler crashed on this row; no decision to compare
            continue
        if kind == "reshape":
            verdict = reshape_is_bitcast(row["src"], row["dst"])
        else:
            verdict = transpose_is_bitcast(row["src"], row["dst"], row["permutation"])
        assert verdict.status != "unknown", (row, verdict)
        if row["bitcast"]:
            assert verdict.status == "bitcast", (row, str(verdict))
        elif verdict.status == "bitcast":
            key = (kind, row["src"], row["dst"])
            assert key in known, f"undocumented disagreement with XLA:TPU: {row}"
            seen.add(key)
            # the proof, checked again by enumerating every element
            assert enumerated_reshape_bitcast(row["src"], row["dst"]) if kind == "reshape" else True
    assert seen == {k for k in known if k[0] == kind}


def test_every_true_tpu_row_keeps_bits_by_enumeration() -> None:
    for row in _rows("reshape"):
        if row.get("bitcast") and math.prod(layout_map(row["src"]).logical_dimensions) <= 2**20:
            assert enumerated_reshape_bitcast(row["src"], row["dst"])


@st.composite
def reshapes(draw):
    src = draw(small_layout_shapes(max_slots=512, max_rank=3))
    n = math.prod(src.dimensions)
    assume(n >= 1)
    dims = []
    rest = n
    while rest > 1 and len(dims) < 3:
        divisors = [d for d in range(2, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        rest //= d
    if rest > 1:
        dims.append(rest)
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    other = draw(
        small_layout_shapes(
            max_slots=4096,
            max_rank=len(dims),
            element=(src.element_type.text, src.effective_layout.element_size_in_bits),
        ).filter(lambda s: s.rank == len(dims))
    )
    dst = ArrayShape(src.element_type, tuple(dims), (False,) * len(dims), other.layout)
    try:
        layout_map(dst)
    except ValueError:
        assume(False)
    return src, dst


@settings(max_examples=80, deadline=None)
@given(reshapes())
def test_reshape_verdict_agrees_with_enumeration(pair) -> None:
    src, dst = pair
    verdict = reshape_is_bitcast(src, dst)
    assert verdict.status == ("bitcast" if enumerated_reshape_bitcast(src, dst) else "not a bitcast"), str(
        verdict
    )
    cex = verdict.counterexample
    if cex and "element" in cex:
        m_dst = layout_map(dst)
        assert m_dst.forward(cex["element"], unit="bit") == cex["dst_bit"] != cex["src_bit"]


@settings(max_examples=60, deadline=None)
@given(small_layout_shapes(max_slots=512).filter(lambda s: s.rank >= 2), st.data())
def test_transpose_verdict_agrees_with_enumeration(src, data) -> None:
    perm = tuple(data.draw(st.permutations(range(src.rank))))
    dims = tuple(src.dimensions[p] for p in perm)
    other = data.draw(
        small_layout_shapes(
            max_slots=4096,
            max_rank=src.rank,
            element=(src.element_type.text, src.effective_layout.element_size_in_bits),
        ).filter(lambda s: s.rank == src.rank)
    )
    dst = ArrayShape(src.element_type, dims, (False,) * src.rank, other.layout)
    try:
        layout_map(dst)
    except ValueError:
        assume(False)
    verdict = transpose_is_bitcast(src, dst, perm)
    src_bits = layout_map(src)
    dst_bits = layout_map(dst)
    same = (
        src_bits.size_in_bits == dst_bits.size_in_bits
        and size_report(src).first_tile_bytes == size_report(dst).first_tile_bytes
    )
    if same:
        for j in dst_bits.elements():
            i = [0] * src.rank
            for k, p in enumerate(perm):
                i[p] = j[k]
            if src_bits.forward(tuple(i), unit="bit") != dst_bits.forward(j, unit="bit"):
                same = False
                break
    assert verdict.status == ("bitcast" if same else "not a bitcast"), str(verdict)


def test_symbolic_reshape_for_every_n() -> None:
    v = reshape_is_bitcast("f32[N,8,128]{2,1,0:T(8,128)}", "f32[M,128]{1,0:T(8,128)}", assume="M == 8*N")
    assert v.status == "bitcast"
    w = reshape_is_bitcast("f32[N,4,128]{2,1,0:T(8,128)}", "f32[M,128]{1,0:T(8,128)}", assume="M == 4*N")
    assert w.status == "not a bitcast"


def test_suggested_layout_is_a_proved_bitcast() -> None:
    s = suggest_bitcast_layout("f32[4,6,128]{2,1,0}", (24, 128))
    assert s and reshape_is_bitcast("f32[4,6,128]{2,1,0}", s.shape)
    none = suggest_bitcast_layout("f32[16,256]{1,0:T(8,128)}", (4096,))
    assert not none and "no layout" in none.reason


def test_bitcast_is_valid_finds_the_reading() -> None:
    assert bitcast_is_valid("f32[5,3]{1,0}", "f32[3,5]{0,1}").kind == "transpose [1, 0]"
    assert bitcast_is_valid("f32[16,17,3]{2,1,0}", "f32[16,51]{1,0}").kind == "reshape"
    assert not bitcast_is_valid("f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: reshape_is_bitcast("f32[2,3]{1,0}", "f32[7]{0}"), "not a reshape"),
        (lambda: reshape_is_bitcast("f32[6]{0}", "s32[6]{0}"), "element type"),
        (lambda: transpose_is_bitcast("f32[2,3]{1,0}", "f32[3,2]{0,1}", (0, 0)), "not a permutation"),
        (lambda: transpose_is_bitcast("f32[2,3]{1,0}", "f32[2,3]{0,1}", (1, 0)), "gives dimensions"),
        (lambda: reshape_is_bitcast("(f32[2])", "f32[2]{0}"), "tuple"),
    ],
)
def test_bad_input_is_a_clear_error(call, message) -> None:
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert message in str(info.value)
