"""Copies between one dense region and runs elsewhere, written past the caches (optional: needs ``numba``).

A tile that is a plain copy of the array (``f32[R,C]{1,0:T(8,128)}``: 512-byte runs, no
transpose, no words) is copied by NumPy's strided loop with plain stores. Every line a plain
store writes is read from memory first, so a copy far larger than the caches moves the
written bytes twice; ``memcpy`` of that much (glibc, from three quarters of the last-level
cache: between 160 and 192 MB on this project's VM) stores past the caches instead, and the
strided copy ran at 0.4 of its speed at 256 MB.

:func:`gather_streamed` walks the destination, a dense region, in the order of memory (the
views are ordered so), gathering the source's runs into a buffer of one page whose bytes
lie at the same place within their 64-byte lines as the destination's, and writes each
whole line of the page with one non-temporal store (:func:`~layout_algebra.packing.line_stores.stream_line`); the
partial lines at the region's two ends are copied plainly. A fence at the end makes the
stores visible to other threads. The lines of the source's run ``AHEAD`` runs on are prefetched (the runs
of a tile are a page apart, where the hardware's prefetcher starts cold): 256 MB of
``f32[8192,8192]{1,0:T(8,128)}`` unpacked, one thread, 0.62 -> 0.69 of ``memcpy``'s speed
(packed 0.67 -> 0.76; 2 runs ahead: 0.57 unpacking, 16: as 8).

>>> import numpy as np
>>> src = np.arange(64 * 300, dtype=np.uint32).reshape(64, 300)
>>> dst = np.zeros(300 * 64, np.uint32)
>>> shape, strides = np.array([1, 1, 300, 64]), np.array([0, 0, 1, 300])   # dst = src.T
>>> gather_streamed(dst, 0, src.reshape(-1), 0, strides, shape)
>>> np.array_equal(dst.reshape(300, 64), src.T)
True

:func:`scatter_streamed` is the other way round: the *source* is the dense region, read in the
order of memory, and each of its runs is written to the destination with the run's whole lines
stored non-temporally (its partial lines at the two ends plainly), straight from the source:
no page in between, and the source read as one stream. Packing ``f32[R,C]{1,0:T(8,128)}``
(64 MB, one thread, 256 to 4096 columns) ran at 1.40-1.61 of ``memcpy``'s speed scattered
against 0.53-0.98 gathered, unpacking at 1.02-1.46 against 0.68-0.75
(:func:`~layout_algebra.packing.stream_copy.streamed_copy` scatters wherever it can).

>>> x = np.arange(16 * 256, dtype=np.float32).reshape(16, 256)
>>> tiles = x.reshape(2, 8, 2, 128).transpose(0, 2, 1, 3).copy()   # 8x128 tiles, in order
>>> back = np.zeros(16 * 256, np.float32)                          # x's rows, from them
>>> shape, strides = np.array([2, 2, 8, 128]), np.array([8 * 256, 128, 256, 1])
>>> scatter_streamed(back, 0, strides, tiles.reshape(-1), 0, shape)
>>> np.array_equal(back.reshape(16, 256), x)
True
"""

from __future__ import annotations

import numpy as np
from numba import njit

from layout_algebra.packing.kernel_cache import check_sources
from layout_algebra.packing.line_stores import LINE, copy_run, prefetch, store_fence, stream_line

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = ["gather_streamed", "scatter_streamed"]

#: Bytes of the buffer the runs are gathered in (one page: it stays in the L1 cache).
PAGE = 4096
#: Runs ahead whose lines are prefetched.
AHEAD = 8


@njit(nogil=True, cache=True)
def _flush(dst8, lo, hi, buf8, base):  # type: ignore[no-untyped-def]
    """Write ``dst8[lo:hi]`` (byte offsets in ``dst8``, within one page) from the page buffer
    ``buf8``, where the byte at address ``a`` lies at ``(a - base) % PAGE``: whole lines by
    non-temporal stores, the partial lines at the two ends plainly."""
    if lo >= hi:
        return
    start = base + lo  # the address of dst8[lo]
    first = lo + (-start) % LINE  # the first whole line
    last = hi - (base + hi) % LINE  # the end of the last whole line
    if first >= last:  # no whole line
        for k in range(lo, hi):
            dst8[k] = buf8[(base + k) % PAGE]
        return
    for k in range(lo, first):
        dst8[k] = buf8[(base + k) % PAGE]
    for k in range(first, last, LINE):
        stream_line(dst8, k, buf8, (base + k) % PAGE)
    for k in range(last, hi):
        dst8[k] = buf8[(base + k) % PAGE]


@njit(nogil=True, cache=True)
def gather_streamed(dst, dst_at, src, src_at, ss, shape):  # type: ignore[no-untyped-def]
    """``dst[dst_at + k]`` for ``k`` in row-major order over the 4-D ``shape`` is
    ``src[src_at + i . ss]``: a gather into a dense run of ``dst``, whose whole 64-byte lines
    are stored past the caches. ``dst`` and ``src`` are 1-D arrays of one dtype."""
    size = dst.itemsize
    n = shape[0] * shape[1] * shape[2] * shape[3]
    if n == 0:
        return
    raw = np.empty(2 * PAGE, np.uint8)
    skip = (-raw.ctypes.data) % PAGE
    buf8 = raw[skip : skip + PAGE]  # one page, aligned to a page
    buf = buf8.view(dst.dtype)
    dst8 = dst.view(np.uint8)
    base = dst8.ctypes.data  # address of dst8[0]; byte b of dst8 lies at buf8[(base + b) % PAGE]
    lo = dst_at * size  # start of the bytes gathered and not yet written
    at = lo  # the next byte to gather
    per_page = PAGE // size
    s0, s1, s2, s3, n2, n3 = ss[0], ss[1], ss[2], ss[3], shape[2], shape[3]
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            for i2 in range(shape[2]):
                sb = src_at + i0 * s0 + i1 * s1 + i2 * s2
                if i2 + AHEAD < n2:  # the run AHEAD runs on, asked for now
                    ahead = sb + AHEAD * s2
                    for k in range(0, n3 * s3 * size, LINE):
                        prefetch(src, ahead + k // size)
                j = 0
                while j < n3:
                    pos = ((base + at) % PAGE) // size
                    take = min(per_page - pos, n3 - j)
                    if s3 == 1:
                        copy_run(buf, pos, src, sb + j, take)
                    else:
                        for t in range(take):
                            buf[pos + t] = src[sb + (j + t) * s3]
                    j += take
                    at += take * size
                    if pos + take == per_page:  # the page is gathered: write it
                        _flush(dst8, lo, at, buf8, base)
                        lo = at
    _flush(dst8, lo, at, buf8, base)
    store_fence()


@njit(nogil=True, cache=True)
def scatter_streamed(dst, dst_at, ds, src, src_at, shape):  # type: ignore[no-untyped-def]
    """``dst[dst_at + i . ds] = src[src_at + k]`` for ``k`` in row-major order over the 4-D
    ``shape`` (``ds[3] == 1``): the source, a dense run of ``src``, read in the order of memory,
    scattered in runs of ``shape[3]`` elements, each run's whole 64-byte lines stored past the
    caches and its partial lines at the two ends plainly. ``dst`` and ``src`` are 1-D arrays
    of one dtype; the runs must not overlap."""
    size = dst.itemsize
    dst8, src8 = dst.view(np.uint8), src.view(np.uint8)
    base = dst8.ctypes.data  # the address of dst8[0]
    run = shape[3] * size
    k = src_at * size  # the next byte of the source
    d0, d1, d2 = ds[0], ds[1], ds[2]
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            for i2 in range(shape[2]):
                lo = (dst_at + i0 * d0 + i1 * d1 + i2 * d2) * size
                hi = lo + run
                first = lo + (-(base + lo)) % LINE  # the run's first whole line
                last = hi - (base + hi) % LINE  # the end of its last whole line
                if first >= last:  # no whole line
                    copy_run(dst8, lo, src8, k, run)
                else:
                    if first > lo:
                        copy_run(dst8, lo, src8, k, first - lo)
                    for b in range(first, last, LINE):
                        stream_line(dst8, b, src8, k + (b - lo))
                    if hi > last:
                        copy_run(dst8, last, src8, k + (last - lo), hi - last)
                k += run
    store_fence()
