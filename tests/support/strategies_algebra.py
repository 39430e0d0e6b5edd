"""Random small CuTe layouts and brute-force oracles for the layout algebra (``layout_algebra.interop.cute.algebra``).

The oracles evaluate a layout from its definition alone — the leaves of the shape read
colexicographically, each digit times its stride, the last leaf unreduced — without the
module under test, and check each operation by what it promises on every index.

Two kinds of layouts are drawn: *arbitrary* ones (any strides, stride 0 included, most of
them outside the preconditions of complement and inverse) and *permuted compact* ones (the
leaves of a compact layout in a random order, sometimes with a gap), which mostly satisfy
them; seeded ``random`` versions of both serve the differential test against pycute.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from hypothesis import strategies as st

from layout_algebra.interop.cute.export import IntTuple, Layout

STRIDES = (0, 1, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


# ------------------------------------------------------------------------ oracles
def leaves(t: IntTuple) -> list[int]:
    return [x for item in t for x in leaves(item)] if isinstance(t, tuple) else [t]


def size_of(t: IntTuple) -> int:
    n = 1
    for x in leaves(t):
        n *= x
    return n


def offset(shape: IntTuple, stride: IntTuple, i: int) -> int:
    """The offset of index ``i`` by the definition: colexicographic digits of the flat leaves,
    the last leaf taking the whole rest of ``i`` (CuTe's extension past the size)."""
    sizes, strides = leaves(shape), leaves(stride)
    total = 0
    for k, (s, d) in enumerate(zip(sizes, strides, strict=True)):
        if k == len(sizes) - 1:
            total += i * d
        else:
            i, digit = divmod(i, s)
            total += digit * d
    return total


def offsets(L: Layout) -> list[int]:
    return [offset(L.shape, L.stride, i) for i in range(size_of(L.shape))]


def extended(A: Layout, b: int) -> int:
    """``A(b)`` for any ``b >= 0``: past ``size(A)``, the last moving leaf goes on (as CuTe's
    coalesced ``A`` does)."""
    n = size_of(A.shape)
    moving = [(s, d) for s, d in zip(leaves(A.shape), leaves(A.stride), strict=True) if s != 1]
    step = moving[-1][0] * moving[-1][1] if moving else 0
    return offset(A.shape, A.stride, b % n) + (b // n) * step


def is_injective(L: Layout) -> bool:
    values = offsets(L)
    return len(set(values)) == len(values)


def compact_ordered(L: Layout) -> bool:
    """Each moving leaf's stride, in increasing order, a multiple of the span of those before."""
    extent = 1
    pairs = sorted((d, s) for s, d in zip(leaves(L.shape), leaves(L.stride), strict=True) if s > 1 and d)
    for d, s in pairs:
        if d < extent or d % extent:
            return False
        extent = s * d
    return True


def sum_layout(first: Layout, second: Layout) -> Callable[[int, int], int]:
    return lambda i, j: offset(first.shape, first.stride, i) + offset(second.shape, second.stride, j)


# ------------------------------------------------------------------------ random layouts
def _random_tuple(rng: random.Random, depth: int) -> IntTuple:
    if depth == 0 or rng.random() < 0.5:
        return rng.randint(1, 6)
    return tuple(_random_tuple(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def _random_shape(rng: random.Random, max_size: int) -> IntTuple:
    while True:
        shape = _random_tuple(rng, 2)
        if size_of(shape) <= max_size:
            return shape


def _with_strides(shape: IntTuple, strides: list[int]) -> IntTuple:
    it = iter(strides)

    def rebuild(s: IntTuple) -> IntTuple:
        return tuple(rebuild(x) for x in s) if isinstance(s, tuple) else next(it)

    return rebuild(shape)


def random_layout(rng: random.Random, max_size: int = 256) -> Layout:
    """Any strides (stride 0 included)."""
    shape = _random_shape(rng, max_size)
    return Layout(shape, _with_strides(shape, [rng.choice(STRIDES) for _ in leaves(shape)]))


def random_compact(rng: random.Random, max_size: int = 64) -> Layout:
    """The leaves of a compact layout in a random order (a gap of 2 now and then)."""
    shape = _random_shape(rng, max_size)
    sizes = leaves(shape)
    order = list(range(len(sizes)))
    rng.shuffle(order)
    strides = [0] * len(sizes)
    span = 1
    for k in order:
        strides[k] = span * rng.choice((1, 1, 1, 2))
        span = strides[k] * sizes[k]
    return Layout(shape, _with_strides(shape, strides))


def random_any(rng: random.Random, max_size: int = 64) -> Layout:
    return random_layout(rng, max_size) if rng.random() < 0.5 else random_compact(rng, max_size)


def layouts(max_size: int = 64) -> st.SearchStrategy[Layout]:
    """Hypothesis: arbitrary and permuted-compact layouts of at most ``max_size`` elements."""
    return st.randoms(use_true_random=False).map(lambda rng: random_any(rng, max_size))


def compact_layouts(max_size: int = 64) -> st.SearchStrategy[Layout]:
    return st.randoms(use_true_random=False).map(lambda rng: random_compact(rng, max_size))


# ------------------------------------------------------------------------ CuTe text
def _unzip_pairs(tree: object) -> tuple[IntTuple, IntTuple]:
    if isinstance(tree, tuple) and len(tree) == 2 and all(isinstance(x, int) for x in tree):
        return tree[0], tree[1]
    assert isinstance(tree, list)
    pairs = [_unzip_pairs(x) for x in tree]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def nested_shape_strides(min_stride: int = 0) -> st.SearchStrategy[tuple[IntTuple, IntTuple]]:
    """A congruent ``(shape, stride)`` pair of nested integer tuples (sizes >= 1; strides from
    ``min_stride``), an integer pair at the top sometimes, nested up to about three levels."""
    leaf = st.tuples(st.integers(1, 64), st.integers(min_stride, 4096))
    tree = st.recursive(leaf, lambda inner: st.lists(inner, min_size=1, max_size=4), max_leaves=10)
    return tree.map(_unzip_pairs)


def cute_text(shape: IntTuple, stride: IntTuple, *, statics: bool = False, space: str = "") -> str:
    """``shape:stride`` as CuTe prints it (``_8`` for a static 8 when ``statics``), with
    ``space`` after every comma and around the colon; written here, not by the module under test."""

    def entry(t: IntTuple) -> str:
        if isinstance(t, tuple):
            return "(" + ("," + space).join(entry(x) for x in t) + ")"
        return f"_{t}" if statics else str(t)

    return f"{entry(shape)}{space}:{space}{entry(stride)}"
