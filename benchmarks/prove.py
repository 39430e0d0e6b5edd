"""Prover speed on the real XLA:TPU shapes: injective and in_bounds per layout, bitcast decisions.

For every array shape in ``tests/data/ground_truth/tpu/*.jsonl`` (default layouts, pinned layouts,
the compiler's chosen layouts, both sides of the reshape and transpose rows, rows the
compiler rejected included) this proves ``injective`` and ``in_bounds``
and reports the median and 95th-percentile time per proof, first with the default method
(instances of general stage lemmas, from a cold start: the lemmas are proved on the way
and their time is counted), then with ``method="direct"`` (one solver query per layout); where ``islpy`` is installed
(``pip install islpy``, a benchmark-only extra) it also times ``isl_map_is_injective`` on
the same layouts, in the same run, and gives the ratio. Then it times the exact bitcast
decision on every reshape/transpose row.

Run: ``python benchmarks/prove.py`` from the checkout (the data lives in tests/data/ground_truth).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sympy

from layout_algebra import prove
from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.syntax import parse_shape

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "ground_truth" / "tpu"


def tpu_shapes() -> list[str]:
    """Every distinct array shape written anywhere in the TPU data (any key, any row)."""
    shapes: set[str] = set()
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            for key, text in row.items():
                if key != "error" and isinstance(text, str) and "[" in text:
                    shapes.add(text)
            if "dtype" in row and "layout" in row and "[" not in str(row["layout"]):
                shapes.add(f"{row['dtype']}[{','.join(map(str, row['dims']))}]{row['layout']}")
    for text in sorted(shapes):
        layout_map(parse_shape(text))  # every one must have a layout map: fail loudly if not
    return sorted(shapes)


def isl_text(expr: sympy.Expr) -> str:
    """A SymPy floor/Mod expression in isl's syntax."""
    if expr.is_Integer or expr.is_Symbol:
        return str(expr)
    if expr.is_Add:
        return "(" + " + ".join(isl_text(a) for a in expr.args) + ")"
    if expr.is_Mul:
        return "(" + " * ".join(isl_text(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.floor):
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        return f"floor(({isl_text(sympy.expand(num))})/{den})"
    if isinstance(expr, sympy.Mod):
        return f"({isl_text(expr.args[0])} mod {expr.args[1]})"
    raise ValueError(f"no isl form for {expr}")


def isl_injective_seconds(text: str):
    import islpy as isl

    m = layout_map(text)
    names = [str(s) for s in m.index_symbols]
    bounds = (
        " and ".join(f"0 <= {n} < {d}" for n, d in zip(names, m.logical_dimensions, strict=True)) or "true"
    )
    expr = isl_text(m.forward_expr())
    start = time.perf_counter()
    result = isl.Map(f"{{ [{', '.join(names)}] -> [{expr}] : {bounds} }}").is_injective()
    return time.perf_counter() - start, result


def summary(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"{label:34} n={len(ms):4}  median {statistics.median(ms):8.2f} ms  p95 {p95:8.2f} ms  max {ms[-1]:8.2f} ms"


def timed(label: str, claim, shapes: list[str]) -> list[float]:
    """Prove ``claim(text)`` for every shape; print the summary, the statuses and the total."""
    seconds, statuses, encodings = [], [], set()
    start = time.perf_counter()
    for text in shapes:
        result = claim(text)
        seconds.append(result.seconds)
        statuses.append(result.status)
        encodings.add(result.encoding.split(" (")[0].split(",")[0])
    total = time.perf_counter() - start
    print(summary(label, seconds) + f"  total {total:6.2f} s")
    print(
        f"    statuses {dict(sorted((s, statuses.count(s)) for s in set(statuses)))}; encodings {sorted(encodings)}"
    )
    return seconds


def main() -> int:
    # a cold start: an empty lemma cache of our own (the user's is neither read nor written)
    os.environ["LAYOUT_ALGEBRA_CACHE_DIR"] = tempfile.mkdtemp(prefix="prove-benchmark-")
    shapes = tpu_shapes()
    print(f"python {platform.python_version()} on {platform.machine()}, {len(shapes)} TPU layouts")
    print(
        "cold start: no stage lemma proved yet and an empty lemma cache; the first layouts of "
        "each stage structure pay for it (benchmarks/prove_cold.py times fresh processes with the cache filled)"
    )
    inj = timed("prove.injective", prove.injective, shapes)
    timed("prove.in_bounds", prove.in_bounds, shapes)
    lemmas = prove.core._GENERAL_LEMMAS
    print(
        f"    {len(lemmas)} general stage lemmas proved on the way, "
        f"{sum(r.seconds for r in lemmas.values()):.2f} s in all (included in the times above)"
    )
    direct = timed("prove.injective, method='direct'", lambda t: prove.injective(t, method="direct"), shapes)
    timed("prove.in_bounds, method='direct'", lambda t: prove.in_bounds(t, method="direct"), shapes)
    try:
        import islpy  # noqa: F401

        isl_times = []
        start = time.perf_counter()
        for text in shapes:
            seconds, ok = isl_injective_seconds(text)
            isl_times.append(seconds)
            assert ok, text
        print(summary("isl_map_is_injective", isl_times) + f"  total {time.perf_counter() - start:6.2f} s")
        isl_median = statistics.median(isl_times)
        print(
            f"ratio of medians, isl / ours: {isl_median / statistics.median(inj):.1f}x (auto), "
            f"{isl_median / statistics.median(direct):.2f}x (direct)"
        )
        print(
            f"ratio of sums, isl / ours: {sum(isl_times) / sum(inj):.1f}x (auto), "
            f"{sum(isl_times) / sum(direct):.2f}x (direct)"
        )
    except ImportError:
        print("islpy not installed: no isl comparison (pip install islpy)")
    decide = []
    for name in ("reshape", "transpose"):
        for line in (DATA / f"{name}_bitcast.jsonl").read_text().splitlines():
            row = json.loads(line)
            start = time.perf_counter()
            if name == "reshape":
                reshape_is_bitcast(row["src"], row["dst"])
            else:
                transpose_is_bitcast(row["src"], row["dst"], row["permutation"])
            decide.append(time.perf_counter() - start)
    print(summary("exact bitcast decision", decide))
    return 0


if __name__ == "__main__":
    sys.exit(main())
