"""Plain copies of a large relayout, written past the caches.

Packing a layout whose tiles are plain copies of the array (``f32[8192,8192]{1,0:T(8,128)}``:
runs of 512 bytes, no words, no transpose) is a strided ``np.copyto`` per chunk. Its plain
stores read every line they write from memory first; ``memcpy`` of as many bytes (the
baseline of ``benchmarks/pack_sizes.py``) stores past the caches once the copy is larger
than the caches (glibc: between 160 and 192 MB on this project's VM), and the strided copy
then ran at 0.4 of its speed (256 MB, one thread). :func:`copy_chunk` copies such a chunk with
:func:`~layout_algebra.packing.stream_kernels.gather_streamed` instead, when the whole call
writes at least ``STREAM_COPY_MIN_BYTES``: the destination walked in the order of memory,
its whole lines stored non-temporally. Anything else goes to
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

__all__ = ["STREAM_COPY_MIN_BYTES", "copy_chunk", "streamed", "streamed_copy"]

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
    """Copy ``src`` into ``dst`` (same shape and dtype) by the compiled gathering copy, or
    return False, having done nothing: the kernels not in use, ``dst`` not one dense region
    of memory, the source's runs short, more than four dims once merged, misaligned."""
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
    order = sorted(range(dst.ndim), key=lambda k: -d_strides[k])  # dst's memory order
    merged = engine.merged_dims(
        [dst.shape[k] for k in order], [d_strides[k] for k in order], [s_strides[k] for k in order], ndim=4
    )
    if merged is None:
        return False
    dims, (ds, ss) = merged
    if ds != dense_strides(dims) or ss[3] != 1 or dims[3] < MIN_RUN:
        return False
    lanes = np.dtype(f"u{size}")
    d_lanes, s_lanes = d_flat.view(lanes), s_flat.view(lanes)
    if not (d_lanes.flags.aligned and s_lanes.flags.aligned):
        return False
    if _kernels is None:
        from layout_algebra.packing import stream_kernels

        _kernels = stream_kernels
    _kernels.gather_streamed(d_lanes, 0, s_lanes, 0, np.array(ss, np.int64), np.array(dims, np.int64))
    return True


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
