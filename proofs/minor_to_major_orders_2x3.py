"""minor_to_major {1,0} vs {0,1} on a 2x3 array: a b c d e f versus a d b e c f.

Name the elements of a 2x3 array by rows, (a b c) and (d e f), so element (i, j) is
letter 3i + j. ``{1,0}`` (dimension 1 fastest) puts (i, j) at 3i + j: a b c d e f.
``{0,1}`` (dimension 0 fastest) puts it at 2j + i: a(0) d(1) b(2) e(3) c(4) f(5).
Both position functions are proved equal to the layouts' maps on every element.
"""

from layout_algebra import prove

CLAIM = "minor_to_major {1,0} vs {0,1} on 2x3 gives a b c d e f vs a d b e c f"


def prove_claim():
    return [
        prove.equivalent(
            "f32[2,3]{1,0}", prove.function_map("f32[2,3]", lambda i, ar: 3 * i[0] + i[1], name="3i + j")
        ),
        prove.equivalent(
            "f32[2,3]{0,1}", prove.function_map("f32[2,3]", lambda i, ar: 2 * i[1] + i[0], name="2j + i")
        ),
    ]
