"""Questions about shapes with dimension formulas (``f32[N/8,128]``): decided, and how fast.

Each question (a bitcast decision, injectivity, bounds, no padding, tiling = pad-reshape-
transpose, or a size condition) is asked in three set-ups, interleaved in one process
(round-robin, ``--rounds`` times each, the median CPU time per question kept):

* ``before``: the prover as it was before 2026-11-24 08:30 UTC — a shape's dimension
  formulas (``N/8`` needs ``N % 8 == 0``) were checked to admit some sizes but were not
  facts of the queries; the side condition "N/8 is exact" then failed (``unknown``), and
  the size-condition search sampled sizes with no arrays (``unknown`` at once);
* ``domain``: the formulas are the question's domain (``prove.core.admitted_assumptions``
  returns them after the assumptions), ``N/8`` still a Z3 integer division;
* ``after``: as shipped — also ``N = 8*k`` in the solver's terms (``IntArithmetic.
  know_residue``), so ``N/8`` is the integer ``k`` and ``15*M*N/2`` the polynomial ``60*M*k``.

The first two are rebuilt in this process by swapping the one function each change touched
(``admitted_assumptions`` and ``conditions.Claim.domain``; ``know_residue``), so the
three share everything else. Every
decision is made anew (the lemma cache is off, the memoised bitcast verdicts cleared). The size-condition rows are CPU seconds of
``conditions.when_*`` (grid, fit and proofs).

Run: ``python benchmarks/formula_dims.py [--rounds 7] [--timeout-ms 5000] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ["LAYOUT_ALGEBRA_CACHE_DIR"] = tempfile.mkdtemp(prefix="formula-dims-benchmark-")
os.environ["LAYOUT_ALGEBRA_LEMMA_CACHE"] = "0"  # every round proves again

import z3

from layout_algebra import prove
from layout_algebra.decide import bitcast, conditions
from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
from layout_algebra.prove import core
from layout_algebra.prove.encode import IntArithmetic

#: (kind, arguments). One symbol first (the cases that were `unknown`), then two symbols; a
#: reshape's third argument is an assumption.
QUESTIONS: list[tuple[str, tuple[Any, ...]]] = [
    ("reshape", ("f32[N/8,8,128]{2,1,0}", "f32[N,128]{1,0}")),
    ("reshape", ("f32[N/8,8,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")),
    ("reshape", ("f32[N,128]{1,0:T(8,128)}", "f32[N/8,8,128]{2,1,0:T(8,128)}")),
    ("reshape", ("f32[N/4,4,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")),
    ("reshape", ("bf16[3*N/4,256]{1,0:T(8,128)(2,1)}", "bf16[3*N/4,2,128]{2,1,0:T(8,128)(2,1)}")),
    ("reshape", ("f32[N/4,2,2]{2,1,0}", "f32[N]{0}")),
    ("reshape", ("f32[N/8,8]{1,0:T(8)}", "f32[N]{0:T(8)}")),
    ("reshape", ("f32[3*N/8]{0:T(8)}", "f32[3,N/8]{0,1:T(2,4)}")),
    ("transpose", ("f32[N/8,128]{1,0}", "f32[128,N/8]{0,1}", (1, 0))),
    ("transpose", ("f32[N/8,128]{1,0:T(8,128)}", "f32[128,N/8]{0,1:T(8,128)}", (1, 0))),
    ("injective", ("f32[N/8,128]{1,0:T(8,128)}",)),
    ("injective", ("bf16[3*N/4,256]{1,0:T(8,128)(2,1)}",)),
    ("injective", ("f32[N/8,N/4]{0,1:T(8,128)}",)),
    ("injective", ("bf16[6*((N+4)/8)]{0:T(2)}",)),
    ("in_bounds", ("f32[N/8,128]{1,0:T(8,128)}",)),
    ("in_bounds", ("bf16[3*N/4,256]{1,0:T(8,128)(2,1)}",)),
    ("in_bounds", ("s8[4,N/2]{1,0:T(8,8)}",)),
    ("no_padding", ("f32[N/8,128]{1,0:T(8,128)}",)),
    ("no_padding", ("f32[3*N/4,128]{1,0:T(8,128)}",)),
    ("tiling", ("f32[N/8,128]{1,0:T(8,128)}",)),
    ("reshape", ("s8[5*N/8,12*M]{1,0}", "s8[15*M*N/2]{0:T(2)}")),
    ("reshape", ("f32[N/8,M,128]{2,1,0:T(8,128)}", "f32[M*N/8,128]{1,0:T(8,128)}")),
    ("reshape", ("f32[M,N/8,8,128]{3,2,1,0:T(8,128)}", "f32[M,N,128]{2,1,0:T(8,128)}")),
    ("reshape", ("f32[N/8,8,M/128,128]{3,2,1,0}", "f32[N,M]{1,0}")),
    ("reshape", ("f32[(N+4)/8,8,M]{2,1,0:T(8,128)}", "f32[N+4,M]{1,0:T(8,128)}")),
    ("transpose", ("f32[N/8,M/128]{1,0:T(8,128)}", "f32[M/128,N/8]{0,1:T(8,128)}", (1, 0))),
    ("injective", ("f32[N/8,M/128,3*K/4]{2,1,0:T(8,128)}",)),
    ("in_bounds", ("bf16[3*N/4,M/2]{0,1:T(8,128)(2,1)}",)),
    ("tiling", ("f32[N/8,M/4]{1,0:T(8,128)}",)),
    ("when_no_padding", ("f32[N/8,128]{1,0:T(8,128)}",)),
    ("when_no_padding", ("f32[3*N/4,128]{1,0:T(8,128)}",)),
    ("when_reshape", ("f32[N/8,8,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")),
    ("when_reshape", ("f32[N/4,4,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")),
    ("when_reshape", ("f32[2,N/2,128]{2,1,0:T(8,128)}", "f32[N,128]{1,0:T(8,128)}")),
    # no dimension formula, a divisibility assumed (the residue encoding reads assumptions too)
    ("reshape", ("f32[2,A,B]{2,1,0:T(8,128)}", "f32[2*A,B]{1,0:T(8,128)}", "A % 8 == 0")),
    ("reshape", ("f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}", "B % 8 == 0")),
    ("reshape", ("bf16[A,B,128]{2,1,0:T(8,128)(2,1)}", "bf16[A*B,128]{1,0:T(8,128)(2,1)}", "B % 8 == 0")),
]


def ask(kind: str, args: tuple[Any, ...], timeout_ms: int) -> str:
    """The question's status (a size condition: its status, ``exact`` or ``unknown``)."""
    if kind == "reshape":
        return reshape_is_bitcast(args[0], args[1], assume=args[2:] or None, timeout_ms=timeout_ms).status
    if kind == "transpose":
        return transpose_is_bitcast(*args, timeout_ms=timeout_ms).status
    if kind == "tiling":
        return prove.tiling_is_pad_reshape_transpose(*args, timeout_ms=timeout_ms).status
    if kind == "when_no_padding":
        return conditions.when_no_padding(*args).status
    if kind == "when_reshape":
        return conditions.when_reshape_is_bitcast(*args).status
    return getattr(prove, kind)(*args, timeout_ms=timeout_ms).status


# ----------------------------------------------------------------- the three set-ups
_ADMITTED = core.admitted_assumptions
_KNOW_RESIDUE = IntArithmetic.know_residue
_DOMAIN = conditions.Claim.domain


def _admitted_without_domain(assume: Any, **kwargs: Any) -> Any:
    """The old ``admitted_assumptions``: the shapes' facts only checked to admit sizes."""
    shapes = kwargs.get("shapes", ())
    assumptions, caveat = _ADMITTED(assume, **kwargs)
    facts = core.shape_facts(shapes)
    given = core.parse_assumptions(assume)
    return tuple(a for a in assumptions if a in given or a not in facts), caveat


@contextlib.contextmanager
def setup(name: str) -> Iterator[None]:
    """Swap in the ``before``/``domain`` functions for the duration (``after``: none)."""
    modules = _modules_binding("admitted_assumptions")
    try:
        if name == "before":
            for module in modules:
                module.admitted_assumptions = _admitted_without_domain
            conditions.Claim.domain = property(lambda self: ())  # type: ignore[assignment,method-assign]
        if name in ("before", "domain"):
            IntArithmetic.know_residue = lambda self, s, modulus, residue: None  # type: ignore[method-assign]
        yield
    finally:
        for module in modules:
            module.admitted_assumptions = _ADMITTED
        IntArithmetic.know_residue = _KNOW_RESIDUE  # type: ignore[method-assign]
        conditions.Claim.domain = _DOMAIN  # type: ignore[method-assign]


def _modules_binding(name: str) -> list[Any]:
    import sys

    return [m for m in list(sys.modules.values()) if getattr(m, name, None) is _ADMITTED]


def timed(run: Callable[[], str]) -> tuple[str, float]:
    start = time.process_time()
    try:
        status = run()
    except ValueError as err:  # e.g. a size condition that raised
        status = f"error: {str(err)[:40]}"
    return status, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--timeout-ms", type=int, default=5000)
    parser.add_argument("--json", help="write the rows to this file")
    options = parser.parse_args()
    setups = ("before", "domain", "after")
    # importing everything first: the swaps must reach every module that bound the function
    ask("reshape", ("f32[8]{0}", "f32[8]{0}"), options.timeout_ms)
    conditions.when_no_padding("f32[N]{0}")
    statuses: dict[tuple[int, str], set[str]] = {}
    times: dict[tuple[int, str], list[float]] = {}
    for _ in range(options.rounds):
        for k, (kind, args) in enumerate(QUESTIONS):
            for name in setups:
                bitcast._decided.cache_clear()  # memoised verdicts: each set-up decides anew
                with setup(name):
                    status, seconds = timed(lambda kind=kind, args=args: ask(kind, args, options.timeout_ms))
                statuses.setdefault((k, name), set()).add(status)
                times.setdefault((k, name), []).append(seconds)
    print(
        f"{platform.processor() or platform.machine()}, CPython {platform.python_version()}, "
        f"Z3 {z3.get_version_string()}, {options.rounds} rounds, timeout {options.timeout_ms} ms, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print("| question | before | domain | after | CPU ms before / domain / after (median) |")
    print("|---|---|---|---|---:|")
    rows = []
    decided = {name: 0 for name in setups}
    for k, (kind, args) in enumerate(QUESTIONS):
        shown = {name: "/".join(sorted(statuses[(k, name)])) for name in setups}
        medians = {name: statistics.median(times[(k, name)]) * 1000 for name in setups}
        for name in setups:
            decided[name] += all(s in ("proved", "refuted", "exact") for s in statuses[(k, name)])
        text = " -> ".join(str(a) for a in args[:2] if isinstance(a, str))
        text += f"` assuming `{args[2]}" if kind == "reshape" and len(args) > 2 else ""
        print(
            f"| {kind} `{text}` | {shown['before']} | {shown['domain']} | {shown['after']} | "
            + " / ".join(f"{medians[n]:.0f}" for n in setups)
            + " |"
        )
        rows.append({"kind": kind, "arguments": [str(a) for a in args], "status": shown, "cpu_ms": medians})
    print(
        f"decided (proved, refuted or exact in every round) of {len(QUESTIONS)}: "
        + ", ".join(f"{n} {decided[n]}" for n in setups)
    )
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"rows": rows, "decided": decided, "rounds": options.rounds}, out, indent=1)


if __name__ == "__main__":
    main()
