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

:func:`empty` allocates the results of ``pack`` and ``unpack``. NumPy asks for huge pages
(``madvise``) on the 2 MB-aligned part of a large array's memory; the array's first and last
partial 2 MB then fault page by page, and in this VM each small fault is slow: an
``np.empty`` of 32 MB written once took 3.5-4.3 ms (528 faults), the same bytes starting at
a 2 MB boundary of a slightly larger ``np.empty`` 2.1-2.3 ms (17 faults), and writing
memory touched already 1.3-2.1 ms. From ``ALIGNED_MIN_BYTES`` (where glibc maps every
allocation anew), :func:`empty` returns such a view: the extra bytes are never touched, so
they take no memory.

Fresh pages cost more still after a pause: the VM hands memory freed for a few seconds
back to its host (``page_reporting``), and touching it again waits on the host. ``unpack``
of ``s4[4096,8192]`` into a new 32 MB array took 7.6-8.1 ms of wall time called back to
back, 21-41 ms after a 3 s pause (wall time; CPU time 9-21 ms): the sweep's cell measured
0.03-0.04 of the copy, whose 16 MB glibc serves from its heap again. So the blocks of
results no longer used (their arrays and every view of them gone) are kept, up to
``KEPT_BLOCKS``, and the next result that fits takes one: mapped and touched already
(the same call after the pause: 7.3-8.5 ms wall, 4.5 ms CPU). Like a caching allocator's,
that memory stays with the process (at most ``KEPT_BYTES``, 1 GB) until a result takes it
or :func:`release_kept_blocks` frees it; ``KEPT_BLOCKS = 0`` keeps none.

>>> a = empty((4096, 8192), np.int8)             # 32 MB
>>> a.shape, a.dtype, a.flags.c_contiguous, a.ctypes.data % HUGE_PAGE
((4096, 8192), dtype('int8'), True, 0)
>>> at = a.ctypes.data
>>> del a                                        # the block is kept ...
>>> empty((8192, 4096), np.uint8).ctypes.data == at   # ... and taken by the next result
True
"""

from __future__ import annotations

import ctypes
import math
import mmap
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["empty", "new_result", "release_kept_blocks", "result_bytes", "untouched"]

#: The size of a transparent huge page (x86-64, ARM64 with 4 KB pages).
HUGE_PAGE = 1 << 21
#: Arrays of at least this many bytes start at a huge-page boundary (:func:`empty`)...
ALIGNED_MIN_BYTES = 1 << 25
#: ... in blocks of memory of which this many, no longer used by any result, are kept for
#: the next results (the memory stays mapped: no page faults, no zeroing by the kernel),
#: at most this many bytes in all (the oldest go first).
KEPT_BLOCKS = 2
KEPT_BYTES = 1 << 30
_blocks: list[np.ndarray] = []
_blocks_lock = threading.Lock()

#: Pages asked about, spread evenly over the array; most of them must be untouched.
SAMPLES = 3
_PAGE = mmap.PAGESIZE
_mincore: Any = None  # libc's mincore, False where there is none
_results: dict[int, tuple[int, int, bool]] = {}  # held by new_result: id -> (first, end) address, packed?


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
def new_result(a: np.ndarray | None, packed: bool = False) -> Iterator[None]:
    """While the block runs, the memory of ``a`` (an array just allocated for a result the
    block writes; None: nothing) is a new result for :func:`result_bytes`: a packed buffer
    (``pack``) or an array (``unpack``), as ``packed`` says.

    >>> y = np.empty(1 << 20, np.uint8)
    >>> with new_result(y):
    ...     result_bytes(y[4096:]), result_bytes(y[4096:], packed=True)
    (1048576, 0)
    >>> result_bytes(y[4096:])
    0
    """
    if a is None or not a.size:
        yield
        return
    start = int(a.__array_interface__["data"][0])
    key = id(a)
    _results[key] = (start, start + a.nbytes, packed)
    try:
        yield
    finally:
        del _results[key]


def result_bytes(a: np.ndarray, packed: bool = False) -> int:
    """The size of the new result held by :func:`new_result` (a packed buffer if ``packed``,
    else an array) that ``a`` starts in, else 0."""
    if _results:
        at = int(a.__array_interface__["data"][0])
        for lo, hi, kind in list(_results.values()):
            if lo <= at < hi and kind == packed:
                return hi - lo
    return 0


def empty(shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
    """``np.empty(shape, dtype)``, starting at a huge-page boundary from ``ALIGNED_MIN_BYTES``:
    a view into a slightly larger block (two huge pages more: its last page is whole too),
    a block given back by an earlier result where one fits (:func:`_kept_block`)."""
    dtype = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = math.prod(dims) * dtype.itemsize
    if nbytes < ALIGNED_MIN_BYTES or not nbytes:
        return np.empty(dims, dtype)
    block = _kept_block(nbytes + 2 * HUGE_PAGE)
    if block is None:
        block = np.empty(nbytes + 2 * HUGE_PAGE, np.uint8)
    at = -int(block.__array_interface__["data"][0]) % HUGE_PAGE
    # the result's base is a memoryview that it and every view of it keep alive (NumPy's
    # chain of bases stops there): when the last of them goes, the block is kept again
    flat = np.frombuffer(block[at : at + nbytes].data, dtype)  # .data: a memoryview
    try:
        weakref.finalize(flat.base, _keep_block, block).atexit = False
    except TypeError:  # pragma: no cover - a base without weak references: not kept
        pass
    aligned: np.ndarray = flat.reshape(dims)
    return aligned


def _kept_block(nbytes: int) -> np.ndarray | None:
    """A kept block of ``nbytes`` to twice that, taken out of the pool, or None."""
    with _blocks_lock:
        for k, block in enumerate(_blocks):
            if nbytes <= block.nbytes <= 2 * nbytes:
                return _blocks.pop(k)
    return None


def _keep_block(block: np.ndarray) -> None:
    """Keep a block no result uses any more; the oldest beyond ``KEPT_BLOCKS`` or
    ``KEPT_BYTES`` are freed."""
    freed = []
    with _blocks_lock:
        _blocks.append(block)
        while _blocks and (len(_blocks) > KEPT_BLOCKS or sum(b.nbytes for b in _blocks) > KEPT_BYTES):
            freed.append(_blocks.pop(0))
    del freed  # (freed outside the lock)


def release_kept_blocks() -> int:
    """Free every kept block now (a caching allocator's ``empty_cache``); the bytes freed.

    >>> a = empty((4096, 8192), np.int8)          # 32 MB
    >>> del a                                     # its block kept
    >>> release_kept_blocks() >= 32 << 20, release_kept_blocks()
    (True, 0)
    """
    with _blocks_lock:
        freed = list(_blocks)
        _blocks.clear()
    return sum(b.nbytes for b in freed)
