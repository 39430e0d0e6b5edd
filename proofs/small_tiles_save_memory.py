"""The small-tile formats (2,128) and (4,128) use less memory than (8,128) exactly when the doc says.

XLA's tiled-layout document: when the second most minor dimension is 1 or 2, XLA:TPU
tiles by 2x128 instead of 8x128 "to save memory"; when it is 3 or 4, by 4x128. For
``f32[S,M]`` with S rows and any number M >= 1 of columns:

* S = 1, 2: (2,128) takes a quarter of the memory of (8,128);
* S = 3, 4: (4,128) takes half;
* S = 5..8: (4,128) takes the same memory as (8,128) — no saving, so XLA keeps 8x128.
"""

import sympy

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map

CLAIM = "small-tile formats (2x128, 4x128) save memory vs 8x128 exactly for second-minor sizes 1-2 and 3-4"


def _size(rows: int, tile: str):
    return layout_map(f"f32[{rows},M]{{1,0:T({tile})}}").size_in_elements


def prove_claim():
    results = []
    for rows in (1, 2):
        results.append(prove.holds(sympy.Eq(4 * _size(rows, "2,128"), _size(rows, "8,128"))))
    for rows in (3, 4):
        results.append(prove.holds(sympy.Eq(2 * _size(rows, "4,128"), _size(rows, "8,128"))))
    for rows in range(5, 9):
        results.append(prove.holds(sympy.Eq(_size(rows, "4,128"), _size(rows, "8,128"))))
    return results
