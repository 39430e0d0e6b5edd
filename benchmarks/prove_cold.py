"""One concrete proof in a fresh process: ours (lemma cache empty, then filled) against isl.

Each measurement is a new Python process. It imports its library, then times ONE call:

* ``prove.injective(shape)`` with an empty lemma cache directory: the first proof on a new
  installation, which proves the general stage lemmas it needs and stores them;
* the same with the cache filled by the previous process: every later process;
* the same, after SymPy has loaded the modules it imports on the first symbolic ``+`` and
  ``*`` (``sympy.matrices.expressions``, ``sympy.tensor``): what is left of our proof once
  any earlier symbolic work in the process has paid for those imports;
* ``isl.Map(text).is_injective()`` (islpy) on the same layout's map, its text built by
  the parent process (``benchmarks/prove.py``'s ``isl_text``).

Imports are not timed (they are a per-process cost measured by the import benchmark).
Median of 5 processes per cell, in milliseconds of CPU time (the process's own: on a shared
machine a process waiting for a core loses wall-clock time that is not its cost); the
wall-clock medians follow the table.

Run:  .venv/bin/python benchmarks/prove_cold.py        (needs ``pip install islpy`` for isl)
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPES = (
    "f32[1024,1024]{1,0:T(8,128)}",
    "f32[1000,300]{0,1:T(8,128)}",
    "bf16[16,256]{1,0:T(8,128)(2,1)}",
    "s8[4096,4096]{1,0:T(32,128)(4,1)}",
    "s4[8,32768,1,256]{3,1,0,2:T(8,128)(8,1)E(4)}",
    "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}",
)
PROCESSES = 5

OURS = r"""
import sys, time
from layout_algebra import prove
if sys.argv[2] == "sympy-warm":
    import sympy.matrices.expressions, sympy.tensor.tensor  # what the first symbolic + and * import
start, cpu = time.perf_counter(), time.process_time()
result = prove.injective(sys.argv[1])
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
assert result.status == "proved", result
print(seconds, cpu)
"""

ISL = r"""
import sys, time
import islpy as isl
start, cpu = time.perf_counter(), time.process_time()
answer = isl.Map(sys.argv[1]).is_injective()
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
assert answer
print(seconds, cpu)
"""


def isl_map_text(shape: str) -> str:
    from prove import isl_text

    from layout_algebra.layout_map import layout_map

    m = layout_map(shape)
    names = [str(s) for s in m.index_symbols]
    bounds = (
        " and ".join(f"0 <= {n} < {d}" for n, d in zip(names, m.logical_dimensions, strict=True)) or "true"
    )
    return f"{{ [{', '.join(names)}] -> [{isl_text(m.forward_expr())}] : {bounds} }}"


WALL: dict[str, list[float]] = {}


def child(program: str, args: list[str], env: dict[str, str], label: str) -> float:
    """The child's CPU milliseconds (its wall-clock milliseconds are kept in ``WALL[label]``)."""
    run = subprocess.run(
        [sys.executable, "-c", program, *args], env=env, capture_output=True, text=True, timeout=600
    )
    if run.returncode != 0:
        raise SystemExit(f"child failed: {run.stderr}")
    wall, cpu = (float(v) * 1e3 for v in run.stdout.split()[-2:])
    WALL.setdefault(label, []).append(wall)
    return cpu


def main() -> int:
    try:
        import islpy

        isl_version = islpy.__version__
    except ImportError:
        islpy = None
        isl_version = "not installed (pip install islpy)"
    import z3

    print(
        f"# {platform.machine()}, Python {platform.python_version()}, Z3 {z3.get_full_version()}, "
        f"islpy {isl_version}; {time.strftime('%Y-%m-%d')}; median of {PROCESSES} fresh processes, ms"
    )
    print()
    print(
        "| shape | ours, first run (cache empty) | ours, cache filled | ours, cache filled, SymPy's lazy imports done | isl | isl / ours (cache filled) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    rows = []
    for shape in SHAPES:
        cold, warm, warm_sympy, isl_ms = [], [], [], []
        for _ in range(PROCESSES):
            with tempfile.TemporaryDirectory() as folder:
                env = {**os.environ, "LAYOUT_ALGEBRA_CACHE_DIR": folder}
                cold.append(child(OURS, [shape, "cold"], env, f"{shape} cold"))
                warm.append(child(OURS, [shape, "cold"], env, f"{shape} warm"))
                warm_sympy.append(child(OURS, [shape, "sympy-warm"], env, f"{shape} sympy"))
            if islpy is not None:
                isl_ms.append(child(ISL, [isl_map_text(shape)], dict(os.environ), f"{shape} isl"))
        row = [statistics.median(v) if v else None for v in (cold, warm, warm_sympy, isl_ms)]
        rows.append((shape, *row))
        isl_cell = f"{row[3]:.1f}" if row[3] is not None else "—"
        ratio = f"{row[3] / row[1]:.2f}x" if row[3] is not None else "—"
        print(
            f"| `{shape}` | {row[0]:.1f} | {row[1]:.1f} | {row[2]:.1f} | {isl_cell} | {ratio} |", flush=True
        )
    print()
    print("Wall-clock medians, ms (same processes): ours cache empty / cache filled / isl")
    print()
    for shape in SHAPES:
        w = [statistics.median(WALL.get(f"{shape} {k}", [float("nan")])) for k in ("cold", "warm", "isl")]
        print(f"- `{shape}`: {w[0]:.1f} / {w[1]:.1f} / {w[2]:.1f}")
    print()
    print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
