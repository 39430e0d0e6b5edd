"""What a result answers, kept so that its size condition can be found on demand.

A decision (``reshape_is_bitcast``, ``transpose_is_bitcast``, ``bitcast_is_valid``,
``prove.in_bounds``, ``prove.no_padding``, ``hlo.verify_rewrite``) returns a result that
remembers its :class:`Question`: the kind of claim and its arguments. Its ``condition``
(the :class:`AnswersQuestion` mix-in) is the **weakest condition on the size symbols**
under which the claim holds, found by ``layout_algebra.decide.conditions`` on first use and then
kept; a decision that nobody asks about pays nothing.

The finder sits above the decisions (it calls them at many sizes), so they cannot import
it, not even inside a function (the layer rules count those). Instead the package's
``__init__`` (the package-API layer, above everything it needs) installs it here, the
moment ``layout_algebra`` is imported:

>>> q = Question("no_padding", ("f32[N,128]{1,0:T(8,128)}",))
>>> q.kind, q.arguments
('no_padding', ('f32[N,128]{1,0:T(8,128)}',))
>>> find_condition(q)
Condition(Eq(Mod(N, 8), 0), 'exact')
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["KINDS", "AnswersQuestion", "Question", "find_condition", "install_condition_finder"]

#: The kinds of claim a condition can be found for.
KINDS: tuple[str, ...] = ("reshape", "transpose", "bitcast", "in_bounds", "no_padding", "rewrite")


@dataclass(frozen=True)
class Question:
    """A claim as data: ``kind`` (one of :data:`KINDS`), its positional ``arguments``
    (shapes, a permutation, HLO modules) and keyword ``options`` (``allocation``, ``mode``)."""

    kind: str
    arguments: tuple[Any, ...]
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgumentError(f"question kind {self.kind!r} is not one of {', '.join(KINDS)}")


_finder: Callable[[Question], Any] | None = None


def install_condition_finder(finder: Callable[[Question], Any]) -> None:
    """Make ``finder`` the function that answers ``result.condition`` (the package does this)."""
    global _finder
    _finder = finder


def find_condition(question: Question | None) -> Any:
    """The size condition of ``question`` (a ``layout_algebra.decide.conditions.Condition``)."""
    if question is None:
        raise InvalidArgumentError(
            "this result does not record the claim it answers, so it has no size condition"
        )
    if _finder is None:  # only if this module is used without the package's __init__
        raise RuntimeError("no condition finder is installed (import layout_algebra)")
    return _finder(question)


class AnswersQuestion:
    """Mix-in for results: ``condition``, computed on first use from ``question``."""

    question: Question | None

    @functools.cached_property
    def condition(self) -> Any:
        """The weakest size condition under which this result's claim holds, with its
        status (``exact``, ``sufficient, necessary up to ...``, ``unknown``); a
        ``layout_algebra.decide.conditions.Condition``. Assumptions the result was asked under
        are not part of it: the condition is the claim's whole truth over its sizes."""
        return find_condition(self.question)
