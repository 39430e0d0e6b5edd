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

>>> from layout_algebra.meaning.stages.stages import Split
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
>>> from layout_algebra.meaning.stages.stages import Pad
>>> general, values = generalize(Pad(domain=(5,), padded=(4,)))
>>> values, is_instance(general, values, Pad(domain=(5,), padded=(4,)))
({D0: 5, E0: -1}, False)

**Without SymPy.** A general stage is first written as a :class:`Pattern` of plain text:
each size is a symbol's name (``D0``), a product of two (``K1*t1``, the tile read first)
or a sum of two (``D0+E0``, the dimension read first). The SymPy general stage is built
from the pattern, and the instance test is one function of plain integers
(:func:`instance_of`), used both here and by a fresh process that finds a layout's lemmas
in the lemma cache and so needs no SymPy at all:

>>> found = instance_of(Split(domain=(3, 16), start=1, tile=(8,)))
>>> found.sizes, found.minimum
((('tile', ('t1',)), ('domain', ('D0', 'K1*t1'))), (('D0', 0), ('K1', 0), ('t1', 1)))
>>> instance_of(Split(domain=(3, 17), start=1, tile=(8,))) is None
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import sympy

from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    Transpose,
)
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.symbols import as_sympy, dim_symbol

__all__ = ["GeneralStage", "Pattern", "generalize", "instance_of", "is_instance", "specialize_stage"]

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

#: A size of a general stage: a symbol's name ``"D0"``, a product ``"K1*t1"`` or a sum ``"D0+E0"``.
Size = str
#: A size field: one size (``AlignTail.alignment``) or one per dimension.
Sizes = str | tuple[Size, ...]


@dataclass(frozen=True)
class Pattern:
    """A general stage in plain text: its kind and structure, its size fields, and minima.

    ``identity`` names it exactly (kind, rank, structure, sizes, minima): the lemma cache
    keys a layout's record by its stages' identities.
    """

    kind: type
    structure: tuple[tuple[str, Any], ...]
    sizes: tuple[tuple[str, Sizes], ...]
    minimum: tuple[tuple[str, int], ...]
    identity: str


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

        >>> from layout_algebra.meaning.stages.stages import AlignTail
        >>> generalize(AlignTail(domain=(5,), alignment=1024))[0].describe()
        'tail padding L(a): [D0] -> [a*ceiling(D0/a)], where a >= 1'
        """
        conditions = ", ".join(f"{s} >= {low}" for s, low in self.minimum if low > 0)
        return self.stage.describe() + (f", where {conditions}" if conditions else "")


# ------------------------------------------------------------------ patterns (plain text)
def _is_plain(value: Any) -> bool:
    """An int (not a bool) or a tuple of such, nested: a structure whose ``repr`` is canonical."""
    if isinstance(value, tuple):
        return all(_is_plain(v) for v in value)
    return type(value) is int


def _structure(stage: Stage) -> tuple[type, int, tuple[tuple[str, Any], ...]] | None:
    """The kind, rank and structure (the fields that are not sizes) of a concrete stage.

    ``None`` unless the kind is exactly one of the package's (a subclass may compute
    something else), the domain is concrete and the structure is plain integers.
    """
    kind = type(stage)
    if kind not in SIZE_FIELDS or not all(isinstance(d, int) for d in stage.domain):
        return None
    structure = tuple(
        (f.name, getattr(stage, f.name))
        for f in dataclasses.fields(stage)
        if f.compare and f.name not in SIZE_FIELDS[kind]
    )
    if not all(_is_plain(value) for _name, value in structure):
        return None
    return kind, len(stage.domain), structure


def _names(size: Sizes) -> list[str]:
    if isinstance(size, tuple):
        return [n for s in size for n in _names(s)]
    return size.replace("*", "+").split("+")


@cache
def pattern(kind: type, rank: int, structure: tuple[tuple[str, Any], ...]) -> Pattern:
    """The general stage of one kind, rank and structure, in plain text (cached: layouts share them).

    >>> pattern(Pad, 2, ()).sizes
    (('domain', ('D0', 'D1')), ('padded', ('D0+E0', 'D1+E1')))
    """
    fields = dict(structure)
    index = list(range(rank))
    sizes: dict[str, Sizes] = {"domain": tuple(f"D{k}" for k in index)}
    tiles: set[str] = set()
    if kind is Split:
        start = fields["start"]
        sizes["domain"] = tuple(f"D{k}" for k in index[:start]) + tuple(f"K{k}*t{k}" for k in index[start:])
        sizes["tile"] = tuple(f"t{k}" for k in index[start:])
        tiles = set(sizes["tile"])
    elif kind is Pad:
        sizes["padded"] = tuple(f"D{k}+E{k}" for k in index)
    elif kind is AlignTail:
        sizes["alignment"] = "a"
        tiles = {"a"}
    ordered = tuple((name, sizes[name]) for name in SIZE_FIELDS[kind])
    free = sorted({n for _name, size in ordered for n in _names(size)})
    minimum = tuple((n, 1 if n in tiles else 0) for n in free)
    identity = (
        f"{kind.__name__} of rank {rank}: structure {structure!r}; sizes {ordered!r}; minimum {minimum!r}"
    )
    return Pattern(kind, structure, ordered, minimum, identity)


def _read(size: Sizes, value: Any, values: dict[str, int]) -> bool:
    """Read symbol values off ``value`` by the shape of ``size`` (``K*t`` knowing t, ``D+E`` knowing D)."""
    if isinstance(size, tuple):
        return (
            isinstance(value, tuple)
            and len(size) == len(value)
            and all(_read(s, v, values) for s, v in zip(size, value, strict=True))
        )
    if not isinstance(value, int):
        return False
    product = "*" in size
    if not product and "+" not in size:
        values.setdefault(size, value)
        return True
    parts = size.split("*" if product else "+")
    known = [n for n in parts if n in values]
    unknown = [n for n in parts if n not in values]
    if len(parts) != 2 or len(known) != 1:
        return False
    if not product:
        values[unknown[0]] = value - values[known[0]]
        return True
    if values[known[0]] > 0:
        values[unknown[0]] = value // values[known[0]]
        return True
    return False


def _value(size: Sizes, values: Mapping[str, int]) -> Any:
    """``size`` evaluated at ``values`` (``KeyError`` for a symbol without one)."""
    if isinstance(size, tuple):
        return tuple(_value(s, values) for s in size)
    if "*" in size:
        a, b = size.split("*")
        return values[a] * values[b]
    if "+" in size:
        a, b = size.split("+")
        return values[a] + values[b]
    return values[size]


def read_sizes(found: Pattern, stage: Stage) -> dict[str, int] | None:
    """The values of ``found``'s symbols read off ``stage``'s sizes (``None``: no reading fits)."""
    values: dict[str, int] = {}
    for name, size in found.sizes:
        if not _read(size, getattr(stage, name), values):
            return None
    return values


def is_pattern_instance(found: Pattern, values: Mapping[str, int], stage: Stage) -> bool:
    """Whether ``stage`` is exactly ``found`` with its symbols given ``values``.

    The kind and structure agree, every value is at least its minimum, and every size
    field evaluated at ``values`` equals ``stage``'s: then the general lemma holds for ``stage``.
    """
    if type(stage) is not found.kind:
        return False
    for name, low in found.minimum:
        value = values.get(name)
        if not isinstance(value, int) or value < low:
            return False
    if any(getattr(stage, name) != value for name, value in found.structure):
        return False
    try:
        return all(_value(size, values) == getattr(stage, name) for name, size in found.sizes)
    except KeyError:
        return False


def instance_of(stage: Stage) -> Pattern | None:
    """The general stage (as a :class:`Pattern`) that ``stage`` is an instance of, if any.

    Plain integers only: no SymPy.
    """
    structure = _structure(stage)
    if structure is None:
        return None
    found = pattern(*structure)
    values = read_sizes(found, stage)
    return found if values is not None and is_pattern_instance(found, values, stage) else None


# ------------------------------------------------------------- general stages (SymPy)
def _sympy_size(size: Sizes) -> Any:
    """A pattern size as SymPy, unevaluated: evaluating runs SymPy's flatten, whose first
    call imports SymPy's matrix and tensor modules (tens of ms in a fresh process)."""
    if isinstance(size, tuple):
        return tuple(_sympy_size(s) for s in size)
    if "*" in size:
        return sympy.Mul(*(dim_symbol(n) for n in size.split("*")), evaluate=False)
    if "+" in size:
        return sympy.Add(*(dim_symbol(n) for n in size.split("+")), evaluate=False)
    return dim_symbol(size)


@cache
def general_stage(found: Pattern) -> GeneralStage:
    """The SymPy general stage of a pattern (cached: layouts share them)."""
    fields = dict(found.structure) | {name: _sympy_size(size) for name, size in found.sizes}
    return GeneralStage(found.kind(**fields), tuple((dim_symbol(n), low) for n, low in found.minimum))


def generalize(stage: Stage) -> tuple[GeneralStage, dict[sympy.Symbol, int]] | None:
    """The general stage ``stage`` is an instance of, and the values of its symbols.

    ``None`` for stages with symbolic sizes and for kinds without a general form (a
    subclass may compute something else, so only the exact kinds count).
    """
    structure = _structure(stage)
    if structure is None:
        return None
    found = pattern(*structure)
    values = read_sizes(found, stage)
    if values is None:
        return None
    return general_stage(found), {dim_symbol(n): v for n, v in values.items()}


def _plain_size(size: Any) -> Sizes:
    """A SymPy size field of a general stage as pattern text (``ValueError`` if it has another form)."""
    if isinstance(size, tuple):
        return tuple(_plain_one(s) for s in size)
    return _plain_one(size)


def _plain_one(size: Any) -> Size:
    if getattr(size, "is_Symbol", False):
        return str(size.name)
    args = getattr(size, "args", ())
    if len(args) == 2 and all(getattr(a, "is_Symbol", False) for a in args) and (size.is_Mul or size.is_Add):
        return ("*" if size.is_Mul else "+").join(a.name for a in args)
    raise InvalidArgumentError(f"size {size} of a general stage is not a symbol, a product or a sum of two")


def is_instance(general: GeneralStage, values: Mapping[Any, int], stage: Stage) -> bool:
    """Whether ``stage`` is exactly ``general.stage`` with its symbols given ``values``.

    Every size field is evaluated at ``values`` and compared with ``stage``'s, and every
    value must be at least its minimum: then the general lemma holds for ``stage``. (The
    general stage is read as a :class:`Pattern` and checked by :func:`is_pattern_instance`.)
    """
    kind = type(general.stage)
    if kind not in SIZE_FIELDS:
        return False
    try:
        sizes = tuple((name, _plain_size(getattr(general.stage, name))) for name in SIZE_FIELDS[kind])
    except ValueError:
        return False
    structure = tuple(
        (f.name, getattr(general.stage, f.name))
        for f in dataclasses.fields(general.stage)
        if f.compare and f.name not in SIZE_FIELDS[kind]
    )
    minimum = tuple((str(s), low) for s, low in general.minimum)
    found = Pattern(kind, structure, sizes, minimum, identity="")
    named = {str(getattr(k, "name", k)): v for k, v in values.items()}
    return is_pattern_instance(found, named, stage)


def specialize_stage(stage: Stage, values: Mapping[sympy.Symbol, int]) -> Stage:
    """``stage`` with the symbols in its sizes given ``values``: a concrete stage.

    >>> general, values = generalize(Split(domain=(3, 16), start=1, tile=(8,)))
    >>> specialize_stage(general.stage, values)
    Split(domain=(3, 16), start=1, tile=(8,))
    """
    kind = next((k for k in type(stage).__mro__ if k in SIZE_FIELDS), None)
    if kind is None:
        raise InvalidArgumentError(f"no sizes known for stage {stage.describe()}")
    fields = {name: _substitute(getattr(stage, name), values) for name in SIZE_FIELDS[kind]}
    return dataclasses.replace(stage, **fields)


def _substitute(size: Any, values: Mapping[sympy.Symbol, int]) -> Any:
    if isinstance(size, tuple):
        return tuple(_substitute(s, values) for s in size)
    value = as_sympy(size).subs(values)
    if not value.is_Integer:
        raise InvalidArgumentError(f"size {size} has no value at {dict(values)}")
    return int(value)
