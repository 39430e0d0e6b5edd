"""(8,128)(2,1,1,1) pairs equal positions of vertically adjacent tiles.

The second tile has four dimensions, so it reaches into the cross-tile dimensions: it
pairs tile row 2a with tile row 2a+1. Element (16a + r, c) (r < 8) and element
(16a + 8 + r, c), the same position in the tile below, are adjacent in memory. Proved
for every N (with M = 128 and 300 columns).
"""

from _common import position, same_positions

CLAIM = "(8,128)(2,1,1,1) pairs equal positions of vertically adjacent tiles"


def prove_claim():
    results = []
    for m in (128, 300):
        p = position(f"f32[N,{m}]{{1,0:T(8,128)(2,1,1,1)}}")
        results.append(
            same_positions(
                f"f32[H,E,{m}]",
                lambda i, ar, p=p: p((16 * i[0] + 8 + i[1], i[2]), ar),
                lambda i, ar, p=p: p((16 * i[0] + i[1], i[2]), ar) + 1,
                names=("tile row 2a+1", "tile row 2a, plus 1"),
                assume="N == 16*H and E == 8",
            )
        )
    return results
