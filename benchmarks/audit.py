"""Speed and memory of ``audit`` on compiler-scale modules built from a real XLA:TPU module.

The module ``tests/data/ground_truth/hlo/03_tpu_multiply_reduce_fusion_isolated_bf16_5d.hlo``
(148 instructions, 27 of them bitcast/reshape/transpose/copy) is repeated with renamed
computations and instructions until it has the asked number of instructions (one ENTRY;
the copies' entries become ordinary computations). Then, in one run:

* **memoisation** (in this process, ~10,000 instructions): ``audit_module`` as shipped,
  every cache cleared first, against the same audit plus every movement instruction
  decided afresh with all decision caches cleared before each (what memoisation saves);
* **end to end** (each size, default 100,000 and 1,000,000 instructions): the module is
  written to a file, then two fresh processes run on it one after the other:
  ``layout-algebra audit FILE`` as shipped (reading, streaming parse and audit one
  computation at a time, printing the summary), and the baseline, what the command did
  before streaming: ``parse_module`` of the whole text, ``audit_module``, ``render_audit``.
  Both print the same summary (checked byte for byte). Wall-clock and CPU time (user +
  system) and peak resident memory of each child come from ``os.wait4``.

Run: ``python benchmarks/audit.py`` (both sizes), ``--sizes 100000`` for a quick run.
Target (issue 18): ``audit`` of the million-instruction module end to end in < 60 s within 4 GiB.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layout_algebra.decide import bitcast
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


#: The baseline child: the whole module parsed, then audited, then printed (the command before streaming).
FULL_AST = """
import sys
from layout_algebra.cli._common import read_text
from layout_algebra.hlo import audit_module, parse_module
from layout_algebra.hlo.report import render_audit
report = audit_module(parse_module(read_text(sys.argv[1])))
print(render_audit(report, top=25, width=160, color=False), end="")
"""


def child(argv: list[str], out: Path) -> tuple[float, float, float]:
    """Run ``argv`` in a fresh process, stdout to ``out``: (wall s, CPU s, peak RSS MiB)."""
    env = {**os.environ, "COLUMNS": "160"}
    with out.open("wb") as sink:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{argv} failed with status {status}: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def end_to_end(text: str, per_copy: int, instructions: int) -> str:
    """One row pair of the end-to-end table for a module of about ``instructions``."""
    copies = max(1, instructions // per_copy)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.hlo"
        path.write_text(repeated(text, copies), encoding="utf-8")
        mb = path.stat().st_size / 1e6
        n = copies * per_copy
        cli = [str(Path(sys.executable).with_name("layout-algebra")), "audit", str(path)]
        ours = child(cli, Path(tmp) / "ours.txt")
        base = child([sys.executable, "-c", FULL_AST, str(path)], Path(tmp) / "base.txt")
        same = (Path(tmp) / "ours.txt").read_bytes() == (Path(tmp) / "base.txt").read_bytes()
    print(
        f"{n:,} instructions ({mb:,.0f} MB): audit command {ours[0]:.1f} s wall, {ours[1]:.1f} s CPU, "
        f"{ours[2]:,.0f} MiB; whole-module baseline {base[0]:.1f} s wall, {base[1]:.1f} s CPU, "
        f"{base[2]:,.0f} MiB; same output: {same}",
        flush=True,
    )
    return (
        f"| {n:,} ({mb:,.0f} MB) | **{ours[0]:.1f}** | **{ours[1]:.1f}** | **{ours[2]:,.0f}** "
        f"| {base[0]:.1f} | {base[1]:.1f} | {base[2]:,.0f} "
        f"| {base[1] / ours[1]:.2f}× | {base[2] / ours[2]:.2f}× | {'yes' if same else 'NO'} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--baseline-instructions", type=int, default=10_000)
    args = parser.parse_args(argv)
    text = MODULE.read_text(encoding="utf-8")
    per_copy = parse_module(text).instruction_count
    print(
        f"python {platform.python_version()} on {platform.machine()}; {MODULE.name}: {per_copy} instructions; "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    copies = max(1, args.baseline_instructions // per_copy)
    small = parse_module(repeated(text, copies))
    clear_memos()
    start = time.perf_counter()
    report = audit_module(small)
    memo_small = time.perf_counter() - start
    info = audit_module_code._classify.cache_info()
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
        f"{n_small:,} instructions: memoised audit {memo_small:.2f} s ({memo_small / n_small * 1e6:.1f} µs/instr, "
        f"{len(report.movements()):,} verdicts from {info.misses:,} distinct questions), "
        "plus one fresh decision per movement instruction "
        f"{base_small:.2f} s ({base_small / n_small * 1e6:.1f} µs/instr): "
        f"{base_small / memo_small:.1f}x; same verdicts and reasons: {same}; peak RSS {peak_mib():,.0f} MiB"
    )
    del small, report, shapes, fresh, info

    rows = [end_to_end(text, per_copy, n) for n in args.sizes]
    print()
    print(
        "| instructions | audit command: wall s | CPU s | peak RSS MiB | whole-module baseline: wall s "
        "| CPU s | peak RSS MiB | CPU ratio | memory ratio | same output |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
