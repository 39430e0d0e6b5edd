"""Explain a real TPU layout and compare the sizes people confuse.

Run:  python examples/explain_layout.py ['SHAPE']
"""

import sys

import layout_algebra as la

text = sys.argv[1] if len(sys.argv) > 1 else "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"
shape = la.validate(la.parse_shape(text))  # parse, then apply XLA's validation rules
print(la.explain(shape))

report = la.size_report(shape)
print()
print(f"exact physical buffer          {report.physical_bytes:>14,} bytes")
print(f"XLA:TPU allocates (first tile) {report.first_tile_bytes:>14,} bytes")
print(f"XLA ShapeUtil::ByteSizeOf      {la.xla.byte_size_of(shape):>14,} bytes (ignores tiles)")
