"""One concrete proof in a fresh process: ours (lemma cache empty, then filled) against isl.

Each measurement is a new Python process. It imports its library, then times ONE call:

* ``prove.injective(shape)`` with an empty lemma cache directory: the first proof on a new
  installation, which proves the general stage lemmas it needs and stores them;
* the same, after SymPy has loaded the modules it imports on the first symbolic ``+`` and
  ``*`` (``sympy.matrices.expressions``, ``sympy.tensor``): what is left of that first proof
  once any earlier symbolic work in the process has paid for those imports;
* the same with the cache filled by the previous process: every later process (it builds
  each lemma's query and reads its answer by the query's exact text);
* the same with ``*.layout.json`` records deleted first: the package no longer writes such
  records (the lemma cache is keyed by the query text alone, ``docs/prover.md``), so this
  cell now measures the same as the previous one;
* ``isl.Map(text).is_injective()`` (islpy) on the same layout's map, its text built by
  the parent process (``benchmarks/prove.py``'s ``isl_text``).

Ours with the lemma cache at its default place (``$XDG_CACHE_HOME`` pointed at a fresh
folder), found as a user's process finds it.

Imports are not timed (they are a per-process cost measured by the import benchmark).
Median of 7 processes per cell, the cells of one round run one after the other, in
milliseconds of CPU time (the process's own: on a shared machine a process waiting for a
core loses wall-clock time that is not its cost); the wall-clock medians follow the table.

``--solvers``: in one process, the general lemmas' queries of the same layouts checked by
Z3's default solver and by its SMT core (``Tactic("smt").solver()``, what the prover uses),
interleaved, median of 7: the solver part of a cache-empty first proof.

Run:  .venv/bin/python benchmarks/prove_cold.py [--solvers]     (needs ``pip install islpy`` for isl)
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
PROCESSES = 7

OURS = r"""
import sys, time
from layout_algebra import prove
if sys.argv[2] == "sympy-imports-done":
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

    from layout_algebra.meaning.layout_map import layout_map

    m = layout_map(shape)
    names = [str(s) for s in m.index_symbols]
    bounds = (
        " and ".join(f"0 <= {n} < {d}" for n, d in zip(names, m.logical_dimensions, strict=True)) or "true"
    )
    return f"{{ [{', '.join(names)}] -> [{isl_text(m.forward_expr())}] : {bounds} }}"


WALL: dict[str, list[float]] = {}


def user_cache(folder: str) -> dict[str, str]:
    """The environment of a process whose user cache directory is ``folder`` (the lemma cache
    at its default place, found as a user's process finds it)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LAYOUT_ALGEBRA_CACHE_DIR", "LAYOUT_ALGEBRA_LEMMA_CACHE")
    }
    return {**env, "XDG_CACHE_HOME": folder}


LABELS = ("cold", "cold, imports done", "warm", "per-stage", "isl")


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


def lemma_queries() -> list[list[str]]:
    """The general lemmas of ``SHAPES``, each with its exact query texts (read from the cache)."""
    from layout_algebra import prove
    from layout_algebra.prove import core

    with tempfile.TemporaryDirectory() as folder:
        os.environ["LAYOUT_ALGEBRA_CACHE_DIR"] = folder
        os.environ["LAYOUT_ALGEBRA_LEMMA_CACHE"] = "exact"  # every query built, its text stored
        for shape in SHAPES:
            assert prove.injective(shape).proved
        queries = []
        for entry in sorted(Path(folder).glob("*.smt2")):
            text = entry.read_text()
            body = text.split("\n", 2)[2]  # after the two header lines
            queries.append(body.split("; next query\n"))
    core._GENERAL_LEMMAS.clear()
    return queries


def solver_ab(rounds: int = 7) -> None:
    """Z3's default solver against its SMT core on the same query texts, interleaved."""
    import z3

    makers = {
        "default solver": z3.Solver,
        "SMT core (Tactic('smt'))": lambda: z3.Tactic("smt").solver(),
    }
    queries = lemma_queries()
    times: dict[str, list[float]] = {name: [] for name in makers}
    for _ in range(rounds):
        for name, make in makers.items():
            start = time.process_time()
            for texts in queries:
                for text in texts:
                    s = make()
                    s.set("random_seed", 0)
                    s.from_string(text)
                    assert s.check() == z3.unsat
            times[name].append((time.process_time() - start) * 1e3)
    print(
        f"# {len(queries)} general lemma queries of the {len(SHAPES)} layouts; Z3 {z3.get_full_version()}; "
    )
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}")
    print()
    print("| solver | CPU ms, all queries (median of 7 interleaved rounds) | min | max |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |")
    default, smt = (statistics.median(v) for v in times.values())
    print(f"\nSMT core / default: {smt / default:.2f} of the time")


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
        "| shape | ours, cache empty | same, SymPy's lazy imports done | **ours, cache filled** "
        "| cache filled, per-stage records only | isl | isl / ours (cache filled) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    rows = []
    for shape in SHAPES:
        cells: dict[str, list[float]] = {k: [] for k in LABELS}
        for _ in range(PROCESSES):
            with tempfile.TemporaryDirectory() as folder:
                env = user_cache(folder)
                cells["cold"].append(child(OURS, [shape, "cold"], env, f"{shape} cold"))
                with tempfile.TemporaryDirectory() as other:
                    env_other = user_cache(other)
                    cells["cold, imports done"].append(
                        child(OURS, [shape, "sympy-imports-done"], env_other, f"{shape} cold-imports")
                    )
                cells["warm"].append(child(OURS, [shape, "cold"], env, f"{shape} warm"))
                for record in Path(folder).rglob("*.layout.json"):
                    record.unlink()
                cells["per-stage"].append(child(OURS, [shape, "cold"], env, f"{shape} per-stage"))
            if islpy is not None:
                cells["isl"].append(child(ISL, [isl_map_text(shape)], dict(os.environ), f"{shape} isl"))
        row = {k: statistics.median(v) if v else None for k, v in cells.items()}
        rows.append((shape, row))
        isl_ms = row["isl"]
        isl_cell = f"{isl_ms:.1f}" if isl_ms is not None else "—"
        ratio = f"{isl_ms / row['warm']:.2f}x" if isl_ms is not None else "—"
        print(
            f"| `{shape}` | {row['cold']:.1f} | {row['cold, imports done']:.1f} | **{row['warm']:.1f}** "
            f"| {row['per-stage']:.1f} | {isl_cell} | {ratio} |",
            flush=True,
        )
    print()
    print("Wall-clock medians, ms (same processes): ours cache empty / cache filled / isl")
    print()
    for shape in SHAPES:
        w = [statistics.median(WALL.get(f"{shape} {k}", [float("nan")])) for k in ("cold", "warm", "isl")]
        print(f"- `{shape}`: {w[0]:.1f} / {w[1]:.1f} / {w[2]:.1f}")
    print()
    print(f"load average after the run: {os.getloadavg()[0]:.2f}")
    print()
    print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    if "--solvers" in sys.argv[1:]:
        solver_ab()
        sys.exit(0)
    sys.exit(main())
