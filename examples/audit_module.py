"""Audit an HLO module: where does its memory go, and which copies move data?

Parses examples/tpu_module.hlo (or the module given on the command line), then prints the
buffer totals by memory space, the three worst padding offenders, and the verdict on every
bitcast/reshape/transpose/copy — the same facts `layout-algebra audit` shows as tables.

Run:  python examples/audit_module.py [MODULE.hlo]
"""

import sys
from pathlib import Path

from layout_algebra.hlo import audit_module, parse_module

path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("tpu_module.hlo")
module = parse_module(path.read_text(encoding="utf-8"))
report = audit_module(module)

print(f"{module.name}: {len(module.computations)} computations, {module.instruction_count} instructions")
for space, totals in report.totals_by_memory_space.items():
    print(
        f"  S({space}): {totals.arrays} arrays, {totals.physical_bytes:,} bytes "
        f"for {totals.logical_bytes:,} bytes of elements"
    )

print("worst padding among the buffers:")
for row in report.worst_padding(3, buffers_only=True):
    print(f"  {row.name:<12} {row.shape!s:<36} {row.logical_bytes:>9,} -> {row.physical_bytes:>9,} bytes")

print("data movement:")
for row in report.movements():
    print(f"  {row.opcode:<9} {row.name:<12} {row.movement.verdict}: {row.movement.reason}")
