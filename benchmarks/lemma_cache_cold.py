"""What the lemma cache saves a fresh process, keyed by the exact query text only.

Each measurement is a new Python process that imports the package and times ONE call,
``prove.injective(shape)``, in CPU milliseconds of that process: with an empty cache
directory (the general lemmas are proved by Z3 and stored), and with the directory the
previous process filled (each lemma's query is built again and its exact text looked up).

``--baseline PATH``: a checkout of another version of the package, measured in the same
run, cell after cell (the baseline of a change; PATH is the folder holding its
``layout_algebra``). Median of ``--repeat`` processes (default 7) per cell.

Run:  .venv/bin/python benchmarks/lemma_cache_cold.py [--baseline PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SHAPES = ("f32[1000,300]{1,0:T(8,128)}", "bf16[1000,300]{0,1:T(8,128)(2,1)}", "s4[3,129]{1,0:T(8,128)(8,1)}")

PROGRAM = r"""
import json, sys, time
from layout_algebra import prove
t = time.process_time()
r = prove.injective(sys.argv[1])
print(json.dumps([r.status, (time.process_time() - t) * 1000]))
"""


def one(root: Path, shape: str, cache: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(root), "LAYOUT_ALGEBRA_CACHE_DIR": cache}
    env.pop("LAYOUT_ALGEBRA_LEMMA_CACHE", None)
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, shape], env=env, cwd=root, capture_output=True, text=True, check=True
    )
    status, ms = json.loads(run.stdout)
    assert status == "proved", (root, shape, status)
    return float(ms)


def cells(root: Path, shape: str, repeat: int) -> tuple[float, float]:
    empty = [one(root, shape, tempfile.mkdtemp()) for _ in range(repeat)]
    filled = tempfile.mkdtemp()
    one(root, shape, filled)
    warm = [one(root, shape, filled) for _ in range(repeat)]
    return statistics.median(empty), statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="folder holding another version's layout_algebra")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    roots = {"this version": Path(__file__).resolve().parent.parent}
    if args.baseline:
        roots["baseline"] = args.baseline.resolve()
    print(f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} cores")
    print("| shape | version | empty cache (ms CPU) | filled cache (ms CPU) |")
    print("|---|---|---:|---:|")
    for shape in SHAPES:
        for name, root in roots.items():
            empty, warm = cells(root, shape, args.repeat)
            print(f"| `{shape}` | {name} | {empty:.0f} | {warm:.0f} |", flush=True)


if __name__ == "__main__":
    main()
