"""With (8,128)(2,1), each 32-bit word holds an even row and the next odd row of one column.

For bf16 (16 bits), element (2a, c) sits at an even position p and element (2a+1, c) at
p + 1: together they fill the 32-bit word p/2. Proved for every number of rows N (and
columns M = 1, 128, 300: the column count enters the positions only as a stride).
"""

from _common import position, same_positions

CLAIM = "with (8,128)(2,1) each 32-bit word holds an even row and the next odd row of the same column"


def prove_claim():
    results = []
    for m in (1, 128, 300):
        p = position(f"bf16[N,{m}]{{1,0:T(8,128)(2,1)}}")
        box = f"bf16[H,{m}]"
        results.append(
            same_positions(
                box,
                lambda i, ar, p=p: p((2 * i[0] + 1, i[1]), ar),
                lambda i, ar, p=p: p((2 * i[0], i[1]), ar) + 1,
                names=("row 2a+1", "row 2a, plus 1"),
                assume="N == 2*H",
            )
        )
        results.append(
            same_positions(
                box,
                lambda i, ar, p=p: ar.mod(p((2 * i[0], i[1]), ar), 2),
                lambda i, ar: 0,
                names=("position of row 2a mod 2", "0"),
                assume="N == 2*H",
            )
        )
    return results
