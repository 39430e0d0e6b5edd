"""(8,128)(4,1) puts four consecutive rows of a column in one 32-bit word.

For 8-bit elements, (4a + k, c) for k = 0..3 sit at positions p, p+1, p+2, p+3 with p a
multiple of 4: one 32-bit word. Proved for every N (M = 128 and 300).
"""

from _common import position, same_positions

CLAIM = "(8,128)(4,1) puts four consecutive rows in a 32-bit word"


def prove_claim():
    results = []
    for m in (128, 300):
        p = position(f"s8[N,{m}]{{1,0:T(8,128)(4,1)}}")
        results.append(
            same_positions(
                f"s8[H,K,{m}]",
                lambda i, ar, p=p: p((4 * i[0] + i[1], i[2]), ar),
                lambda i, ar, p=p: p((4 * i[0], i[2]), ar) + i[1],
                names=("row 4a+k", "row 4a, plus k"),
                assume="N == 4*H and K == 4",
            )
        )
        results.append(
            same_positions(
                f"s8[H,{m}]",
                lambda i, ar, p=p: ar.mod(p((4 * i[0], i[1]), ar), 4),
                lambda i, ar: 0,
                names=("position of row 4a mod 4", "0"),
                assume="N == 4*H",
            )
        )
    return results
