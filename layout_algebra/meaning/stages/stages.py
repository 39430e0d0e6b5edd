"""The stages a layout is made of: small bijections (with padding) on index tuples.

Each stage maps an index tuple in its ``domain`` box (``0 <= x[k] < domain[k]``) to an
index tuple in its ``range`` box. It is one-to-one, and onto the range except for the
positions its ``holes`` predicate marks (padding). ``inverse`` undoes ``forward`` on
every position that is not a hole. Stages know nothing of solvers or arrays; the
arithmetic comes from an :class:`~layout_algebra.meaning.stages.arith.Arithmetic`.

The stages, each with the job it does in a layout:

==================  ====================================================================
``Transpose``       reorder dimensions (by ``minor_to_major``; tiles moved minor-most)
``PrependUnitDims`` add leading size-1 dims so a tile longer than the shape applies
``Combine``         merge runs of dimensions into one (a ``*`` in a tile)
``Pad``             grow dimensions up to a multiple of the tile (holes: the new slots)
``Split``           split each of the last ``k`` dims ``D`` into ``(D/t, t)``
``Linearize``       row-major position of a tuple in its box
``AlignTail``       round the element count up to a multiple of ``L(n)``
``ToBits``          element position to bit offset (``E(n)`` or the storage width)
==================  ====================================================================

A worked example: ``Split`` then ``Transpose`` is what a 2x2 tile does to a padded 4x6
array (the tiled-layout document's pad → reshape → transpose):

>>> split = Split(domain=(4, 6), start=0, tile=(2, 2))
>>> split.range
(2, 2, 3, 2)
>>> split.forward((3, 5))
(1, 1, 2, 1)
>>> move = Transpose(domain=split.range, permutation=(0, 2, 1, 3))
>>> move.forward(split.forward((3, 5)))
(1, 2, 1, 1)
>>> Linearize(domain=move.range).forward((1, 2, 1, 1))
(23,)
>>> split.inverse(move.inverse((1, 2, 1, 1)))
(3, 5)

Padding is a stage of its own, with the predicate that says which slots are new:

>>> pad = Pad(domain=(3, 5), padded=(4, 6))
>>> pad.holes((3, 0)), pad.holes((2, 4))
(True, False)

A dimension of extent 1 holds only index 0, so it adds nothing to any position.
``unit_free_form`` says what a stage does to the *other* dimensions (``None``: nothing);
a dimension of extent 1 that a ``Pad`` grows is not dropped there, because it is the pad
that puts the element at 0 of it and the rest of it is padding:

>>> Split(domain=(4, 6), start=0, tile=(1, 2)).unit_free_form()   # (4,6) -> (4,1,3,2)
('digits', (4, 6), ((0, 1, 4), (1, 2, 3), (1, 1, 2)))
>>> Split(domain=(1, 8), start=1, tile=(8,)).unit_free_form() is None   # (1,8) -> (1,1,8)
True
>>> Pad(domain=(2, 1, 2), padded=(2, 2, 2)).unit_free_form()
('pad', ((2, 2), (1, 2), (2, 2)))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import Dim

__all__ = [
    "AlignTail",
    "Combine",
    "Linearize",
    "Pad",
    "PrependUnitDims",
    "Split",
    "Stage",
    "ToBits",
    "Transpose",
    "ceil_div",
    "round_up_size",
]

Index = tuple[Any, ...]


def _shown(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


@dataclass(frozen=True)
class Stage:
    """One step of a layout: ``domain`` box → ``range`` box, one-to-one.

    Subclasses define ``range``, ``forward``, ``inverse`` and, if some range positions
    are not images, ``holes``. ``role`` says what the stage does in its layout (for
    explanations), e.g. ``"tile 1: (8,128)"``.
    """

    domain: tuple[Dim, ...]

    @property
    def range(self) -> tuple[Dim, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:  # pragma: no cover
        raise NotImplementedError

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:  # pragma: no cover
        raise NotImplementedError

    def holes(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
        """Whether range position ``y`` is padding (no domain point maps there)."""
        return False

    @property
    def has_holes(self) -> bool:
        """Whether some range position may be padding."""
        return False

    def carried_dimension(self, k: int) -> int | None:
        """The range dimension that carries domain dimension ``k`` (the same index values,
        perhaps with padding after them), or ``None`` if ``k`` is merged or split."""
        return None

    def unit_free_form(self) -> tuple[Any, ...] | None:
        """What the stage does to an index with its extent-1 dimensions left out, as a
        hashable description; ``None`` when that is nothing (the identity).

        The dimensions left out are those of extent 1 in the domain and in the range:
        their index is always 0, so they add nothing to any later position. Stages with
        equal forms map equal shortened indices to equal shortened indices, so two
        pipelines whose forms agree stage by stage put every element at the same place.
        This default keeps the whole stage (its domain says where the unit dimensions
        are), which is exact for any stage and never drops anything.
        """
        return (self.name, self)

    @property
    def name(self) -> str:
        return type(self).__name__

    def describe(self) -> str:
        """One line: what the stage does, with its domain and range."""
        return f"{self.name}: {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class Transpose(Stage):
    """Reorder dimensions: ``y[j] = x[permutation[j]]``.

    >>> t = Transpose(domain=(3, 5), permutation=(1, 0))
    >>> t.range, t.forward((2, 4)), t.inverse((4, 2))
    ((5, 3), (4, 2), (2, 4))
    """

    permutation: tuple[int, ...] = ()
    role: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if sorted(self.permutation) != list(range(len(self.domain))):
            raise InvalidArgumentError(
                f"{self.permutation} is not a permutation of {len(self.domain)} dimensions"
            )

    @property
    def range(self) -> tuple[Dim, ...]:
        return tuple(self.domain[p] for p in self.permutation)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return tuple(x[p] for p in self.permutation)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        x: list[Any] = [None] * len(y)
        for j, p in enumerate(self.permutation):
            x[p] = y[j]
        return tuple(x)

    def carried_dimension(self, k: int) -> int:
        return self.permutation.index(k)

    @property
    def is_identity(self) -> bool:
        return self.permutation == tuple(range(len(self.permutation)))

    def unit_free_form(self) -> tuple[Any, ...] | None:
        """The order of the dimensions of extent other than 1.

        >>> Transpose(domain=(1, 4, 2), permutation=(2, 0, 1)).unit_free_form()
        ('transpose', (4, 2), (1, 0))
        >>> Transpose(domain=(4, 1, 2), permutation=(1, 0, 2)).unit_free_form() is None
        True
        """
        if 1 in self.domain:
            rank = _ranks_of_non_unit(self.domain)
            permutation = tuple(rank[p] for p in self.permutation if p in rank)
        else:
            permutation = self.permutation
        if all(p == r for r, p in enumerate(permutation)):
            return None
        return ("transpose", _non_unit(self.domain), permutation)

    def describe(self) -> str:
        return f"{self.role or 'transpose'}: order {self.permutation}, {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class PrependUnitDims(Stage):
    """Add ``count`` leading dimensions of size 1 (a tile longer than the shape).

    >>> PrependUnitDims(domain=(5,), count=1).forward((3,))
    (0, 3)
    """

    count: int = 0

    @property
    def range(self) -> tuple[Dim, ...]:
        return (1,) * self.count + tuple(self.domain)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return (0,) * self.count + tuple(x)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return tuple(y[self.count :])

    def carried_dimension(self, k: int) -> int | None:
        return k + self.count

    def unit_free_form(self) -> None:
        """Nothing: the new dimensions have extent 1."""
        return None

    def describe(self) -> str:
        return f"prepend {self.count} unit dim(s): {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class Combine(Stage):
    """Merge each group of consecutive dimensions into one, row-major within the group.

    ``groups`` partitions ``range(len(domain))`` into consecutive runs; a run of
    length 1 is left as it is. This is what ``*`` entries of a tile do.

    >>> c = Combine(domain=(2, 7, 8, 11, 10), groups=((0, 1, 2), (3, 4)))
    >>> c.range
    (112, 110)
    >>> c.forward((1, 6, 7, 10, 9)), c.inverse((111, 109))
    ((111, 109), (1, 6, 7, 10, 9))
    """

    groups: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        flat = [i for g in self.groups for i in g]
        if flat != list(range(len(self.domain))) or any(not g for g in self.groups):
            raise InvalidArgumentError(
                f"groups {self.groups} must split {len(self.domain)} dimensions into runs"
            )

    @property
    def range(self) -> tuple[Dim, ...]:
        return tuple(math.prod((self.domain[i] for i in g), start=1) for g in self.groups)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        out = []
        for g in self.groups:
            value = x[g[0]]
            for i in g[1:]:
                value = value * ar.lift(self.domain[i]) + x[i]
            out.append(value)
        return tuple(out)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        x: list[Any] = []
        for g, value in zip(self.groups, y, strict=True):
            parts = []
            for i in reversed(g[1:]):
                parts.append(_mod(ar, value, self.domain[i]))
                value = _floordiv(ar, value, self.domain[i])
            parts.append(value)
            x.extend(reversed(parts))
        return tuple(x)

    def carried_dimension(self, k: int) -> int | None:
        """The group of ``k`` if ``k`` is alone in it; ``None`` if merged with others.

        >>> c = Combine(domain=(2, 7, 8), groups=((0,), (1, 2)))
        >>> c.carried_dimension(0), c.carried_dimension(1)
        (0, None)
        """
        group = next(j for j, g in enumerate(self.groups) if k in g)
        return group if len(self.groups[group]) == 1 else None

    def unit_free_form(self) -> tuple[Any, ...] | None:
        """The merged runs of the dimensions of extent other than 1 (a unit member adds
        ``0 * size`` to its group; a group of unit members has extent 1).

        >>> Combine(domain=(1, 7, 1, 8), groups=((0, 1), (2, 3))).unit_free_form() is None
        True
        >>> Combine(domain=(2, 1, 8), groups=((0, 1, 2),)).unit_free_form()
        ('combine', (2, 8), ((0, 1),))
        """
        rank = _ranks_of_non_unit(self.domain)
        groups = tuple(g for g in (tuple(rank[i] for i in group if i in rank) for group in self.groups) if g)
        if all(len(g) == 1 for g in groups):
            return None
        return ("combine", _non_unit(self.domain), groups)

    def describe(self) -> str:
        merged = ", ".join("x".join(str(self.domain[i]) for i in g) for g in self.groups if len(g) > 1)
        return f"combine (*) {merged}: {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class Pad(Stage):
    """Grow dimensions to ``padded`` (each ``>=`` the original); new slots are holes.

    >>> p = Pad(domain=(3, 5), padded=(4, 6))
    >>> p.forward((2, 4)), p.inverse((2, 4)), p.holes((0, 5))
    ((2, 4), (2, 4), True)
    """

    padded: tuple[Dim, ...] = ()

    def __post_init__(self) -> None:
        if len(self.padded) != len(self.domain):
            raise InvalidArgumentError(f"padding {self.padded} does not match dimensions {self.domain}")

    @property
    def range(self) -> tuple[Dim, ...]:
        return tuple(self.padded)

    @property
    def grown(self) -> tuple[int, ...]:
        """The dimensions whose size grows (symbolic ones whose size may grow)."""
        return tuple(k for k, (d, p) in enumerate(zip(self.domain, self.padded, strict=True)) if d != p)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return tuple(x)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return tuple(y)

    def holes(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
        return ar.any_of(ar.ge(y[k], ar.lift(self.domain[k])) for k in self.grown)

    def carried_dimension(self, k: int) -> int | None:
        return k

    def unit_free_form(self) -> tuple[Any, ...] | None:
        """``(size, padded size)`` of each dimension padded to extent other than 1; a
        ``(1, t)`` is a unit dimension grown to ``t`` (the element at 0, padding after it).

        >>> Pad(domain=(1, 3, 5), padded=(1, 4, 5)).unit_free_form()
        ('pad', ((3, 4), (5, 5)))
        >>> Pad(domain=(1, 5), padded=(1, 5)).unit_free_form() is None
        True
        """
        if not self.grown:
            return None
        return ("pad", tuple((d, p) for d, p in zip(self.domain, self.padded, strict=True) if p != 1))

    @property
    def has_holes(self) -> bool:
        return bool(self.grown)

    def describe(self) -> str:
        return f"pad: {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class Split(Stage):
    """Split each of the dims ``start, start+1, ...`` (``len(tile)`` of them) into two.

    Dimension ``D`` (a multiple of ``t``) becomes ``(D/t, t)``: index ``x`` becomes
    ``(⌊x/t⌋, x mod t)``, the tile number and the position inside the tile. The pairs
    stay interleaved (``q1, t1, q2, t2``); a ``Transpose`` then moves the ``t``'s last.
    """

    start: int = 0
    tile: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.start + len(self.tile) != len(self.domain):
            raise InvalidArgumentError(
                f"tile {self.tile} at {self.start} does not cover the end of {self.domain}"
            )

    @property
    def range(self) -> tuple[Dim, ...]:
        out = list(self.domain[: self.start])
        for d, t in zip(self.domain[self.start :], self.tile, strict=True):
            out += [_exact_quotient(d, t), t]
        return tuple(out)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        out = list(x[: self.start])
        for e, t in zip(x[self.start :], self.tile, strict=True):
            size = ar.lift(t)
            out += [ar.floordiv(e, size), ar.mod(e, size)]
        return tuple(out)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        out = list(y[: self.start])
        pairs = y[self.start :]
        for k, t in enumerate(self.tile):
            out.append(pairs[2 * k] * t + pairs[2 * k + 1])
        return tuple(out)

    def carried_dimension(self, k: int) -> int | None:
        return k if k < self.start else None

    def unit_free_form(self) -> tuple[Any, ...] | None:
        """Each range dimension of extent other than 1 as a digit ``(source, divisor,
        extent)`` of the shortened domain: its index is ``⌊x[source] / divisor⌋ mod extent``
        (a dimension left whole is ``(k, 1, D)``, a tile number ``(k, t, D/t)``, a
        position in the tile ``(k, 1, t)``). ``None`` when every digit is a whole dimension
        in order: a split by 1, or of a dimension by its own size, moves nothing.

        >>> Split(domain=(3, 4, 8), start=1, tile=(4, 2)).unit_free_form()
        ('digits', (3, 4, 8), ((0, 1, 3), (1, 1, 4), (2, 2, 4), (2, 1, 2)))
        """
        rank = _ranks_of_non_unit(self.domain)
        digits = [(rank[k], 1, self.domain[k]) for k in range(self.start) if k in rank]
        whole = len(digits)  # the digits so far are whole dimensions, in order
        for k, t in enumerate(self.tile, start=self.start):
            if k in rank:
                quotient = _exact_quotient(self.domain[k], t)
                if quotient != 1:
                    digits.append((rank[k], t, quotient))
                if t != 1:
                    digits.append((rank[k], 1, t))
                if quotient == 1 or t == 1:
                    whole += 1
        if whole == len(digits) == len(rank):
            return None
        return ("digits", _non_unit(self.domain), tuple(digits))

    def describe(self) -> str:
        tile = "(" + ",".join(map(str, self.tile)) + ")"
        return f"split by {tile}: {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class Linearize(Stage):
    """Row-major position of a tuple in its box: ``(x_1..x_n) -> x_1 d_2..d_n + ... + x_n``.

    >>> Linearize(domain=(2, 3, 2, 2)).forward((1, 1, 0, 1))
    (17,)
    >>> Linearize(domain=(2, 3, 2, 2)).inverse((17,))
    (1, 1, 0, 1)
    """

    @property
    def range(self) -> tuple[Dim, ...]:
        return (math.prod(self.domain, start=1),)

    @property
    def strides(self) -> tuple[Dim, ...]:
        """The row-major stride of each dimension: the product of the sizes after it.

        >>> Linearize(domain=(2, 3, 4)).strides
        (12, 4, 1)
        """
        return tuple(math.prod(self.domain[k + 1 :], start=1) for k in range(len(self.domain)))

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        value: Any = 0
        for e, d in zip(x, self.domain, strict=True):
            value = value * ar.lift(d) + e
        return (ar.mixed_radix(value, tuple(x), self.domain),)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        (value,) = y
        if not self.domain:
            return ()
        parts = []
        for d in reversed(self.domain[1:]):
            parts.append(_mod(ar, value, d))
            value = _floordiv(ar, value, d)
        parts.append(value)
        return tuple(reversed(parts))

    def unit_free_form(self) -> tuple[Any, ...]:
        """Row-major over the dimensions of extent other than 1 (the same position).

        >>> Linearize(domain=(1, 3, 1, 4)).unit_free_form()
        ('linearize', (3, 4))
        """
        return ("linearize", _non_unit(self.domain))

    def describe(self) -> str:
        return f"linearize row-major: {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class AlignTail(Stage):
    """Round the element count up to a multiple of ``alignment`` (``L(n)``); the tail is padding.

    >>> a = AlignTail(domain=(5,), alignment=1024)
    >>> a.range, a.holes((7,)), a.holes((4,))
    ((1024,), True, False)
    """

    alignment: int = 1

    @property
    def range(self) -> tuple[Dim, ...]:
        (n,) = self.domain
        return (round_up_size(n, self.alignment),)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return tuple(x)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return tuple(y)

    def holes(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
        return ar.ge(y[0], ar.lift(self.domain[0]))

    @property
    def has_holes(self) -> bool:
        return self.range != tuple(self.domain)

    def unit_free_form(self) -> None:
        """Nothing: every element keeps its position (the padding is after the last one;
        the buffer's size is a question of its own)."""
        return None

    def describe(self) -> str:
        return f"tail padding L({self.alignment}): {_shown(self.domain)} -> {_shown(self.range)}"


@dataclass(frozen=True)
class ToBits(Stage):
    """Element position → bit offset: ``p -> p * bits``.

    The inverse maps any bit offset to the element whose bits hold it, so ``inverse``
    is a left inverse (``inverse(forward(p)) == p``) and bits inside an element are not
    holes.

    >>> b = ToBits(domain=(8,), bits=4)
    >>> b.range, b.forward((3,)), b.inverse((13,))
    ((32,), (12,), (3,))
    """

    bits: int = 8

    @property
    def range(self) -> tuple[Dim, ...]:
        return (self.domain[0] * self.bits,)

    def forward(self, x: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return (x[0] * self.bits,)

    def inverse(self, y: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Index:
        return (ar.floordiv(y[0], self.bits),)

    def unit_free_form(self) -> tuple[Any, ...]:
        """The element size: positions times ``bits``.

        >>> ToBits(domain=(8,), bits=4).unit_free_form()
        ('to bits', 4)
        """
        return ("to bits", self.bits)

    def describe(self) -> str:
        return f"to bits ({self.bits} per element): {_shown(self.domain)} -> {_shown(self.range)}"


def _non_unit(dims: Sequence[Dim]) -> tuple[Dim, ...]:
    """The extents other than 1, in order."""
    return tuple(dims) if 1 not in dims else tuple(d for d in dims if d != 1)


def _ranks_of_non_unit(dims: Sequence[Dim]) -> dict[int, int]:
    """Each dimension of extent other than 1 → its place among them.

    >>> _ranks_of_non_unit((4, 1, 2, 1))
    {0: 0, 2: 1}
    """
    if 1 not in dims:
        return dict(zip(range(len(dims)), range(len(dims)), strict=True))
    return {k: r for r, k in enumerate(k for k, d in enumerate(dims) if d != 1)}


def _mod(ar: Arithmetic, value: Any, d: Dim) -> Any:
    """``value mod d``; an empty dimension (``d == 0``) has no positions, so any value will do."""
    return value if isinstance(d, int) and d == 0 else ar.mod(value, ar.lift(d))


def _floordiv(ar: Arithmetic, value: Any, d: Dim) -> Any:
    return value if isinstance(d, int) and d == 0 else ar.floordiv(value, ar.lift(d))


def ceil_div(a: Dim, b: Dim) -> Dim:
    """``ceil(a / b)`` for non-negative ints, or a SymPy ``ceiling`` for symbolic sizes.

    >>> ceil_div(17, 8), ceil_div(16, 8)
    (3, 2)
    """
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    import sympy

    return sympy.ceiling(sympy.Integer(a) / b if isinstance(a, int) else a / b)


def round_up_size(n: Dim, m: int) -> Dim:
    """The least multiple of ``m`` that is ``>= n``; a symbolic ``n`` that is provably a
    multiple of ``m`` stays as it is (no ``ceiling`` around it).

    >>> round_up_size(5, 4), round_up_size(8, 4)
    (8, 8)
    """
    if isinstance(n, int):
        return -(-n // m) * m
    import sympy

    from layout_algebra.model.symbols import as_sympy

    if (as_sympy(n) / m).is_integer:
        return n
    return sympy.ceiling(n / m) * m


def _exact_quotient(d: Dim, t: int) -> Dim:
    """``d / t`` where ``d`` is a multiple of ``t`` (a padded size).

    A product with ``t`` among its two factors (a general stage's ``K*t``, or ``8*N``) is
    divided by taking the other factor: SymPy's division would evaluate a product, whose
    first evaluation in a process imports ``sympy.tensor`` (20-45 ms).

    >>> import sympy
    >>> k, t = sympy.symbols("K t", integer=True, nonnegative=True)
    >>> _exact_quotient(sympy.Mul(k, t, evaluate=False), t), _exact_quotient(8 * k, 8), _exact_quotient(k, 2)
    (K, K, K/2)
    """
    if isinstance(d, int):
        if d % t:
            raise InvalidArgumentError(f"dimension {d} is not a multiple of the tile size {t}; pad it first")
        return d // t
    from layout_algebra.model.symbols import as_sympy

    expr = as_sympy(d)
    if expr.is_Mul and len(expr.args) == 2 and t in expr.args:
        first, second = expr.args
        return second if first == t else first
    return expr / t
