"""How much memory do XLA:TPU's tile formats cost for small arrays?

The small-tile formats (2,128) and (4,128) exist because (8,128) pads a 2-row array to 8 rows.
This prints the exact bytes of one array under each format, next to its logical size.

Run:  python examples/sizes_of_tpu_formats.py
"""

import layout_algebra as la

FORMATS = ["T(8,128)", "T(4,128)", "T(2,128)"]

print(f"{'shape':<28}{'logical':>10}" + "".join(f"{f:>12}" for f in FORMATS))
for rows, cols in [(1, 128), (2, 300), (3, 1000), (8, 128), (9, 129)]:
    sizes = [la.physical_size_in_bytes(f"f32[{rows},{cols}]{{1,0:{f}}}") for f in FORMATS]
    logical = la.size_report(f"f32[{rows},{cols}]").logical_bytes
    print(f"{f'f32[{rows},{cols}]':<28}{logical:>10,}" + "".join(f"{s:>12,}" for s in sizes))
