"""The compiled transposing copies (``layout_algebra.packing.transpose_kernels``, numba) against NumPy and the index map.

Oracles that know nothing of the kernels: ``np.copyto`` of the same views, a Python loop
over the definition of an 8x8 block, and ``reference_pack`` (positions from
``LayoutMap.apply`` on index arrays). Pack and unpack run with the kernels and with NumPy
alone (``copy_engine.USE_KERNELS``), on one and two threads; a spy checks that the kernels
really ran where they should (a silent fallback to NumPy would make the comparison vacuous).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine
from layout_algebra.packing.numpy_eval import pack, unpack

numba = pytest.importorskip("numba", reason="the kernels need numba (the test extra installs it)")
from layout_algebra.packing import register_blocks, replay_transposes, transpose_kernels  # noqa: E402  (need numba)

DTYPES = (np.uint8, np.int16, np.float32, np.uint32, np.float64)


@contextmanager
def kernel_calls(streams: list[bool] | None = None) -> Iterator[list[str]]:
    """Record the kernels that run (``gather_rows`` reads the far side, ``scatter_rows``
    writes it), and in ``streams`` whether each stored non-temporally."""
    calls: list[str] = []

    def spy(real, name):  # type: ignore[no-untyped-def]
        def run(*args):  # type: ignore[no-untyped-def]
            calls.append(name)
            if streams is not None:
                streams.append(bool(args[-1]))
            return real(*args)

        return run

    def entry_spy(real):  # type: ignore[no-untyped-def]
        def run(buffer, logical, params):  # type: ignore[no-untyped-def]
            calls.append("scatter_rows" if params[0] else "gather_rows")
            if streams is not None:
                streams.append(bool(params[-1]))
            return real(buffer, logical, params)

        return run

    with pytest.MonkeyPatch.context() as patch:
        for name in ("gather_rows", "scatter_rows"):
            patch.setattr(transpose_kernels, name, spy(getattr(transpose_kernels, name), name))
        # the replays' one-call entries (bound when a program first runs) call them compiled
        for name in ("transpose_to_buffer", "transpose_to_logical"):
            patch.setattr(replay_transposes, name, entry_spy(getattr(replay_transposes, name)))
        yield calls


def aligned(n: int, dtype, to: int = 64) -> np.ndarray:
    """``n`` zeros whose first element is ``to``-byte aligned."""
    raw = np.zeros(n + to, dtype)
    first = (-raw.ctypes.data % to) // raw.itemsize
    return raw[first : first + n]


@pytest.fixture
def small_blocks(monkeypatch) -> None:
    """Small arrays go through the transposing paths: blocks from 1 KB, kernels at any size,
    a staging buffer of 2 KB (so that runs are cut into several widths)."""
    monkeypatch.setattr(copy_engine, "BLOCK_BYTES", 1024)
    monkeypatch.setattr(copy_engine, "KERNEL_MIN_BYTES", 0)
    monkeypatch.setattr(copy_engine, "TRANSPOSE_STAGE_BYTES", 2048)
    monkeypatch.setattr(copy_engine, "TRANSPOSE_STREAM_BYTES", 0)
    monkeypatch.setattr(copy_engine, "BLOCKS_STREAM_BYTES", 0)
    monkeypatch.setattr(copy_engine, "FRESH_PLAIN_BYTES", 0)  # streamed into new results too


# ------------------------------------------------------------------- the 8x8 block
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose8_moves_each_element_of_an_8x8_block_to_its_transposed_place(dtype) -> None:
    rng = np.random.default_rng(3)
    for q, dr, p, sr in [(0, 8, 0, 8), (3, 11, 5, 9), (1, 64, 2, 10), (7, 9, 0, 100)]:
        src = rng.integers(0, 120, 8 * sr + p + 8).astype(dtype)
        dst = np.zeros(8 * dr + q + 8, dtype)
        expected = dst.copy()
        for a in range(8):
            for b in range(8):
                expected[q + a * dr + b] = src[p + a + b * sr]
        transpose_kernels.transpose_block(dst, q, dr, src, p, sr, 8, 8, False)
        np.testing.assert_array_equal(dst, expected, err_msg=f"{dtype} q={q} dr={dr} p={p} sr={sr}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shift", [0, 1, 4, 7])
def test_streamed_blocks_store_the_same_elements_from_any_alignment(dtype, shift) -> None:
    rng = np.random.default_rng(4)
    src = rng.integers(0, 120, 32 * 40).astype(dtype)
    dst = aligned(24 * 32 + 8, dtype)[shift:]
    expected = dst.copy()
    for n, m in [(20, 19), (8, 8), (16, 5), (3, 30)]:  # 8x8 blocks (streamed) and the edges
        for a in range(n):
            for b in range(m):
                expected[8 + a * 32 + b] = src[3 + a + b * 40]
        transpose_kernels.transpose_block(dst, 8, 32, src, 3, 40, n, m, True)
        np.testing.assert_array_equal(dst, expected, err_msg=f"{n}x{m}")


@pytest.mark.slow
@settings(max_examples=60, derandomize=True)
@given(start=st.integers(0, 70), n=st.integers(0, 300), p=st.integers(0, 9), dtype=st.sampled_from(DTYPES))
def test_write_run_streamed_or_not_is_a_slice_copy(start, n, p, dtype) -> None:
    src = (np.arange(n + p) % 241).astype(dtype)
    for stream in (False, True):
        dst = aligned(start + n + 5, dtype)
        expected = dst.copy()
        expected[start : start + n] = src[p : p + n]
        transpose_kernels.write_run(dst, start, src, p, n, stream)
        np.testing.assert_array_equal(dst, expected, err_msg=f"stream={stream}")


@settings(max_examples=40, derandomize=True)
@given(n=st.integers(1, 21), m=st.integers(1, 21), extra=st.integers(0, 5), dtype=st.sampled_from(DTYPES))
def test_transpose_block_of_any_size_matches_a_loop_and_touches_nothing_else(n, m, extra, dtype) -> None:
    sr, dr = n + extra, m + extra
    src = (np.arange(m * sr + 3) % 97).astype(dtype)
    dst = np.full(n * dr + 2, 99, dtype)
    expected = dst.copy()
    for a in range(n):
        for b in range(m):
            expected[1 + a * dr + b] = src[2 + a + b * sr]
    transpose_kernels.transpose_block(dst, 1, dr, src, 2, sr, n, m, False)
    np.testing.assert_array_equal(dst, expected)


@pytest.mark.slow
@settings(max_examples=60, derandomize=True)
@given(
    rows=st.integers(0, 19),
    run=st.integers(0, 200),
    gap=st.integers(0, 70),
    extra=st.integers(0, 9),
    together=st.integers(1, 9),
    start=st.integers(0, 7),
    dtype=st.sampled_from(DTYPES),
)
def test_read_rows_together_is_a_copy_of_each_run_and_touches_nothing_else(
    rows, run, gap, extra, together, start, dtype
) -> None:
    step, pitch = run + gap, run + extra  # runs of 64-byte lines and their tails, any grouping
    src = (np.arange(start + rows * step + run + 1) % 239).astype(dtype)
    dst = np.full(rows * pitch + 1, 250, dtype)
    expected = dst.copy()
    for r in range(rows):
        expected[r * pitch : r * pitch + run] = src[start + r * step : start + r * step + run]
    transpose_kernels.read_rows(dst, pitch, src, start, step, rows, run, together)
    np.testing.assert_array_equal(dst, expected)


# ------------------------------------------------------- 16x16 blocks, rows in groups
ONE = transpose_kernels.ONE_GROUP


@numba.njit
def call_transpose16(dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift):  # type: ignore[no-untyped-def]
    register_blocks.transpose16(dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift)


def rows_at(r: int, outer: int, inner: int, k: int) -> int:
    """Row ``r``'s start in groups of ``k`` (the definition, written again)."""
    return (r // k) * outer + (r % k) * inner


@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.int32, np.uint8, np.float64])
@pytest.mark.parametrize("groups", [(ONE, ONE), (2, ONE), (ONE, 8), (1, 4), (16, 2)])
def test_transpose16_moves_each_element_of_a_16x16_block_to_its_transposed_place(dtype, groups) -> None:
    rng = np.random.default_rng(7)
    dk, sk = groups
    d_shift, s_shift = (transpose_kernels.group_shift(k) for k in groups)
    d_outer, d_inner, s_outer, s_inner = 301, 37, 290, 19
    src = rng.integers(0, 120, 40 * 300).astype(dtype)
    dst = np.full(40 * 300, 250, dtype)
    expected = dst.copy()
    for a in range(16):
        for b in range(16):
            expected[5 + rows_at(a, d_outer, d_inner, dk) + b] = src[3 + rows_at(b, s_outer, s_inner, sk) + a]
    call_transpose16(dst, 5, d_outer, d_inner, d_shift, src, 3, s_outer, s_inner, s_shift)
    np.testing.assert_array_equal(dst, expected)


@settings(max_examples=80, derandomize=True)
@given(
    n=st.integers(0, 70),
    m=st.integers(0, 70),
    dk=st.sampled_from([1, 2, 4, 8, 16, 32, 48, ONE]),
    sk=st.sampled_from([1, 2, 4, 8, 16, 32, ONE]),
    blocks=st.sampled_from([(16, 16), (32, 128), (128, 32), (48, 80)]),
    spare=st.integers(0, 20),
    dtype=st.sampled_from([np.uint32, np.float32, np.uint16, np.float64]),
)
def test_transpose_rows_matches_a_loop_and_touches_nothing_else(n, m, dk, sk, blocks, spare, dtype) -> None:
    """Rows of both sides in groups (tiles of a few rows, ``inner`` apart, tiles ``outer``
    apart) or evenly spaced, any sizes (the edges beyond the last 16x16 block), gaps left alone."""
    d_inner, s_inner = n + spare, m + spare // 2
    d_outer = (min(dk, max(m, 1)) if dk != ONE else 1) * d_inner + spare
    s_outer = (min(sk, max(n, 1)) if sk != ONE else 1) * s_inner + 3
    src = (np.arange(rows_at(max(n - 1, 0), s_outer, s_inner, sk) + m + 9) % 241).astype(dtype)
    dst = np.full(rows_at(max(m - 1, 0), d_outer, d_inner, dk) + n + 9, 250, dtype)
    expected = dst.copy()
    for a in range(n):
        for b in range(m):
            expected[4 + rows_at(b, d_outer, d_inner, dk) + a] = src[2 + rows_at(a, s_outer, s_inner, sk) + b]
    done = transpose_kernels.transpose_rows(
        dst, 4, d_outer, d_inner, dk, src, 2, s_outer, s_inner, sk, n, m, *blocks
    )
    assert done
    np.testing.assert_array_equal(dst, expected)


@settings(max_examples=120, derandomize=True)
@given(
    n=st.integers(0, 70),
    m=st.integers(0, 70),
    dk=st.sampled_from([1, 2, 4, 8, 16, 32, ONE]),
    sk=st.sampled_from([1, 2, 4, 8, 16, ONE]),
    blocks=st.sampled_from([(16, 16), (32, 128), (128, 32), (48, 80)]),
    shift=st.integers(0, 15),
    spare=st.integers(0, 2),
    dtype=st.sampled_from([np.uint32, np.float32, np.int32]),
)
def test_stream_rows_matches_a_loop_and_touches_nothing_else(
    n, m, dk, sk, blocks, shift, spare, dtype
) -> None:
    """The streamed 16x16 blocks: ``dst`` 64-byte aligned or not (``shift`` elements past a
    line: the blocks' columns start where it is, the columns before and after written by masked
    stores), rows a multiple of 64 bytes apart with gaps left alone, the source's rows in groups."""
    check_stream_rows(n, m, dk, sk, blocks, shift, spare, dtype)


@pytest.mark.parametrize("n", [16, 64, 128])
@pytest.mark.parametrize("shift", [1, 4, 12, 15])
@pytest.mark.parametrize("groups", [(8, ONE), (2, ONE), (ONE, 8), (ONE, 2), (1, 4)])
def test_stream_rows_writes_a_rows_tail_and_the_next_rows_head_as_one_block(n, shift, groups) -> None:
    """Rows a multiple of 16 long, not aligned: the columns left at both ends make one 16x16
    block (``transpose16_seam``), rows of the output in groups (tiles) or of the input."""
    for spare in (0, 1):
        check_stream_rows(n, 45, *groups, (32, 128), shift, spare, np.float32)


def check_stream_rows(n, m, dk, sk, blocks, shift, spare, dtype) -> None:  # type: ignore[no-untyped-def]
    """``stream_rows`` against the definition, written as a loop, on a buffer of sentinels."""
    d_inner = 16 * (-(-n // 16) + spare)
    d_outer = (min(dk, max(m, 1)) if dk != ONE else 1) * d_inner + 16 * spare
    s_inner = m + spare
    s_outer = (min(sk, max(n, 1)) if sk != ONE else 1) * s_inner + 3
    src = (np.arange(rows_at(max(n - 1, 0), s_outer, s_inner, sk) + m + 9) % 241).astype(dtype)
    dst = aligned(rows_at(max(m - 1, 0), d_outer, d_inner, dk) + n + 40, dtype)
    dst[:] = 250
    q = shift + 16
    expected = dst.copy()
    for a in range(n):
        for b in range(m):
            expected[q + rows_at(b, d_outer, d_inner, dk) + a] = src[2 + rows_at(a, s_outer, s_inner, sk) + b]
    done = transpose_kernels.stream_rows(
        dst, q, d_outer, d_inner, dk, src, 2, s_outer, s_inner, sk, n, m, *blocks
    )
    assert done
    np.testing.assert_array_equal(dst, expected)


def test_stream_rows_refuses_rows_it_cannot_store_whole_lines_of() -> None:
    """Rows of ``dst`` not a multiple of 64 bytes apart, source groups not a power of two, or
    elements not of 4 bytes: nothing done (the caller takes the staged kernel)."""
    src = np.arange(64 * 64, dtype=np.uint32)
    for d_outer, d_inner, dk, sk, dtype in [
        (0, 40, ONE, ONE, np.uint32),  # rows 160 bytes apart
        (8 * 64, 72, 8, ONE, np.uint32),  # rows of a group 288 bytes apart
        (0, 64, ONE, 3, np.uint32),  # source rows in groups of 3
        (0, 64, ONE, ONE, np.uint16),
    ]:
        dst = np.zeros(64 * 80, dtype)
        assert not transpose_kernels.stream_rows(
            dst, 0, d_outer, d_inner, dk, src.astype(dtype), 0, 64 * 3, 64, sk, 32, 32, 16, 16
        )
        assert not dst.any()


@settings(max_examples=150, derandomize=True)
@given(
    n=st.integers(16, 70),
    m=st.integers(16, 70),
    dk=st.sampled_from([1, 2, 4, 8, 16, ONE]),
    sk=st.sampled_from([1, 2, 4, 8, 16, ONE]),
    shifts=st.tuples(st.integers(0, 15), st.integers(0, 15)),
    lines=st.tuples(st.booleans(), st.booleans()),
    blocks=st.sampled_from([(16, 16), (32, 128), (128, 32), (48, 80), (16, 256)]),
)
def test_aligned_rows_from_any_line_offset_matches_a_loop_and_touches_nothing_else(
    n, m, dk, sk, shifts, lines, blocks
) -> None:
    """``aligned_rows`` (``transpose_rows`` of 4-byte elements): each side ``shift`` elements past
    a line, its rows a multiple of 16 elements apart (the blocks start where the lines do, the
    ends written by overlapping blocks) or not (blocks from column 0), rows in groups or not."""
    check_aligned_rows(n, m, dk, sk, shifts, lines, blocks)


@pytest.mark.parametrize("size", [(16, 16), (32, 48), (64, 16), (128, 64)])
@pytest.mark.parametrize("shifts", [(12, 0), (0, 12), (12, 12), (1, 15), (15, 4)])
@pytest.mark.parametrize("groups", [(8, ONE), (2, ONE), (ONE, 8), (ONE, 2), (ONE, ONE), (4, 16)])
def test_aligned_rows_writes_the_ends_of_rows_a_multiple_of_16_long_as_seams(size, shifts, groups) -> None:
    """Rows a multiple of 16 long, starting past a line: the columns left before the first line
    and after the last make one block per 16 rows (``transpose16_seam``, masked stores), the
    rows likewise (``transpose16_seam_rows``, masked loads), both at once at the corners."""
    for blocks in [(16, 16), (16, 256), (64, 128)]:
        check_aligned_rows(*size, *groups, shifts, (True, True), blocks)


def check_aligned_rows(n, m, dk, sk, shifts, lines, blocks) -> None:  # type: ignore[no-untyped-def]
    """``transpose_rows`` on 4-byte elements against the definition, written as a loop, on a
    buffer of sentinels."""
    d_shift, s_shift = shifts
    d_inner = 16 * -(-n // 16) + (0 if lines[0] else 3)
    d_outer = (min(dk, m) if dk != ONE else 1) * d_inner + (16 if lines[0] else 5)
    s_inner = 16 * -(-m // 16) + (16 if lines[1] else 7)
    s_outer = (min(sk, n) if sk != ONE else 1) * s_inner + (32 if lines[1] else 1)
    src = aligned(rows_at(n - 1, s_outer, s_inner, sk) + m + 40, np.uint32)
    src[:] = np.arange(src.size) % 100003
    dst = aligned(rows_at(m - 1, d_outer, d_inner, dk) + n + 40, np.uint32)
    dst[:] = 7
    p, q = 16 + s_shift, 16 + d_shift
    expected = dst.copy()
    for a in range(n):
        for b in range(m):
            expected[q + rows_at(b, d_outer, d_inner, dk) + a] = src[p + rows_at(a, s_outer, s_inner, sk) + b]
    assert transpose_kernels.transpose_rows(
        dst, q, d_outer, d_inner, dk, src, p, s_outer, s_inner, sk, n, m, *blocks
    )
    np.testing.assert_array_equal(dst, expected)


def test_transpose_rows_refuses_groups_that_cut_a_16x16_block() -> None:
    dst, src = np.zeros(64 * 64, np.uint32), np.arange(64 * 64, dtype=np.uint32)
    assert not transpose_kernels.transpose_rows(dst, 0, 3 * 64, 64, 3, src, 0, 0, 64, ONE, 48, 48, 16, 16)
    assert not dst.any()


def test_four_byte_tiles_go_by_16x16_blocks_and_others_do_not() -> None:
    """The tile copies of f32 and of f8 words (2 rows a tile) take the blocks (streamed or not:
    stream_rows); bytes do not."""
    for shape, fs, itemsize, expected in [
        ([1, 4, 64, 8, 128], [0, 65536, 8, 1, 512], 4, True),
        ([1, 8, 128, 2, 128], [0, 32768, 2, 1, 256], 4, True),
        ([1, 8, 128, 3, 128], [0, 32768, 3, 1, 384], 4, False),  # groups of 3 rows
        ([1, 4, 64, 8, 8], [0, 65536, 8, 1, 512], 4, False),  # 8 far rows
        ([1, 4, 64, 8, 128], [0, 65536, 8, 1, 512], 1, False),
    ]:
        far = np.zeros(8, np.dtype(f"u{itemsize}"))
        blocks, _ = transpose_kernels.by_blocks(far, np.array(fs), np.array(shape))
        assert blocks == expected, (shape, itemsize)


# ------------------------------------------------------- copies against np.copyto
def tiled_views(rows: int, cols: int, tr: int, tc: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """A ``{0,1:T(tr,tc)}``-style pair: the array ``x[rows, cols]`` as tiles of its transpose
    ``(col tile, row tile, col in tile, row in tile)`` (a view of ``x``), and a tile buffer."""
    x = (np.arange(rows * cols) % 251).astype(dtype).reshape(rows, cols)
    view = x.reshape(rows // tc, tc, cols // tr, tr).transpose(2, 0, 3, 1)
    return view, np.zeros(view.shape, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", [(256, 64, 8, 128), (384, 40, 8, 128), (96, 48, 4, 32), (512, 24, 8, 64)])
def test_tile_copies_both_ways_equal_np_copyto(small_blocks, dtype, dims) -> None:
    rows, cols, tr, tc = dims
    view, tiles = tiled_views(rows, cols, tr, tc, dtype)
    form = copy_engine.transpose_form(tiles, view)
    assert form is not None
    with kernel_calls() as calls:
        copy_engine.blocked_copy(tiles, view)
    assert calls  # whole arrays: the far side is the one with the longer rows (either kernel)
    np.testing.assert_array_equal(tiles, view)
    back = np.zeros((rows, cols), dtype)
    target = back.reshape(rows // tc, tc, cols // tr, tr).transpose(2, 0, 3, 1)
    with kernel_calls() as calls:
        copy_engine.blocked_copy(target, tiles)
    assert calls
    np.testing.assert_array_equal(target, view)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", [(384, 200, 8, 128), (256, 104, 8, 32), (96, 48, 4, 32)])
def test_tile_copies_with_wide_stages_read_groups_of_tiles_and_equal_np_copyto(
    monkeypatch, dtype, dims
) -> None:
    """Stages many tiles wide (not a multiple of ``ROWS_TOGETHER``, the last one cut short):
    unpacking reads the tiles in groups, packing the rows 8 at a time, both streamed or not."""
    rows, cols, tr, tc = dims
    monkeypatch.setattr(copy_engine, "KERNEL_MIN_BYTES", 0)
    monkeypatch.setattr(copy_engine, "TRANSPOSE_STAGE_BYTES", 11 * tr * tc * np.dtype(dtype).itemsize)
    for stream in (0, 1 << 40):
        monkeypatch.setattr(copy_engine, "TRANSPOSE_STREAM_BYTES", stream)
        monkeypatch.setattr(copy_engine, "BLOCKS_STREAM_BYTES", stream)
        view, tiles = tiled_views(rows, cols, tr, tc, dtype)
        form = copy_engine.transpose_form(view, tiles)
        assert form is not None and form[0] and form[6] == 11  # the far side written, 11 tiles a stage
        assert copy_engine.transpose_compiled(tiles, view)
        np.testing.assert_array_equal(tiles, view)
        back = np.zeros((rows, cols), dtype)
        target = back.reshape(rows // tc, tc, cols // tr, tr).transpose(2, 0, 3, 1)
        assert copy_engine.transpose_compiled(target, tiles)
        np.testing.assert_array_equal(back, (np.arange(rows * cols) % 251).astype(dtype).reshape(rows, cols))


@st.composite
def transposing_copies(draw):  # type: ignore[no-untyped-def]
    """A random view of a random array (dims split, permuted, sliced, stepped) and a
    contiguous destination, or the other way round."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(1, 12), min_size=2, max_size=5))
    size = int(np.prod(shape))
    base = (np.arange(size * 2) % 253).astype(dtype)[:: draw(st.sampled_from([1, 2]))][:size].reshape(shape)
    order = draw(st.permutations(range(len(shape))))
    view = base.transpose(order)
    cut = tuple(slice(draw(st.integers(0, n // 3)), None) for n in view.shape)
    view = view[cut]
    dense = np.zeros(view.shape, dtype)
    return (view, dense) if draw(st.booleans()) else (dense, view)


@pytest.mark.slow
@settings(max_examples=150, derandomize=True)
@given(pair=transposing_copies(), stream=st.sampled_from([0, 1 << 40]))
def test_any_copy_the_kernels_take_equals_np_copyto(pair, stream) -> None:
    dst, src = pair
    before, expected = dst.copy(), dst.copy()
    np.copyto(expected, src)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "KERNEL_MIN_BYTES", 0)
        patch.setattr(copy_engine, "TRANSPOSE_STAGE_BYTES", 256)
        patch.setattr(copy_engine, "TRANSPOSE_STREAM_BYTES", stream)
        patch.setattr(copy_engine, "BLOCKS_STREAM_BYTES", stream)
        done = copy_engine.transpose_compiled(dst, src)
    np.testing.assert_array_equal(dst, expected if done else before)


def test_the_random_copies_reach_the_kernels_often() -> None:
    """Not a vacuous oracle: most random transposing pairs have a canonical form."""
    rng = np.random.default_rng(0)
    taken = 0
    for _ in range(200):
        shape = tuple(int(v) for v in rng.integers(2, 9, 3))
        x = np.zeros(shape, np.float32).transpose(tuple(int(v) for v in rng.permutation(3)))
        taken += copy_engine.transpose_form(np.zeros(x.shape, np.float32), x) is not None
    assert taken > 100


def test_what_the_kernels_refuse() -> None:
    x = np.zeros((64, 64), np.float32)
    assert copy_engine.transpose_form(np.zeros((64, 64), np.float64), x.T) is None  # casts
    assert copy_engine.transpose_form(np.zeros((64, 64), np.complex64), x.T.astype(np.complex64)) is None
    assert copy_engine.transpose_form(np.zeros((64, 64), ">f4"), x.T.astype(">f4")) is None  # byte order
    assert copy_engine.transpose_form(np.zeros((64, 64), np.float32), x[::-1].T) is None  # negative stride
    assert copy_engine.transpose_form(np.zeros((32, 64), np.float32), x[:, ::2].T) is None  # no stride 1
    square = np.zeros((64, 64), np.float32)
    assert copy_engine.transpose_form(square, square.T) is None  # in place: overlapping memory
    wide = np.zeros((4096, 4096), np.uint8)  # one run per row of the whole array: NumPy blocks it
    assert copy_engine.transpose_form(np.zeros((4096, 4096), np.uint8), wide.T) is None


# ------------------------------------------------------- pack / unpack, end to end
TEXTS = [
    "f32[256,384]{0,1:T(8,128)}",
    "f32[263,301]{0,1:T(8,128)}",  # padded last tiles both ways
    "bf16[300,257]{0,1:T(8,128)}",
    "s8[129,1000]{0,1:T(8,128)}",
    "s8[512,96]{0,1:T(32,128)}",
    "f32[5,130,200]{0,2,1:T(8,128)}",
    "f32[130,5,200]{1,0,2:T(8,128)}",
    "f32[40,130,17]{0,1,2:T(8,128)}",
    "bf16[9,130,260]{2,0,1:T(8,128)}",
    "s8[33,70,130]{1,2,0:T(8,128)}",
]


def both_paths(
    x: np.ndarray, text: str, threads: int, streams: list[bool] | None = None
) -> tuple[np.ndarray, list[str]]:
    """Pack with the kernels and with NumPy alone (equal bytes), unpack both (the array back)."""
    results, calls = [], []
    for use in (True, False):
        with pytest.MonkeyPatch.context() as patch, kernel_calls(streams) as ran:
            patch.setattr(copy_engine, "USE_KERNELS", use)
            buf = pack(x, text, fill=0x5A, threads=threads)
            back = unpack(buf, text, threads=threads)
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=f"{text} kernels={use}")
        results.append(buf)
        calls.append(ran)
    assert not calls[1]
    np.testing.assert_array_equal(results[0], results[1], err_msg=text)
    return results[0], calls[0]


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("text", TEXTS)
def test_pack_and_unpack_match_numpy_and_the_index_map(small_blocks, monkeypatch, text, threads) -> None:
    import layout_algebra.packing.stage_walk as stage_walk

    if threads == 1:  # the stores kept in the cache (with 2 threads: streamed, from any size)
        monkeypatch.setattr(copy_engine, "TRANSPOSE_STREAM_BYTES", 1 << 40)
        monkeypatch.setattr(copy_engine, "BLOCKS_STREAM_BYTES", 1 << 40)
    monkeypatch.setattr(stage_walk, "CHUNK_BYTES", 1 << 14)  # several chunks, so both threads work
    monkeypatch.setattr(stage_walk, "TRANSPOSING_CHUNK_BYTES", 1 << 15)
    x = random_array(layout_map(text), np.random.default_rng(len(text)))
    streams: list[bool] = []
    buf, calls = both_paths(x, text, threads, streams)
    np.testing.assert_array_equal(buf, reference_pack(x, text, fill=0x5A), err_msg=text)
    if text.count(",") == 1:  # the rank-2 {0,1} layouts: both directions by the kernels
        assert {"gather_rows", "scatter_rows"} <= set(calls), text
        assert any(streams) == (threads == 2), text


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("text", "streams_given"),
    [
        ("f32[512,384]{0,1:T(8,128)}", (True, True)),
        ("f32[263,301]{0,1:T(8,128)}", (True, True)),
        # the same span both sides: unpacking reads the buffer as the far side, its near rows
        # (the array's, 264 bytes) not on whole lines: kept in the cache; on two threads the
        # buffer is cut in two chunks (stage_walk.shared_chunk), each half the array's span:
        # the array is the far side then, written in whole lines
        ("f8e5m2[520,264]{0,1:T(8,128)(4,1)}", (False, True)),
    ],
)
def test_unpack_stores_a_new_unmapped_result_plainly_and_any_other_past_the_caches(
    small_blocks, monkeypatch, text, streams_given, threads
) -> None:
    """Unpack writes the array it allocates by plain stores while its pages are not mapped
    yet (below ``FRESH_PLAIN_BYTES``; ``untouched`` is told so here: a small array comes from
    the heap), an array given (``out=``) or already mapped past the caches; pack streams the
    buffer either way; the bytes are the same."""
    monkeypatch.setattr(copy_engine, "FRESH_PLAIN_BYTES", 1 << 26)
    streams_given = streams_given[threads - 1]
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    x = random_array(m, rng)
    expected = reference_pack(x, text, fill=0x5A)
    for into_given, mapped in ((False, False), (False, True), (True, False)):
        monkeypatch.setattr(copy_engine, "untouched", lambda a, mapped=mapped: not mapped)
        packs: list[bool] = []
        unpacks: list[bool] = []
        into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
        back = random_array(m, rng)
        with kernel_calls(packs) as calls:
            buf = pack(x, text, fill=0x5A, out=into if into_given else None, threads=threads)
        with kernel_calls(unpacks) as more:
            y = unpack(expected, text, out=back if into_given else None, threads=threads)
        assert calls and more, text
        assert any(packs), (text, into_given, packs)
        plain = not into_given and not mapped
        assert any(unpacks) == (streams_given and not plain), (text, into_given, mapped, unpacks)
        np.testing.assert_array_equal(buf, expected, err_msg=text)
        np.testing.assert_array_equal(raw_bytes(y), raw_bytes(x), err_msg=text)


def test_a_new_result_is_known_only_while_it_is_held() -> None:
    from layout_algebra.packing.fresh_memory import new_result, result_bytes

    y = np.ones(1 << 16, np.uint32)
    other = np.ones(1 << 16, np.uint32)
    with new_result(y), new_result(None), new_result(y[:0]):
        assert result_bytes(y) == result_bytes(y[100:]) == y.nbytes and not result_bytes(other)
    assert not result_bytes(y)


def test_the_benchmark_layout_at_full_size_uses_the_kernels_both_ways() -> None:
    text = "f32[1024,2048]{0,1:T(8,128)}"  # 8 MB: the default thresholds
    x = random_array(layout_map(text), np.random.default_rng(5))
    buf, calls = both_paths(x, text, threads=2)
    assert {"gather_rows", "scatter_rows"} <= set(calls)
    tiles = buf.view(np.float32).reshape(256, 8, 8, 128)  # (column tile, row tile, column, row)
    np.testing.assert_array_equal(tiles, x.reshape(8, 128, 256, 8).transpose(2, 0, 3, 1))


def test_without_numba_numpy_blocks_the_transposing_copy(small_blocks, monkeypatch) -> None:
    text = "f32[263,301]{0,1:T(8,128)}"
    x = random_array(layout_map(text), np.random.default_rng(2))
    monkeypatch.setattr(copy_engine, "_kernels", False)  # as when numba failed to import
    with kernel_calls() as calls:
        buf = pack(x, text)
        back = unpack(buf, text)
    assert not calls
    np.testing.assert_array_equal(buf, reference_pack(x, text))
    np.testing.assert_array_equal(back, x)


#: Words of a few rows over a transposed array (``c`` shorter than 8: the rows of several
#: tiles are transposed together), small enough to be transposed in place (a far side of at
#: most ``DIRECT_BYTES``) and large enough to be staged, whole and ragged.
SHORT_ROW_TEXTS = [
    "f8e5m2[256,256]{0,1:T(8,128)(4,1)}",
    "f8e5m2[2048,1536]{0,1:T(8,128)(4,1)}",
    "f8e4m3fn[1000,700]{0,1:T(8,128)(4,1)}",
    "u8[520,264]{0,1:T(8,128)(4,1)}",
    "bf16[512,384]{0,1:T(8,128)(2,1)}",
    "u16[1030,260]{0,1:T(8,128)(2,1)}",
    "f32[1024,768]{0,1:T(8,128)}",  # 8 rows a tile, staged
]


@pytest.mark.parametrize("streamed_from", [None, 1 << 20, 1 << 40])
@pytest.mark.parametrize("text", SHORT_ROW_TEXTS)
def test_words_of_a_few_rows_transposed_match_numpy_and_the_index_map(
    monkeypatch, text, streamed_from
) -> None:
    """Third calls replay the kernels at every size (the first of a small array may not use
    them); the 3 MB arrays are staged and streamed past the cache (``streamed_from`` 1 MB), or
    kept in the cache (the default and never: 16x16 blocks for 4-byte elements, else staged)."""
    if streamed_from is not None:
        monkeypatch.setattr(copy_engine, "TRANSPOSE_STREAM_BYTES", streamed_from)
        monkeypatch.setattr(copy_engine, "BLOCKS_STREAM_BYTES", streamed_from)
    assert copy_engine.kernels() is not None  # loaded: then the replays use them at every size
    m = layout_map(text)
    rng = np.random.default_rng(11)
    x = random_array(m, rng)
    for _ in range(2):  # the first call plans, the second makes the programs
        first = pack(x, text, fill=0x5A, threads=1)
        unpack(first, text, threads=1)
    y = random_array(m, rng)
    with kernel_calls() as calls:
        buf = pack(y, text, fill=0x5A, threads=1)
        back = unpack(buf, text, threads=1)
    assert {"gather_rows", "scatter_rows"} & set(calls), f"{text}: the kernels did not run"
    np.testing.assert_array_equal(buf, reference_pack(y, text, fill=0x5A))
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(y))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "USE_KERNELS", False)
        np.testing.assert_array_equal(pack(y, text, fill=0x5A, threads=1), buf)
    assert transpose_kernels.DIRECT_BYTES < 2048 * 1536  # the 3 MB arrays are staged
