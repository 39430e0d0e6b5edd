"""Parsing and printing speed of shape text, against json.loads of the same information.

Parses every shape string of XLA's source tree (tests/data/ground_truth/xla_shape_strings.tsv, ~540
strings) many times over, cold (cache cleared each pass) and warm, and — as a baseline in the same run — decodes a JSON encoding of
the same fields (type, dims, minor_to_major, tiles) with the standard library's C-accelerated
json module. Reports shapes/s, MB/s of input text, and the ratio to the baseline.

Run:  python benchmarks/parse.py [--repeat N]
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import time
from pathlib import Path

import layout_algebra as la

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "ground_truth" / "xla_shape_strings.tsv"


def best_of(fn, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the shape strings per round")
    args = parser.parse_args()

    with DATA.open() as f:
        texts = [row["input"] for row in csv.DictReader(f, delimiter="\t") if row["ok"].upper() == "OK"]
    shapes = [la.parse_shape(t) for t in texts]
    as_json = [
        json.dumps(
            {
                "type": s.element_type.text,
                "dims": list(s.dimensions),
                "m2m": list(s.layout.minor_to_major),
                "tiles": [list(t.dimensions) for t in s.layout.tiles],
            }
            if isinstance(s, la.ArrayShape)
            else {"tuple": str(s)}
        )
        for s in shapes
    ]
    n = len(texts) * args.repeat
    text_mb = sum(map(len, texts)) * args.repeat / 1e6

    clear_cache = la.model.syntax._parse_shape_cached.cache_clear

    def parse_all() -> None:  # cold: every pass starts with an empty cache
        for _ in range(args.repeat):
            clear_cache()
            for t in texts:
                la.parse_shape(t)

    def parse_cached() -> None:  # warm: the texts repeat, as in a compiler dump
        for _ in range(args.repeat):
            for t in texts:
                la.parse_shape(t)

    def print_all() -> None:
        for _ in range(args.repeat):
            for s in shapes:
                str(s)

    def json_all() -> None:
        for _ in range(args.repeat):
            for j in as_json:
                json.loads(j)

    t_parse, t_print, t_json = best_of(parse_all), best_of(print_all), best_of(json_all)
    t_cached = best_of(parse_cached)
    print(f"machine: {platform.machine()} {platform.processor() or ''} Python {platform.python_version()}")
    print(f"{n} shapes per round ({text_mb:.2f} MB of text), best of 5 rounds")
    print(f"parse_shape:        {n / t_parse:>10,.0f} shapes/s  {text_mb / t_parse:6.2f} MB/s")
    print(f"parse_shape cached: {n / t_cached:>10,.0f} shapes/s  {text_mb / t_cached:6.2f} MB/s")
    print(f"str(shape):         {n / t_print:>10,.0f} shapes/s")
    print(f"json.loads (base):  {n / t_json:>10,.0f} records/s")
    print(
        f"time ratio parse_shape / json.loads: {t_parse / t_json:.1f} (cold), {t_cached / t_json:.2f} (cached)"
    )


if __name__ == "__main__":
    main()
