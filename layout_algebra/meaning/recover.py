"""Recover an XLA layout from where it puts each element: the inverse problem behind ``from_*``.

A CuTe ``shape:stride`` or an MLIR ``affine_map`` says *where* each element goes; XLA
says it with ``minor_to_major`` and tiles. To read one back as the other, this module
works on **digits**. A tiled layout takes each logical index ``i_k`` apart into
mixed-radix digits ``⌊i_k / w⌋ mod m`` (tile number, position in tile, ...) and gives
every digit a place (a *position*) in the tiled shape, which is then linearized
row-major. ``bf16[16,256]{1,0:T(8,128)(2,1)}`` has the tiled shape
``[2, 2, 4, 128, 2, 1]`` and these positions, major to minor:

>>> from layout_algebra.meaning.recover import positions_of, recover_layout
>>> for p in positions_of("bf16[16,256]{1,0:T(8,128)(2,1)}"):
...     print(p)
⌊i0/8⌋ (extent 2)
⌊i1/128⌋ (extent 2)
⌊i0/2⌋ mod 4 (extent 4)
i1 mod 128 (extent 128)
i0 mod 2 (extent 2)
0 (extent 1)

Recovering the layout runs the tiling backwards: the last tile's in-tile positions are
at the end, each next to nothing but its tile number; merging them
(``x = T·⌊x/T⌋ + x mod T``) undoes that tile, and so on until every logical dimension
is one position, whose order is the ``minor_to_major`` reversed:

>>> str(recover_layout("bf16", (16, 256), positions_of("bf16[16,256]{1,0:T(8,128)(2,1)}")))
'bf16[16,256]{1,0:T(8,128)(2,1)}'

With every position given (MLIR's tiled maps list them all), the answer is exact. CuTe
leaves out positions of extent 1 (a size-1 mode says nothing), so ``exact=False`` lets
the search put them back where a tile needs them; several layouts then fit, and the
simplest is chosen (fewest tile levels, then fewest tile entries, then dimensions in the order their
leading digits are stored, then fewest 1s): ``T(1,128)`` on
``f32[5,100]`` is the same map as ``T(128)``, which is what comes back.

>>> cute_like = [p for p in positions_of("f32[5,100]{1,0:T(1,128)}") if p.extent > 1]
>>> str(recover_layout("f32", (5, 100), cute_like, exact=False))
'f32[5,100]{1,0:T(128)}'

A size-1 dimension no position mentions goes back majormost, where no tile found
without it can reach it (among the tiled dimensions it would take another one's tile
entry): ``f32[2,4,1]{0,1,2:T(2,1)}`` keeps its tile on dimensions 1 and 0.

>>> cute_like = [p for p in positions_of("f32[2,4,1]{0,1,2:T(2,1)}") if p.extent > 1]
>>> str(recover_layout("f32", (2, 4, 1), cute_like, exact=False))
'f32[2,4,1]{0,1,2:T(2,1)}'

Every answer is checked by evaluating it: :func:`recover_layout` only returns a layout
whose positions are the ones asked for (and raises :class:`NotExpressible` with the
reason otherwise).

The search is not complete. A peel pairs an in-tile digit with its tile number when both
are present; the one tile level it builds whose tile number is a unit takes the last
position whole, with 1s over the positions just above it (:func:`~layout_algebra.meaning.peels._unit_number_peels`:
``(2,1)`` in ``bf16[4,4,2]{0,1,2:T(2,2,2)(2,1)}``). Other such levels are not generated:
the ``(2,1)`` of ``bf16[256,8]{0,1:T(2,128)(2,1)}`` comes back as ``T(128)(2,1,1)``. Both are
the same layout as the simpler ``T(2,1)``; ``from_cute`` and ``from_mlir_affine_map``
therefore return the :func:`~layout_algebra.decide.normal_form.normal_form` of what this module
recovers.
Room a digit leaves (more slots than values) is padding of its own dimension or of a
size-1 dimension the positions leave out, padded by a tile: ``bf16[8,1]{0,1:T(8,1)}`` is
CuTe's ``(8,1):(8,0)``, whose room below stride 8 is dimension 1 padded to 8. Each gap
may take one such dimension (up to :data:`HOLE_READINGS` readings are searched). Last,
the room may be the unit dimension a tile one entry longer than the rank prepends, padded
by that entry (:func:`_recover_with_prepended_unit`, one-level answers only). A later tile
level that pads a position again comes back (``(4)`` in ``f32[2,4]{1,0:T(3,2)(4)}`` pads
``i1 mod 2`` from 2 slots to 4). Room below the smallest stride (no size-1 dimension to
take it) is, under an untiled order, the prepended unit dimension padded
(``f32[2,2]{1,0:T(2,1,1)}`` is CuTe's ``(2,2):(4,2)``, :func:`_room_under_prepended_unit`),
else the always-0 position an entry 1 leaves minor-most, padded by a last level
(``f32[2,2]{1,0:T(3,1)(2)}`` is ``(2,2):(2,6)``, :func:`_recover_room_below`) or by an entry
of the last level itself (``f32[2,6]{0,1:T(2,1)(4,4,2)}``, :func:`_padding_room_below`).
When nothing else fits, room below the smallest stride and between digits is read as the
prepended unit dimension padded and split by a later level (``bf16[6]{0:T(4,2)(2,1)}``:
padded to 4 slots, then paired; :func:`_recover_with_padded_prepended_unit`).

When these searches find nothing, or an answer of several levels, the **deep search**
(:func:`~layout_algebra.meaning.peels.deep_solutions`) tries every riffle (:func:`~layout_algebra.meaning.peels._riffle_peels`: any cut of the last
positions into tile numbers and in-tile digits) for at most :data:`~layout_algebra.meaning.peels.DEEP_LEVELS` levels, fewest
levels first. Where no digit is padded it is complete up to that depth: all 24 permutations
of the four index bits of ``f32[4,4]`` are layouts (a brute-force enumeration finds each with
at most three levels) and all come back, ``f32[4,4]{0,1:T(2,2)(2,2,1,2)(2,1,1)}`` with both
dimensions' bits swapped among them. It stops after :data:`~layout_algebra.meaning.peels.DEEP_LIMIT` states. Over the
brute-force families of ``tests/meaning/test_recover_oracle.py`` (every order and one tile of entries
1 to 4 on small f32 and bf16 arrays, with the packing level; two levels on ``f32[4,4]`` and
``f32[2,6]``), every one of the 936 one-level and 396 two-level offset maps comes back; 61
answers are more complex than the layout the map came from (20 with more levels, e.g.
``bf16[2,6]{0,1:T(2,4,2)(2,1)}`` as ``T(4,2)(8,2)(2,1)``; the rest with more entries, e.g.
``f32[6,4]{0,1:T(1)(2,2,2)}`` as ``T(2,1)(2,1,2)``). The search is still not complete (the
deep search is bounded; always-0 room is read only in the ways above), so a refusal never
says that no layout exists, only that the search found none, and what it does not cover.

>>> below = strided_positions([(0, 1, None, 8)], (8, 1))  # i0 at stride 8, i1 left out
>>> [str(p) for p in below]
['i0 (extent 8)', 'i1 (extent 8)']
>>> str(recover_layout("bf16", (8, 1), below, exact=False))
'bf16[8,1]{1,0:T(8)}'

"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Sequence
from typing import Any

from layout_algebra.meaning.digits import Digit, digit_expr, digit_of
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.peels import (
    DEEP_LEVELS,
    DEEP_LIMIT,
    Solution,
    base_solution,
    deep_solutions,
    exact_peels,
    full_order,
    loose_peels,
    normal_position,
)
from layout_algebra.meaning.sizes import size_report, xla_shape_size
from layout_algebra.meaning.stages.stages import ceil_div
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.primitive_types import primitive_type
from layout_algebra.model.shapes import ArrayShape, Layout, Shape, Tile
from layout_algebra.model.symbols import as_sympy

__all__ = [
    "NotExpressible",
    "Position",
    "digit_expr",
    "digit_of",
    "layout_shape",
    "positions_of",
    "recover_layout",
    "strided_positions",
    "unpadded_tilings",
]

#: How many partial states the backwards search may visit before giving up.
SEARCH_LIMIT = 20_000


class NotExpressible(LayoutAlgebraError, ValueError):
    """The conversion (to or from another library's layouts) has no exact answer; the
    message says why. One class for every direction: ``to_cute``, ``from_cute``, MLIR, JAX."""


#: A position of a tiled shape is a digit with its extent: the one type, :class:`~layout_algebra.meaning.digits.Digit`.
Position = Digit


# ----------------------------------------------------------------------------- forwards
def positions_of(shape: Shape | str) -> tuple[Position, ...]:
    """The positions of ``shape``'s tiled shape, or ``NotExpressible`` where one is not a digit.

    A position is not a digit when a tile cuts a padded dimension between digits
    (``pred[5]{0:T(3)(2)}`` has the position ``⌊(i mod 3)/2⌋``) or combines dimensions (``*``).
    """
    m = layout_map(shape)
    if any(not isinstance(d, int) for d in m.shape.dimensions):
        raise NotExpressible(f"{m.shape}: symbolic sizes; give concrete dimensions")
    if any(t.has_combine_dimension for t in m.shape.effective_layout.tiles):
        raise NotExpressible(
            f"{m.shape}: a tile combines dimensions ('*'), so positions mix several logical dimensions"
        )
    out = []
    for expr, extent in zip(m.tiled_index_exprs(), m.physical_dimensions, strict=True):
        digit = digit_of(as_sympy(expr), m.shape.dimensions)
        if digit is None:
            raise NotExpressible(
                f"{m.shape}: the tiled position {expr} is not one digit ⌊i/w⌋ mod m of a dimension "
                f"(a tile cuts a padded dimension between digits)"
            )
        out.append(Position(digit[0], digit[1], digit[2], int(extent)))
    return tuple(out)


# ----------------------------------------------------------------------------- backwards
def _solutions(
    positions: tuple[Position, ...], dims: tuple[int, ...], exact: bool, wide: bool = False, depth: int = 0
) -> list[Solution]:
    """The simplest solutions the search finds; ``depth > 0``: the deep search, with every
    riffle (:func:`~layout_algebra.meaning.peels._riffle_peels`) and at most ``depth`` tile levels."""
    if depth > 0 and not exact:
        return deep_solutions(positions, dims, depth)
    visited = 0
    memo: dict[tuple[Position, ...], tuple[Solution, ...]] = {}
    # A peel may only reorder (_unit_number_peels), so the states form cycles: a state on the
    # path is cut (no solutions). A result computed below such a cut lacks what the cut state
    # leads to, yet is memoized for every later path (the wide search's "cycle issue"). Keeping
    # such results out of the memo (re-searching them) cost 2.6x the CPU over 300 random bit
    # permutations and changed no answer there nor over the 1,332 maps of the brute-force
    # families (tests/meaning/test_recover_oracle.py), so the search keeps them; the deep search, which
    # runs after it, has no such cut (it is bounded by depth instead).
    path: set[tuple[Position, ...]] = set()

    def search(state: tuple[Position, ...]) -> tuple[Solution, ...]:
        if state in memo:
            return memo[state]
        if state in path:
            return ()
        path.add(state)
        try:
            memo[state] = found = explore(state)
        finally:
            path.discard(state)
        return found

    def explore(state: tuple[Position, ...]) -> tuple[Solution, ...]:
        nonlocal visited
        visited += 1
        if visited > SEARCH_LIMIT:
            raise NotExpressible(f"the search for a tiling gave up after {SEARCH_LIMIT} states")
        found = []
        base = base_solution(state, dims, exact)
        if base is not None:
            found.append(base)
        peels = exact_peels(state, dims) if exact else loose_peels(state, dims, wide)
        for tile, rest in peels:
            for s in search(rest):
                found.append(Solution(s.order, s.prepended, (*s.tiles, tile)))
        found.sort(key=lambda s: s.key)
        return tuple(found[:8])

    return list(search(positions))


def layout_shape(
    dtype: str,
    dims: Sequence[int],
    minor_to_major: Sequence[int],
    tiles: Sequence[Sequence[int]] = (),
    element_size_in_bits: int = 0,
) -> ArrayShape:
    """An ``ArrayShape`` from its parts (``dtype`` an XLA type name).

    >>> str(layout_shape("bf16", (16, 256), (1, 0), [(8, 128), (2, 1)]))
    'bf16[16,256]{1,0:T(8,128)(2,1)}'
    """
    layout = Layout(
        tuple(minor_to_major),
        tuple(Tile(tuple(t)) for t in tiles),
        element_size_in_bits=element_size_in_bits,
    )
    return ArrayShape(primitive_type(dtype), tuple(dims), (False,) * len(dims), layout)


def unpadded_tilings(sizes: Sequence[int], levels: int) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every sequence of at most ``levels`` tiles over ``sizes`` (an array's dimensions in
    its physical order, major to minor) that pads nothing: each entry divides the size it
    tiles, and no tile is all 1s (it would change nothing). A family of layouts to try by
    brute force: with both orders of ``f32[4,4]``, three levels reach all 24 permutations of
    its four index bits. A later tile covers the minor-most dimensions of the tiled shape
    the earlier ones leave (tile numbers, then in-tile dimensions):

    >>> list(unpadded_tilings([2, 2], 1))
    [(), ((2,),), ((1, 2),), ((2, 1),), ((2, 2),)]
    >>> ((2,), (2, 1)) in unpadded_tilings([4], 2)  # i mod 2 above ⌊i/2⌋: bits swapped
    True
    """
    yield ()
    if levels <= 0:
        return
    sizes = list(sizes)
    for k in range(1, len(sizes) + 1):
        outer, suffix = sizes[: len(sizes) - k], sizes[len(sizes) - k :]
        divisors = [[d for d in range(1, n + 1) if n % d == 0] for n in suffix]
        for tile in itertools.product(*divisors):
            if set(tile) == {1}:
                continue
            after = outer + [n // t for n, t in zip(suffix, tile, strict=True)] + list(tile)
            for rest in unpadded_tilings(after, levels - 1):
                yield (tile, *rest)


def recover_layout(
    dtype: str,
    dims: Sequence[int],
    positions: Sequence[Position],
    *,
    exact: bool = True,
    element_size_in_bits: int = 0,
) -> ArrayShape:
    """The simplest XLA layout of ``dtype[dims]`` with these positions, checked; else ``NotExpressible``.

    With ``exact=False``, room a digit leaves (an extent larger than its values) may also
    be a size-1 dimension the positions leave out, padded by a tile; those readings are
    tried after the plain one.

    "Simplest", among the layouts the search finds (it is not complete, and stops at the
    first depth that gives any): fewest tile levels, then fewest tile entries in all
    (:func:`_simplicity`); among the solutions of one search, then the fewest entries 1,
    the smallest sum of entries, and the dimensions in the order their leading digits are
    stored. ``f32[4,4]{0,1:T(2,1)(4,2)}``'s map comes back as itself, not as the equal
    ``T(2,1)(4,1)(1,1)(2)``:

    >>> below = strided_positions([(0, 1, None, 8), (1, 1, 2, 2), (1, 2, None, 32)], (4, 4))
    >>> str(recover_layout("f32", (4, 4), below, exact=False))
    'f32[4,4]{0,1:T(2,1)(4,2)}'
    """
    dims = tuple(int(d) for d in dims)
    positions = tuple(normal_position(p, dims) for p in positions)
    if not exact:  # one level, the fewest room below the smallest stride can have
        one = _room_under_prepended_unit(dtype, dims, positions, element_size_in_bits)
        if one is not None:
            return one
    best = None
    for wide in (False, True):  # the narrow search first: fewer states, and what it finds is simpler
        found = _found_layouts(dtype, dims, positions, exact, element_size_in_bits, wide)
        if found:
            best = min(found, key=_simplicity)
            break
    if exact:
        if best is None:
            raise NotExpressible(_refusal(dtype, dims, positions, exact))
        return best
    # the deep search: every riffle, fewest levels first, for what the others missed or fewer levels
    levels = len(best.effective_layout.tiles) - 1 if best is not None else DEEP_LEVELS
    for depth in range(1, levels + 1):
        found = _found_layouts(dtype, dims, positions, exact, element_size_in_bits, True, depth)
        if found:
            return min(found, key=_simplicity)
    if best is None:
        best = _recover_room_below(dtype, dims, positions, element_size_in_bits)
    if best is None:
        best = _recover_with_padded_prepended_unit(dtype, dims, positions, element_size_in_bits)
    if best is None:
        raise NotExpressible(_refusal(dtype, dims, positions, exact))
    return best


def _found_layouts(
    dtype: str,
    dims: tuple[int, ...],
    positions: tuple[Position, ...],
    exact: bool,
    element_size_in_bits: int,
    wide: bool,
    depth: int = 0,
) -> list[ArrayShape]:
    """The checked layouts one search finds: the plain reading, room read as size-1
    dimensions, and a prepended unit dimension."""
    readings = [positions] if exact else [positions, *_unit_dim_holes(positions, dims)]
    found = []
    for reading in readings[: 1 + HOLE_READINGS]:
        shape = _recover(dtype, dims, reading, exact, element_size_in_bits, wide=wide, depth=depth)
        if shape is not None:
            found.append(shape)
            if len(shape.effective_layout.tiles) <= 1:
                break  # more levels: a later reading may give one level (f32[1,1,4]'s T(2)(4) or T(2,2))
    fewest = min((len(s.effective_layout.tiles) for s in found), default=2)
    if not exact and fewest > 1:  # one level may be simpler (not after a one-level answer, however found)
        shape = _recover_with_prepended_unit(dtype, dims, positions, element_size_in_bits, wide, depth)
        if shape is not None:
            found.append(shape)
    return found


def _simplicity(shape: ArrayShape) -> tuple[int, int]:
    """Fewest tile levels, then fewest tile entries: the order answers are preferred in."""
    tiles = shape.effective_layout.tiles
    return len(tiles), sum(len(t.dimensions) for t in tiles)


def _refusal(dtype: str, dims: tuple[int, ...], positions: tuple[Position, ...], exact: bool) -> str:
    """Why nothing came back: what the search tried, and what it does not cover.

    The search is not complete (see the module docstring), so a refusal never says that no
    layout exists (``bf16[6]{0:T(4,2)(2,1)}``, the prepended unit dimension padded then
    paired, was refused before :func:`_recover_with_padded_prepended_unit`).
    """
    described = ", ".join(str(p) for p in positions)
    found = (
        f"the search found no XLA layout (minor_to_major and tiles) of {dtype}{list(dims)} that puts its "
        f"elements at the positions [{described}]"
    )
    gaps = [str(p) for p in positions if p.extent > p.size(dims)]
    deep = f"every riffle of at most {DEEP_LEVELS} tile levels and {DEEP_LIMIT} states"
    if not gaps:
        return f"{found}; it does not cover every tiling (it tried {deep}), so one may still exist"
    unit = ", or of one size-1 dimension the text leaves out per gap" if not exact and 1 in dims else ""
    return (
        f"{found}; it does not cover every tiling: the room left by {', '.join(gaps)} was read as padding "
        f"of that digit's own dimension{unit}, a position padded again by a later tile level, or room "
        f"below the last digit padded by the last level, or the prepended unit dimension padded and split "
        f"by a later level, not as any other always-0 position padded between digits; "
        f"it tried {deep}, so one may still exist"
    )


#: How many readings of the room digits leave as padded size-1 dimensions are searched.
HOLE_READINGS = 8


def _unit_dim_holes(positions: tuple[Position, ...], dims: tuple[int, ...]) -> list[tuple[Position, ...]]:
    """``positions`` with the room of some digits given to size-1 dimensions they leave out.

    A digit of ``e`` slots taking ``s < e`` values may sit under a size-1 dimension padded
    to ``h`` (a tile entry ``h`` over it, in-tile position ``h`` slots, always 0): the digit
    then has ``e / h`` slots. One spare size-1 dimension per gap, fewest gaps first.

    >>> for reading in _unit_dim_holes((Position(0, 2, None, 2), Position(0, 1, 2, 8)), (4, 1)):
    ...     print(", ".join(map(str, reading)))
    ⌊i0/2⌋ (extent 2), i1 (extent 2), i0 mod 2 (extent 4)
    ⌊i0/2⌋ (extent 2), i1 (extent 4), i0 mod 2 (extent 2)
    """
    spare = [k for k, d in enumerate(dims) if d == 1 and all(p.dim != k for p in positions)]
    gaps = [j for j, p in enumerate(positions) if p.dim is not None and p.extent > p.size(dims)]
    out = []
    for count in range(1, min(len(spare), len(gaps)) + 1):
        for chosen in itertools.combinations(gaps, count):
            splits = []
            for j in chosen:
                p = positions[j]
                splits.append(
                    [h for h in range(2, p.extent + 1) if p.extent % h == 0 and p.extent // h >= p.size(dims)]
                )
            for hs in itertools.product(*splits):
                reading: list[Position] = []
                fill = dict(zip(chosen, zip(spare[:count], hs, strict=True), strict=True))
                for j, p in enumerate(positions):
                    if j in fill:
                        unit, h = fill[j]
                        reading.append(Position(unit, 1, None, h))
                        p = Position(p.dim, p.weight, p.modulus, p.extent // h)
                    reading.append(p)
                out.append(tuple(reading))
                if len(out) >= HOLE_READINGS:
                    return out
    return out


def _recover_with_prepended_unit(
    dtype: str,
    dims: tuple[int, ...],
    positions: tuple[Position, ...],
    element_size_in_bits: int,
    wide: bool = False,
    depth: int = 0,
) -> ArrayShape | None:
    """The room of a digit read as the unit dimension a tile longer than the rank prepends.

    A tile with one entry more than the array's rank tiles a unit dimension XLA puts
    majormost; an entry ``h > 1`` over it pads it to ``h`` slots, always 0, which CuTe
    leaves out as room. The search runs on the array with one more size-1 dimension (the
    hole it fills, :func:`_unit_dim_holes`); an answer that stores that dimension majormost
    is the same layout without it, and is checked again on the real dimensions. Only
    one-level answers are taken: with more levels, a simpler layout the search does not
    reach may exist (``f32[2,4]{1,0:T(3,2)(4)}`` would come back as ``T(4,3)(2,2,1)``
    here; the plain search finds it), and a refusal is better than that.
    ``f32[2,4,4]{1,0,2:T(2,2,1,4)}`` is CuTe's ``(2,4,(2,2)):(16,1,(4,32))``, whose room
    under stride 4 is the prepended unit dimension padded to 2:

    >>> cute_like = strided_positions([(0, 1, None, 16), (1, 1, None, 1), (2, 1, 2, 4), (2, 2, None, 32)], (2, 4, 4))
    >>> str(_recover_with_prepended_unit("f32", (2, 4, 4), cute_like, 0))
    'f32[2,4,4]{1,0,2:T(2,2,1,4)}'
    """
    rank = len(dims)
    virtual = (*dims, 1)
    for reading in _unit_dim_holes(positions, virtual)[:HOLE_READINGS]:
        if all(p.dim != rank for p in reading):
            continue
        # the same places, the hole an always-0 position of the prepended dimension
        wanted = tuple(
            Position(None, 1, None, p.extent) if p.dim == rank else p for p in reading if p.extent != 1
        )
        candidates = []
        solutions = _search(virtual, reading, False, wide, depth)  # one search, read twice
        for majormost in (rank, None):
            found = _recover(
                dtype,
                virtual,
                reading,
                False,
                element_size_in_bits,
                majormost=majormost,
                wide=wide,
                depth=depth,
                solutions=solutions,
            )
            if found is not None and len(found.effective_layout.tiles) == 1:
                # more levels may be more than a layout the search misses (see the docstring)
                candidates.append(_unit_moved_majormost(found, rank))
        for order, tile in filter(None, candidates):
            shape = layout_shape(dtype, dims, tuple(reversed(order)), [tile], element_size_in_bits)
            if _has_positions(shape, wanted, dims):
                return shape
    return None


#: How many states one deep search over a reading of :func:`_unit_digit_readings` may visit
#: (digits of a size-1 dimension merge in more ways: ``bf16[4]{0:T(4,2)(2,1)}`` takes 400).
#: It runs only where everything else found nothing, so mostly on refusals: 1,000 states
#: and 3 levels cost 2.5 s of CPU over 40 random maps with room, 500 and 2 levels 0.5 s,
#: with the same answers there and over the brute-force families.
UNIT_DIGITS_LIMIT = 500
#: The most tile levels tried for such a reading.
UNIT_DIGITS_LEVELS = 2


def _unit_digit_readings(
    positions: tuple[Position, ...], dims: tuple[int, ...]
) -> list[tuple[Position, ...]]:
    """``positions`` with the room of several places read as digits of one more size-1
    dimension ``u = len(dims)``: the unit dimension a tile longer than the rank prepends,
    padded by it and split by a later level. The room below the smallest stride is always
    one of them (this reading is for maps the others leave); a digit with room may give
    its top ``h`` slots. The digits of ``u`` are numbered minor to major: ``u mod h₁``,
    ``⌊u/h₁⌋ mod h₂``, ..., the majormost without a modulus. ``bf16[4]{0:T(4,2)(2,1)}`` pads
    ``u`` to 4 and pairs it by ``(2,1)``; CuTe sees ``i0 mod 2`` in 4 slots and 2 below
    (``u mod 2`` prints as ``i1``: the modulus of a size-1 dimension's digit never wraps):

    >>> below = strided_positions([(0, 1, 2, 2), (0, 2, None, 8)], (4,))
    >>> for reading in _unit_digit_readings(below, (4,)):
    ...     print(", ".join(map(str, reading)))
    ⌊i0/2⌋ (extent 2), ⌊i1/2⌋ (extent 2), i0 mod 2 (extent 2), i1 (extent 2)
    """
    if not positions or positions[-1].dim is not None or positions[-1].extent == 1:
        return []
    unit = len(dims)
    gaps = [j for j, p in enumerate(positions[:-1]) if p.dim is not None and p.extent > p.size(dims)]
    out = []
    for count in range(1, len(gaps) + 1):
        for chosen in itertools.combinations(gaps, count):
            splits = [
                [h for h in range(2, positions[j].extent + 1) if positions[j].extent % h == 0] for j in chosen
            ]
            for hs in itertools.product(*splits):
                kept = dict(zip(chosen, hs, strict=True))
                if any(positions[j].extent // h < positions[j].size(dims) for j, h in kept.items()):
                    continue
                places: list[tuple[Position | None, int]] = []  # (the digit kept, or None: room of u)
                for j, p in enumerate(positions[:-1]):
                    if j in kept:
                        places.append((None, kept[j]))
                        places.append((Position(p.dim, p.weight, p.modulus, p.extent // kept[j]), 0))
                    else:
                        places.append((p, 0))
                places.append((None, positions[-1].extent))
                rooms = [h for p, h in places if p is None]
                reading: list[Position] = []
                below = 1  # the weight of the next digit of u, minor to major
                weights = []
                for h in reversed(rooms):
                    weights.append(below)
                    below *= h
                weights.reverse()
                k = 0
                for digit, h in places:
                    if digit is not None:
                        reading.append(digit)
                        continue
                    modulus = None if k == 0 else h
                    reading.append(Position(unit, weights[k], modulus, h))
                    k += 1
                out.append(tuple(normal_position(q, (*dims, 1)) for q in reading))
                if len(out) >= HOLE_READINGS:
                    return out
    return out


def _recover_with_padded_prepended_unit(
    dtype: str, dims: tuple[int, ...], positions: tuple[Position, ...], element_size_in_bits: int
) -> ArrayShape | None:
    """Room below the smallest stride and between digits read as the prepended unit dimension,
    padded and split by a later level (:func:`_unit_digit_readings`): the deep search runs on
    the array with that size-1 dimension added, stored majormost; the answer without it is
    the same layout (its first tile, one entry longer than the rank, prepends it) and is
    checked again on the real dimensions.

    >>> below = strided_positions([(0, 1, 2, 2), (0, 2, None, 8)], (4,))
    >>> str(_recover_with_padded_prepended_unit("bf16", (4,), below, 0))
    'bf16[4]{0:T(4,2)(2,1)}'
    """
    rank = len(dims)
    virtual = (*dims, 1)
    for reading in _unit_digit_readings(positions, dims):
        for depth in range(1, UNIT_DIGITS_LEVELS + 1):
            found = []
            for solution in deep_solutions(reading, virtual, depth, majormost=rank, limit=UNIT_DIGITS_LIMIT):
                m2m = tuple(reversed(full_order(solution.order, rank + 1)))
                realized = _realized(dtype, virtual, m2m, solution.tiles, element_size_in_bits)
                for tiles in filter(None, (solution.tiles, realized)):
                    # checked on the real dimensions: digits of a size-1 dimension are all 0,
                    # so the virtual array has more layouts with these positions than the real one
                    shape = layout_shape(dtype, dims, m2m[:-1], tiles, element_size_in_bits)
                    if _has_offsets(shape, positions, dims):
                        found.append(shape)
            if found:
                return min(found, key=_simplicity)
    return None


def _room_under_prepended_unit(
    dtype: str, dims: tuple[int, ...], positions: tuple[Position, ...], element_size_in_bits: int
) -> ArrayShape | None:
    """Room below the smallest stride of an untiled order, read as the unit dimension a tile
    one entry longer than the rank prepends, padded: ``f32[2]{0:T(2,1)}`` is CuTe's
    ``(2):(2)`` (one level; :func:`_recover_room_below` would give ``T(1)(2)``).

    >>> str(_room_under_prepended_unit("f32", (2,), strided_positions([(0, 1, None, 2)], (2,)), 0))
    'f32[2]{0:T(2,1)}'
    """
    if not positions or positions[-1].dim is not None or positions[-1].extent == 1:
        return None
    room = positions[-1].extent
    merged: list[Position] = []
    for q in positions[:-1]:  # adjacent digits of one dimension, high above low: one position
        p = merged[-1] if merged else None
        if p is not None and p.dim == q.dim and q.dim is not None and p.weight == q.weight * q.extent:
            if q.modulus == q.extent:
                modulus = None if p.modulus is None else p.modulus * q.extent
                merged[-1] = normal_position(Position(q.dim, q.weight, modulus, p.extent * q.extent), dims)
                continue
        merged.append(q)
    base = base_solution(tuple(merged), dims, False)
    if base is None:
        return None
    order = full_order(base.order, len(dims))
    tile = (room,) + (1,) * len(dims)
    shape = layout_shape(dtype, dims, tuple(reversed(order)), [tile], element_size_in_bits)
    wanted = tuple(p for p in (*merged, positions[-1]) if p.extent != 1)
    return shape if _has_positions(shape, wanted, dims) else None


def _recover_room_below(
    dtype: str, dims: tuple[int, ...], positions: tuple[Position, ...], element_size_in_bits: int
) -> ArrayShape | None:
    """Room below the smallest stride (an always-0 last position of extent ``h``) read as a
    last tile level ``(h)`` padding an always-0 position: the one an entry 1 leaves, or
    one a level ``(1)`` makes first. ``f32[2,2]{1,0:T(1)(2)}`` is CuTe's ``(2,2):(4,2)``:

    >>> below = strided_positions([(0, 1, None, 4), (1, 1, None, 2)], (2, 2))
    >>> str(_recover_room_below("f32", (2, 2), below, 0))
    'f32[2,2]{1,0:T(1)(2)}'

    With one level, only the unit dimension a tile one entry longer than the rank prepends
    can hold such room, over an untiled order (:func:`_room_under_prepended_unit`); the rest is
    recovered as usual.
    """
    if len(positions) < 2 or positions[-1].dim is not None or positions[-1].extent == 1:
        return None
    room = positions[-1].extent
    try:
        rest = recover_layout(
            dtype, dims, positions[:-1], exact=False, element_size_in_bits=element_size_in_bits
        )
    except NotExpressible:
        return None
    layout = rest.effective_layout
    tiles: list[tuple[int, ...]] = [t.dimensions for t in layout.tiles]
    wanted = tuple(p for p in positions if p.extent != 1)
    extras: list[list[tuple[int, ...]]] = [[(room,)], [(1,), (room,)]]
    for extra in extras:
        shape = layout_shape(dtype, dims, layout.minor_to_major, tiles + extra, element_size_in_bits)
        if _has_positions(shape, wanted, dims):
            return shape
    return None


def _unit_moved_majormost(found: ArrayShape, unit: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The order (major to minor, without ``unit``) and the one tile that prepend ``unit``.

    ``found`` stores the size-1 dimension ``unit`` at some place in the part its one tile
    covers; stored majormost instead, with 1s over the dimensions it passes, the tile is one
    entry longer than the rank, and XLA prepends it. Where that is not the same layout (a
    covered dimension it passes has a larger entry), the caller's check says so.

    >>> found = layout_shape("bf16", (2, 256, 2, 1), (0, 1, 3, 2), [(2, 128, 2)])
    >>> _unit_moved_majormost(found, 3)
    ((2, 1, 0), (2, 1, 128, 2))
    """
    layout = found.effective_layout
    order = tuple(reversed(layout.minor_to_major))
    tile = layout.tiles[0].dimensions
    covered = len(order) - len(tile)  # the first position of order the tile covers
    j = order.index(unit)
    if j < covered:
        return None
    entries = [tile[k - covered] if k >= covered else 1 for k in range(len(order)) if k != j]
    return tuple(d for d in order if d != unit), (tile[j - covered], *entries)


def _recover(
    dtype: str,
    dims: tuple[int, ...],
    positions: tuple[Position, ...],
    exact: bool,
    element_size_in_bits: int,
    majormost: int | None = None,
    wide: bool = False,
    depth: int = 0,
    solutions: tuple[int, list[Solution]] | None = None,
) -> ArrayShape | None:
    """The simplest checked layout the search finds for ``positions`` (storing dimension
    ``majormost`` majormost, when given), or ``None``; ``solutions``: what
    :func:`_search` found for these arguments, when the caller has it already."""
    if exact:
        wanted = positions
    else:
        wanted = tuple(p for p in positions if p.extent != 1)
    first_seen = list(dict.fromkeys(p.dim for p in positions if p.dim is not None))

    def inversions(order: tuple[int, ...]) -> int:
        rank = [first_seen.index(d) if d in first_seen else len(first_seen) for d in order]
        return sum(1 for a in range(len(rank)) for b in range(a + 1, len(rank)) if rank[a] > rank[b])

    room, found = solutions if solutions is not None else _search(dims, positions, exact, wide, depth)
    found = sorted(found, key=lambda s: (s.key[:2], inversions(s.order), s.key[2:]))
    first: ArrayShape | None = None
    for solution in found:
        if first is not None and len(solution.tiles) > len(first.effective_layout.tiles):
            break
        if any(len(t) == 0 for t in solution.tiles):
            continue
        order = solution.order if exact else full_order(solution.order, len(dims))
        if majormost is not None and order[0] != majormost:
            continue
        m2m = tuple(reversed(order))
        candidates: list[tuple[tuple[int, ...], ...] | None] = [solution.tiles]
        if not exact and depth:
            candidates.append(_realized(dtype, dims, m2m, solution.tiles, element_size_in_bits))
        if room:
            candidates = [
                padded for t in candidates if t is not None for padded in _padding_room_below(t, room)
            ]
        for tiles in (t for t in candidates if t is not None):
            shape = layout_shape(dtype, dims, m2m, tiles, element_size_in_bits)
            if _has_positions(shape, wanted, dims, exact=exact):
                if _allocated_whole(shape):
                    return shape
                first = first or shape  # a simplest answer; one as simple that XLA allocates whole is better
    return first


def _allocated_whole(shape: ArrayShape) -> bool:
    """Whether XLA allocates the layout's whole exact buffer (no later tile pads past the
    first one, no untiled ``L(n)``): between layouts with the same positions, the one whose
    allocation is what the positions span (what MLIR's normalized memref allocates, and where
    a CuTe layout or a Triton linear layout ends)."""
    report = size_report(shape)
    return bool(report.physical_bytes == report.first_tile_bytes == xla_shape_size(shape))


def _search(
    dims: tuple[int, ...], positions: tuple[Position, ...], exact: bool, wide: bool, depth: int
) -> tuple[int, list[Solution]]:
    """The room below the smallest stride a last level pads (0: none), and the solutions
    of the search for the rest (unchecked: :func:`_recover` checks them)."""
    if not exact and depth and len(positions) > 1 and positions[-1].dim is None and positions[-1].extent > 1:
        # room below the smallest stride: a last level (room) padding the always-0 position
        # an entry 1 of the level before leaves minor-most
        return positions[-1].extent, deep_solutions(positions[:-1], dims, depth, ends_with_unit=True)
    return 0, _solutions(positions, dims, exact, wide, depth)


def _padding_room_below(tiles: tuple[tuple[int, ...], ...], room: int) -> list[tuple[tuple[int, ...], ...]]:
    """Where room below the smallest stride may come from, after ``tiles`` (whose last entry
    is 1, over an always-0 position): a last level ``(room)`` padding it, or the last level's
    own entry 1 over an always-0 position raised to ``room`` (``f32[2,6]{0,1:T(2,1)(4,4,2)}``,
    ``f32[2,6]{1,0:T(1,2)(2,2,1)}``); the caller's check says which one has the positions.

    >>> _padding_room_below(((2, 1), (4, 4, 1)), 2)
    [((2, 1), (4, 4, 2)), ((2, 1), (4, 4, 1), (2,))]
    """
    *before, last = tiles
    raised = [(*before, (*last[:j], room, *last[j + 1 :])) for j, entry in enumerate(last) if entry == 1]
    return [*raised, (*tiles, (room,))]  # fewer levels first


def _realized(
    dtype: str,
    dims: tuple[int, ...],
    minor_to_major: tuple[int, ...],
    tiles: tuple[tuple[int, ...], ...],
    element_size_in_bits: int,
) -> tuple[tuple[int, ...], ...] | None:
    """The tiles with an entry 1 over each extent-1 position a level passes.

    The deep search peels levels over the positions CuTe keeps; a level's tile also covers
    the extent-1 positions earlier levels left among them (an entry 1 leaves one at the
    end). Run forwards, each level gets a 1 over those, from the minor-most position up
    until its own entries are used: ``T(2,2)(2,2,1,2)(2,1)`` found for the 4x4 array with
    both dimensions' bits swapped is ``T(2,2)(2,2,1,2)(2,1,1)``.

    >>> _realized("f32", (4, 4), (0, 1), ((2, 2), (2, 2, 1, 2), (2, 1)), 0)
    ((2, 2), (2, 2, 1, 2), (2, 1, 1))
    """
    done: list[tuple[int, ...]] = []
    for tile in tiles:
        if not done:
            done.append(tile)
            continue
        extents = _extents(layout_shape(dtype, dims, minor_to_major, done, element_size_in_bits))
        if extents is None:
            return None
        entries = list(tile)
        out: list[int] = []
        for extent in reversed(extents):
            if not entries:
                break
            out.append(1 if extent == 1 else entries.pop())
        if entries:
            return None
        done.append(tuple(reversed(out)))
    return tuple(done)


def _extents(shape: ArrayShape) -> tuple[int, ...] | None:
    """The extents of ``shape``'s tiled shape (its positions' extents, without their
    digits: no SymPy), or ``None`` where they are not concrete."""
    try:
        return tuple(operator.index(e) for e in layout_map(shape).physical_dimensions)
    except (TypeError, ValueError):  # a symbolic extent, or a shape the stages refuse
        return None


def _has_positions(
    shape: ArrayShape, wanted: Sequence[Position], dims: Sequence[int], *, exact: bool = False
) -> bool:
    """Whether ``shape`` has the positions ``wanted`` (all of them; ``exact=False``: those of
    extent > 1), read from the stage pipeline by :func:`positions_of`. Most candidates differ
    in their extents already, which are checked first, without SymPy."""
    extents = _extents(shape)
    if extents is None or [e for e in extents if exact or e != 1] != [p.extent for p in wanted]:
        return False
    try:
        got = positions_of(shape)
    except (NotExpressible, ValueError):
        return False
    return _same_positions(tuple(p for p in got if exact or p.extent != 1), wanted, dims)


def _has_offsets(shape: ArrayShape, wanted: Sequence[Position], dims: Sequence[int]) -> bool:
    """Whether ``shape`` puts every element where the positions ``wanted`` do: the same digits
    (as functions on the index box) at the same strides, read from :func:`positions_of`.
    Weaker than :func:`_has_positions` only in where the room is: CuTe's ``i0 mod 2`` in 4
    slots is ``0`` in 2 slots above ``i0 mod 2`` in 2 (the same offsets).
    """
    try:
        got = positions_of(shape)
    except (NotExpressible, ValueError):
        return False
    return _digit_strides(got, dims) == _digit_strides(wanted, dims)


def _digit_strides(positions: Sequence[Position], dims: Sequence[int]) -> list[tuple[Any, ...]]:
    """The offset ``Σ digit · stride`` the positions give, as its nonzero terms: sorted pairs
    (the digit as a function, its stride); the stride of a position is the product of the
    extents after it. Equal lists are equal offset maps.

    >>> dims = (4,)
    >>> _digit_strides([Position(0, 2, None, 2), Position(0, 1, 2, 4), Position(None, 1, None, 2)], dims)
    [(2, (0, 1, 2)), (8, (0, 2, None))]
    """
    terms = []
    stride = 1
    for p in reversed(positions):
        value = _values(p, dims)
        if value:
            terms.append((stride, value))
        stride *= p.extent
    return sorted(terms)


def _same_positions(a: Sequence[Position], b: Sequence[Position], dims: Sequence[int]) -> bool:
    """Equal as functions on the index box, with equal extents."""
    if len(a) != len(b):
        return False
    for p, q in zip(a, b, strict=True):
        if p.extent != q.extent or _values(p, dims) != _values(q, dims):
            return False
    return True


def _values(p: Position, dims: Sequence[int]) -> tuple[Any, ...]:
    """A digit as a function: zero, or (dim, weight, modulus reduced to the values it takes)."""
    if p.dim is None or p.size(dims) == 1:
        return ()
    top = ceil_div(dims[p.dim], p.weight)
    modulus = None if p.modulus is None or p.modulus >= top else p.modulus
    return (p.dim, p.weight, modulus)


def strided_positions(
    digits: Sequence[tuple[int, int, int | None, int]], dims: Sequence[int]
) -> tuple[Position, ...]:
    """Positions from digits with strides ``(dim, weight, modulus, stride)``, as CuTe gives them.

    Sorted by stride (major first); a position's extent is the gap to the next larger
    stride. Room below the smallest stride goes to the first size-1 dimension (one the
    strides leave out, padded by a tile). Raises ``NotExpressible`` when no tiled shape
    has these strides.

    >>> for p in strided_positions([(0, 1, 8, 128), (0, 8, None, 1024), (1, 1, None, 1)], (16, 100)):
    ...     print(p)
    ⌊i0/8⌋ (extent 2)
    i0 mod 8 (extent 8)
    i1 (extent 128)
    """
    live = []
    for dim, weight, modulus, stride in digits:
        p = Position(dim, weight, modulus)
        if p.size(dims) == 1:
            continue
        if stride <= 0:
            raise NotExpressible(
                f"the digit {str(p).split(' (')[0]} has stride {stride}: several elements would share a place "
                f"(a broadcast), which no XLA layout does"
            )
        live.append((stride, p))
    live.sort(key=lambda sp: -sp[0])
    strides = [s for s, _ in live]
    if len(set(strides)) != len(strides):
        raise NotExpressible(f"two digits have the same stride {strides}: elements would share a place")
    units = [k for k, d in enumerate(dims) if d == 1]
    if live and strides[-1] != 1:
        # room below the smallest stride: a size-1 dimension (CuTe leaves it out) padded by a
        # tile, else an always-0 position a last tile level pads (see _recover_room_below)
        live.append((1, Position(units[0] if units else None, 1, None)))
        strides.append(1)
    out = []
    for k, (stride, p) in enumerate(live):
        if k == 0:
            extent = p.size(dims)
        else:
            above = strides[k - 1]
            if above % stride:
                raise NotExpressible(
                    f"stride {above} is not a multiple of the next smaller stride {stride}: "
                    f"the places do not form a tiled (mixed-radix) shape"
                )
            extent = above // stride
        if extent < p.size(dims):
            raise NotExpressible(
                f"the digit {str(p).split(' (')[0]} takes {p.size(dims)} values but the next stride "
                f"leaves room for {extent}: elements would overlap"
            )
        out.append(Position(p.dim, p.weight, p.modulus, extent))
    return tuple(out)
