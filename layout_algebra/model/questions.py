"""What a result answers, kept so that its size condition can be found on demand.

A decision (``reshape_is_bitcast``, ``transpose_is_bitcast``, ``bitcast_is_valid``,
``prove.in_bounds``, ``prove.no_padding``, ``hlo.verify_rewrite``) returns a result that
remembers its :class:`Question`: the kind of claim, its arguments and the assumptions it
was asked under. ``layout_algebra.condition_of(result)`` then finds the **weakest condition
on the size symbols** under which the claim holds, under those assumptions (found by
``layout_algebra.decide.conditions``); a decision that nobody asks about pays nothing.

The finder sits above the decisions (it calls them at many sizes, and rewrites' claims
live in ``hlo``), so the results cannot reach it: it is a function of the package,
not an attribute of the result (no import goes up, and no hook is installed).

>>> q = Question("no_padding", ("f32[N,128]{1,0:T(8,128)}",))
>>> q.kind, q.arguments, q.assume
('no_padding', ('f32[N,128]{1,0:T(8,128)}',), ())
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["KINDS", "AnswersQuestion", "Question"]

#: The kinds of claim a condition can be found for.
KINDS: tuple[str, ...] = ("reshape", "transpose", "bitcast", "in_bounds", "no_padding", "rewrite")


@dataclass(frozen=True)
class Question:
    """A claim as data: ``kind`` (one of :data:`KINDS`), its positional ``arguments``
    (shapes, a permutation, HLO modules), keyword ``options`` (``allocation``, ``mode``)
    and ``assume``, the parsed assumptions it was asked under (SymPy relations)."""

    kind: str
    arguments: tuple[Any, ...]
    options: tuple[tuple[str, Any], ...] = ()
    assume: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgumentError(f"question kind {self.kind!r} is not one of {', '.join(KINDS)}")


class AnswersQuestion:
    """Mix-in for results that record their :class:`Question` (``None``: a result that
    does not, such as a proof about a map given as a function)."""

    question: Question | None
