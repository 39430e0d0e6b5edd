"""Layout recovery over 300 random bit permutations: the narrow, wide and deep searches.

Each permutation sends the bits of 1 to 3 dimensions (0 to 3 bits each) to the bits of one
offset, as a Triton linear layout does (``from_linear_layout``'s input). For each, this
times the recovery three ways in one process, in interleaved rounds (the order of the
ways rotates every round), and reports the median CPU time of a round and how many
permutations each way recovers:

- ``narrow``: the first search only (short unit-number peels);
- ``wide``: narrow, then the wider unit-number peels where it found nothing (the search
  before the deep one was added);
- ``deep``: :func:`~layout_algebra.meaning.recover.recover_layout` as shipped (narrow, wide,
  then every riffle up to :data:`~layout_algebra.meaning.peels.DEEP_LEVELS` levels, fewest
  levels first).

The same-run baseline is the brute force the deep search replaces for the 4x4 array:
enumerating every unpadded tiling of ``f32[4,4]`` (both orders, up to three levels, each
offset map by the stage pipeline) to find the 24 bit permutations, timed against the deep
search recovering the same 24 maps.

With ``--against REV`` (a git revision, e.g. ``61652ba``), it also times the module as it
was at ``REV`` (loaded from ``git show``) against the current one, interleaved, on the same
300 permutations and on ``s4[3,2,3,1]{0,2,3,1:T(4,4,4,2,2)}`` read from its MLIR element
offset (9 s of CPU before ``28b1e04``). The memos (merges, deep peels) are emptied before every timed
round, so no round reuses another's work.

Run: ``python benchmarks/recover.py [ROUNDS] [--against REV]`` (default 7 rounds) from the checkout.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from layout_algebra.interop import NotExpressible
from layout_algebra.meaning import recover as current
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.recover import (
    _found_layouts,
    _normal,
    layout_shape,
    recover_layout,
    strided_positions,
    unpadded_tilings,
)

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
    empty_memos(current)
    start = time.process_time()
    found = 0
    for dims, digits in cases:
        try:
            found += way(dims, digits)
        except NotExpressible:  # the search gave up (a state limit)
            pass
    return time.process_time() - start, found


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


#: ``s4[3,2,3,1]{0,2,3,1:T(4,4,4,2,2)}``'s MLIR element offset as digits with strides.
S4_DIMS = (3, 2, 3, 1)
S4_DIGITS: Digits = [
    (2, 2, None, 512),
    (0, 2, None, 256),
    (1, 1, None, 16),
    (3, 1, None, 4),
    (2, 1, 2, 2),
    (0, 1, 2, 1),
]


def module_at(rev: str) -> ModuleType:
    """``layout_algebra/meaning/recover.py`` as it was at the git revision ``rev``."""
    root = Path(__file__).resolve().parent.parent
    text = subprocess.run(
        ["git", "show", f"{rev}:layout_algebra/meaning/recover.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    name = f"recover_at_{rev}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(text, f"{rev}:layout_algebra/meaning/recover.py", "exec"), module.__dict__)
    return module


def empty_memos(module: ModuleType) -> None:
    """Empty what the module's functions remember (``_merges``, ``_deep_peels``), if they do."""
    for name in ("_merges", "_deep_peels"):
        memo = getattr(module, name, None)
        if hasattr(memo, "cache_clear"):
            memo.cache_clear()


def recover_all(module: ModuleType, cases: list[Case]) -> tuple[float, int]:
    """CPU seconds and how many of ``cases`` ``module.recover_layout`` answers."""
    empty_memos(module)
    start = time.process_time()
    found = 0
    for dims, digits in cases:
        try:
            module.recover_layout(
                "f32" if dims != S4_DIMS else "s4", dims, module.strided_positions(digits, dims), exact=False
            )
            found += 1
        except ValueError:  # NotExpressible, the module's own class
            pass
    return time.process_time() - start, found


def against(rev: str, rounds: int) -> None:
    """The current module against the one at ``rev``, interleaved (who goes first alternates)."""
    old = module_at(rev)
    workloads = {
        "300 bit permutations": random_permutations(),
        "s4[3,2,3,1] MLIR offset": [(S4_DIMS, S4_DIGITS)],
    }
    print(f"| workload | revision | answered | median CPU s | vs {rev} |")
    print("| --- | --- | --- | --- | --- |")
    for workload, cases in workloads.items():
        times: dict[str, list[float]] = {rev: [], "current": []}
        found = {}
        for r in range(rounds):
            runs = [(rev, old), ("current", current)]
            for name, module in runs if r % 2 == 0 else runs[::-1]:
                seconds, found[name] = recover_all(module, cases)
                times[name].append(seconds)
        base = statistics.median(times[rev])
        for name in (rev, "current"):
            t = statistics.median(times[name])
            print(f"| {workload} | {name} | {found[name]} of {len(cases)} | {t:.2f} | {t / base:.2f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    rev = None
    if "--against" in args:
        k = args.index("--against")
        rev = args[k + 1]
        del args[k : k + 2]
    count = int(args[0]) if args else 7
    main(count)
    if rev is not None:
        against(rev, count)
