"""Threads for the packer: the chunks of a relayout copied side by side.

NumPy copies and the compiled kernels release the GIL, and the chunks of a relayout write
disjoint bytes, so :func:`run_parallel` can hand them to several threads and the bytes do not
depend on how many. The threads come from a pool kept for the process: starting threads on
every call cost up to several milliseconds on a busy machine, as long as a small pack itself.
:func:`default_threads` is how many a caller gets when it does not say (the copy engine's
``PARALLEL_MIN_BYTES`` says from which size).

>>> import numpy as np
>>> squares = np.zeros(6, np.int64)
>>> run_parallel(lambda k: squares.__setitem__(k, k * k), range(6), threads=2)
>>> squares.tolist()
[0, 1, 4, 9, 16, 25]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["default_threads", "run_parallel"]

T = TypeVar("T")


def default_threads() -> int:
    """Threads used when the caller does not say: the CPUs this process may run on (at most 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


def run_parallel(work: Callable[[T], None], items: Sequence[T], threads: int) -> None:
    """``for item in items: work(item)``, on up to ``threads`` threads.

    Each thread takes the next item not yet taken, so the items are done roughly in order
    (neighbouring chunks of the output at the same time) and a thread slowed down by other
    work on a shared machine does not hold the others up. ``work`` must touch disjoint
    memory for different items: then the result does not depend on the threads. If an item
    raises, no further item is started, and its exception is raised here once every thread
    has stopped. The calling thread is one of the ``threads``; the others come from a pool
    kept for the process (:func:`_start_helpers`): starting threads on every call cost up to
    several milliseconds on a busy machine, as long as a small pack itself.

    >>> import numpy as np
    >>> out = np.zeros(10, np.int64)
    >>> def fill(k): out[k] = k * k
    >>> run_parallel(fill, range(10), threads=3); out.tolist()
    [0, 1, 4, 9, 16, 25, 36, 49, 64, 81]
    """
    items = list(items)
    threads = max(1, min(threads, len(items)))
    if threads == 1:
        for item in items:
            work(item)
        return
    taken = iter(items)
    lock = threading.Lock()
    failed = threading.Event()
    errors: list[BaseException] = []

    def worker() -> None:
        while not failed.is_set():
            with lock:
                item = next(taken, _DONE)
            if item is _DONE:
                return
            try:
                work(item)  # type: ignore[arg-type]
            except BaseException as error:
                with lock:
                    errors.append(error)
                failed.set()
                return

    helpers = _start_helpers(worker, threads - 1)
    worker()  # the calling thread works too: the items are done even before a helper starts
    for helper in helpers:
        if not helper.cancel():  # not needed if not started (nor waited for: the pool may be busy)
            helper.result()
    if errors:
        raise errors[0]


_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _start_helpers(task: Callable[[], None], count: int) -> list[Future[None]]:
    """``task`` submitted ``count`` times to a thread pool of at least ``count`` threads kept
    for the process (replaced by a larger one when more are asked for; forgotten in a child
    process after ``fork``, where its threads do not exist). Its threads start when first
    needed and stay idle between calls."""
    global _pool, _pool_size
    with _pool_lock:  # held while submitting: another call may not shut this pool down meanwhile
        if _pool is None or _pool_size < count:
            old, _pool, _pool_size = _pool, ThreadPoolExecutor(max_workers=count), count
            if old is not None:
                old.shutdown(wait=False)  # its threads end once the work queued on it is done
        return [_pool.submit(task) for _ in range(count)]


def _forget_pool() -> None:
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_forget_pool)


_DONE = object()
