"""Size questions per shape: ``size_report`` and ``physical_size_in_bytes`` on the TPU shapes.

The shapes are every accepted row of ``tests/data/ground_truth/tpu/padded_bytes.jsonl``, parsed
beforehand. *Cold* empties the pipeline cache before every pass (every shape's stage pipeline
is built from scratch); *warm* is the common case in compiler dumps, where shapes repeat. Best
of 9 passes. With ``--before REV`` the same timings run, in a subprocess, on the package as it
was at git revision ``REV`` (which had no cache: there cold and warm are the same).

    python benchmarks/sizes.py --before b77cc36
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "tests" / "data" / "ground_truth" / "tpu" / "padded_bytes.jsonl"

TIMING = r"""
import json, sys, time
from layout_algebra import parse_shape
from layout_algebra.meaning.sizes import physical_size_in_bytes, size_report
try:
    from layout_algebra.meaning.stages.pipeline import _layout_steps
    clear = _layout_steps.cache_clear
except ImportError:  # before the cache existed
    clear = lambda: None
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
shapes = [parse_shape(r["shape"]) for r in rows if "error" not in r]
def best(f, cold):
    out = float("inf")
    for _ in range(9):
        if cold:
            clear()
        start = time.perf_counter()
        for s in shapes:
            f(s)
        out = min(out, time.perf_counter() - start)
    return out / len(shapes) * 1e6
print(json.dumps({"shapes": len(shapes), **{
    f"{f.__name__} {kind}": best(f, kind == "cold")
    for f in (size_report, physical_size_in_bytes) for kind in ("cold", "warm")}}))
"""


def timings(package_root: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    out = subprocess.run(
        [sys.executable, "-c", TIMING, str(ROWS)],
        env=env,
        cwd=package_root,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also time the package at this git revision")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"now": timings(ROOT)}
        if args.before:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before, "layout_algebra"],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            runs[args.before] = timings(Path(tmp))
    print(f"{runs['now']['shapes']} shapes, microseconds per shape (best of 9 passes)\n")
    print("| question | " + " | ".join(runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for key in runs["now"]:
        if key != "shapes":
            print(f"| `{key}` | " + " | ".join(f"{r[key]:.1f}" for r in runs.values()) + " |")


if __name__ == "__main__":
    main()
