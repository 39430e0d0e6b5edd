"""One compiled call per replayed transposing step: the views made inside, the arguments in one array.

The transposing copies of :mod:`layout_algebra.packing.transpose_kernels` take eleven
arguments (two flat arrays and their offsets, three index arrays, the staging buffer, three
settings); replaying a 64 KB ``f32[128,128]{0,1:T(8,128)}`` from Python, making the two flat
arrays (a NumPy view each) and numba's dispatch of those arguments cost about as much as
the transpose itself. Like the word entries of :mod:`layout_algebra.packing.replay_kernels`,
an entry here takes three: the packed buffer (1-D ``uint8``), the logical array raveled
(1-D, of its own dtype when numba types it, else seen as bytes), and an ``int64`` array of
every other argument (:func:`transpose_params`). It sees both as 32-bit elements, checks that
they are aligned (else it returns False, having done nothing), and calls
:func:`~layout_algebra.packing.transpose_kernels.gather_rows` or
:func:`~layout_algebra.packing.transpose_kernels.scatter_rows`. Only copies of 4-byte
elements that go by 16x16 blocks in registers (no staging buffer) have an entry
(:func:`has_entry`); the others are replayed from Python.

One entry per direction (:func:`transpose_to_buffer`, :func:`transpose_to_logical`): the side
only read may be a read-only array.

>>> import numpy as np
>>> x = np.arange(16 * 32, dtype=np.float32)                  # 16 rows of 32: the far side
>>> buffer = np.zeros(x.nbytes, np.uint8)                     # its transpose: 32 rows of 16
>>> shape = [1, 1, 1, 32, 16]                                 # (o0, o1, a, c, d)
>>> params = transpose_params(False, 0, [0, 0, 0, 16, 1], 0, [0, 0, 0, 1, 32], shape, 1, 16, False)
>>> transpose_to_buffer(buffer, x, params)
True
>>> np.array_equal(buffer.view(np.float32).reshape(32, 16), x.reshape(16, 32).T)
True
>>> back = np.zeros_like(x)
>>> params = transpose_params(True, 0, [0, 0, 0, 1, 32], 0, [0, 0, 0, 16, 1], shape, 1, 16, False)
>>> transpose_to_logical(buffer, back, params), np.array_equal(back, x)
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from layout_algebra.packing.kernel_cache import check_sources
from layout_algebra.packing.replay_kernels import apart, cut_params
from layout_algebra.packing.transpose_kernels import by_blocks, gather_rows, scatter_rows

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = ["has_entry", "transpose_params", "transpose_parts", "transpose_to_buffer", "transpose_to_logical"]


def transpose_params(
    scatter: bool,
    dst_offset: int,
    dst_strides: Sequence[int],
    src_offset: int,
    src_strides: Sequence[int],
    shape: Sequence[int],
    width: int,
    pad: int,
    stream: bool,
) -> np.ndarray:
    """The ``int64`` array of an entry's arguments: whether the kernel is ``scatter_rows``
    (else ``gather_rows``), the written side's offset and 5 strides, the read side's, the
    5-D shape, then ``width``, ``pad`` and ``stream`` (offsets and strides in elements)."""
    return np.array(
        [int(scatter), dst_offset, *dst_strides, src_offset, *src_strides, *shape, width, pad, int(stream)],
        np.int64,
    )


def transpose_parts(p: np.ndarray, count: int) -> np.ndarray | None:
    """An entry's arguments (:func:`transpose_params`) cut into ``count`` parts along its outer
    loops ``o0`` or ``o1`` (:func:`~layout_algebra.packing.replay_kernels.cut_params`), or None.

    >>> p = transpose_params(False, 0, [0, 4096, 0, 128, 1], 0, [0, 128, 0, 1, 1024], [1, 4, 1, 128, 8], 1, 16, False)
    >>> [(int(q[1]), int(q[7]), int(q[14])) for q in transpose_parts(p, 2)]
    [(0, 0, 2), (8192, 256, 2)]
    """
    return cut_params(p, (1, 7), (2, 8), 13, 2, count)


def has_entry(far: np.ndarray, far_strides: np.ndarray, shape: np.ndarray) -> bool:
    """Whether a transposing copy whose far side is the flat ``far`` has an entry: 4-byte
    elements moved by 16x16 blocks (no staging buffer: ``transpose_kernels.by_blocks``)."""
    return far.itemsize == 4 and bool(by_blocks(far, far_strides, shape)[0])


@njit(nogil=True, cache=True)
def _words(a):  # type: ignore[no-untyped-def]
    """A 1-D contiguous array as 32-bit words (its last few bytes left out)."""
    b = a.view(np.uint8)
    return b[: b.size // 4 * 4].view(np.uint32)


@njit(nogil=True, cache=True)
def _run(dst, src, p):  # type: ignore[no-untyped-def]
    stage = np.empty(1, np.uint32)  # not used: the copy goes by blocks in registers (has_entry)
    if p[0]:
        scatter_rows(dst, p[1], p[2:7], src, p[7], p[8:13], p[13:18], stage, p[18], p[19], p[20] != 0)
    else:
        gather_rows(dst, p[1], p[2:7], src, p[7], p[8:13], p[13:18], stage, p[18], p[19], p[20] != 0)


@njit(nogil=True, cache=True)
def transpose_to_buffer(buffer, logical, p):  # type: ignore[no-untyped-def]
    """The transposing copy of ``p`` (:func:`transpose_params`) from ``logical`` into ``buffer``,
    both seen as 32-bit words; False, nothing done, if either is not 4-byte aligned or the two
    share memory (:func:`~layout_algebra.packing.replay_kernels.apart`)."""
    if buffer.ctypes.data % 4 or logical.ctypes.data % 4 or not apart(buffer, logical):
        return False
    _run(_words(buffer), _words(logical), p)
    return True


@njit(nogil=True, cache=True)
def transpose_to_logical(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`transpose_to_buffer` the other way: from ``buffer`` into ``logical``."""
    if buffer.ctypes.data % 4 or logical.ctypes.data % 4 or not apart(buffer, logical):
        return False
    _run(_words(logical), _words(buffer), p)
    return True
