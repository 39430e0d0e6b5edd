"""A replayed program's kernel calls cut into parts and run side by side on numba's threads.

A replayed program (:mod:`layout_algebra.packing.replay`) of 1-32 MB makes one compiled call per
step. On one core a transposing copy or a nibble weave of that size reaches 0.4-0.5 of
``np.copyto`` of the same bytes: the core waits on the cache, and a second core, with its own
L2, doubles what is in flight. Handing half the work to a thread that sleeps costs more than
the half saves, though: on the 2-core VM of ``benchmarks/``, waking an idle thread took 15-60 us
(an idle virtual CPU is halted), as long as a 1 MB copy. Numba's ``omp`` threading layer (GNU
OpenMP) keeps its workers spinning for a while after each parallel region, so a call made soon
after another starts at once (``tbb``'s workers also poll before they sleep: it is taken as
spinning too, not measured here); one thread per part, ``f32[1024,1024]{0,1:T(8,128)}``
(4 MB) packed into a buffer went 0.45 -> 0.72 of ``np.copyto``, ``s4`` 4 MB 0.51 -> 0.77, where
the sleeping ``workqueue`` layer (or our own pool) made it 0.27.

So the entries of :mod:`layout_algebra.packing.replay_kernels` and
:mod:`layout_algebra.packing.replay_transposes` have a parallel form: :func:`run_parts` runs
one entry on each row of a table of arguments (each a range of an outer dim:
:func:`~layout_algebra.packing.replay_kernels.cut_params`) in a ``prange`` loop; the parts
write disjoint bytes, so the result does not depend on how many there are. The logical array
is passed as bytes (one compiled form for every dtype; each entry makes its own views).

:func:`part_count` says how many parts a call may use: none (1) unless the threading layer
numba chose keeps its workers spinning (it is known once the first parallel call has run:
a ``workqueue`` layer is tried once, then no more), in a process that forked from one which
started the layer (GNU OpenMP's workers do not survive a ``fork``; numba would end the child),
or while another thread of the process is running parts.

>>> import numpy as np
>>> from layout_algebra.packing.replay_kernels import build_bytes, entry_params, entry_parts
>>> logical = np.arange(64, dtype=np.uint8)                # 16 words of 4 bytes, 16 apart
>>> p = entry_params(0, [4, 0, 0, 1], 0, [1, 0, 0, 4], 16, [4, 1, 1, 4], False)
>>> whole, halves = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
>>> build_bytes(whole, logical, p), run_parts(kind_of(build_bytes), halves, logical, entry_parts(p, 2))
(True, True)
>>> np.array_equal(whole, halves)
True
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange

from layout_algebra.packing.kernel_cache import check_sources
from layout_algebra.packing.replay_kernels import (
    build_bytes,
    build_halves,
    build_nibbles,
    entry_parts,
    split_bytes,
    split_halves,
    split_nibbles,
)
from layout_algebra.packing.replay_transposes import (
    transpose_parts,
    transpose_to_buffer,
    transpose_to_logical,
)

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = ["SPINNING_LAYERS", "finished", "kind_of", "part_count", "parts_of", "run_parts"]

#: The entries that have a parallel form: those that write the buffer, and those that write
#: the logical array (the side only read may be a read-only array: one compiled form each).
_TO_BUFFER: tuple[Callable[..., bool], ...] = (build_bytes, build_halves, build_nibbles, transpose_to_buffer)
_TO_LOGICAL: tuple[Callable[..., bool], ...] = (
    split_bytes,
    split_halves,
    split_nibbles,
    transpose_to_logical,
)
#: How each entry's arguments are cut (by number within its direction).
_CUTS = (entry_parts, entry_parts, entry_parts, transpose_parts)


def kind_of(entry: Callable[..., bool]) -> int:
    """The number :func:`run_parts` knows ``entry`` by (0-3 write the buffer, 4-7 the logical
    array); -1 if it has no parallel form."""
    for k, known in enumerate(_TO_BUFFER + _TO_LOGICAL):
        if known is entry:
            return k
    return -1


def parts_of(kind: int, params: np.ndarray, count: int) -> np.ndarray | None:
    """The table of arguments of ``count`` parts of the entry ``kind`` called with ``params``
    (None if no outer dim is long enough)."""
    return _CUTS[kind % 4](params, count)


@njit(nogil=True, cache=True)
def _to_buffer(kind, buffer, logical, p):  # type: ignore[no-untyped-def]
    if kind == 0:
        return build_bytes(buffer, logical, p)
    if kind == 1:
        return build_halves(buffer, logical, p)
    if kind == 2:
        return build_nibbles(buffer, logical, p)
    return transpose_to_buffer(buffer, logical, p)


@njit(nogil=True, cache=True)
def _to_logical(kind, buffer, logical, p):  # type: ignore[no-untyped-def]
    if kind == 4:
        return split_bytes(buffer, logical, p)
    if kind == 5:
        return split_halves(buffer, logical, p)
    if kind == 6:
        return split_nibbles(buffer, logical, p)
    return transpose_to_logical(buffer, logical, p)


@njit(nogil=True, parallel=True, cache=True)
def _parts_to_buffer(kind, buffer, logical, parts):  # type: ignore[no-untyped-def]
    done = np.zeros(parts.shape[0], np.bool_)
    for k in prange(parts.shape[0]):
        done[k] = _to_buffer(kind, buffer, logical, parts[k])
    return done.all()


@njit(nogil=True, parallel=True, cache=True)
def _parts_to_logical(kind, buffer, logical, parts):  # type: ignore[no-untyped-def]
    done = np.zeros(parts.shape[0], np.bool_)
    for k in prange(parts.shape[0]):
        done[k] = _to_logical(kind, buffer, logical, parts[k])
    return done.all()


def run_parts(kind: int, buffer: np.ndarray, logical: np.ndarray, parts: np.ndarray) -> bool:
    """The entry ``kind`` (:func:`kind_of`) on ``buffer`` and ``logical`` (both 1-D ``uint8``)
    once per row of ``parts``, the rows side by side on numba's threads; False (nothing
    written) if the entry found the arrays misaligned or sharing memory (properties of the two
    arrays: every part answers alike, before it writes)."""
    if kind < 4:
        return bool(_parts_to_buffer(kind, buffer, logical, parts))
    return bool(_parts_to_logical(kind, buffer, logical, parts))


#: Numba's threading layers whose workers wait for the next parallel region by spinning first.
SPINNING_LAYERS = frozenset({"omp", "tbb"})

_busy = threading.Lock()
#: After the first parallel call: the process that made it, and whether its layer spins.
_started_in: int | None = None
_spinning: bool | None = None


def part_count(threads: int) -> int:
    """How many parts a call with ``threads`` threads runs in now; 1: run it whole, on the
    calling thread. More than 1 means this thread holds the right to run parts: it must
    call :func:`finished` after the parallel call."""
    if threads < 2 or _spinning is False or (_started_in is not None and _started_in != os.getpid()):
        return 1
    if not _busy.acquire(blocking=False):  # another thread of the process is running parts
        return 1
    count = min(threads, numba.get_num_threads())
    if count < 2:
        _busy.release()
    return count


def finished() -> None:
    """The parallel call of a :func:`part_count` above 1 is over: note the threading layer
    numba started (once), and let another call run parts."""
    global _started_in, _spinning
    if _spinning is None:
        _started_in, _spinning = os.getpid(), numba.threading_layer() in SPINNING_LAYERS
    _busy.release()
