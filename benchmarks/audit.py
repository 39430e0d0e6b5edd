"""Speed and memory of ``audit`` on compiler-scale modules built from a real XLA:TPU module.

The module ``tests/data/ground_truth/hlo/03_tpu_multiply_reduce_fusion_isolated_bf16_5d.hlo``
(148 instructions, 27 of them bitcast/reshape/transpose/copy) is repeated with renamed
computations and instructions until it has the asked number of instructions (one ENTRY;
the copies' entries become ordinary computations). Then, in one run:

* **audit (memoised)**: ``audit_module`` as shipped, every cache cleared first — the
  movement decisions cost the number of distinct (opcode, operand, result, dimensions)
  questions, not of instructions;
* **baseline (one decision per instruction)**: the audit's time plus every movement
  instruction decided afresh, all decision caches cleared before each (what memoisation
  saves), on the smaller module only (linear in instructions; extrapolated per
  instruction to the large one).

Parsing is timed separately (it is not the audit's). Peak memory is the process's
maximum resident set size after each step.

Run: ``python benchmarks/audit.py`` (100,000 instructions), ``--instructions 1000000``
for the million-instruction module.
"""

from __future__ import annotations

import argparse
import platform
import re
import resource
import sys
import time
from pathlib import Path

from layout_algebra import bitcast
from layout_algebra.hlo import audit as audit_module_code
from layout_algebra.hlo import audit_module, parse_module

MODULE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "data"
    / "ground_truth"
    / "hlo"
    / "03_tpu_multiply_reduce_fusion_isolated_bf16_5d.hlo"
)


def repeated(text: str, copies: int) -> str:
    """``text``'s computations ``copies`` times, every ``%name`` renamed per copy; one ENTRY."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("HloModule"))
    header, body = lines[start], "\n".join(lines[start + 1 :])
    out = [header]
    for k in range(copies):
        renamed = re.sub(r"%([A-Za-z_][\w.\-]*)", rf"%\1.r{k}", body)
        out.append(renamed if k == 0 else renamed.replace("ENTRY ", ""))
    return "\n".join(out)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def clear_memos() -> None:
    bitcast._decided.cache_clear()
    audit_module_code._classify.cache_clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=100_000)
    parser.add_argument("--baseline-instructions", type=int, default=10_000)
    args = parser.parse_args(argv)
    text = MODULE.read_text(encoding="utf-8")
    per_copy = parse_module(text).instruction_count
    print(
        f"python {platform.python_version()} on {platform.machine()}; {MODULE.name}: {per_copy} instructions"
    )

    copies = max(1, args.baseline_instructions // per_copy)
    small = parse_module(repeated(text, copies))
    clear_memos()
    start = time.perf_counter()
    report = audit_module(small)
    memo_small = time.perf_counter() - start
    # Baseline: what memoisation saves. Every movement instruction decided afresh (all
    # decision caches cleared first), as the audit did before, added to the audit's time.
    shapes = {(c.name, i.name): i for c in small.computations for i in c.instructions}
    fresh = []
    start = time.perf_counter()
    for row in report.movements():
        instruction = shapes[(row.computation, row.name)]
        operand = shapes[(row.computation, instruction.operands[0].name)].shape
        clear_memos()
        fresh.append(audit_module_code.classify_movement(instruction, operand))
    base_small = memo_small + time.perf_counter() - start
    same = [r.movement for r in report.movements()] == fresh
    n_small = small.instruction_count
    print(
        f"{n_small:,} instructions: memoised audit {memo_small:.2f} s ({memo_small / n_small * 1e6:.1f} µs/instr), "
        f"plus one fresh decision per movement instruction {base_small:.2f} s "
        f"({base_small / n_small * 1e6:.1f} µs/instr): "
        f"{base_small / memo_small:.1f}x; same verdicts and reasons: {same}"
    )
    del small, report

    copies = max(1, args.instructions // per_copy)
    start = time.perf_counter()
    big_text = repeated(text, copies)
    module = parse_module(big_text)
    del big_text
    parse_s = time.perf_counter() - start
    print(
        f"built and parsed {module.instruction_count:,} instructions in {parse_s:.1f} s; peak RSS {peak_mib():,.0f} MiB"
    )
    clear_memos()
    start = time.perf_counter()
    report = audit_module(module)
    audit_s = time.perf_counter() - start
    info = audit_module_code._classify.cache_info()
    n = module.instruction_count
    print(
        f"audit of {n:,} instructions: {audit_s:.2f} s ({audit_s / n * 1e6:.1f} µs/instr); "
        f"{len(report.movements()):,} movement verdicts from {info.misses:,} distinct questions; "
        f"peak RSS {peak_mib():,.0f} MiB"
    )
    print(
        f"baseline extrapolated (one decision per instruction, linear): {base_small / n_small * n:.1f} s; "
        f"ratio {base_small / n_small * n / audit_s:.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
