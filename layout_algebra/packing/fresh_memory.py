"""Whether an array's memory is fresh from the operating system: pages not touched yet.

A large ``np.empty`` (from 32 MB, glibc maps it anew; smaller ones too when the heap grows)
gets pages the kernel has not given yet: the first write to each page faults, and the
kernel zeroes the page (2 MB at once with transparent huge pages, which NumPy asks for)
with plain stores, leaving its lines dirty in the caches. Writing such a page past the
cache right after (non-temporal stores) costs more than storing plainly into the lines
just zeroed: ``s4`` nibbles into a fresh result, interleaved A/B on this project's 2-core
VM (CPU time, medians), ``unpack`` allocating 32 MB 17.8 -> 15.7 ms, 64 MB 35.5 -> 33.8 ms,
``pack`` 12.0 -> 11.0 and 23.2 -> 22.3 ms; some runs showed 2-3x (32 MB: 63 -> 21 ms),
but single calls there swing from 130 ms to 1 s at 256 MB either way (the VM hands freed
memory back to its host, and touching it again is slow), so take those as noise. Into a
buffer already touched streaming stays the faster (256 MB: 48 against 72 ms). The copy
engine asks :func:`untouched` before it streams nibbles
(:func:`~layout_algebra.packing.copy_engine.streams_nibbles`).

:func:`untouched` asks the kernel (``mincore``, Linux) whether a few pages spread over the
array are mapped; elsewhere, or if the call fails, it answers False (the memory is then
treated as touched, as before). It only ever chooses between two ways of storing the same
bytes.

A result the caller has just allocated (``np.empty``) for a call that writes all of it is
known as one while :func:`new_result` holds it (:func:`result_bytes`), whether or not its
pages are mapped: below 32 MB glibc hands back memory freed a moment ago, whose lines may
still be in the caches, and storing past them costs as much as above (the transposing copies
of :mod:`layout_algebra.packing.copy_engine` store a new result plainly).

>>> import sys
>>> import numpy as np
>>> x = np.empty(64 << 20, np.uint8)         # 64 MB: a fresh mapping
>>> untouched(x) or not sys.platform.startswith("linux")
True
>>> x[:] = 0
>>> untouched(x)
False
>>> untouched(x[:100])                       # no whole page: nothing to ask
False
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["new_result", "result_bytes", "untouched"]

#: Pages asked about, spread evenly over the array; most of them must be untouched.
SAMPLES = 3
_PAGE = mmap.PAGESIZE
_mincore: Any = None  # libc's mincore, False where there is none
_results: dict[int, tuple[int, int]] = {}  # the results held by new_result: id -> (first, end) address


def _libc_mincore() -> Any:
    global _mincore
    if _mincore is None:
        _mincore = False
        if sys.platform.startswith("linux"):
            try:
                call = ctypes.CDLL(None, use_errno=True).mincore
            except (OSError, AttributeError):  # pragma: no cover - a libc without mincore
                pass
            else:
                call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
                call.restype = ctypes.c_int
                _mincore = call
    return _mincore or None


def untouched(a: np.ndarray) -> bool:
    """Whether most of ``SAMPLES`` whole pages spread over ``a``'s memory are not yet mapped
    (never written: the kernel will zero them on the first write). False where that cannot
    be asked (not Linux, no whole page in ``a``, the call failing)."""
    mincore = _libc_mincore()
    if mincore is None or not a.size:
        return False
    start = int(a.__array_interface__["data"][0])
    low = -(-start // _PAGE)
    high = (start + a.nbytes) // _PAGE  # pages low .. high - 1 lie wholly in a (if a is contiguous)
    if high <= low:
        return False
    vec = ctypes.c_ubyte()
    fresh = 0
    for k in range(SAMPLES):
        page = low + (high - low) * (2 * k + 1) // (2 * SAMPLES)
        if mincore(page * _PAGE, _PAGE, ctypes.byref(vec)) != 0:
            return False
        fresh += not vec.value & 1
    return 2 * fresh > SAMPLES


@contextmanager
def new_result(a: np.ndarray | None) -> Iterator[None]:
    """While the block runs, the memory of ``a`` (an array just allocated for a result the
    block writes; None: nothing) is a new result for :func:`result_bytes`.

    >>> y = np.empty(1 << 20, np.uint8)
    >>> with new_result(y):
    ...     result_bytes(y[4096:])
    1048576
    >>> result_bytes(y[4096:])
    0
    """
    if a is None or not a.size:
        yield
        return
    start = int(a.__array_interface__["data"][0])
    key = id(a)
    _results[key] = (start, start + a.nbytes)
    try:
        yield
    finally:
        del _results[key]


def result_bytes(a: np.ndarray) -> int:
    """The size of the new result held by :func:`new_result` that ``a`` starts in, else 0."""
    if _results:
        at = int(a.__array_interface__["data"][0])
        for lo, hi in list(_results.values()):
            if lo <= at < hi:
                return hi - lo
    return 0
