"""Stages with symbolic sizes: every concrete stage is an instance of a general one.

A layout's stages have sizes (dimensions, tile sizes, padded sizes, the ``L(n)``
alignment) and a structure (the permutation of a ``Transpose``, which dims a ``Split``
cuts, the groups of a ``Combine``). :func:`generalize` keeps the structure and replaces
every size by a symbol, with the least values the symbols may take (``t >= 1`` for a
tile size, ``>= 0`` for the rest). The prover proves the *general* stage injective and
in bounds once, for all sizes, and a concrete stage inherits the lemma when it is that
general stage with the symbols given values (:func:`is_instance`: the fields agree
exactly and every value is at least its minimum).

A split of a 3x16 array by an 8-row tile on the last dim, generalized:

>>> from layout_algebra.stages.stages import Split
>>> split = Split(domain=(3, 16), start=1, tile=(8,))
>>> general, values = generalize(split)
>>> general.stage.describe()
'split by (t1): [D0, K1*t1] -> [D0, K1, t1]'
>>> values
{t1: 8, D0: 3, K1: 2}
>>> general.relations
(t1 >= 1,)
>>> is_instance(general, values, split)
True

The dimension is ``K1*t1``, so only multiples of the tile are instances; a 17-long dim
is not (it needs padding first), and values below a minimum are rejected:

>>> general, values = generalize(Split(domain=(3, 17), start=1, tile=(8,)))
>>> values, is_instance(general, values, Split(domain=(3, 17), start=1, tile=(8,)))
({t1: 8, D0: 3, K1: 2}, False)
>>> from layout_algebra.stages.stages import Pad
>>> general, values = generalize(Pad(domain=(5,), padded=(4,)))
>>> values, is_instance(general, values, Pad(domain=(5,), padded=(4,)))
({D0: 5, E0: -1}, False)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import sympy

from layout_algebra.model.symbols import as_sympy, dim_symbol
from layout_algebra.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    Transpose,
)

__all__ = ["GeneralStage", "generalize", "is_instance", "specialize_stage"]

#: Field names of each stage kind that hold sizes (the rest is structure).
SIZE_FIELDS: dict[type, tuple[str, ...]] = {
    Transpose: ("domain",),
    PrependUnitDims: ("domain",),
    Combine: ("domain",),
    Linearize: ("domain",),
    Pad: ("domain", "padded"),
    Split: ("tile", "domain"),  # tiles first: a dimension K*t is read knowing t
    AlignTail: ("domain", "alignment"),
}


@dataclass(frozen=True)
class GeneralStage:
    """A stage whose sizes are symbols, and the least value each symbol may take."""

    stage: Stage
    minimum: tuple[tuple[sympy.Symbol, int], ...]

    @property
    def relations(self) -> tuple[sympy.Basic, ...]:
        """The minima above 0 as SymPy relations (the lemma's assumptions; sizes are >= 0 anyway)."""
        # unevaluated: evaluating asks SymPy's assumption system, which costs a lazy import
        return tuple(sympy.Ge(s, low, evaluate=False) for s, low in self.minimum if low > 0)

    def describe(self) -> str:
        """The stage and the conditions beyond ``size >= 0``.

        >>> from layout_algebra.stages.stages import AlignTail
        >>> generalize(AlignTail(domain=(5,), alignment=1024))[0].describe()
        'tail padding L(a): [D0] -> [a*ceiling(D0/a)], where a >= 1'
        """
        conditions = ", ".join(f"{s} >= {low}" for s, low in self.minimum if low > 0)
        return self.stage.describe() + (f", where {conditions}" if conditions else "")


def _symbols(prefix: str, count: int) -> tuple[sympy.Symbol, ...]:
    return tuple(dim_symbol(f"{prefix}{k}") for k in range(count))


@cache
def _general(kind: type, rank: int, structure: tuple[tuple[str, Any], ...]) -> GeneralStage:
    """The general stage of one kind, rank and structure (cached: layouts share them)."""
    fields = dict(structure)
    domain = _symbols("D", rank)
    tiles: tuple[sympy.Symbol, ...] = ()
    if kind is Split:
        start = fields["start"]
        counts, tiles = _symbols("K", rank)[start:], _symbols("t", rank)[start:]
        # unevaluated (as are the sums below): evaluating runs SymPy's flatten, whose first
        # call imports SymPy's matrix and tensor modules (tens of ms in a fresh process)
        domain = domain[:start] + tuple(
            sympy.Mul(k, t, evaluate=False) for k, t in zip(counts, tiles, strict=True)
        )
        fields["tile"] = tiles
    elif kind is Pad:
        fields["padded"] = tuple(
            sympy.Add(d, e, evaluate=False) for d, e in zip(domain, _symbols("E", rank), strict=True)
        )
    elif kind is AlignTail:
        tiles = (dim_symbol("a"),)
        fields["alignment"] = tiles[0]
    stage = kind(domain=domain, **fields)
    free = sorted(
        {s for name in SIZE_FIELDS[kind] for s in as_sympy(getattr(stage, name)).free_symbols}, key=str
    )
    minimum = tuple((s, 1 if s in tiles else 0) for s in free)
    return GeneralStage(stage, minimum)


def generalize(stage: Stage) -> tuple[GeneralStage, dict[sympy.Symbol, int]] | None:
    """The general stage ``stage`` is an instance of, and the values of its symbols.

    ``None`` for stages with symbolic sizes and for kinds without a general form (a
    subclass may compute something else, so only the exact kinds count).
    """
    kind = type(stage)
    if kind not in SIZE_FIELDS or not all(isinstance(d, int) for d in stage.domain):
        return None
    structure = tuple(
        (f.name, getattr(stage, f.name))
        for f in dataclasses.fields(stage)
        if f.compare and f.name not in SIZE_FIELDS[kind]
    )
    general = _general(kind, len(stage.domain), structure)
    values: dict[Any, int] = {}
    for name in SIZE_FIELDS[kind]:
        if not _match(getattr(general.stage, name), getattr(stage, name), values):
            return None
    return general, values


def _match(pattern: Any, value: Any, values: dict[Any, int]) -> bool:
    """Read symbol values off ``value`` by the shape of ``pattern`` (``K*t``, ``D + E``)."""
    if isinstance(pattern, tuple):
        return len(pattern) == len(value) and all(
            _match(p, v, values) for p, v in zip(pattern, value, strict=True)
        )
    if not isinstance(value, int):
        return False
    if pattern.is_Symbol:
        values.setdefault(pattern, value)
        return True
    # D + E (D read from the domain first) or K*t (the tile t read first)
    known = [a for a in pattern.args if a in values]
    unknown = [a for a in pattern.args if a not in values]
    if len(pattern.args) != 2 or len(known) != 1 or not unknown[0].is_Symbol:
        return False
    if pattern.is_Add:
        values[unknown[0]] = value - values[known[0]]
        return True
    if pattern.is_Mul and values[known[0]] > 0:
        values[unknown[0]] = value // values[known[0]]
        return True
    return False


def specialize_stage(stage: Stage, values: Mapping[sympy.Symbol, int]) -> Stage:
    """``stage`` with the symbols in its sizes given ``values``: a concrete stage.

    >>> general, values = generalize(Split(domain=(3, 16), start=1, tile=(8,)))
    >>> specialize_stage(general.stage, values)
    Split(domain=(3, 16), start=1, tile=(8,))
    """
    kind = next((k for k in type(stage).__mro__ if k in SIZE_FIELDS), None)
    if kind is None:
        raise ValueError(f"no sizes known for stage {stage.describe()}")
    fields = {name: _substitute(getattr(stage, name), values) for name in SIZE_FIELDS[kind]}
    return dataclasses.replace(stage, **fields)


def _substitute(size: Any, values: Mapping[sympy.Symbol, int]) -> Any:
    if isinstance(size, tuple):
        return tuple(_substitute(s, values) for s in size)
    value = as_sympy(size).subs(values)
    if not value.is_Integer:
        raise ValueError(f"size {size} has no value at {dict(values)}")
    return int(value)


def _evaluate(expr: Any, values: Mapping[Any, int]) -> Any:
    if isinstance(expr, tuple):
        return tuple(_evaluate(e, values) for e in expr)
    if expr.is_Symbol:
        return values[expr]
    if expr.is_Integer:
        return int(expr)
    parts = [_evaluate(a, values) for a in expr.args]
    if expr.is_Add:
        return sum(parts)
    if expr.is_Mul:
        return math.prod(parts)
    raise ValueError(f"no evaluation for size {expr}")


def is_instance(general: GeneralStage, values: Mapping[Any, int], stage: Stage) -> bool:
    """Whether ``stage`` is exactly ``general.stage`` with its symbols given ``values``.

    Every size field is evaluated at ``values`` and compared with ``stage``'s, and every
    value must be at least its minimum: then the general lemma holds for ``stage``.
    """
    if type(stage) is not type(general.stage):
        return False
    for symbol, low in general.minimum:
        value = values.get(symbol)
        if not isinstance(value, int) or value < low:
            return False
    try:
        fields = {name: _evaluate(getattr(general.stage, name), values) for name in SIZE_FIELDS[type(stage)]}
        instance = dataclasses.replace(general.stage, **fields)
    except (ValueError, KeyError):
        return False
    return instance == stage
