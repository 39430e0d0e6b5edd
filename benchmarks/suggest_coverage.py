"""How many XLA:TPU reshapes ``suggest_bitcast_layout`` finds a layout for, against brute force.

For every row of ``tests/data/ground_truth/tpu/reshape_bitcast.jsonl``: is the row's own
result layout a bitcast (the exact decision), does ``suggest_bitcast_layout`` find one, and,
where it finds none, does a brute-force family of candidates (every ``minor_to_major`` with
no tile, ``T(a,b)`` for a in 1..32 and b in {128, 256} with an optional second level
``(2,1)``, ``(4,1)`` or ``(32,1)``, and 1-D tiles of 128..2048 with an optional second level),
each decided exactly, find one? Also times the old search (the input's tiles or none, every
``minor_to_major``) as the baseline, in the same run.

    python benchmarks/suggest_coverage.py
"""

from __future__ import annotations

import itertools
import json
import platform
import time
from datetime import date
from pathlib import Path

from layout_algebra.decide.bitcast import reshape_is_bitcast
from layout_algebra.decide.suggest import suggest_bitcast_layout
from layout_algebra.model import ArrayShape, Layout, Tile, parse_shape

DATA = (
    Path(__file__).resolve().parents[1] / "tests" / "data" / "ground_truth" / "tpu" / "reshape_bitcast.jsonl"
)


def tile_families() -> list[tuple[Tile, ...]]:
    out: list[tuple[Tile, ...]] = [()]
    for a in (1, 2, 4, 8, 16, 32):
        for b in (128, 256):
            for second in ((), (2, 1), (4, 1), (32, 1)):
                out.append((Tile((a, b)),) + ((Tile(second),) if second else ()))
    for a in (128, 256, 512, 1024, 2048):
        for second in ((), (128,), (256,)):
            out.append((Tile((a,)),) + ((Tile(second),) if second else ()))
    return out


def candidates(src: ArrayShape, dims: tuple[int, ...], families) -> list[ArrayShape]:
    e = src.effective_layout.element_size_in_bits
    return [
        ArrayShape(src.element_type, dims, (False,) * len(dims), Layout(order, tiles, element_size_in_bits=e))
        for order in itertools.permutations(range(len(dims)))
        for tiles in families
    ]


def first_bitcast(src: ArrayShape, shapes: list[ArrayShape]) -> tuple[ArrayShape | None, int]:
    decided = 0
    for shape in shapes:
        try:
            verdict = reshape_is_bitcast(src, shape)
        except ValueError:
            continue
        decided += 1
        if verdict:
            return shape, decided
    return None, decided


def main() -> None:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    own = suggested = baseline = brute_found = decided = 0
    t_suggest = t_baseline = t_brute = 0.0
    for row in rows:
        src, dst = parse_shape(row["src"]), parse_shape(row["dst"])
        dims = tuple(int(d) for d in dst.dimensions)
        own += bool(reshape_is_bitcast(src, dst))
        t = time.perf_counter()
        found = suggest_bitcast_layout(src, dims)
        t_suggest += time.perf_counter() - t
        suggested += bool(found)
        t = time.perf_counter()
        old, _ = first_bitcast(src, candidates(src, dims, [src.effective_layout.tiles, ()]))
        t_baseline += time.perf_counter() - t
        baseline += old is not None
        if not found:
            t = time.perf_counter()
            brute, n = first_bitcast(src, candidates(src, dims, tile_families()))
            t_brute += time.perf_counter() - t
            decided += n
            if brute is not None:
                brute_found += 1
                print(f"missed: {row['src']} -> {list(dims)}: {brute}")
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, date {date.today()}")
    print(f"{len(rows)} reshape rows; the row's own layout is a bitcast on {own}")
    print(f"suggest_bitcast_layout finds a layout on {suggested} ({t_suggest:.1f} s)")
    print(
        f"baseline (input's tiles or none, every minor_to_major) finds one on {baseline} ({t_baseline:.1f} s)"
    )
    print(
        f"on the {len(rows) - suggested} rows without a suggestion, brute force ({decided:,} candidates "
        f"decided, {t_brute:.1f} s) finds {brute_found}"
    )


if __name__ == "__main__":
    main()
