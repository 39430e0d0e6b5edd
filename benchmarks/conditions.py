"""Time to find and prove the size condition of each claim (issue 17).

For each claim over symbolic sizes: find the condition (grid of exact decisions + fit),
prove it sufficient and, where possible, necessary; print the condition, its status and
the seconds (CPU time of this process and wall-clock). The baseline, measured in the same
run, is fitting alone (``prove=False``): the cost of the proofs is the ratio.

Run: ``python benchmarks/conditions.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from layout_algebra.decide import conditions

CLAIMS = [
    ("no_padding", ("f32[N,128]{1,0:T(8,128)}",)),
    ("no_padding", ("f32[8,N]{1,0:T(8,128)}",)),
    ("no_padding", ("f32[N,256]{0,1:T(8,128)}",)),
    ("no_padding", ("f32[N]{0:T(1024)}",)),
    ("reshape", ("f32[N,8,128]{2,1,0:T(8,128)}", "f32[8*N,128]{1,0:T(8,128)}")),
    ("reshape", ("f32[2,N,128]{2,1,0:T(8,128)}", "f32[2*N,128]{1,0:T(8,128)}")),
    ("reshape", ("f32[N,128]{1,0:T(8,128)}", "f32[128*N]{0:T(1024)}")),
    ("reshape", ("f32[N,256]{1,0:T(8,128)}", "f32[N,2,128]{2,1,0:T(8,128)}")),
    ("reshape", ("f32[N,128]{1,0:T(8,128)}", "f32[N,128]{1,0}")),
    ("reshape", ("f32[N,128]{1,0:T(8,128)}", "f32[N,1,128]{2,1,0:T(8,128)}")),
    ("reshape", ("f32[N,1,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")),
    ("reshape", ("f32[16*N,128]{1,0:T(8,128)}", "f32[N,16,128]{2,1,0:T(8,128)}")),
    ("reshape", ("f32[8,N,128]{2,1,0:T(8,128)}", "f32[8,128*N]{1,0:T(8,128)}")),
    ("no_padding", ("bf16[N,128]{1,0:T(8,128)(2,1)}",)),
    ("no_padding", ("bf16[16,N]{1,0:T(8,128)(2,1)}",)),
    ("reshape", ("bf16[2,N,128]{2,1,0:T(8,128)(2,1)}", "bf16[2*N,128]{1,0:T(8,128)(2,1)}")),
    ("reshape", ("bf16[N,8,128]{2,1,0:T(8,128)(2,1)}", "bf16[8*N,128]{1,0:T(8,128)(2,1)}")),
    ("reshape", ("bf16[N,128]{1,0:T(8,128)(2,1)}", "bf16[N,128]{1,0}")),
    ("reshape", ("bf16[2,N,128]{2,1,0:T(16,128)(2,1)}", "bf16[2*N,128]{1,0:T(16,128)(2,1)}")),
    ("no_padding", ("s8[N,128]{1,0:T(32,128)(4,1)}",)),
    ("no_padding", ("s8[N,64]{1,0:T(32,128)(4,1)}",)),
    ("reshape", ("s8[2,N,128]{2,1,0:T(32,128)(4,1)}", "s8[2*N,128]{1,0:T(32,128)(4,1)}")),
    ("reshape", ("s8[N,32,128]{2,1,0:T(32,128)(4,1)}", "s8[32*N,128]{1,0:T(32,128)(4,1)}")),
    ("no_padding", ("s4[N,128]{1,0:T(8,128)(8,1)E(4)}",)),
    ("reshape", ("s4[2,N,128]{2,1,0:T(8,128)(8,1)E(4)}", "s4[2*N,128]{1,0:T(8,128)(8,1)E(4)}")),
    ("no_padding", ("pred[N,128]{1,0:T(32,128)(4,1)}",)),
    ("reshape", ("pred[2,N,128]{2,1,0:T(32,128)(4,1)}", "pred[2*N,128]{1,0:T(32,128)(4,1)}")),
    ("transpose", ("f32[N,128]{1,0:T(8,128)}", "f32[128,N]{0,1:T(8,128)}", (1, 0))),
    ("transpose", ("f32[N,128]{1,0}", "f32[128,N]{1,0}", (1, 0))),
    ("transpose", ("f32[8,N]{1,0:T(8,128)}", "f32[N,8]{1,0:T(8,128)}", (1, 0))),
    ("transpose", ("f32[N,1,128]{2,1,0:T(8,128)}", "f32[1,N,128]{2,1,0:T(8,128)}", (1, 0, 2))),
    ("transpose", ("f32[N,2]{1,0}", "f32[2,N]{1,0}", (1, 0))),
    ("no_padding", ("f32[N]{0:L(16)}",)),
    ("no_padding", ("f32[N,128]{1,0:T(8,128)L(2048)}",)),
    ("reshape", ("f32[N]{0:L(16)}", "f32[N]{0}")),
    ("reshape", ("f32[N]{0:L(4)}", "f32[N]{0:T(4)}")),
    ("bitcast", ("f32[N,128]{1,0:T(8,128)}", "f32[128,N]{0,1:T(8,128)}")),
    ("bitcast", ("f32[2,N,128]{2,1,0:T(8,128)}", "f32[2*N,128]{1,0:T(8,128)}")),
    ("in_bounds", ("f32[N,128]{1,0:T(8,128)}",)),
    ("in_bounds", ("s16[N,256]{0,1:T(1,128)(2,1)}",)),
    ("in_bounds", ("bf16[N,128]{1,0:T(1,128)(2,1)}",)),
    ("no_padding", ("f32[N,M]{1,0:T(8,128)}",)),
    ("reshape", ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}")),
    ("reshape", ("bf16[A,B,128]{2,1,0:T(8,128)(2,1)}", "bf16[A*B,128]{1,0:T(8,128)(2,1)}")),
    ("no_padding", ("f32[A,B,M]{2,1,0:T(8,128)}",)),
]


def _rewrite(param: str, root: str, op: str, extra: str = "") -> tuple[str, str]:
    """The module whose root ``op`` is rewritten into a ``bitcast``: (before, after)."""
    before = f"HloModule m\nENTRY e {{\n  p = {param} parameter(0)\n  ROOT r = {root} {op}(p){extra}\n}}"
    return before, before.replace(f"{op}(p){extra}", "bitcast(p)")


#: Rewrites (prove.rewrite): the root op rewritten into a bitcast, over a symbolic size.
REWRITES = [
    (
        "rewrite",
        _rewrite("bf16[3,N,128]{2,1,0:T(8,128)(2,1)}", "bf16[3*N,128]{1,0:T(8,128)(2,1)}", "reshape"),
    ),
    ("rewrite", _rewrite("s8[2,N,128]{2,1,0:T(32,128)(4,1)}", "s8[2*N,128]{1,0:T(32,128)(4,1)}", "reshape")),
    ("rewrite", _rewrite("f32[N,128]{1,0}", "f32[128,N]{1,0}", "transpose", ", dimensions={1,0}")),
    ("rewrite", _rewrite("f32[N,128]{1,0:T(8,128)}", "f32[N,128]{1,0}", "copy")),
    ("rewrite", _rewrite("f32[N,1,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}", "reshape")),
    ("rewrite", _rewrite("f32[N,256]{1,0:T(8,128)}", "f32[N,2,128]{2,1,0:T(8,128)}", "reshape")),
    ("rewrite", _rewrite("f32[N,8]{1,0}", "f32[N,8]{0,1}", "copy")),
]


def claim_of(kind: str, args: tuple) -> conditions.Claim:
    if kind == "rewrite":
        from layout_algebra.hlo.rewrite_conditions import rewrite_claim

        return rewrite_claim(*args)
    return conditions.claim_of(kind, args, allocation="xla")


def _forget() -> None:
    """Empty the bitcast decision's memo (a process-wide cache), so each run starts cold."""
    from layout_algebra.decide import bitcast

    bitcast._decided.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one-symbol claims only")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = []
    for kind, claim_args in [*CLAIMS, *REWRITES]:
        claim = claim_of(kind, claim_args)
        if args.quick and len(claim.symbols) > 1:
            continue
        _forget()
        c0 = time.process_time()
        fitted = conditions.condition_of(claim, prove=False)
        fit_cpu = time.process_time() - c0
        _forget()  # both measured cold: no verdict memoised by the other run
        t1, c1 = time.perf_counter(), time.process_time()
        found = conditions.condition_of(claim)
        cpu, wall = time.process_time() - c1, time.perf_counter() - t1
        assert str(found.fitted) == str(fitted.expr)  # the same fit, proved or kept as evidence
        rows.append(
            {
                "claim": claim.text,
                "symbols": len(claim.symbols),
                "condition": str(found.expr),
                "fitted": str(found.fitted),
                "status": found.status,
                "cpu_s": round(cpu, 3),
                "wall_s": round(wall, 3),
                "fit_only_cpu_s": round(fit_cpu, 3),
                "details": list(found.details),
            }
        )
        print(
            f"{cpu:7.2f}s cpu {wall:7.2f}s wall  fit {fit_cpu:6.2f}s  {found.status:38} {found.expr}   <- {claim.text}",
            flush=True,
        )
    cpus = [r["cpu_s"] for r in rows]
    exact = sum(r["status"] == "exact" for r in rows)
    print(
        f"\n{platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{len(rows)} claims, exact {exact} ({100 * exact / len(rows):.0f}%), "
        f"median {statistics.median(cpus):.2f}s, max {max(cpus):.2f}s CPU per condition; "
        f"fit alone median {statistics.median(r['fit_only_cpu_s'] for r in rows):.2f}s"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
