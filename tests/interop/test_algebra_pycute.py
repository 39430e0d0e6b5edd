"""The layout algebra against pycute, NVIDIA CUTLASS's Python CuTe (opt-in: marker ``pycute``).

Run with ``pip install nvidia-cutlass`` (or ``pip install -e .[cute]``) and
``pytest -m pycute tests/interop/test_algebra_pycute.py``. For every operation, seeded random
layouts are drawn until both implementations have answered at least ``AGREEMENTS`` of them
with the same layout (shape and stride alike). Every other outcome is checked, never
skipped, by brute-force enumeration of the operation's definition:

* pycute fails (an ``assert`` in its code) and this package answers: our answer must pass;
* this package refuses and pycute answers: pycute's answer must fail (we refuse only where
  CuTe's definition gives no correct layout);
* the answers differ (only ``right_inverse``, which here follows C++ CuTe in skipping
  stride-0 and repeated modes, where pycute stops at them): both must be right inverses
  and ours at least as large.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from support.strategies_algebra import (
    compact_ordered,
    extended,
    is_injective,
    offset,
    offsets,
    random_any,
    random_compact,
    size_of,
)

from layout_algebra.interop.cute import algebra
from layout_algebra.interop.cute.export import AlgebraError, Layout, flatten

pycute = pytest.importorskip(
    "pycute", reason="pycute is not installed (pip install nvidia-cutlass, or the [cute] extra)"
)
pytestmark = pytest.mark.pycute

#: Random layouts per operation on which both must give the same layout.
AGREEMENTS = 1000
#: Give up drawing after this many (a sign the generator no longer reaches the operation).
MAX_DRAWS = 20 * AGREEMENTS


def as_ours(p: Any) -> Layout | None:
    """pycute's layout as ours; ``None`` when it has a mode of size 0 (no layout of ours: no
    operation here promises an empty result, so such an answer is wrong)."""
    if 0 in flatten(p.shape):
        return None
    return Layout(p.shape, p.stride)


def theirs_holds(holds: Callable[..., bool], args: tuple[Any, ...], p: Any) -> bool:
    mine = as_ours(p)
    return mine is not None and holds(*args, mine)


def as_theirs(L: Layout) -> Any:
    return pycute.Layout(L.shape, L.stride)


def same(ours: Layout, theirs: Any) -> bool:
    return ours.shape == theirs.shape and ours.stride == theirs.stride


# ------------------------------------------------------------------------ definitions, by brute force
def composition_holds(A: Layout, B: Layout, R: Layout) -> bool:
    return size_of(R.shape) == size_of(B.shape) and all(
        offset(R.shape, R.stride, i) == extended(A, offset(B.shape, B.stride, i))
        for i in range(size_of(B.shape))
    )


def complement_holds(L: Layout, cotarget: int, M: Layout) -> bool:
    if 0 in flatten(M.shape):
        return False
    m, image = offsets(M), set(offsets(L))
    sums = [a + b for b in m for a in image]
    return (
        all(a < b for a, b in itertools.pairwise(m))
        and not image & set(m[1:])
        and max(image) + max(m) + 1 >= cotarget
        and len(set(sums)) == len(sums)
        and (not compact_ordered(L) or sorted(sums) == list(range(len(sums))))
    )


def right_inverse_holds(L: Layout, R: Layout) -> bool:
    return all(offset(L.shape, L.stride, offset(R.shape, R.stride, i)) == i for i in range(size_of(R.shape)))


def left_inverse_holds(L: Layout, Li: Layout) -> bool:
    return is_injective(L) and all(
        offset(Li.shape, Li.stride, offset(L.shape, L.stride, i)) == i for i in range(size_of(L.shape))
    )


def divide_holds(A: Layout, B: Layout, D: Layout) -> bool:
    """``D == A ∘ (B, B*)`` on every index, for pycute's own complement ``B*``."""
    star = as_ours(pycute.complement(as_theirs(B), size_of(A.shape)))
    if star is None or not complement_holds(B, size_of(A.shape), star):
        return False
    return composition_holds(A, algebra.make_layout(B, star), D)


def product_holds(A: Layout, B: Layout, P: Layout) -> bool:
    star = as_ours(pycute.complement(as_theirs(A), size_of(A.shape) * B.cosize))
    if star is None or not complement_holds(A, size_of(A.shape) * B.cosize, star):
        return False
    return P[0] == A and composition_holds(star, B, P[1])


# ------------------------------------------------------------------------ the comparison
def compare(
    name: str,
    draw: Callable[[random.Random], tuple[Any, ...]],
    ours: Callable[..., Layout],
    theirs: Callable[..., Any],
    holds: Callable[..., bool],
    seed: int,
) -> Counter[str]:
    rng = random.Random(seed)
    outcome: Counter[str] = Counter()
    for _ in range(MAX_DRAWS):
        if outcome["equal"] >= AGREEMENTS:
            break
        args = draw(rng)
        try:
            mine: Layout | AlgebraError = ours(*args)
        except AlgebraError as err:
            mine = err
        try:
            other = theirs(*[as_theirs(a) if isinstance(a, Layout) else a for a in args])
        except Exception as err:  # pycute's own asserts (and the errors of a layout of size 0)
            other = err
        text = ", ".join(map(str, args))
        if isinstance(mine, AlgebraError) and isinstance(other, Exception):
            outcome["both refuse"] += 1
        elif isinstance(mine, AlgebraError):
            assert not theirs_holds(holds, args, other), (
                f"{name}({text}): we refuse ({mine}) but pycute's {other} is right"
            )
            outcome["we refuse; pycute's layout is wrong"] += 1
        elif isinstance(other, Exception):
            assert holds(*args, mine), f"{name}({text}): pycute fails and our {mine} is wrong"
            outcome["pycute fails; ours checked"] += 1
        elif same(mine, other):
            outcome["equal"] += 1
        else:
            assert name == "right_inverse", f"{name}({text}): ours {mine}, pycute {other}"
            assert holds(*args, mine) and theirs_holds(holds, args, other), (name, text, mine, other)
            assert mine.size >= size_of(other.shape), (name, text, mine, other)
            outcome["differ; both right inverses, ours larger"] += 1
    assert outcome["equal"] >= AGREEMENTS, f"{name}: only {outcome} in {MAX_DRAWS} draws"
    print(f"{name}: {dict(outcome)}")
    return outcome


def one(rng: random.Random) -> tuple[Layout]:
    return (random_any(rng, 256),)


def two(rng: random.Random) -> tuple[Layout, Layout]:
    return random_any(rng, 256), random_any(rng, 32)


def with_cotarget(rng: random.Random) -> tuple[Layout, int]:
    return random_any(rng, 64), rng.randint(1, 300)


def mostly_compact(rng: random.Random) -> tuple[Layout]:
    return (random_compact(rng, 128) if rng.random() < 0.7 else random_any(rng, 128),)


def product_pair(rng: random.Random) -> tuple[Layout, Layout]:
    return random_any(rng, 32), random_any(rng, 16)


CASES = [
    (
        "coalesce",
        one,
        algebra.coalesce,
        pycute.coalesce,
        lambda L, R: R.leaves() and offsets(R) == offsets(L),
    ),
    ("composition", two, algebra.composition, pycute.composition, composition_holds),
    ("complement", with_cotarget, algebra.complement, pycute.complement, complement_holds),
    ("right_inverse", one, algebra.right_inverse, pycute.right_inverse, right_inverse_holds),
    ("left_inverse", mostly_compact, algebra.left_inverse, pycute.left_inverse, left_inverse_holds),
    ("logical_divide", two, algebra.logical_divide, pycute.logical_divide, divide_holds),
    ("logical_product", product_pair, algebra.logical_product, pycute.logical_product, product_holds),
]


@pytest.mark.parametrize("name, draw, ours, theirs, holds", CASES, ids=[c[0] for c in CASES])
def test_agrees_with_pycute(name: str, draw: Any, ours: Any, theirs: Any, holds: Any) -> None:
    compare(name, draw, ours, theirs, holds, seed=sum(map(ord, name)))


def tiler_pair(rng: random.Random) -> tuple[Layout, tuple[Layout, Layout]]:
    """A rank-2 layout and a tiler of one layout per mode."""
    A = algebra.make_layout(random_any(rng, 24), random_any(rng, 24))
    return A, (random_any(rng, 6), random_any(rng, 6))


@pytest.mark.parametrize(
    "name",
    ["logical_divide", "zipped_divide", "tiled_divide", "logical_product", "zipped_product", "tiled_product"],
)
def test_tiler_variants_agree_with_pycute(name: str) -> None:
    rng = random.Random(sum(map(ord, name)))
    outcome: Counter[str] = Counter()
    for _ in range(MAX_DRAWS):
        if outcome["equal"] >= AGREEMENTS:
            break
        A, (b0, b1) = tiler_pair(rng)
        try:
            mine: Layout | AlgebraError = getattr(algebra, name)(A, (b0, b1))
        except AlgebraError as err:
            mine = err
        try:
            other = getattr(pycute, name)(as_theirs(A), (as_theirs(b0), as_theirs(b1)))
        except Exception as err:
            other = err
        if isinstance(mine, AlgebraError) or isinstance(other, Exception):
            if isinstance(mine, AlgebraError) != isinstance(other, Exception):
                check_modes(name, A, (b0, b1))
            outcome["a refusal, checked mode by mode"] += 1
            continue
        assert same(mine, other), f"{name}({A}, <{b0}, {b1}>): ours {mine}, pycute {other}"
        outcome["equal"] += 1
    assert outcome["equal"] >= AGREEMENTS, f"{name}: only {outcome}"
    print(f"{name} (tiler): {dict(outcome)}")


def check_modes(name: str, A: Layout, tiler: tuple[Layout, Layout]) -> None:
    """Where one side refuses a tiled operation, its 1-D operations mode by mode must show who is right."""
    base = "logical_divide" if name.endswith("divide") else "logical_product"
    holds = divide_holds if base == "logical_divide" else product_holds
    for Ak, bk in zip(A, tiler, strict=True):
        try:
            mine: Layout | AlgebraError = getattr(algebra, base)(Ak, bk)
        except AlgebraError as err:
            mine = err
        try:
            other = getattr(pycute, base)(as_theirs(Ak), as_theirs(bk))
        except Exception as err:
            other = err
        if isinstance(mine, AlgebraError) and not isinstance(other, Exception):
            assert not theirs_holds(holds, (Ak, bk), other), (
                f"{name}: we refuse {base}({Ak}, {bk}), pycute is right"
            )
        elif not isinstance(mine, AlgebraError):
            assert holds(Ak, bk, mine), f"{name}: our {base}({Ak}, {bk}) = {mine} is wrong"


def test_the_reader_reads_what_pycute_prints() -> None:
    """pycute's own ``str()`` of random layouts (rank-1 tuples print as ``(8,):(1,)``, Python's
    1-tuple) reads back as the same shape and stride, through the one CuTe reader."""
    rng = random.Random(8)
    from layout_algebra.interop.cute.export import parse_cute

    for _ in range(AGREEMENTS):
        L = random_any(rng, 256)
        for p in (as_theirs(L), pycute.Layout((L.shape,), (L.stride,))):  # and as a rank-1 tuple
            text = str(p)
            assert parse_cute(text) == (p.shape, p.stride), text
            assert algebra.layout(text) == Layout(p.shape, p.stride), text
            assert same(algebra.coalesce(text), pycute.coalesce(p)), text
