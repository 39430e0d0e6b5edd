"""Which settings of the packer are in force: a count of assignments to its tuning modules.

The copy engine decides block sizes, when to store past the caches and when to start threads
from module attributes read at call time (``copy_engine.BLOCK_BYTES``, ``stage_walk.CHUNK_BYTES``,
...), so that tests and benchmarks can change them. A replayed program
(:mod:`layout_algebra.packing.replay`) holds the decisions made under the values in force when
it was made, and must be made again once any of them changes. Comparing two dozen constants on
every call cost 0.27 us of a 64 KB call of 4.5 us. Instead each module that holds such
settings is :func:`watch`-ed: every assignment to (or deletion of) one of its constants (an
attribute named in capitals, ``BLOCK_BYTES``), as ``monkeypatch.setattr`` or
``copy_engine.BLOCK_BYTES = ...`` make, adds one to :func:`version`, and a program remembers
the version it was made under. A new constant needs no list to be added to; an assignment
that puts the old value back makes programs again, which costs a plan, never a wrong
decision. Replacing a function (a test's spy) does not count, nor a private table
(``_RECIPES``: a name that starts with ``_``, :func:`is_setting`).

>>> import types
>>> knobs = watch(types.ModuleType("knobs"))
>>> knobs.BLOCK = 64
>>> before = version()
>>> knobs.BLOCK = 128
>>> version() > before
True
>>> knobs.BLOCK
128
>>> before = version()
>>> knobs.helper = print                 # not a constant
>>> version() == before
True

Only assignments from outside count: a module's own ``global`` statements write its
namespace directly (the state the engine keeps, such as whether the kernels started, is read
by :func:`~layout_algebra.packing.copy_engine.kernels_loaded` instead).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["Tunable", "is_setting", "version", "watch"]


class Tunable(ModuleType):
    """A module whose constants' assignments and deletions are counted in :attr:`assignments`."""

    #: assignments and deletions so far, across every watched module
    assignments = 0

    def __setattr__(self, name: str, value: Any) -> None:
        if is_setting(name):
            Tunable.assignments += 1
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if is_setting(name):
            Tunable.assignments += 1
        super().__delattr__(name)


def is_setting(name: str) -> bool:
    """Whether a module attribute of this name is a setting: a public name in capitals.

    >>> is_setting("BLOCK_BYTES"), is_setting("_RECIPES"), is_setting("helper")
    (True, False, False)
    """
    return name.isupper() and not name.startswith("_")


def watch(module: ModuleType) -> ModuleType:
    """Count the assignments to ``module``'s constants from now on (Python lets a module's class be
    changed to a subclass of ``ModuleType``); the module itself is returned."""
    module.__class__ = Tunable
    return module


def version() -> int:
    """How many assignments to watched modules' constants there have been."""
    return Tunable.assignments
