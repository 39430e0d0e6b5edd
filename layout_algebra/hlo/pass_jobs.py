"""Running many independent jobs — pass pairs — in this process or in a pool of processes, answers in order.

:func:`run_in_order` maps a picklable function over picklable jobs and returns the answers in
the jobs' order, whatever order the processes finish in: the answers of a pool are the answers of
the serial loop. A job that kills its process (the kernel's out-of-memory killer, a native crash
past a memory cap) does not take the others with it: the pool is restarted, the jobs it had not
answered are run again one process each, and a job that kills its own process gets
``on_crash(job, why)`` as its answer. ``progress`` (a :class:`Progress`) is told of every answer
as it arrives.

>>> run_in_order(abs, [-3, 1, -2], jobs=1)
[3, 1, 2]
>>> run_in_order(abs, [-3, 1, -2], jobs=2)
[3, 1, 2]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["Progress", "default_jobs", "run_in_order"]

J = TypeVar("J")
R = TypeVar("R")


def default_jobs(jobs: int, work: int) -> int:
    """Processes for ``work`` jobs when asked for ``jobs`` (0 or less: all cores), at least 1.

    >>> default_jobs(4, 2), default_jobs(1, 10), default_jobs(3, 0)
    (2, 1, 1)
    """
    wanted = jobs if jobs > 0 else (os.cpu_count() or 1)
    return max(1, min(wanted, work))


class Progress:
    """A progress bar on stderr (rich): jobs done of all, the last one's description, time left.

    Use as a context manager; ``advance(text)`` after each answer. With ``enabled=False`` it
    does nothing (the default when stderr is not a terminal: see :meth:`wanted`)."""

    def __init__(self, total: int, title: str, enabled: bool = True) -> None:
        self.total, self.title, self.enabled = total, title, enabled
        self._bar: Any = None
        self._task: Any = None

    @staticmethod
    def wanted(asked: bool | None) -> bool:
        """Show a bar? ``asked`` if given, else only when stderr is a terminal."""
        return sys.stderr.isatty() if asked is None else asked

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar
            from rich.table import Column

            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(table_column=Column(no_wrap=True)),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                TextColumn(
                    "{task.fields[last]}",
                    style="dim",
                    table_column=Column(max_width=32, no_wrap=True, overflow="ellipsis"),
                ),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.title, total=self.total, last="")
        return self

    def advance(self, text: str = "") -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, last=text[:60])

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def run_in_order(
    function: Callable[[J], R],
    work: Sequence[J],
    *,
    jobs: int = 1,
    progress: Progress | None = None,
    describe: Callable[[R], str] = lambda _: "",
    on_crash: Callable[[J, str], R] | None = None,
) -> list[R]:
    """``[function(j) for j in work]``, ``jobs`` processes at once (1: here; 0: all cores).

    ``function`` and the jobs must be picklable when ``jobs != 1`` (a module-level function,
    plain data). ``describe(answer)`` is the text the progress bar shows next to it."""
    workers = default_jobs(jobs, len(work))
    if workers <= 1:
        answers: list[R] = []
        for job in work:
            answers.append(function(job))
            if progress is not None:
                progress.advance(describe(answers[-1]))
        return answers
    return _in_processes(function, work, workers, progress, describe, on_crash)


def _in_processes(
    function: Callable[[J], R],
    work: Sequence[J],
    workers: int,
    progress: Progress | None,
    describe: Callable[[R], str],
    on_crash: Callable[[J, str], R] | None,
) -> list[R]:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    answers: dict[int, R] = {}
    crashed: list[int] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(function, job): k for k, job in enumerate(work)}
        for future in as_completed(futures):
            k = futures[future]
            try:
                answers[k] = future.result()
            except BrokenProcessPool:  # some job killed its process: which one, is found below
                crashed.append(k)
                continue
            if progress is not None:
                progress.advance(describe(answers[k]))
    for k in sorted(crashed):  # each alone in a fresh process: a second crash is that job's own
        with ProcessPoolExecutor(max_workers=1) as alone:
            try:
                answers[k] = alone.submit(function, work[k]).result()
            except BrokenProcessPool as err:
                if on_crash is None:
                    raise
                answers[k] = on_crash(work[k], f"the process validating it died ({err})")
        if progress is not None:
            progress.advance(describe(answers[k]))
    return [answers[k] for k in range(len(work))]
