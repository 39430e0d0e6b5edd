"""Kernel-writer queries (layout_algebra.target.access) against brute force over every element.

The oracle here is ``LayoutMap.forward`` evaluated element by element on Python ints (and
the definitions written out as loops); the module under test reads the map through NumPy,
one dimension at a time, relying on the offset being a sum over dimensions.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.target.access import (
    dimension_access,
    dimension_offsets,
    run_from,
    vector_width,
    vreg_position,
    word_elements,
    word_of,
)

TYPES = {"f32": "", "bf16": "", "s8": "", "s4": "E(4)", "pred": ""}


@st.composite
def small_layouts(draw: st.DrawFn) -> str:
    """A random tiled layout of at most a few hundred elements, padding and non-powers of two included."""
    dtype = draw(st.sampled_from(sorted(TYPES)))
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 12)) for _ in range(rank)]
    order = draw(st.permutations(range(rank)))
    tiles = []
    for _ in range(draw(st.integers(0, 2))):
        width = draw(st.integers(1, rank + 1))
        tiles.append("(" + ",".join(str(draw(st.integers(1, 6))) for _ in range(width)) + ")")
    layout = ",".join(map(str, order))
    extra = "".join(f"T{t}" if i == 0 else t for i, t in enumerate(tiles)) + TYPES[dtype]
    if draw(st.booleans()):
        extra += f"L({draw(st.integers(1, 40))})"
    text = f"{dtype}[{','.join(map(str, dims))}]{{{layout}{':' + extra if extra else ''}}}"
    try:
        layout_map(text)
    except ValueError:
        return f"{dtype}[{','.join(map(str, dims))}]{{{layout}}}"
    return text


def offsets(text: str) -> dict[tuple[int, ...], int]:
    m = layout_map(text)
    return {i: m.forward(i) for i in m.elements()}


def unit(rank: int, k: int, t: int = 1) -> tuple[int, ...]:
    return tuple(t if j == k else 0 for j in range(rank))


def add(i: tuple[int, ...], k: int, t: int) -> tuple[int, ...]:
    return tuple(v + t if j == k else v for j, v in enumerate(i))


@pytest.mark.slow
@settings(max_examples=150)
@given(small_layouts())
def test_offset_is_a_sum_over_dimensions(text: str) -> None:
    m = layout_map(text)
    f = [dimension_offsets(text, k).tolist() for k in range(m.rank)]
    for i, offset in offsets(text).items():
        assert offset == sum(f[k][v] for k, v in enumerate(i)), (text, i)


def brute_run(text: str, k: int) -> tuple[int, int]:
    """(stride, run) from the definition: the largest n such that every step inside a block of n is the stride."""
    m = layout_map(text)
    table = offsets(text)
    d = m.shape.dimensions[k]
    stride = table[unit(m.rank, k)] - table[unit(m.rank, k, 0)] if d > 1 else 0
    ok = []
    for n in range(1, d + 1):
        good = all(
            table[add(i, k, 1)] - table[i] == stride for i in table if i[k] + 1 < d and (i[k] + 1) % n != 0
        )
        if good:
            ok.append(n)
    return stride, max(ok)


@pytest.mark.slow
@settings(max_examples=150)
@given(small_layouts(), st.data())
def test_dimension_access_is_the_definition(text: str, data: st.DataObject) -> None:
    m = layout_map(text)
    k = data.draw(st.integers(0, m.rank - 1))
    got = dimension_access(text, k)
    stride, run = brute_run(text, k)
    assert (got.stride, got.run) == (stride, run), text
    assert got.stride_bits == stride * m.element_bits
    if got.break_at is not None:
        assert got.break_at % got.run == 0
        table = offsets(text)
        zero = unit(m.rank, k, 0)
        assert table[add(zero, k, got.break_at)] - table[add(zero, k, got.break_at - 1)] == got.jump
    start = data.draw(st.integers(0, m.shape.dimensions[k] - 1))
    n = run_from(text, k, start)
    table = offsets(text)
    for i in (i for i in table if i[k] == start):
        assert all(table[add(i, k, t)] == table[i] + t * stride for t in range(n))
    if start + n < m.shape.dimensions[k]:
        assert any(table[add(i, k, n)] != table[i] + n * stride for i in table if i[k] == start)


def brute_vector_width(text: str, k: int) -> int:
    m = layout_map(text)
    table = offsets(text)
    d = m.shape.dimensions[k]
    v = 1 << (d.bit_length() - 1)
    while v > 1:
        good = all(
            i[k] + v <= d and table[i] % v == 0 and all(table[add(i, k, t)] == table[i] + t for t in range(v))
            for i in table
            if i[k] % v == 0
        )
        if good:
            return v
        v //= 2
    return 1


@pytest.mark.slow
@settings(max_examples=150)
@given(small_layouts(), st.data())
def test_vector_width_is_the_definition(text: str, data: st.DataObject) -> None:
    m = layout_map(text)
    k = data.draw(st.integers(0, m.rank - 1))
    got = vector_width(text, k)
    assert got.elements == brute_vector_width(text, k), (text, k, str(got))
    assert got.bits == got.elements * m.element_bits


@pytest.mark.parametrize(
    ("text", "dim", "elements", "nbytes"),
    [
        ("f32[16,256]{1,0:T(8,128)}", 1, 128, 512),
        ("bf16[16,256]{1,0:T(8,128)(2,1)}", 1, 1, 2),  # columns are 2 apart: rows share words
        ("bf16[16,256]{1,0:T(8,128)(2,1)}", 0, 2, 4),  # a word: two rows of a column
        ("s4[16,256]{1,0:T(8,128)(8,1)E(4)}", 0, 8, 4),
        ("s4[16,256]{1,0:E(4)}", 1, 256, 128),
        ("s4[16,256]{1,0}", 1, 256, 256),  # without E(4) an s4 takes a byte
        ("f32[16,100]", 1, 4, 16),
        ("f32[12,256]{1,0:T(8,128)}", 0, 1, 4),  # stride 128
    ],
)
def test_vector_width_examples(text: str, dim: int, elements: int, nbytes: int) -> None:
    got = vector_width(text, dim)
    assert (got.elements, got.bytes) == (elements, nbytes), str(got)


@pytest.mark.slow
@settings(max_examples=150)
@given(small_layouts())
def test_words_hold_the_elements_stored_there(text: str) -> None:
    m = layout_map(text)
    bits = m.element_bits
    slots = max(1, 32 // bits)
    by_word: dict[int, dict[int, tuple[int, ...]]] = {}
    for i in m.elements():
        bit = m.forward(i, unit="bit")
        by_word.setdefault(bit // 32, {})[(bit % 32) // bits] = i
        w = word_of(text, i)
        assert (w.word, w.slot, w.slots, w.bit) == (bit // 32, (bit % 32) // bits, slots, bit % 32)
    words = math.ceil(m.size_in_bits / 32)
    for word in range(words):
        expected = tuple(by_word.get(word, {}).get(s) for s in range(slots))
        got = word_elements(text, word)
        # the last word of a buffer that ends inside it has fewer slots
        assert got[: len(expected)] == expected, (text, word)


FAMILY = [
    "f32[16,384]{1,0:T(8,128)}",
    "f32[3,200]{1,0:T(4,128)}",
    "bf16[16,256]{1,0:T(8,128)(2,1)}",
    "bf16[40,130]{1,0:T(16,128)(2,1)}",
    "s8[32,256]{1,0:T(32,128)(4,1)}",
    "s4[16,128]{1,0:T(8,128)(8,1)E(4)}",
    "f32[2,8,256]{2,1,0:T(8,128)}",
    "bf16[130,8]{0,1:T(8,128)(2,1)}",
]


@pytest.mark.slow
@pytest.mark.parametrize("text", FAMILY)
def test_vreg_positions(text: str) -> None:
    m = layout_map(text)
    bits = m.element_bits
    p = max(1, 32 // bits)
    minor, second = m.shape.effective_layout.minor_to_major[:2]
    rows = m.shape.effective_layout.tiles[0].dimensions[0]
    seen = set()
    for i in m.elements():
        v = vreg_position(text, i)
        assert 0 <= v.sublane < 8 and 0 <= v.lane < 128 and 0 <= v.slot < p
        assert v.lane == i[minor] % 128  # a tile row fills the lanes
        assert v.slot == i[second] % p  # the packed rows of a word
        assert (v.vreg, v.sublane, v.lane, v.slot) not in seen
        seen.add((v.vreg, v.sublane, v.lane, v.slot))
        w = word_of(text, i)
        assert w.word == (v.vreg * 8 + v.sublane) * 128 + v.lane
        if m.rank == 2 and minor == 1:  # tiles row-major: tile (i0 // r, i1 // 128)
            assert v.tile == (i[0] // rows) * math.ceil(m.shape.dimensions[1] / 128) + i[1] // 128
    if text.startswith("f32[16,384]"):  # one (8,128) f32 tile is exactly one register
        assert all(vreg_position(text, i).vreg == vreg_position(text, i).tile for i in m.elements())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("f32[16,256]{1,0}", "first tile must be"),
        ("bf16[16,256]{1,0:T(8,128)}", "need (2,1)"),
        ("f64[16,256]{1,0:T(8,128)}", "span several"),
        ("bf16[16,256]{1,0:T(3,128)(2,1)}", "whole sublanes"),
    ],
)
def test_vreg_refuses_other_layouts(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=r"not an \(8,128\)-family layout") as err:
        vreg_position(text, (0, 0))
    assert why in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: dimension_access("f32[N,128]", 0), r"f32\[N,128\].*symbolic"),
        (lambda: dimension_access("f32[4,8]{1,0:T(2,*,4)}", 0), r"combines dimensions"),
        (lambda: dimension_access("f32[4,8]", 2), r"dimension 2 is not one of 0..1"),
        (lambda: run_from("f32[4,8]", 1, 8), r"start 8 is not an index"),
        (lambda: word_elements("f32[4,8]", 32), r"word 32 is outside"),
        (lambda: word_of("f32[4,8]", (4, 0)), r"out of bounds"),
        (lambda: vector_width("f32[0,4]", 1), r"f32\[0,4\].*size 0; the array has no elements"),
        (lambda: dimension_access("f32[]", 0), r"a scalar has no dimensions"),
    ],
)
def test_bad_input_is_a_clear_error(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_queries_on_a_big_layout_read_each_dimension_once() -> None:
    """A layout of 2**27 elements: the queries read each dimension once (no enumeration)."""
    text = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"
    got = [dimension_access(text, k) for k in range(4)]
    # physical [1, 8, 1280, 16384]; in a tile, element (r, c) is at (r // 2)·256 + 2c + r mod 2
    assert [a.stride for a in got] == [1280 * 16384, 0, 1, 2]
    assert got[3].run == 128 and got[2].run == 2
    m = layout_map(text)
    for k, a in enumerate(got):
        i = unit(4, k, 0)
        for t in range(1, min(a.run, 4)):
            assert m.forward(add(i, k, t)) - m.forward(add(i, k, t - 1)) == a.stride
    assert vector_width(text, 3).elements == 1  # minor dim: stride 2 (rows share words)


def test_brute_force_oracle_sees_a_break() -> None:
    """The oracle itself: an untiled row-major dimension never breaks, a tiled one does."""
    assert brute_run("f32[4,6]", 1) == (1, 6)
    assert brute_run("f32[4,6]{1,0:T(2,2)}", 1) == (1, 2)
    assert brute_vector_width("f32[4,8]{1,0:T(2,4)}", 1) == 4


def test_examples_from_every_start() -> None:
    text = "f32[16,256]{1,0:T(8,128)}"
    assert [run_from(text, 1, s) for s in (0, 1, 127, 128, 255)] == [128, 127, 1, 128, 1]
    assert list(itertools.islice((run_from(text, 0, s) for s in range(16)), 9)) == [8, 7, 6, 5, 4, 3, 2, 1, 8]


# ------------------------------------------------------------------ the command line
@pytest.mark.slow
def test_cli_access_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from layout_algebra.cli import main

    text = "bf16[16,256]{1,0:T(8,128)(2,1)}"
    assert main(["access", text, "--element", "3,200", "--linear-layout"]) == 0
    out = capsys.readouterr().out
    assert "dim 0: stride 1 element (16 bits, 2 bytes), run 2" in out
    assert "the word holds (2, 200), (3, 200)" in out
    assert "TPU vreg 0, sublane 5, lane 72, slot 1 (first-level tile 1)" in out
    assert main(["access", text, "--dim", "1", "--element", "3,200", "--linear-layout", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [d["dim"] for d in record["dimensions"]] == [1]
    assert record["dimensions"][0]["stride"] == 2 and record["dimensions"][0]["vector"]["elements"] == 1
    assert record["element"]["vreg"] == {"vreg": 0, "sublane": 5, "lane": 72, "slot": 1, "tile": 1}
    m = layout_map(text)
    assert record["element"]["word"]["word"] == m.forward((3, 200), unit="bit") // 32
    bases = record["linear_layout"]["bases"]
    assert all(m.forward((1 << j, 0)) == bases["dim0"][j][0] for j in range(4))


def test_cli_access_refusals_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from layout_algebra.cli import main

    assert main(["access", "f32[6,100]", "--element", "1,2", "--linear-layout"]) == 0
    out = capsys.readouterr().out
    assert "no TPU vreg position" in out and "size 6, not a power of two" in out
    assert main(["access", "f32[6,100]", "--dim", "3"]) == 2
    assert "dimension 3 is not one of 0..1" in capsys.readouterr().err
    assert main(["access", "f32[N,100]"]) == 2
    assert "symbolic" in capsys.readouterr().err
