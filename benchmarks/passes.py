"""Validating a whole XLA:TPU pass pipeline: ``validate_passes`` on the shipped dumps.

For each program in ``tests/data/pass_dumps/`` it times ``validate_passes`` on the whole
directory (every consecutive pair of per-pass modules), best of 3, against a baseline
measured in the same run: parsing every per-pass file of the directory once
(``parse_module``), which the validation must do anyway. The issue's target: a whole
pipeline of a ~200-instruction module in under 60 s.

Run:  .venv/bin/python benchmarks/passes.py [EXTRA_DUMP_DIR ...]

An extra directory holds one program's dumps, e.g. the 622-instruction ``transformer_block``
(too big to ship), written by
``scripts/generate_pass_dumps.py --python PY --out /tmp/bigdump transformer_block``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from layout_algebra.hlo import parse_module
from layout_algebra.hlo.passes import read_dump_directory, validate_passes

DUMPS = Path(__file__).resolve().parent.parent / "tests" / "data" / "pass_dumps"


def best_of(n: int, thunk) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(n):
        start = time.perf_counter()
        value = thunk()
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> None:
    print(
        "| program | files | instructions (max, flat) | pairs | proved | unknown | validate s | parse-only s | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    extra = [Path(a) for a in sys.argv[1:]]
    fixtures = [p for p in DUMPS.iterdir() if p.is_dir() and read_dump_directory(p)[0]]  # not corpus/
    for directory in sorted(fixtures) + extra:
        modules, _ = read_dump_directory(directory)
        files = [d.path for dumps in modules.values() for d in dumps]
        size = max(parse_module(f.read_text()).instruction_count for f in files)
        parse_s, _ = best_of(3, lambda files=files: [parse_module(f.read_text()) for f in files])
        validate_s, report = best_of(3, lambda directory=directory: validate_passes(directory))
        counts = report.counts()
        print(
            f"| {directory.name} | {len(files)} | {size} | {len(report.results)} | {counts['proved']} | "
            f"{counts['unknown']} | {validate_s:.2f} | {parse_s:.2f} | {validate_s / parse_s:.1f}x |"
        )


if __name__ == "__main__":
    main()
