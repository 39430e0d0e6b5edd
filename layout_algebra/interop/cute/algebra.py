"""CuTe's layout algebra: compose, complement, invert, divide and multiply layouts.

A CuTe layout (NVIDIA CUTLASS) is a pair of congruent nested integer tuples
``Shape:Stride``. It maps a *coordinate* to an offset: each leaf mode of size ``s`` and
stride ``d`` takes a coordinate ``0 <= x < s`` and contributes ``x·d``. A single integer
index is first taken apart *colexicographically* — the first mode varies fastest — so
``(4,(2,8)):(2,(1,8))`` sends ``i`` to ``2·(i mod 4) + 1·(⌊i/4⌋ mod 2) + 8·⌊i/8⌋``:

>>> from layout_algebra.interop.cute.algebra import layout
>>> from layout_algebra.interop.cute.export import Layout
>>> L = layout("(4,(2,8)):(2,(1,8))")
>>> str(L), L.size, L.cosize, L.rank, L.depth
('(4,(2,8)):(2,(1,8))', 64, 64, 2, 2)
>>> [L(i) for i in range(10)]
[0, 2, 4, 6, 1, 3, 5, 7, 8, 10]
>>> L((1, 5)), L((1, (1, 2)))      # a coordinate: an integer per mode, or a nested one
(19, 19)

The layout type is :class:`~layout_algebra.interop.cute.export.Layout`, the package's one CuTe
layout type (:func:`~layout_algebra.interop.cute.export.cute_layout` makes one from an XLA layout,
certified); its errors are :class:`~layout_algebra.interop.cute.export.AlgebraError`.

As in CuTe, the last mode is not reduced: an index past the size extends it
(``layout("4:2")(5) == 10``). Strides are non-negative integers here.

**Operations.** Each follows CuTe's definition (CUTLASS ``include/cute/layout.hpp`` and the
``pycute`` package) and refuses, with a :class:`AlgebraError` that says which precondition
fails, an input on which that definition would give a layout that does not mean what the
operation promises:

>>> from layout_algebra.interop.cute.algebra import coalesce, complement, composition, right_inverse
>>> str(coalesce("(2,(1,6)):(1,(6,2))"))          # same function on [0, 12), fewest modes
'12:1'
>>> str(composition("(6,2):(8,2)", "(4,3):(3,1)"))  # R(i) = A(B(i))
'((2,2),3):((24,2),8)'
>>> str(complement("(2,2):(1,6)", 24))              # fills the gaps of [0, 24)
'(3,2):(2,12)'
>>> str(right_inverse("(4,(2,8)):(2,(1,8))"))       # L(R(i)) = i
'(2,4,8):(4,1,8)'
>>> composition("(4,3):(1,10)", "6:1")
Traceback (most recent call last):
...
layout_algebra.interop.cute.export.AlgebraError: composition((4,3):(1,10), 6:1): shape divisibility fails: B's 6 elements of stride 1 do not split into whole runs of A's mode 4:1 (6 is not a multiple of 4), so the composition is no layout

**XLA layouts.** Wherever a layout is expected, an XLA shape (text or ``Shape``) that CuTe
can express is accepted too, read through :func:`~layout_algebra.interop.cute.export.cute_layout`
(one mode per logical dimension, in element strides); :meth:`Layout.to_xla` goes back:

>>> str(layout("f32[16,384]{1,0:T(8,128)}"))
'((8,2),(128,3)):((128,3072),(1,1024))'
>>> str(layout("(4,6):(1,4)").to_xla("f32"))
'f32[4,6]{0,1}'
>>> layout("f32[12,256]{1,0:T(8,128)}")
Traceback (most recent call last):
...
layout_algebra.interop.cute.export.AlgebraError: f32[12,256]{1,0:T(8,128)}: dimension 0 (size 12) is padded to 16 by tile 1: (8,128) and then split as 2 x 8, so the padding falls inside a mode: CuTe layouts cannot express padding there

Every operation is checked against brute-force enumeration of its definition in
``tests/interop/test_algebra.py``, against ``pycute`` in an opt-in test, and the laws in
``proofs/cute_*.py`` are proved with Z3 for symbolic sizes (``docs/algebra.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from layout_algebra.interop.cute.export import (
    AlgebraError,
    Layout,
    cute_layout,
    flatten,
    parse_cute,
)
from layout_algebra.meaning.recover import NotExpressible

if TYPE_CHECKING:
    from layout_algebra.model.shapes import Shape

__all__ = [
    "LayoutLike",
    "coalesce",
    "complement",
    "composition",
    "filter_zeros",
    "layout",
    "left_inverse",
    "logical_divide",
    "logical_product",
    "make_layout",
    "offset_expr",
    "right_inverse",
    "tiled_divide",
    "tiled_product",
    "zipped_divide",
    "zipped_product",
]


def offset_expr(shape: Any, stride: Any, index: Any) -> Any:
    """The offset of the integer index ``index`` by CuTe's definition, for sizes and strides that
    may be SymPy expressions (the proofs in ``proofs/cute_*.py`` use it with symbolic sizes):
    the leaves read colexicographically, the last one unreduced.

    >>> import sympy
    >>> M, N, i = sympy.symbols("M N i", integer=True, positive=True)
    >>> offset_expr((M, N), (N, 1), i)
    N*(Mod(i, M)) + floor(i/M)
    >>> offset_expr((M, N), (N, 1), i).subs({M: 4, N: 6, i: 5}) == layout("(4,6):(6,1)")(5)
    True
    """
    import sympy

    sizes, strides = flatten(shape), flatten(stride)
    if len(sizes) != len(strides):
        raise AlgebraError(f"{shape}:{stride}: the shape and the stride are not congruent")
    total: Any = sympy.Integer(0)
    weight: Any = sympy.Integer(1)
    for k, (s, d) in enumerate(zip(sizes, strides, strict=True)):
        digit = sympy.floor(index / weight)
        total += d * (digit if k == len(sizes) - 1 else sympy.Mod(digit, s))
        weight = weight * s
    return total


# ------------------------------------------------------------------------ reading layouts
LayoutLike: TypeAlias = "Layout | str | int | Shape"
#: A layout, or one per mode (CuTe's *tiler*; ``None`` leaves a mode as it is).
Tiler: TypeAlias = "LayoutLike | tuple[LayoutLike | None, ...] | list[LayoutLike | None]"


def _parse(text: str) -> Layout:
    """CuTe text read by the one reader of it, :func:`~layout_algebra.interop.cute.export.parse_cute`."""
    try:
        shape, stride = parse_cute(text)
    except ValueError as err:
        raise AlgebraError(str(err)) from None
    return Layout(shape, stride)


def _from_xla(shape: Shape | str) -> Layout:
    try:
        cute = cute_layout(shape, check=False)
    except NotExpressible as err:
        raise AlgebraError(str(err)) from None
    except ValueError as err:  # not a shape at all
        raise AlgebraError(
            f"{str(shape)!r} has no CuTe layout (nor is it CuTe text, shape:stride): {err}"
        ) from None
    if cute.is_symbolic:
        raise AlgebraError(
            f"{shape}: the algebra computes with concrete sizes; this layout has symbolic ones "
            f"({cute.text}): give the sizes"
        )
    if not isinstance(cute.shape, tuple) or not isinstance(cute.stride, tuple):  # a scalar: 1:0
        return Layout(cute.shape, cute.stride)
    return Layout(
        cute.shape if len(cute.shape) > 1 else cute.shape[0],
        cute.stride if len(cute.stride) > 1 else cute.stride[0],
    )


def layout(value: LayoutLike) -> Layout:
    """A :class:`Layout` from CuTe text, an integer ``n`` (``n:1``), a layout, or an XLA shape.

    CuTe strides count elements: an XLA shape's ``E(n)`` and memory space ``S(n)`` are not in
    the result (give them again to :meth:`Layout.to_xla`).

    >>> str(layout(8)), str(layout("((2,4),3) : ((1,6),2)"))
    ('8:1', '((2,4),3):((1,6),2)')
    >>> layout("(4,2):(1)")
    Traceback (most recent call last):
    ...
    layout_algebra.interop.cute.export.AlgebraError: CuTe text '(4,2):(1)': the shape and the stride are not congruent (same nesting): 2 shape modes but 1 strides
    """
    if isinstance(value, Layout):
        if value.is_symbolic:
            raise AlgebraError(
                f"{value}: the algebra computes with concrete sizes; this layout has symbolic ones"
            )
        return value
    if isinstance(value, bool):
        raise AlgebraError(f"{value!r} is not a layout")
    if isinstance(value, int):
        return Layout(value, 1)
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped:
            raise AlgebraError("an empty text is no layout (give CuTe text such as 4:1, or an XLA shape)")
        if stripped[:1] == "(" and "[" in stripped:
            raise AlgebraError(
                f"{stripped!r} is an XLA tuple shape: it has no single layout (give one of its arrays)"
            )
        if stripped[:1] == "(" or stripped.lstrip("_")[:1].isdigit():  # CuTe prints a static 8 as _8
            return _parse(stripped)
        return _from_xla(stripped)
    from layout_algebra.model.shapes import Shape

    if isinstance(value, Shape):
        return _from_xla(value)
    raise AlgebraError(f"{value!r} is not a layout (CuTe text, an integer, a Layout or an XLA shape)")


def make_layout(*layouts: LayoutLike) -> Layout:
    """The layout whose modes are the given layouts, in order: ``(A, B)``.

    >>> str(make_layout("4:1", "(2,3):(4,8)"))
    '(4,(2,3)):(1,(4,8))'
    """
    parts = [layout(x) for x in layouts]
    return Layout(tuple(p.shape for p in parts), tuple(p.stride for p in parts))


def _result(leaves: Sequence[tuple[int, int]]) -> Layout:
    """A flat layout from leaves; one leaf is an integer layout, none is ``1:0``."""
    if not leaves:
        return Layout(1, 0)
    if len(leaves) == 1:
        return Layout(*leaves[0])
    return Layout(tuple(s for s, _ in leaves), tuple(d for _, d in leaves))


# ------------------------------------------------------------------------ coalesce and filter
def coalesce(value: LayoutLike) -> Layout:
    """The same function on ``[0, size)`` with the fewest modes: size-1 modes dropped, and a mode
    merged into the previous one when it continues it (``d_next == s·d``). The result is flat.

    >>> str(coalesce("(2,(1,6)):(1,(6,2))")), str(coalesce("(4,2):(1,8)")), str(coalesce("(1,1):(3,5)"))
    ('12:1', '(4,2):(1,8)', '1:0')
    """
    merged: list[tuple[int, int]] = []
    for s, d in layout(value).leaves():
        if s == 1:
            continue
        if merged and merged[-1][0] * merged[-1][1] == d:
            merged[-1] = (merged[-1][0] * s, merged[-1][1])
        else:
            merged.append((s, d))
    return _result(merged)


def filter_zeros(value: LayoutLike) -> Layout:
    """:func:`coalesce` after dropping stride-0 modes (CuTe's ``filter``): the distinct offsets only.

    >>> str(filter_zeros("(4,3,2):(0,1,3)"))
    '6:1'
    """
    return coalesce(_result([(s, d) for s, d in layout(value).leaves() if d != 0]))


# ------------------------------------------------------------------------ composition
def composition(a: LayoutLike, b: Tiler) -> Layout:
    """``R = A ∘ B``: ``R(i) == A(B(i))`` for every ``i < size(B)``, with the shape of ``B``.

    ``b`` may be a tuple of layouts (a *tiler*, CuTe's by-mode composition): mode ``k`` of
    ``A`` is composed with ``b[k]`` (``None`` keeps it). Where ``B`` reaches past ``size(A)``,
    ``A`` extends its last mode, as in CuTe. CuTe's preconditions are checked mode by mode of
    ``coalesce(A)``: *stride divisibility* (``B``'s running stride and ``A``'s mode size divide
    one another) and *shape divisibility* (``B``'s elements fill whole runs of each mode they
    span); otherwise :class:`AlgebraError`.

    >>> str(composition("(6,2):(8,2)", "(4,3):(3,1)"))
    '((2,2),3):((24,2),8)'
    >>> str(composition("(4,6):(6,1)", ("2:2", None)))      # by mode: every other row
    '(2,6):(12,1)'
    >>> composition("(6,2):(8,2)", "2:4")
    Traceback (most recent call last):
    ...
    layout_algebra.interop.cute.export.AlgebraError: composition((6,2):(8,2), 2:4): stride divisibility fails: B's running stride 4 and A's mode 6:8 do not divide one another, so B's elements do not fall on a sub-grid of A's modes
    """
    by_mode = _by_mode("composition", composition, a, b)
    if by_mode is not None:
        return by_mode
    assert not isinstance(b, (tuple, list))
    A, B = layout(a), layout(b)
    R = _compose(A, B)
    if isinstance(B.shape, tuple):
        _check_distributes(A, B, R)
    return R


def _compose(A: Layout, B: Layout) -> Layout:
    """``A ∘ B`` leaf by leaf of ``B``, in ``B``'s shape (CuTe's left distributivity)."""
    if isinstance(B.shape, tuple):
        return make_layout(*(_compose(A, mode) for mode in B))
    assert isinstance(B.stride, int)
    return _result(_compose_leaf(A, B.shape, B.stride)[0])


def _compose_leaf(
    A: Layout, size: int, stride: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """``A ∘ (size:stride)``: walk ``coalesce(A)``'s modes, skipping ``stride`` elements at a time.

    Returns the leaves of the result and, for each bounded mode ``m`` of ``coalesce(A)`` it
    runs along, ``(m, step, count)``: the mode's digit takes the values ``step·x``, ``x < count``.
    """
    where = f"composition({A}, {size}:{stride})"
    if stride == 0:
        return [(size, 0)], []
    modes = coalesce(A).leaves()
    out: list[tuple[int, int]] = []
    pieces: list[tuple[int, int, int]] = []
    rest_size, rest_stride = size, stride
    for m, (s, d) in enumerate(modes[:-1]):
        if rest_size > 1 and s % rest_stride and rest_stride % s:
            raise AlgebraError(
                f"{where}: stride divisibility fails: B's running stride {rest_stride} and A's mode "
                f"{s}:{d} do not divide one another, so B's elements do not fall on a sub-grid of A's modes"
            )
        take = min(max(1, s // rest_stride), rest_size)
        if rest_size % take:
            raise AlgebraError(
                f"{where}: shape divisibility fails: B's {rest_size} elements of stride {rest_stride} do "
                f"not split into whole runs of A's mode {s}:{d} ({rest_size} is not a multiple of {take}), "
                "so the composition is no layout"
            )
        if take > 1:
            out.append((take, rest_stride * d))
            pieces.append((m, rest_stride, take))
        rest_size //= take
        rest_stride = -(-rest_stride // s)
    if rest_size > 1 or not out:
        out.append((rest_size, rest_stride * modes[-1][1]))
    return out, pieces


#: Up to this many indices, a suspected carry between B's modes is looked for index by index.
WITNESS_SEARCH_LIMIT = 1 << 16


def _check_distributes(A: Layout, B: Layout, R: Layout) -> None:
    """``A(B(i))`` is the sum over ``B``'s leaves of ``A ∘ leaf`` only if, in every bounded mode
    of ``coalesce(A)``, the digits the leaves reach add up without a carry. Where they may
    not, an index on which ``R`` differs from ``A ∘ B`` is looked for; finding one is an error."""
    sizes = [s for s, _ in coalesce(A).leaves()]
    reach = [0] * len(sizes)
    for s, d in B.leaves():
        for m, step, count in _compose_leaf(A, s, d)[1]:
            reach[m] += step * (count - 1)
    if all(r < s for r, s in zip(reach, sizes, strict=True)):
        return
    m = next(k for k, (r, s) in enumerate(zip(reach, sizes, strict=True)) if r >= s)
    why = (
        f"B's modes together reach digit {reach[m]} of A's mode {coalesce(A)[m]}, whose size is {sizes[m]}, "
        "so their sum carries into the next mode and A(B(i)) is not the sum of A applied to each mode"
    )
    if B.size > WITNESS_SEARCH_LIMIT:
        raise AlgebraError(f"composition({A}, {B}): {why} (CuTe assumes it is)")
    for i in range(B.size):
        want = _extended(A, B(i))
        if R(i) != want:
            raise AlgebraError(
                f"composition({A}, {B}): {why}: at index {i}, A(B({i})) = {want}, but a layout of B's "
                f"shape built mode by mode gives {R(i)} (CuTe assumes B's modes do not interact)"
            )


def _extended(A: Layout, b: int) -> int:
    """``A(b)`` with ``coalesce(A)``'s last mode going on past the size (what CuTe's composition reads)."""
    return coalesce(A)(b)


# ------------------------------------------------------------------------ complement
def _sorted_moving_leaves(L: Layout, where: str, *, exact: bool = False) -> list[tuple[int, int]]:
    """The leaves of ``L`` that move (size > 1, stride > 0), by stride, each starting at or past
    the extent ``size·stride`` of the one before (with ``exact``: at a multiple of it)."""
    leaves = sorted((d, s) for s, d in L.leaves() if s != 1 and d != 0)
    extent = 1
    for d, s in leaves:
        if d < extent:
            raise AlgebraError(
                f"{where}: the mode {s}:{d} starts at stride {d}, inside the {extent} offsets spanned by "
                "the modes of smaller strides, so no mode of a complement fits between them (CuTe rejects "
                "this as a non-injective layout)"
            )
        if exact and d % extent:
            raise AlgebraError(
                f"{where}: the mode {s}:{d} starts at stride {d}, which is not a multiple of the {extent} "
                "offsets spanned by the modes of smaller strides, so the layout and its complement do not "
                "make a compact layout"
            )
        extent = s * d
    return [(s, d) for d, s in leaves]


def complement(value: LayoutLike, cotarget: int = 1) -> Layout:
    """The layout ``M`` of increasing strides that fills the gaps of ``L``'s image (CuTe's
    postconditions): ``M`` is ordered (``M(j-1) < M(j)``), ``M(j)`` for ``j >= 1`` is no offset of
    ``L``, and ``cosize((L, M)) >= cotarget``. When each stride of ``L`` (sorted, stride-0 modes
    left out) is a multiple of the span of those before it, ``(L, M)`` is moreover a bijection
    onto ``[0, size(L)·size(M))``. Where a stride is not, ``M`` is CuTe's answer when that
    still reaches the cotarget, and refused (the precondition named) when it does not:

    >>> str(complement("(2,2):(3,1)", 11))
    '2:6'
    >>> complement("(2,2):(3,1)", 12)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    layout_algebra.interop.cute.export.AlgebraError: complement((2,2):(3,1), 12): the mode 2:3 starts at stride 3, which is not a multiple of the 2 offsets spanned by the modes of smaller strides ...

    >>> str(complement("4:2", 16)), str(complement("(2,4):(1,6)")), str(complement("4:1", 4))
    ('(2,2):(1,8)', '3:2', '1:0')
    >>> complement("(2,2):(1,1)")
    Traceback (most recent call last):
    ...
    layout_algebra.interop.cute.export.AlgebraError: complement((2,2):(1,1), 1): the mode 2:1 starts at stride 1, inside the 2 offsets spanned by the modes of smaller strides, so no mode of a complement fits between them (CuTe rejects this as a non-injective layout)
    """
    L = layout(value)
    if isinstance(cotarget, bool) or not isinstance(cotarget, int) or cotarget < 1:
        raise AlgebraError(f"complement({L}, {cotarget!r}): the cotarget must be an integer >= 1")
    out: list[tuple[int, int]] = []
    extent = 1
    for s, d in _sorted_moving_leaves(L, f"complement({L}, {cotarget})"):
        out.append((d // extent, extent))
        extent = s * d
    # CuTe's last mode, ceil(cotarget / extent), reaches the cotarget when the modes tile
    # [0, extent); where a stride is no multiple of the span before it, the floor division
    # above leaves a gap at the top, and CuTe's answer may miss its own postcondition
    # cosize((L, M)) >= cotarget: then the input is outside CuTe's precondition, refused.
    out.append((-(-cotarget // extent), extent))
    reached = sum((s - 1) * d for s, d in L.leaves()) + sum((n - 1) * w for n, w in out) + 1
    if reached < cotarget:
        leaves = _sorted_moving_leaves(L, str(L))
        spans = [1, *(s * d for s, d in leaves)]
        off = next((s, d, e) for (s, d), e in zip(leaves, spans, strict=False) if d % e)
        raise AlgebraError(
            f"complement({L}, {cotarget}): the mode {off[0]}:{off[1]} starts at stride {off[1]}, which is not a "
            f"multiple of the {off[2]} offsets spanned by the modes of smaller strides (CuTe's precondition for "
            f"a complement that reaches the cotarget): CuTe's answer {coalesce(_result(out))} reaches only "
            f"cosize {reached} < {cotarget}"
        )
    return coalesce(_result(out))


# ------------------------------------------------------------------------ inverses
def right_inverse(value: LayoutLike) -> Layout:
    """The largest ``R`` of the form CuTe builds with ``L(R(i)) == i`` for every ``i < size(R)``:
    it follows ``L``'s modes from stride 1, each next stride the extent of those before.

    >>> str(right_inverse("(4,(2,8)):(2,(1,8))")), str(right_inverse("(2,3):(3,1)")), str(right_inverse("4:2"))
    ('(2,4,8):(4,1,8)', '(3,2):(2,1)', '1:0')
    """
    L = layout(value)
    leaves = L.leaves()
    weights = [math.prod(s for s, _ in leaves[:k]) for k in range(len(leaves))]
    left = sorted((d, k) for k, (s, d) in enumerate(leaves) if s != 1 and d != 0)
    out: list[tuple[int, int]] = []
    extent = 1
    for d, k in left:
        if d != extent:
            if d > extent:
                break
            continue  # a second mode of a stride already followed
        out.append((leaves[k][0], weights[k]))
        extent = leaves[k][0] * d
    return coalesce(_result(out))


def left_inverse(value: LayoutLike) -> Layout:
    """``Li`` with ``Li(L(i)) == i`` for every ``i < size(L)``: the right inverse of
    ``(L, complement(L))``. That is a left inverse when ``L``'s sorted strides each start at a
    multiple of the span of the modes before them (``L`` and its complement are then a compact
    layout); otherwise :class:`AlgebraError` (a stride-0 mode: ``L`` is not injective; other
    layouts may have a left inverse that CuTe's construction does not find).

    >>> str(left_inverse("(4,(2,8)):(2,(1,8))")), str(left_inverse("(2,3):(3,1)"))
    ('(2,4,8):(4,1,8)', '(3,2):(2,1)')
    >>> left_inverse("(2,4):(0,1)")
    Traceback (most recent call last):
    ...
    layout_algebra.interop.cute.export.AlgebraError: left_inverse((2,4):(0,1)): the mode 2:0 has stride 0: the layout is not injective, so it has no left inverse
    """
    L = layout(value)
    for s, d in L.leaves():
        if s > 1 and d == 0:
            raise AlgebraError(
                f"left_inverse({L}): the mode {s}:{d} has stride 0: the layout is not injective, "
                "so it has no left inverse"
            )
    _sorted_moving_leaves(L, f"left_inverse({L})", exact=True)
    return right_inverse(make_layout(L, complement(L)))


# ------------------------------------------------------------------------ divide and product
def _by_mode(name: str, op: Callable[[Layout, Tiler], Layout], a: LayoutLike, b: Tiler) -> Layout | None:
    """``op`` mode by mode when ``b`` is a tiler (a tuple); ``None`` when it is one layout."""
    if not isinstance(b, (tuple, list)):
        return None
    A = layout(a)
    if len(b) > A.rank:
        raise AlgebraError(f"{name}({A}, a tiler of {len(b)} modes): A has only {A.rank} modes")
    modes = [A[k] if bk is None else op(A[k], bk) for k, bk in enumerate(b)]
    return make_layout(*modes, *[A[k] for k in range(len(b), A.rank)])


def logical_divide(a: LayoutLike, b: Tiler) -> Layout:
    """``A ⊘ B = A ∘ (B, complement(B, size(A)))``: mode 0 walks one tile ``B`` of ``A``,
    mode 1 walks the tiles. A tuple ``b`` divides mode by mode.

    >>> str(logical_divide("(4,2,3):(2,1,8)", "4:2"))
    '((2,2),(2,3)):((4,1),(2,8))'
    >>> str(logical_divide("(8,6):(6,1)", ("2:1", "3:1")))
    '((2,4),(3,2)):((6,12),(1,3))'
    """
    by_mode = _by_mode("logical_divide", logical_divide, a, b)
    if by_mode is not None:
        return by_mode
    assert not isinstance(b, (tuple, list))
    A, B = layout(a), layout(b)
    try:
        return composition(A, make_layout(B, complement(B, A.size)))
    except AlgebraError as err:
        raise AlgebraError(f"logical_divide({A}, {B}): {err}") from None


def logical_product(a: LayoutLike, b: Tiler) -> Layout:
    """``A ⊗ B = (A, complement(A, size(A)·cosize(B)) ∘ B)``: mode 0 is ``A``, mode 1 repeats it
    as ``B`` says. A tuple ``b`` multiplies mode by mode.

    >>> str(logical_product("(2,2):(4,1)", "6:1"))
    '((2,2),(2,3)):((4,1),(2,8))'
    """
    by_mode = _by_mode("logical_product", logical_product, a, b)
    if by_mode is not None:
        return by_mode
    assert not isinstance(b, (tuple, list))
    A, B = layout(a), layout(b)
    try:
        return make_layout(A, composition(complement(A, A.size * B.cosize), B))
    except AlgebraError as err:
        raise AlgebraError(f"logical_product({A}, {B}): {err}") from None


def _unzip(name: str, op: Callable[[Layout, Tiler], Layout], a: LayoutLike, b: Tiler) -> Layout:
    """CuTe's ``hier_unzip``: ``((tile modes...), (rest modes..., A's other modes...))``."""
    if not isinstance(b, (tuple, list)):
        return op(layout(a), b)
    A = layout(a)
    if len(b) > A.rank:
        raise AlgebraError(f"{name}({A}, a tiler of {len(b)} modes): A has only {A.rank} modes")
    split = [make_layout(Layout(1, 0), A[k]) if bk is None else op(A[k], bk) for k, bk in enumerate(b)]
    tiles = make_layout(*(part[0] for part in split))
    rests = make_layout(*(part[1] for part in split), *(A[k] for k in range(len(b), A.rank)))
    return make_layout(tiles, rests)


def zipped_divide(a: LayoutLike, b: Tiler) -> Layout:
    """:func:`logical_divide` with the tile modes gathered in mode 0 and the rest in mode 1.

    >>> str(zipped_divide("(8,6):(6,1)", ("2:1", "3:1")))
    '((2,3),(4,2)):((6,1),(12,3))'
    """
    return _unzip("zipped_divide", logical_divide, a, b)


def tiled_divide(a: LayoutLike, b: Tiler) -> Layout:
    """:func:`zipped_divide` with the rest modes unpacked: ``(tile, rest_0, rest_1, ...)``.

    >>> str(tiled_divide("(8,6):(6,1)", ("2:1", "3:1")))
    '((2,3),4,2):((6,1),12,3)'
    """
    z = zipped_divide(a, b)
    return make_layout(z[0], *z[1])


def zipped_product(a: LayoutLike, b: Tiler) -> Layout:
    """:func:`logical_product` with the modes gathered as :func:`zipped_divide` does."""
    return _unzip("zipped_product", logical_product, a, b)


def tiled_product(a: LayoutLike, b: Tiler) -> Layout:
    """:func:`zipped_product` with the rest modes unpacked: ``(tile, rest_0, rest_1, ...)``."""
    z = zipped_product(a, b)
    return make_layout(z[0], *z[1])
