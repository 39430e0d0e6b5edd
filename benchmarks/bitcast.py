"""Speed of the exact bitcast decision on the real XLA:TPU reshape/transpose rows, against isl.

For every row of ``tests/data/ground_truth/tpu/{reshape,transpose}_bitcast.jsonl`` this
times ``reshape_is_bitcast`` / ``transpose_is_bitcast`` from a cold cache (the decision
memo and the layout-map cache are cleared before every row, so each time includes
building both layouts' stage pipelines), and reports which path decided it (solver-free
arrangement check, enumeration, sampled refutation, Z3). Where ``islpy`` is installed (a
benchmark-only extra: ``pip install islpy``) it then times isl's map equality on the same
question in the same run — ``{ [j] -> [dst offset] } == { [j] -> [src offset of the
corresponding element] }`` over the output box, built beforehand from our SymPy closed
forms — each in a child process with a 10 s limit, and checks that isl's answer agrees on
the offsets. (isl decides the offsets only; the allocation and memory-space checks are
ours alone.)

Run: ``python benchmarks/bitcast.py`` from the checkout.

``python benchmarks/bitcast.py --ab [ROUNDS]`` instead A/B-tests the solver-free
"same physical arrangement" rule: the stage-form rule as shipped
(:func:`layout_algebra.meaning.stages.offset_form`) against the rule it replaced (dimensions, tiles
and element size compared as they are written, kept below as the baseline), in one process,
in interleaved rounds (alternating which goes first), every row cold in each round; it
prints the median wall-clock and CPU time of a round over all rows, and how often each rule
fired.
"""

from __future__ import annotations

import json
import multiprocessing
import platform
import statistics
import sys
import time
from pathlib import Path

import sympy

from layout_algebra.decide import bitcast, correspondence
from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
from layout_algebra.meaning.layout_map import SYMPY_ARITHMETIC, index_symbols, layout_map
from layout_algebra.meaning.stages import pipeline
from layout_algebra.model.syntax import parse_shape

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "ground_truth" / "tpu"
ISL_TIMEOUT_S = 10.0


def rows() -> list[tuple[str, dict]]:
    out = []
    for kind in ("reshape", "transpose"):
        for line in (DATA / f"{kind}_bitcast.jsonl").read_text().splitlines():
            if line.strip():
                out.append((kind, json.loads(line)))
    return out


def decide(kind: str, row: dict):
    if kind == "reshape":
        return reshape_is_bitcast(row["src"], row["dst"])
    return transpose_is_bitcast(row["src"], row["dst"], row["permutation"])


def cold() -> None:
    bitcast._decided.cache_clear()
    sys.modules[
        "layout_algebra.meaning.layout_map"
    ]._layout_map.cache_clear()  # the package re-exports the function
    pipeline._layout_steps.cache_clear()
    correspondence.is_separable.cache_clear()


# ------------------------------------------------- A/B: the solver-free rule, before and after
def _previous_physical_form(shape) -> tuple:
    """The rule before 2026-11-24 (baseline only): physical dimensions with the unit ones
    more major than the first tile dropped (unless a later tile reaches them), the tiles as
    written, the element size."""
    layout = shape.effective_layout
    order = correspondence._major_to_minor(shape)
    first = len(layout.tiles[0].dimensions) if layout.tiles else 0
    reaches = False
    if layout.tiles:
        minor = first
        for tile in layout.tiles:
            if len(tile.dimensions) > minor:
                reaches = True
                break
            minor += len(tile.dimensions)
    outer = max(shape.rank - first, 0) if not reaches else 0
    dims = tuple(
        shape.dimensions[d] for p, d in enumerate(order) if not (p < outer and shape.dimensions[d] == 1)
    )
    return dims, layout.tiles, layout_map(shape).element_bits


def _previous_rule(a, b, corr) -> bool:
    if correspondence._reading_order(a, corr.src_order) != correspondence._reading_order(
        a, correspondence._major_to_minor(a)
    ):
        return False
    if correspondence._reading_order(b, corr.dst_order) != correspondence._reading_order(
        b, correspondence._major_to_minor(b)
    ):
        return False
    return _previous_physical_form(a) == _previous_physical_form(b)


def ab(rounds: int) -> int:
    data = rows()
    rules = {
        "stage form (shipped)": correspondence.same_physical_arrangement,
        "previous rule": _previous_rule,
    }
    wall: dict[str, list[float]] = {name: [] for name in rules}
    cpu: dict[str, list[float]] = {name: [] for name in rules}
    fired: dict[str, int] = {}
    try:
        for r in range(rounds):
            names = list(rules) if r % 2 == 0 else list(reversed(rules))
            for name in names:
                bitcast.same_physical_arrangement = rules[name]
                count, w, c = 0, 0.0, 0.0
                for kind, row in data:
                    cold()
                    w0, c0 = time.perf_counter(), time.process_time()
                    try:
                        verdict = decide(kind, row)
                    except ValueError:
                        verdict = None
                    w += time.perf_counter() - w0
                    c += time.process_time() - c0
                    count += verdict is not None and verdict.method == "same physical arrangement (no solver)"
                wall[name].append(w)
                cpu[name].append(c)
                fired[name] = count
    finally:
        bitcast.same_physical_arrangement = rules["stage form (shipped)"]
    print(f"python {platform.python_version()} on {platform.machine()}, {len(data)} rows, {rounds} rounds")
    for name in rules:
        print(
            f"{name:22} all rows: median wall {statistics.median(wall[name]) * 1000:8.1f} ms, "
            f"median CPU {statistics.median(cpu[name]) * 1000:8.1f} ms; decided by the rule: {fired[name]}"
        )
    new, old = (statistics.median(cpu[name]) for name in rules)
    print(f"CPU ratio shipped / previous: {new / old:.3f}")
    return 0


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


def isl_maps(kind: str, row: dict) -> tuple[str, str]:
    """The two offset maps of the question, as isl text, over the output's index box."""
    a, b = parse_shape(row["src"]), parse_shape(row["dst"])
    corr = (
        correspondence.reshape_correspondence(a, b)
        if kind == "reshape"
        else correspondence.transpose_correspondence(tuple(row["permutation"]), b)
    )
    j = index_symbols(b.rank)
    i = correspondence.input_index_of(corr, a, b)(j, SYMPY_ARITHMETIC)
    ma, mb = layout_map(a), layout_map(b)
    dst = mb.forward_expr()
    src = ma.forward_expr().subs(dict(zip(index_symbols(a.rank), i, strict=True)), simultaneous=True)
    names = [str(s) for s in j]
    bounds = " and ".join(f"0 <= {n} < {d}" for n, d in zip(names, b.dimensions, strict=True)) or "true"
    head = f"[{', '.join(names)}]"
    return (
        f"{{ {head} -> [{isl_text(dst)}] : {bounds} }}",
        f"{{ {head} -> [{isl_text(src)}] : {bounds} }}",
    )


def _isl_equal(texts: tuple[str, str]) -> tuple[float, bool]:
    import islpy as isl

    start = time.perf_counter()
    equal = isl.Map(texts[0]).is_equal(isl.Map(texts[1]))
    return time.perf_counter() - start, bool(equal)


def summary(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"{label:28} n={len(ms):4}  median {statistics.median(ms):7.2f} ms  p95 {p95:7.2f} ms  max {ms[-1]:8.2f} ms"


def main() -> int:
    data = rows()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {len(data)} TPU reshape/transpose rows"
    )
    ours, methods, answers = [], {}, []
    for kind, row in data:
        cold()
        start = time.perf_counter()
        try:
            verdict = decide(kind, row)
        except ValueError:  # not a reshape/transpose at all: decided by the argument checks
            ours.append(time.perf_counter() - start)
            answers.append(None)
            continue
        ours.append(time.perf_counter() - start)
        answers.append(verdict)
        key = verdict.method.split(":")[-1].strip() if ":" in verdict.method else verdict.method
        key = "enumerating all elements" if key.startswith("enumerating all") else key
        methods[key] = methods.get(key, 0) + 1
    print(summary("ours (cold, per row)", ours) + f"  total {sum(ours):6.2f} s")
    print(f"    decided by: {dict(sorted(methods.items()))}")
    print(
        f"    statuses: { {s: sum(1 for v in answers if v is not None and v.status == s) for s in ('proved', 'refuted', 'unknown')} }"
    )
    for kind, row in data:  # fill the memo with every row's answer
        try:
            decide(kind, row)
        except ValueError:
            pass
    warm = []
    for kind, row in data:
        start = time.perf_counter()
        try:
            decide(kind, row)
        except ValueError:
            pass
        warm.append(time.perf_counter() - start)
    print(summary("ours (memoised, repeat)", warm))
    try:
        import islpy  # noqa: F401
    except ImportError:
        print("islpy not installed: no isl comparison (pip install islpy)")
        return 0
    isl_times, timeouts, disagreements = [], 0, 0
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(1)
    for (kind, row), verdict in zip(data, answers, strict=True):
        if verdict is None:
            continue
        texts = isl_maps(kind, row)
        job = pool.apply_async(_isl_equal, (texts,))
        try:
            seconds, equal = job.get(timeout=ISL_TIMEOUT_S)
        except multiprocessing.TimeoutError:
            pool.terminate()
            pool = ctx.Pool(1)
            timeouts += 1
            isl_times.append(ISL_TIMEOUT_S)
            continue
        isl_times.append(seconds)
        # isl compares offsets only; a refutation for sizes or memory spaces says nothing of them
        if verdict.status == "proved" and not equal:
            disagreements += 1
        if verdict.status == "refuted" and "element" in (verdict.counterexample or {}) and equal:
            disagreements += 1
    pool.terminate()
    print(
        summary("isl map equality", isl_times)
        + f"  (timeouts at {ISL_TIMEOUT_S:.0f} s counted as that: {timeouts})"
    )
    print(f"    offset answers disagreeing with ours: {disagreements}")
    ours_med, isl_med = statistics.median(ours), statistics.median(isl_times)
    print(f"ratio of medians, isl / ours: {isl_med / ours_med:.1f}x")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--ab":
        sys.exit(ab(int(sys.argv[2]) if len(sys.argv) > 2 else 9))
    sys.exit(main())
