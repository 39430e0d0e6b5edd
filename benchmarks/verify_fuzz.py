"""The long soundness fuzz: the rewrite verifier against the HLO executor on many module pairs.

The test suite runs ``tests/soundness/test_verify_fuzz.py`` (620 pairs, derandomized in CI). This
script runs the same strategies (``tests/support/strategies_hlo.py``) for a time budget or a
number of pairs, whichever comes first, counts how the two sides answered, and prints
every disagreement (one example per kind of disagreement) with its modules.

    python benchmarks/verify_fuzz.py --pairs 20000 --budget 900

A *disagreement* is the verifier proving a rewrite that execution contradicts, or
refuting one that execution confirms at the counterexample's sizes. The results are in
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import strategies_hlo as sh

#: Strategy and its share of the pairs (the test suite's proportions).
STRATEGIES = (
    (sh.transpose_to_bitcast, 90),
    (sh.reshape_to_bitcast, 90),
    (sh.copy_elimination, 60),
    (sh.transpose_pair, 60),
    (sh.slices, 60),
    (sh.reshape_across_elementwise, 60),
    (sh.relayout, 100),
    (sh.fused, 60),
    (sh.symbolic, 40),
)


def timed(fn, clock: list[float]):
    """``fn``, adding its run time to ``clock[0]``."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock[0] += time.perf_counter() - start

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000, help="stop after this many pairs")
    parser.add_argument("--budget", type=float, default=900.0, help="stop after this many seconds")
    parser.add_argument("--seed", type=int, default=0, help="first Hypothesis seed (one per round)")
    args = parser.parse_args()

    verifier_clock, executor_clock = [0.0], [0.0]
    sh.verify = timed(sh.verify, verifier_clock)  # the time each side takes, for the report
    sh.compare = timed(sh.compare, executor_clock)
    tally = sh.Tally()
    disagreements: list[tuple[str, str]] = []
    missed: list[tuple[sh.Case, str]] = []  # verifier unknown, execution found a difference
    start = time.perf_counter()
    round_number = args.seed
    while tally.total + len(disagreements) < args.pairs and time.perf_counter() - start < args.budget:
        for make, share in STRATEGIES:
            if time.perf_counter() - start >= args.budget or tally.total + len(disagreements) >= args.pairs:
                break

            @seed(round_number)
            @settings(
                max_examples=share,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(make())
            def check(case: sh.Case) -> None:
                try:
                    outcome = sh.check_case(case)
                except AssertionError as err:
                    disagreements.append((case.kind, str(err)))
                    return
                tally.add(outcome)
                if outcome.verdict == "unknown" and outcome.same is False:
                    missed.append((case, sh.verify(case).reason))

            check()
        round_number += 1
    elapsed = time.perf_counter() - start

    pairs = tally.total + len(disagreements)
    answered = sum(
        n for (_, v, same), n in tally.counts.items() if v in ("proved", "refuted") and same in (True, False)
    )
    print(
        f"machine: {platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(
        f"{pairs} module pairs in {elapsed:.0f} s ({1000 * elapsed / max(pairs, 1):.1f} ms a pair), {round_number - args.seed} rounds"
    )
    print(f"both sides answered and agreed: {answered}; disagreements: {len(disagreements)}")
    print(
        f"time: verifier {verifier_clock[0]:.0f} s ({1000 * verifier_clock[0] / max(pairs, 1):.1f} ms a pair), "
        f"executor {executor_clock[0]:.0f} s ({1000 * executor_clock[0] / max(pairs, 1):.1f} ms a pair), "
        f"executor / verifier = {executor_clock[0] / max(verifier_clock[0], 1e-9):.2f}"
    )
    print(tally.summary())
    kinds = Counter()
    for (kind, _, _), n in tally.counts.items():
        kinds[kind] += n
    print("pairs by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    reasons = Counter(reason for _, reason in missed)
    print(f"verifier unknown where execution found a difference: {len(missed)}")
    for reason, n in reasons.most_common():
        case = next(c for c, r in missed if r == reason)
        print(
            f"\n##### unknown x{n}: {reason}\nmode={case.mode}\n--- before\n{case.before}\n--- after\n{case.after}"
        )
    shown: set[tuple[str, str]] = set()
    for kind, message in disagreements:
        key = (kind, message.split(":")[0])
        if key in shown:
            continue
        shown.add(key)
        print(
            f"\n##### disagreement ({kind}, {sum(1 for k, _ in disagreements if k == kind)} of this kind)\n{message}"
        )


if __name__ == "__main__":
    main()
