"""Row-major linear index is a bijection onto [0, d_1 d_2 ... d_n).

For every N, M, K: the untiled layout ``{2,1,0}`` of ``f32[N,M,K]`` maps no two elements
to one position (injective) and every element below N*M*K (in bounds). A one-to-one map
of a set of N*M*K elements into a set of N*M*K positions is onto, so it is a bijection.
The same holds for any ``minor_to_major`` (a permutation first, then row-major).
"""

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map

CLAIM = "row-major linear index is a bijection onto [0, prod d), for all sizes"


def prove_claim():
    results = []
    for shape in ("f32[N,M,K]{2,1,0}", "f32[N,M,K]{0,2,1}", "f32[N]{0}"):
        results += [prove.injective(shape), prove.in_bounds(shape)]
        m = layout_map(shape)
        elements = 1
        for d in m.logical_dimensions:
            elements *= d
        results.append(prove.expressions_equal(m.size_in_elements, elements, {}))
    return results
