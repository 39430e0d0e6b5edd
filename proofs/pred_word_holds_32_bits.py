"""(32,128)(32,1) with 1-bit elements puts 32 elements of a column in one 32-bit word.

``pred[N,M]{1,0:T(32,128)(32,1)E(1)}``: rows 32a .. 32a+31 of a column sit at bit
offsets b, b+1, ..., b+31 with b a multiple of 32. Proved for every N (M = 128, 300).
"""

from _common import position, same_positions

CLAIM = "(32,128)(32,1) puts 32 one-bit elements in a word"


def prove_claim():
    results = []
    for m in (128, 300):
        p = position(f"pred[N,{m}]{{1,0:T(32,128)(32,1)E(1)}}")  # 1 bit per element: bit = position
        results.append(
            same_positions(
                f"pred[H,K,{m}]",
                lambda i, ar, p=p: p((32 * i[0] + i[1], i[2]), ar),
                lambda i, ar, p=p: p((32 * i[0], i[2]), ar) + i[1],
                names=("row 32a+k", "row 32a, plus k"),
                assume="N == 32*H and K == 32",
            )
        )
        results.append(
            same_positions(
                f"pred[H,{m}]",
                lambda i, ar, p=p: ar.mod(p((32 * i[0], i[1]), ar), 32),
                lambda i, ar: 0,
                names=("bit of row 32a mod 32", "0"),
                assume="N == 32*H",
            )
        )
    return results
