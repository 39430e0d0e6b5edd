"""Peeling tile levels off positions: the moves of the backwards search that recovers a layout.

:mod:`layout_algebra.meaning.recover` reads an XLA layout back from the positions of its
digits by running the tiling backwards. One *peel* undoes one tile level: the last ``t``
positions are the in-tile digits, the ``t`` before them their tile numbers, and merging
each pair (``x = T·⌊x/T⌋ + x mod T``) leaves one position per dimension of the level
before. This module holds the peels (exact, loose, with a unit tile number, riffled),
the merge of one pair, the base case (every dimension one whole position) and the
bounded deep search; ``recover`` orders them, checks every answer and explains refusals.

>>> from layout_algebra.meaning.recover import positions_of
>>> positions = positions_of("f32[16,256]{1,0:T(8,128)}")
>>> [(tile, [str(p) for p in rest]) for tile, rest in exact_peels(positions, (16, 256))][:1]
[((8, 128), ['i0 (extent 16)', 'i1 (extent 256)'])]
>>> base_solution(positions_of("f32[16,256]{1,0}"), (16, 256), exact=True).order
(0, 1)
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from layout_algebra.meaning.digits import Digit as Position
from layout_algebra.meaning.stages.stages import ceil_div

__all__ = [
    "DEEP_LEVELS",
    "DEEP_LIMIT",
    "Solution",
    "base_solution",
    "deep_solutions",
    "exact_peels",
    "full_order",
    "loose_peels",
    "normal_position",
]


@dataclass(frozen=True)
class Solution:
    order: tuple[int, ...]  # physical order of the logical dims, major to minor (dims present)
    prepended: int  # leading unit positions left at the base
    tiles: tuple[tuple[int, ...], ...]  # in application order

    @functools.cached_property
    def key(self) -> tuple[Any, ...]:
        entries = [t for tile in self.tiles for t in tile]
        return (len(self.tiles), len(entries), entries.count(1), sum(entries), self.tiles)


def normal_position(p: Position, dims: Sequence[int]) -> Position:
    """``p`` with a modulus that never wraps dropped: ``⌊i/4⌋ mod 2`` is ``⌊i/4⌋`` when ``i < 8``."""
    if p.dim is not None and p.modulus is not None and p.modulus >= ceil_div(dims[p.dim], p.weight):
        return Position(p.dim, p.weight, None, p.extent)
    return p


@functools.lru_cache(maxsize=1 << 14)
def _merges(outer: Position | None, inner: Position, dims: tuple[int, ...]) -> tuple[Position, ...]:
    """Every position ``x`` with ``⌊x/T⌋ = outer`` and ``x mod T = inner`` (``T = inner.extent``).

    ``outer is None``: the tile number is missing (CuTe dropped it as a size-1 mode).
    Where the data does not say how far ``x`` was padded before this tile, both the
    unpadded extent and the whole tile are tried. A pure function of its arguments, asked
    the same question many times by the searches: its answers are kept.
    """
    return tuple(_merged(outer, inner, dims))


def _merged(outer: Position | None, inner: Position, dims: tuple[int, ...]) -> list[Position]:
    t = inner.extent
    out = []
    if inner.dim is None or (t == 1 and inner.size(dims) == 1):  # a T=1 slot: x is the outer position
        if t != 1:
            return []
        out.append(outer if outer is not None else Position(None))
        if inner.dim is None:
            return out
    same_digit = outer is not None and outer.dim == inner.dim and outer.weight == inner.weight * t
    if outer is None or outer.dim is None or (outer.size(dims) == 1 and not same_digit):
        # the tile number is always 0: x < T is the in-tile digit
        if outer is not None and outer.extent != 1:
            return out
        for extent in sorted({inner.size(dims), t}):
            out.append(normal_position(Position(inner.dim, inner.weight, inner.modulus, extent), dims))
        return out
    fills_tile = inner.modulus == t or (inner.modulus is None and inner.size(dims) <= t)
    if not same_digit or not fills_tile:
        return out
    if outer.modulus is not None:
        return [normal_position(Position(inner.dim, inner.weight, outer.modulus * t, outer.extent * t), dims)]
    size = Position(inner.dim, inner.weight).size(dims)
    extents = {outer.extent * t} | ({size} if (outer.extent - 1) * t < size else set())
    return [Position(inner.dim, inner.weight, None, e) for e in sorted(extents) if e >= size]


def base_solution(positions: tuple[Position, ...], dims: Sequence[int], exact: bool) -> Solution | None:
    prepended = 0
    while prepended < len(positions) and positions[prepended] == Position(None):
        prepended += 1
    order = []
    for p in positions[prepended:]:
        if p.dim is None or p.dim in order or (p.weight != 1 and dims[p.dim] != 1):
            return None
        if p.modulus is not None and p.modulus < dims[p.dim]:
            return None
        if p.extent != dims[p.dim]:
            return None
        order.append(p.dim)
    needed = set(range(len(dims))) if exact else {k for k, d in enumerate(dims) if d != 1}
    if not needed <= set(order):
        return None
    if not exact and prepended:
        return None
    return Solution(tuple(order), prepended, ())


#: A peel: the tile it undoes, and the positions left.
_Peel = tuple[tuple[int, ...], tuple[Position, ...]]


def exact_peels(positions: tuple[Position, ...], dims: tuple[int, ...]) -> Iterator[_Peel]:
    n = len(positions)
    for t in range(1, n // 2 + 1):
        inner, outer = positions[n - t :], positions[n - 2 * t : n - t]
        options = [_merges(o, i, dims) for o, i in zip(outer, inner, strict=True)]
        for merged in itertools.islice(itertools.product(*options), 16):
            yield tuple(i.extent for i in inner), positions[: n - 2 * t] + merged


def loose_peels(positions: tuple[Position, ...], dims: tuple[int, ...], wide: bool) -> Iterator[_Peel]:
    """Peels where positions of extent 1 may be missing (CuTe drops size-1 modes);
    ``wide``: see :func:`_unit_number_peels`."""
    n = len(positions)
    for r in range(1, n + 1):
        inner, rest = positions[n - r :], positions[: n - r]
        partners: list[int | None] = []
        for p in inner:
            if p.dim is None:
                break
            want = p.weight * p.extent
            found = [k for k, q in enumerate(rest) if q.dim == p.dim and q.weight == want]
            higher = [q for q in rest if q.dim == p.dim and q.weight > p.weight]
            if found and p.modulus == p.extent:
                partners.append(found[0])
            elif (p.modulus is not None or not higher) and p.size(dims) <= p.extent:
                partners.append(None)
            else:
                break
        else:
            present = [k for k in partners if k is not None]
            if present != sorted(present) or len(set(present)) != len(present):
                continue
            start = present[0] if present else len(rest)
            # the tile's slots: the region's positions in order (those without an in-tile
            # partner are T=1 slots), missing tile numbers just before the next present one
            k_to_inner = {k: j for j, k in enumerate(partners) if k is not None}
            queue = list(range(len(inner)))
            slots: list[tuple[Position | None, Position | None]] = []
            for k in range(start, len(rest)):
                j = k_to_inner.get(k)
                if j is None:
                    slots.append((rest[k], None))
                    continue
                while queue[0] != j:
                    slots.append((None, inner[queue.pop(0)]))
                queue.pop(0)
                slots.append((rest[k], inner[j]))
            slots.extend((None, inner[j]) for j in queue)
            tile = tuple(1 if i is None else i.extent for _, i in slots)
            options = [
                _merges(o, i, dims) if i is not None else [o] if o is not None else [] for o, i in slots
            ]
            for merged in itertools.islice(itertools.product(*options), 16):
                new = rest[:start] + merged
                if len(new) < n or sum(p.extent for p in new) < sum(p.extent for p in positions):
                    yield tile, new
    yield from _unit_number_peels(positions, dims, wide)


def _unit_number_peels(positions: tuple[Position, ...], dims: tuple[int, ...], wide: bool) -> Iterator[_Peel]:
    """Peels of a tile level whose one in-tile digit has a tile number of extent 1.

    The last position ``x mod T`` may be a whole dimension of the previous level's tile
    (tile number ``⌊x/T⌋`` of extent 1, which CuTe leaves out) taken by a tile whose other
    entries are 1, over the positions just above it: ``(2,1)`` in
    ``bf16[4,4,2]{0,1,2:T(2,2,2)(2,1)}`` puts ``i1 mod 2`` under ``i0 mod 2``. Undoing it
    moves the digit up, to the tile's first slot; the positions are the same, reordered, so
    the search guards against going round in circles. It may move up past one digit of its
    own dimension, and no further: ``(3,1)`` in ``f32[4,6]{1,0:T(2)(3,1)}`` puts ``⌊i1/2⌋``
    under ``i1 mod 2``. Only with ``wide``, which also reads a whole-dimension position: that
    search reaches more layouts but has many more states, so it runs only after the narrow
    one found nothing (``f32[1,1,4,8]{0,3,1,2:T(2,2,4,8)}`` took 35 ms narrow, and the wide
    search alone ran out of states after 3.4 s).
    """
    n = len(positions)
    if n < 2:
        return
    p = positions[-1]
    if p.dim is None or p.size(dims) > p.extent:
        return
    if p.modulus != p.extent and (not wide or p.modulus is not None):
        return
    for start in range(n - 2, -1, -1):
        above = positions[start]
        if above.dim is None or (above.dim == p.dim and not wide):
            break
        tile = (p.extent,) + (1,) * (n - 1 - start)
        yield tile, (*positions[:start], p, *positions[start : n - 1])
        if above.dim == p.dim:  # a digit of its own dimension: moved above it, no further
            break


#: The most tile levels the deep search tries (every bit permutation of a 4x4 array needs at most 3).
DEEP_LEVELS = 4


#: How many states one deep search may visit (padded digits multiply the riffles).
DEEP_LIMIT = 200


def deep_solutions(
    positions: tuple[Position, ...],
    dims: tuple[int, ...],
    depth: int,
    *,
    ends_with_unit: bool = False,
    majormost: int | None = None,
    limit: int | None = None,
) -> list[Solution]:
    """Solutions of at most ``depth`` tile levels, by every riffle: complete where no digit is padded.

    The state space is bounded by the depth, not guarded by a path (a state met again at a
    smaller depth is searched again), so no solution is lost to a state first met on a
    cycle. Past :data:`DEEP_LIMIT` states the search stops and keeps what it found.
    ``majormost``: only solutions storing that dimension majormost. ``limit``: the most
    states visited (default :data:`DEEP_LIMIT`).
    ``ends_with_unit``: only solutions whose last tile ends with an entry 1 (which leaves an
    always-0 position minor-most, for a level to pad: :func:`_recover`).
    """
    visited = 0
    memo: dict[tuple[tuple[Position, ...], int], tuple[Solution, ...]] = {}

    def search(state: tuple[Position, ...], left: int) -> tuple[Solution, ...]:
        nonlocal visited
        key = (state, left)
        if key in memo:
            return memo[key]
        visited += 1
        if visited > (DEEP_LIMIT if limit is None else limit):
            return ()
        found = []
        base = base_solution(state, dims, False)
        if base is not None and (majormost is None or base.order[:1] == (majormost,)):
            found.append(base)
        top = ends_with_unit and left == depth
        if top:
            found.clear()  # a base has no entry 1 to end with
        if left > 0:
            peels = _deep_peels(state, dims)
            if top:  # the last level: an entry 1 minor-most (maybe over an extent-1 position
                # the tile covers, which _realized adds), maybe over the whole of the state
                peels = (((1,), state), *(peel for peel in peels if peel != ((1,), state)))
            for tile, rest in peels:
                if rest == state and not top:
                    continue
                for s in search(rest, left - 1):
                    found.append(Solution(s.order, s.prepended, (*s.tiles, tile)))
        found.sort(key=lambda s: s.key)
        memo[key] = result = tuple(found[:8])
        return result

    return list(search(positions, depth))


@functools.lru_cache(maxsize=1 << 12)
def _deep_peels(state: tuple[Position, ...], dims: tuple[int, ...]) -> tuple[_Peel, ...]:
    """The deep search's peels of ``state``, each once, in the order they are tried: every
    riffle, then the loose peels. A state is met at several depths left and by the search
    of each depth (fewest levels first): its peels are found once."""
    return tuple(dict.fromkeys(itertools.chain(_riffle_peels(state, dims), loose_peels(state, dims, True))))


def _riffle_peels(positions: tuple[Position, ...], dims: tuple[int, ...]) -> Iterator[_Peel]:
    """Every way the last positions can be one tile level: a riffle of its tile numbers and in-tile digits.

    One tile level over the positions ``P`` (the suffix it covers) leaves, once the
    extent-1 positions CuTe drops are gone, the tile numbers of ``P`` in their order
    followed by the in-tile digits in theirs: an entry 1 leaves a position where it was,
    an entry as large as it moves it whole to the end, and an entry in between splits it
    into its high digit (kept) and its low digit (at the end). Undoing a level therefore
    cuts the last positions into highs ``positions[a:c]`` and lows ``positions[c:]`` and
    interleaves them back, a low merging with the high digit just above it where they
    pair up. ``f32[4,4]{0,1:T(2)(2,1)}`` stores ``i1, i0 mod 2, ⌊i0/2⌋``: the lows
    ``⌊i0/2⌋`` go back above the highs ``i0 mod 2`` with the tile ``(2,1)``:

    >>> peels = _riffle_peels((Position(1, 1, None, 4), Position(0, 1, 2, 2), Position(0, 2, None, 2)), (4, 4))
    >>> [(tile, ", ".join(map(str, rest))) for tile, rest in peels if tile == (2, 1)]
    [((2, 1), 'i1 (extent 4), ⌊i0/2⌋ (extent 2), i0 mod 2 (extent 2)')]
    """
    n = len(positions)
    for a in range(n - 1):
        for c in range(a + 1, n):
            highs, lows = positions[a:c], positions[c:]
            for slots in itertools.islice(_interleavings(highs, lows, dims), 256):
                tile = tuple(1 if i is None else i.extent for _, i in slots)
                options = [_merges(o, i, dims) if i is not None else [o] for o, i in slots]
                for merged in itertools.islice(itertools.product(*options), 16):
                    yield tile, positions[:a] + tuple(p for p in merged if p is not None)


def _interleavings(
    highs: tuple[Position, ...], lows: tuple[Position, ...], dims: tuple[int, ...]
) -> Iterator[tuple[tuple[Position | None, Position | None], ...]]:
    """The tile's slots, major to minor: each high alone (entry 1), each low alone (its
    tile number dropped) or a high with the low it merges with, both kept in order."""
    if not highs and not lows:
        yield ()
        return
    if highs and lows and highs[0].dim == lows[0].dim and _merges(highs[0], lows[0], dims):
        for rest in _interleavings(highs[1:], lows[1:], dims):
            yield ((highs[0], lows[0]), *rest)
    if highs:
        for rest in _interleavings(highs[1:], lows, dims):
            yield ((highs[0], None), *rest)
    if lows and _merges(None, lows[0], dims):
        for rest in _interleavings(highs, lows[1:], dims):
            yield ((None, lows[0]), *rest)


def full_order(order: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """The physical order with the dims missing from ``order`` (size 1) put back majormost.

    The tiles of a solution were found on the dims in ``order``: the first tile covers
    the minor-most ``len(tile)`` of them. A size-1 dim put back among those would take a
    tile entry meant for another dim (``T(2,1)`` found on the order ``(1, 0)`` of
    ``f32[2,4,1]`` must still tile dims 1 and 0, not 0 and 2). Put back majormost, a
    size-1 dim is either untiled or covered where the tile would have prepended a unit
    dim, which is the same thing: every element keeps its offset and the buffer its size.

    >>> full_order((1, 0), 3)
    (2, 1, 0)
    """
    missing = tuple(k for k in range(rank) if k not in order)
    return missing + tuple(order)
