"""Proofs about layouts with Z3: injectivity, bounds, equivalence — for concrete and symbolic sizes.

Every answer is a :class:`ProofResult`: ``proved`` only when Z3 answered unsat on the
encoding it names, ``refuted`` only with a counterexample re-evaluated concretely,
``unknown`` otherwise (with the reason).

>>> from layout_algebra import prove
>>> prove.injective("f32[1280,16384]{1,0:T(8,128)}").status
'proved'
>>> prove.tiling_is_pad_reshape_transpose("f32[8,8]{1,0:T(2,4)(2,1,1,1)}").status
'proved'
>>> broken = prove.function_map("f32[3,5]", lambda i, ar: i[0] * 4 + i[1], name="row stride 4")
>>> r = prove.injective(broken)
>>> r.status
'refuted'
>>> a, b = r.counterexample["element"], r.counterexample["other_element"]
>>> a != b and broken.evaluate(a) == broken.evaluate(b)
True
"""

from layout_algebra.prove.assumptions import AssumptionError, parse_assumptions
from layout_algebra.prove.core import (
    DEFAULT_TIMEOUT_MS,
    equivalent,
    general_stage_lemma,
    in_bounds,
    injective,
    mixed_radix_pair_lemma,
    tiling_is_pad_reshape_transpose,
)
from layout_algebra.prove.expressions import expressions_equal, holds, no_padding
from layout_algebra.prove.maps import (
    IndexMap,
    as_index_map,
    formula_reference,
    function_map,
    layout_index_map,
    pad_reshape_transpose_reference,
)
from layout_algebra.prove.result import ProofResult

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "AssumptionError",
    "IndexMap",
    "ProofResult",
    "as_index_map",
    "equivalent",
    "expressions_equal",
    "formula_reference",
    "function_map",
    "general_stage_lemma",
    "holds",
    "in_bounds",
    "injective",
    "layout_index_map",
    "mixed_radix_pair_lemma",
    "no_padding",
    "pad_reshape_transpose_reference",
    "parse_assumptions",
    "tiling_is_pad_reshape_transpose",
]
