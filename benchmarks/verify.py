"""Rewrite verification speed: typical HLO rewrites (<= 10 instructions, symbolic sizes).

Each case is a rewrite XLA's passes make (algebraic simplifier, reshape mover, copy
elimination, layout assignment) or a wrong version of one, written with symbolic sizes
(``N``, ``M``) and checked by ``hlo.verify_rewrite`` in physical mode; every case is run
``REPEATS`` times (fresh each time: nothing is cached between calls) and the median and
95th percentile over all runs are reported, with the goal median < 200 ms.

Baseline, in the same run: the same rewrites specialised to N = M = 256 and checked by
*executing* both modules on random packed bytes (``hlo.execute_compare.compare``, 4 trials) —
what a test of the rewrite would do without a proof, for one size only. The ratio is the
verifier's time (all sizes) over the executor's (one size).

Run: ``python benchmarks/verify.py`` from the checkout.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time

from layout_algebra.hlo import verify_rewrite
from layout_algebra.hlo.execute_compare import compare

REPEATS = 5


def module(*lines: str) -> str:
    return "HloModule m\nENTRY e {\n" + "\n".join("  " + line for line in lines) + "\n}"


P = "p = f32[N,M]{1,0:T(8,128)} parameter(0)"
CASES: list[tuple[str, str, str, str | None, str]] = [
    (
        "transpose -> bitcast (tiled)",
        module(P, "ROOT t = f32[M,N]{0,1:T(8,128)} transpose(p), dimensions={1,0}"),
        module(P, "ROOT t = f32[M,N]{0,1:T(8,128)} bitcast(p)"),
        None,
        "proved",
    ),
    (
        "transpose keeping {1,0} -> bitcast (wrong)",
        module("p = f32[N,N]{1,0} parameter(0)", "ROOT t = f32[N,N]{1,0} transpose(p), dimensions={1,0}"),
        module("p = f32[N,N]{1,0} parameter(0)", "ROOT t = f32[N,N]{1,0} bitcast(p)"),
        None,
        "refuted",
    ),
    (
        "transpose of transpose -> transpose",
        module(
            P,
            "a = f32[M,N]{1,0:T(8,128)} transpose(p), dimensions={1,0}",
            "ROOT b = f32[N,M]{1,0:T(8,128)} transpose(a), dimensions={1,0}",
        ),
        module(P, "ROOT b = f32[N,M]{1,0:T(8,128)} copy(p)"),
        None,
        "proved",
    ),
    (
        "transpose sunk below negate",
        module(
            P,
            "t = f32[M,N]{1,0:T(8,128)} transpose(p), dimensions={1,0}",
            "ROOT n = f32[M,N]{1,0:T(8,128)} negate(t)",
        ),
        module(
            P,
            "n = f32[N,M]{1,0:T(8,128)} negate(p)",
            "ROOT t = f32[M,N]{1,0:T(8,128)} transpose(n), dimensions={1,0}",
        ),
        None,
        "proved",
    ),
    (
        "transpose sunk below add (two operands)",
        module(
            P,
            "q = f32[N,M]{1,0:T(8,128)} parameter(1)",
            "a = f32[M,N]{1,0} transpose(p), dimensions={1,0}",
            "b = f32[M,N]{1,0} transpose(q), dimensions={1,0}",
            "ROOT s = f32[M,N]{1,0} add(a, b)",
        ),
        module(
            P,
            "q = f32[N,M]{1,0:T(8,128)} parameter(1)",
            "s = f32[N,M]{1,0:T(8,128)} add(p, q)",
            "ROOT t = f32[M,N]{1,0} transpose(s), dimensions={1,0}",
        ),
        None,
        "proved",
    ),
    (
        "reverse of reverse -> copy",
        module(
            P,
            "a = f32[N,M]{1,0:T(8,128)} reverse(p), dimensions={0,1}",
            "ROOT b = f32[N,M]{1,0:T(8,128)} reverse(a), dimensions={0,1}",
        ),
        module(P, "ROOT b = f32[N,M]{1,0:T(8,128)} copy(p)"),
        None,
        "proved",
    ),
    (
        "copy elimination (bf16 (8,128)(2,1))",
        module(
            "p = bf16[N,M]{1,0:T(8,128)(2,1)} parameter(0)",
            "c = bf16[N,M]{1,0:T(8,128)(2,1)} copy(p)",
            "ROOT r = bf16[M,N]{0,1:T(8,128)(2,1)} transpose(c), dimensions={1,0}",
        ),
        module(
            "p = bf16[N,M]{1,0:T(8,128)(2,1)} parameter(0)",
            "ROOT r = bf16[M,N]{0,1:T(8,128)(2,1)} transpose(p), dimensions={1,0}",
        ),
        None,
        "proved",
    ),
    (
        "copy to S(1) removed (wrong)",
        module(P, "ROOT c = f32[N,M]{1,0:T(8,128)S(1)} copy(p)"),
        module(P, "ROOT c = f32[N,M]{1,0:T(8,128)} copy(p)"),
        None,
        "refuted",
    ),
    (
        "tiled copy -> untiled copy, N % 8 == 0",
        module("p = f32[N,128]{1,0} parameter(0)", "ROOT c = f32[N,128]{1,0:T(8,128)} copy(p)"),
        module("p = f32[N,128]{1,0} parameter(0)", "ROOT c = f32[N,128]{1,0} copy(p)"),
        "N % 8 == 0",
        "proved",
    ),
    (
        "tiled copy -> untiled copy (wrong without N % 8)",
        module("p = f32[N,128]{1,0} parameter(0)", "ROOT c = f32[N,128]{1,0:T(8,128)} copy(p)"),
        module("p = f32[N,128]{1,0} parameter(0)", "ROOT c = f32[N,128]{1,0} copy(p)"),
        None,
        "refuted",
    ),
    (
        "reshape moved across negate (reshape mover)",
        module(
            "p = f32[N,M]{1,0} parameter(0)",
            "n = f32[N,M]{1,0} negate(p)",
            "ROOT r = f32[N,1,M]{2,1,0} reshape(n)",
        ),
        module(
            "p = f32[N,M]{1,0} parameter(0)",
            "r = f32[N,1,M]{2,1,0} reshape(p)",
            "ROOT n = f32[N,1,M]{2,1,0} negate(r)",
        ),
        None,
        "proved",
    ),
    (
        "broadcast then transpose -> broadcast",
        module(
            "p = f32[N]{0} parameter(0)",
            "b = f32[M,N]{1,0} broadcast(p), dimensions={1}",
            "ROOT t = f32[N,M]{1,0} transpose(b), dimensions={1,0}",
        ),
        module("p = f32[N]{0} parameter(0)", "ROOT t = f32[N,M]{1,0} broadcast(p), dimensions={0}"),
        None,
        "proved",
    ),
]


def concrete(text: str, n: int) -> str:
    for name in ("N", "M"):
        text = (
            text.replace(f"[{name},", f"[{n},")
            .replace(f",{name}]", f",{n}]")
            .replace(f"[{name}]", f"[{n}]")
            .replace(f",{name},", f",{n},")
        )
    return text


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    print(
        f"machine: {platform.machine()}, {platform.processor() or 'unknown cpu'}, Python {sys.version.split()[0]}"
    )
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    all_times: list[float] = []
    baseline: list[float] = []
    ok = True
    print(f"{'rewrite':48} {'answer':8} {'median ms':>10} {'execute ms (256)':>17}")
    for name, before, after, assume, expected in CASES:
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            result = verify_rewrite(before, after, assume=assume)
            times.append(time.perf_counter() - start)
        ok &= result.status == expected
        start = time.perf_counter()
        if assume is None or "8" in assume:
            compare(concrete(before, 256), concrete(after, 256), trials=4)
        executed = time.perf_counter() - start
        baseline.append(executed)
        all_times += times
        print(
            f"{name:48} {result.status:8} {statistics.median(times) * 1000:10.1f} {executed * 1000:17.1f}"
            + ("" if result.status == expected else f"   (expected {expected})")
        )
    median = statistics.median(all_times) * 1000
    p95 = percentile(all_times, 0.95) * 1000
    base = statistics.median(baseline) * 1000
    print(
        f"\nverify_rewrite over {len(all_times)} runs: median {median:.1f} ms, p95 {p95:.1f} ms (goal: median < 200 ms)"
    )
    print(
        f"baseline, execution at N = M = 256: median {base:.1f} ms; ratio verify/execute {median / base:.2f}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
