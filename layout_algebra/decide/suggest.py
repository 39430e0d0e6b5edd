"""Suggest a layout that makes a reshape a bitcast.

A reshape moves no data when the result's layout puts every element at the bits it
already has. :func:`suggest_bitcast_layout` looks for such a layout: it reads the
reshape *view* of the input back as an XLA layout (:mod:`layout_algebra.decide.views`,
which finds multi-level tilings), tries XLA's ``AlignLayouts`` order and every
``minor_to_major`` with the input's tiles and without, decides each candidate exactly
(:func:`~layout_algebra.decide.bitcast.reshape_is_bitcast`) and ranks the proved ones.

>>> str(suggest_bitcast_layout("f32[16,256]{1,0:T(8,128)}", (4096,)).shape)
'f32[4096]{0:T(256)(8,128)}'
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from layout_algebra.decide.bitcast import reshape_is_bitcast
from layout_algebra.decide.normal_form import simplicity
from layout_algebra.decide.views import ENUMERATION_LIMIT, Reshape, view
from layout_algebra.meaning.sizes import meaningful_array, size_report
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import ArrayShape, Dim, Shape
from layout_algebra.model.syntax import as_shape

__all__ = ["Suggestion", "suggest_bitcast_layout"]


@dataclass(frozen=True)
class Suggestion:
    """A layout for the reshape's result that makes it a bitcast, or why none was found.

    ``shape`` is the best proved candidate (least padding, then simplest by
    :func:`~layout_algebra.decide.normal_form.simplicity`), ``verdict`` its bitcast proof (or the
    last refutation), ``others`` the other proved candidates in rank order.
    """

    shape: ArrayShape | None
    verdict: Any
    reason: str
    others: tuple[ArrayShape, ...] = ()

    def __bool__(self) -> bool:
        return self.shape is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (``layout-algebra bitcast --suggest --json``): the suggestion, the reason, the proof."""
        return {
            "suggestion": None if self.shape is None else str(self.shape),
            "reason": self.reason,
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "others": [str(s) for s in self.others],
        }


def suggest_bitcast_layout(src: Shape | str, dst_dims: Sequence[int]) -> Suggestion:
    """A layout for ``reshape(src) -> dst_dims`` under which the reshape moves no data.

    Candidates, each decided by :func:`~layout_algebra.decide.bitcast.reshape_is_bitcast` (the
    exact decision): the layout the reshape *view* of ``src`` is (its digits read back
    as an XLA layout — this finds multi-level tilings), the same with ``L(n)`` to match
    the input's allocation, XLA's ``AlignLayouts`` order, and every ``minor_to_major``
    (rank ≤ 5) with the input's tiles and with none. The proved ones are ranked by
    padding (exact buffer bytes), then simplicity.

    >>> s = suggest_bitcast_layout("bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}", (256, 24, 200))
    >>> str(s.shape)
    'bf16[256,24,200]{2,1,0:T(8,128)(2,1)}'
    >>> str(suggest_bitcast_layout("f32[16,256]{1,0:T(8,128)}", (4096,)).shape)
    'f32[4096]{0:T(256)(8,128)}'
    >>> str(suggest_bitcast_layout("f32[6,256]{1,0:T(8,128)}", (1536,)).shape)  # rows padded to 8: L(n)
    'f32[1536]{0:T(256)(8,128)L(2048)}'
    >>> str(suggest_bitcast_layout("f32[16,256]{1,0:T(8,128)}", (32, 128)).shape)  # row pairs: a second level
    'f32[32,128]{1,0:T(2,128)(8,1,1,128)}'
    >>> print(suggest_bitcast_layout("f32[3,100]{1,0:T(2,128)}", (6, 50)).reason)  # doctest: +ELLIPSIS
    no layout ... makes the reshape a bitcast: ...
    """
    a = meaningful_array(as_shape(src))
    if a.is_symbolic:
        raise InvalidArgumentError(f"{a}: suggesting a layout needs concrete dimensions")
    try:
        dims = tuple(int(d) for d in dst_dims)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"output dimensions {dst_dims!r} must be integers like 256,24,200"
        ) from None
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"output dimensions {list(dims)} must not be negative")
    if math.prod(dims, start=1) != math.prod(a.dimensions, start=1):
        raise InvalidArgumentError(
            f"{a} has {math.prod(a.dimensions, start=1):,} elements; {list(dims)} has "
            f"{math.prod(dims, start=1):,}: not a reshape"
        )
    if a.layout is None:
        a = replace(a, layout=a.effective_layout)
    proved: dict[ArrayShape, Any] = {}
    last = None
    for candidate in _reshape_candidates(a, dims):
        try:
            verdict = reshape_is_bitcast(a, candidate)
        except ValueError:
            continue
        if verdict:
            proved.setdefault(candidate, verdict)
        else:
            last = verdict
    if not proved:
        why = last.reason if last is not None else "no candidate layout applies"
        return Suggestion(
            None,
            last,
            "no layout read from the reshape's view, with the input's tiles or without tiles makes the "
            f"reshape a bitcast: {why}",
        )
    ranked = sorted(proved, key=lambda s: (size_report(s).physical_bytes, simplicity(s)))
    best = ranked[0]
    return Suggestion(best, proved[best], f"{best} keeps every element of {a} in place", tuple(ranked[1:]))


def _reshape_candidates(a: ArrayShape, dims: tuple[Dim, ...]) -> list[ArrayShape]:
    layout = a.effective_layout
    out: list[ArrayShape] = []
    if 0 < math.prod(dims, start=1) <= ENUMERATION_LIMIT:
        answer = view(a, Reshape(dims)).as_layout()
        if answer.status == "proved" and answer.offset_bits == 0 and answer.shape is not None:
            found = answer.shape
            out.append(found)
            wanted = size_report(a).first_tile_elements
            if size_report(found).first_tile_elements != wanted:
                padded = replace(found.effective_layout, tail_padding_alignment_in_elements=int(wanted))
                out.append(replace(found, layout=padded))
    orders: list[tuple[int, ...]] = []
    try:
        from layout_algebra.xla import align_layouts

        aligned = align_layouts(a, dims)
        if aligned is not None:
            orders.append(tuple(aligned.minor_to_major))
    except (ImportError, ValueError):
        pass
    if len(dims) <= 5:
        orders += [tuple(p) for p in itertools.permutations(range(len(dims)))]
    else:
        orders.append(tuple(reversed(range(len(dims)))))
    for tiles in (layout.tiles, ()):
        for order in dict.fromkeys(orders):
            candidate = replace(layout, minor_to_major=order, tiles=tiles)
            out.append(ArrayShape(a.element_type, dims, (False,) * len(dims), candidate))
    return list(dict.fromkeys(out))
