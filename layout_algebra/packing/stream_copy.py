"""Plain copies of a large relayout, written past the caches.

Packing a layout whose tiles are plain copies of the array (``f32[8192,8192]{1,0:T(8,128)}``:
runs of 512 bytes, no words, no transpose) is a strided ``np.copyto`` per chunk. Its plain
stores read every line they write from memory first; ``memcpy`` of as many bytes (the
baseline of ``benchmarks/pack_sizes.py``) stores past the caches once the copy is larger
than the caches (glibc: between 160 and 192 MB on this project's VM), and the strided copy
then ran at 0.4 of its speed (256 MB, one thread). :func:`copy_chunk` copies such a chunk with
:func:`~layout_algebra.packing.stream_kernels.scatter_streamed` (the source walked in the
order of memory, each of its runs' whole lines stored non-temporally) or, where the source is
not one dense region, :func:`~layout_algebra.packing.stream_kernels.gather_streamed` (the
destination walked so) instead, when the whole call writes at least ``STREAM_COPY_MIN_BYTES``. Anything else goes to
:func:`~layout_algebra.packing.copy_engine.copy` as before. The bytes are the same either
way: both copy ``src`` into ``dst`` element by element.

>>> import numpy as np
>>> kernels = engine.start_kernels()                            # False without numba
>>> x = np.arange(16 * 256, dtype=np.float32).reshape(16, 256)
>>> tiles = np.empty((2, 2, 8, 128), np.float32)                # x cut in 8x128 tiles
>>> view = x.reshape(2, 8, 2, 128).transpose(0, 2, 1, 3)
>>> streamed_copy(tiles, view) == kernels                       # taken whenever it can be
True
>>> copy_chunk(tiles, view, stream=True); np.array_equal(tiles, view)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layout_algebra.packing import copy_engine as engine
from layout_algebra.packing.fresh_memory import untouched

__all__ = ["STREAM_COPY_MIN_BYTES", "copy_chunk", "memory_order_walk", "streamed", "streamed_copy"]

#: A relayout writing at least this many bytes stores its plain copies past the caches.
STREAM_COPY_MIN_BYTES = 1 << 25
#: ... in runs of at least this many elements in a row on the source side (shorter runs are
#: a transpose or words, which have kernels of their own).
MIN_RUN = 16

_kernels: Any = None  # layout_algebra.packing.stream_kernels once imported


def streamed(target: np.ndarray) -> bool:
    """Whether a relayout writing ``target`` stores its plain copies past the caches: from
    ``STREAM_COPY_MIN_BYTES``, and not into memory fresh from the operating system
    (:func:`~layout_algebra.packing.fresh_memory.untouched`: its first writes fault the pages
    in, and the kernel zeroes them through the caches; plain stores into those lines were the
    faster, 32 MB allocating: 0.68 streamed against about 1 plainly)."""
    return target.nbytes >= STREAM_COPY_MIN_BYTES and engine.kernels_loaded() and not untouched(target)


def copy_chunk(dst: np.ndarray, src: np.ndarray, stream: bool) -> None:
    """``np.copyto(dst, src)``: with ``stream``, by :func:`streamed_copy` where it takes the
    copy, else (and otherwise) by :func:`~layout_algebra.packing.copy_engine.copy`."""
    if not (stream and streamed_copy(dst, src)):
        engine.copy(dst, src)


def streamed_copy(dst: np.ndarray, src: np.ndarray) -> bool:
    """Copy ``src`` into ``dst`` (same shape and dtype) by a compiled copy that stores past the
    caches, or return False, having done nothing: the kernels not in use, neither side one
    dense region of memory with the other's runs long enough, more than four dims once merged,
    misaligned. It walks one side in the order of memory (:func:`memory_order_walk`): ``src`` where it can,
    scattering its runs (:func:`~layout_algebra.packing.stream_kernels.scatter_streamed`), else
    ``dst``, gathering the source's runs (:func:`~layout_algebra.packing.stream_kernels.gather_streamed`).
    Scattering won wherever both could run: 64 MB, one thread, ``f32[R,C]{1,0:T(8,128)}`` with
    256 to 4096 columns, against ``memcpy``, packing 0.53-0.98 gathered, 1.40-1.61 scattered,
    unpacking 0.68-0.75 and 1.02-1.46; with runs of 64 to 256 bytes (``bf16``, ``u8``, ``f32``
    tiles of 16 to 128 columns) packing 0.40-0.93 and 0.83-1.31, unpacking 0.25-0.56 and
    0.37-0.86 (one case lost: 128-byte runs unpacked, 0.45 -> 0.37)."""
    global _kernels
    if dst.shape != src.shape or dst.dtype != src.dtype or not dst.size or not engine.kernels_loaded():
        return False
    size = dst.itemsize
    if size not in (1, 2, 4, 8) or not dst.flags.writeable:
        return False
    d, s = engine.flat_view(dst), engine.flat_view(src)
    if d is None or s is None:
        return False
    (d_flat, d_strides), (s_flat, s_strides) = d, s
    scatter = memory_order_walk(dst.shape, s_strides, d_strides)
    gather = None if scatter is not None else memory_order_walk(dst.shape, d_strides, s_strides)
    if scatter is None and gather is None:
        return False
    lanes = np.dtype(f"u{size}")
    d_lanes, s_lanes = d_flat.view(lanes), s_flat.view(lanes)
    if not (d_lanes.flags.aligned and s_lanes.flags.aligned):
        return False
    if _kernels is None:
        from layout_algebra.packing import stream_kernels

        _kernels = stream_kernels
    if scatter is not None:
        dims, ds = scatter
        _kernels.scatter_streamed(d_lanes, 0, np.array(ds, np.int64), s_lanes, 0, np.array(dims, np.int64))
    else:
        assert gather is not None
        dims, ss = gather
        _kernels.gather_streamed(d_lanes, 0, s_lanes, 0, np.array(ss, np.int64), np.array(dims, np.int64))
    return True


def memory_order_walk(
    shape: tuple[int, ...], walked: list[int], other: list[int]
) -> tuple[list[int], list[int]] | None:
    """The dims (at most four, merged) of a copy that walks the side of strides ``walked`` in
    the order of its memory, with the other side's strides in that order; None unless the walked
    side is one dense region and the other side moves in runs of at least ``MIN_RUN``
    elements in a row.

    A ``f32[32,256]`` array and its ``T(8,128)`` tiles, both as (row of tiles, tile, row in the
    tile, column in the tile): the tiles walked, the array's strides in their order; then the
    array walked, the tiles' strides in its order.

    >>> tiles, array = [2048, 1024, 128, 1], [2048, 128, 256, 1]
    >>> memory_order_walk((4, 2, 8, 128), tiles, array)
    ([4, 2, 8, 128], [2048, 128, 256, 1])
    >>> memory_order_walk((4, 2, 8, 128), array, tiles)
    ([4, 8, 2, 128], [2048, 128, 1024, 1])
    >>> memory_order_walk((64, 64), [1, 64], [64, 1]) is None                            # a transpose: runs of 1
    True
    """
    order = sorted(range(len(shape)), key=lambda k: -walked[k])
    merged = engine.merged_dims(
        [shape[k] for k in order], [walked[k] for k in order], [other[k] for k in order], ndim=4
    )
    if merged is None:
        return None
    dims, (ws, os_) = merged
    if ws != dense_strides(dims) or os_[3] != 1 or dims[3] < MIN_RUN:
        return None
    return dims, os_


def dense_strides(dims: list[int]) -> list[int]:
    """The strides (in elements) of a C-contiguous array of ``dims``, 0 where a dim is 1
    (as :func:`~layout_algebra.packing.copy_engine.merged_dims` pads).

    >>> dense_strides([1, 1, 3, 4])
    [0, 0, 4, 1]
    """
    strides, step = [], 1
    for n in reversed(dims):
        strides.append(step if n > 1 else 0)
        step *= n
    return strides[::-1]
