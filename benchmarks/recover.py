"""Layout recovery over 300 random bit permutations: the narrow, wide and deep searches.

Each permutation sends the bits of 1 to 3 dimensions (0 to 3 bits each) to the bits of one
offset, as a Triton linear layout does (``from_linear_layout``'s input). For each, this
times the recovery three ways in one process, in interleaved rounds (the order of the
ways rotates every round), and reports the median CPU time of a round and how many
permutations each way recovers:

- ``narrow``: the first search only (short unit-number peels);
- ``wide``: narrow, then the wider unit-number peels where it found nothing (the search
  before the deep one was added);
- ``deep``: :func:`~layout_algebra.interop.recover.recover_layout` as shipped (narrow, wide,
  then every riffle up to :data:`~layout_algebra.interop.recover.DEEP_LEVELS` levels, fewest
  levels first).

The same-run baseline is the brute force the deep search replaces for the 4x4 array:
enumerating every unpadded tiling of ``f32[4,4]`` (both orders, up to three levels, each
offset map by the stage pipeline) to find the 24 bit permutations, timed against the deep
search recovering the same 24 maps.

Run: ``python benchmarks/recover.py [ROUNDS]`` (default 7) from the checkout.
"""

from __future__ import annotations

import itertools
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

from layout_algebra.interop import NotExpressible
from layout_algebra.interop.recover import (
    _found_layouts,
    _normal,
    layout_shape,
    recover_layout,
    strided_positions,
)
from layout_algebra.layout_map import layout_map

Digits = list[tuple[int, int, int | None, int]]
Case = tuple[tuple[int, ...], Digits]


def random_permutations(count: int = 300, seed: int = 0) -> list[Case]:
    """``count`` random bit permutations, as dimensions and digits with strides."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        bits = [rng.randint(0, 3) for _ in range(rng.randint(1, 3))]
        places = list(range(sum(bits)))
        rng.shuffle(places)
        digits, at = [], 0
        for k, n in enumerate(bits):
            j = 0
            while j < n:  # runs of bits going to consecutive offset bits: one digit each
                start = j
                while j + 1 < n and places[at + j + 1] == places[at + j] + 1:
                    j += 1
                top = j == n - 1
                digits.append((k, 1 << start, None if top else 1 << (j - start + 1), 1 << places[at + start]))
                j += 1
            at += n
        cases.append((tuple(1 << n for n in bits), digits))
    return cases


def narrow(dims: tuple[int, ...], digits: Digits) -> bool:
    positions = tuple(_normal(p, dims) for p in strided_positions(digits, dims))
    return bool(_found_layouts("f32", dims, positions, False, 0, False))


def wide(dims: tuple[int, ...], digits: Digits) -> bool:
    positions = tuple(_normal(p, dims) for p in strided_positions(digits, dims))
    return any(_found_layouts("f32", dims, positions, False, 0, w) for w in (False, True))


def deep(dims: tuple[int, ...], digits: Digits) -> bool:
    try:
        recover_layout("f32", dims, strided_positions(digits, dims), exact=False)
    except NotExpressible:
        return False
    return True


def timed_round(way: Callable[[tuple[int, ...], Digits], bool], cases: list[Case]) -> tuple[float, int]:
    start = time.process_time()
    found = 0
    for dims, digits in cases:
        try:
            found += way(dims, digits)
        except NotExpressible:  # the search gave up (a state limit)
            pass
    return time.process_time() - start, found


def unpadded_tilings(shape: list[int], levels: int):
    yield ()
    if levels == 0:
        return
    for k in range(1, len(shape) + 1):
        suffix = shape[len(shape) - k :]
        for tile in itertools.product(*([d for d in range(1, n + 1) if n % d == 0] for n in suffix)):
            if set(tile) == {1}:
                continue
            after = shape[: len(shape) - k] + [n // t for n, t in zip(suffix, tile, strict=True)] + list(tile)
            for rest in unpadded_tilings(after, levels - 1):
                yield (tile, *rest)


def four_by_four_digits() -> list[Digits]:
    out = []
    for perm in itertools.permutations(range(4)):
        out.append(
            [
                (0, 1, 2, 1 << perm[0]),
                (0, 2, None, 1 << perm[1]),
                (1, 1, 2, 1 << perm[2]),
                (1, 2, None, 1 << perm[3]),
            ]
        )
    return out


def brute_force_4x4() -> int:
    """How many of the 24 bit-permutation maps the enumeration of layouts finds."""
    wanted = set()
    for digits in four_by_four_digits():
        wanted.add(
            tuple(
                sum(((i if k == 0 else j) // w % (m or 4)) * s for k, w, m, s in digits)
                for i in range(4)
                for j in range(4)
            )
        )
    found = set()
    for m2m, tiles in itertools.product([(0, 1), (1, 0)], unpadded_tilings([4, 4], 3)):
        m = layout_map(layout_shape("f32", (4, 4), m2m, tiles))
        offsets = tuple(int(m.forward((i, j))) for i in range(4) for j in range(4))
        if offsets in wanted:
            found.add(offsets)
    return len(found)


def deep_4x4() -> int:
    return sum(deep((4, 4), digits) for digits in four_by_four_digits())


def main(rounds: int) -> None:
    cases = random_permutations()
    ways = {"narrow": narrow, "wide": wide, "deep": deep}
    times: dict[str, list[float]] = {name: [] for name in ways}
    found: dict[str, int] = {}
    for r in range(rounds):
        names = list(ways)
        names = names[r % len(names) :] + names[: r % len(names)]  # rotate who goes first
        for name in names:
            seconds, found[name] = timed_round(ways[name], cases)
            times[name].append(seconds)
    pair: dict[str, list[float]] = {
        "brute force (enumerate f32[4,4] layouts)": [],
        "deep search (24 maps)": [],
    }
    counts = {}
    for r in range(rounds):
        runs = [
            ("brute force (enumerate f32[4,4] layouts)", brute_force_4x4),
            ("deep search (24 maps)", deep_4x4),
        ]
        for name, run in runs if r % 2 == 0 else runs[::-1]:
            start = time.process_time()
            counts[name] = run()
            pair[name].append(time.process_time() - start)
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}, {rounds} rounds"
    )
    base = statistics.median(times["wide"])
    print("| search | recovered of 300 | median CPU s | vs wide |")
    print("| --- | --- | --- | --- |")
    for name in ways:
        t = statistics.median(times[name])
        print(f"| {name} | {found[name]} | {t:.2f} | {t / base:.2f} |")
    bf = statistics.median(pair["brute force (enumerate f32[4,4] layouts)"])
    print("| 4x4 bit permutations | found of 24 | median CPU s | vs brute force |")
    print("| --- | --- | --- | --- |")
    for name, ts in pair.items():
        t = statistics.median(ts)
        print(f"| {name} | {counts[name]} | {t:.2f} | {t / bf:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
