"""Where CuTe's composition preconditions fail, the layout its algorithm builds is wrong.

CuTe computes ``A ∘ B`` mode by mode of ``coalesce(A)``, and it is right only under two
conditions: *shape divisibility* (``B``'s elements fill whole runs of each mode of ``A`` they
span) and *left distributivity* (the modes of ``B`` reach disjoint digits of ``A``, so that
``A`` applied to their sum is the sum of ``A`` applied to each). ``layout_algebra.interop.cute.algebra``
checks both and refuses; pycute's ``composition`` returns a layout anyway. For the family
``A = (M,N):(1,2M)`` (an ``M×N`` column-major matrix whose columns are ``2M`` apart) with
``M, N >= 2``:

* ``B = (M+1):1``: the algorithm takes ``M`` elements from the first mode and then has
  ``(M+1) // M = 1`` left, so it builds ``M:1`` (pycute's answer); but ``A(B(M)) = 2M``.
* ``B = (M,2):(1,1)``: mode by mode it builds ``(M,2):(1,1)``, whose offset at ``(M-1, 1)``
  is ``M``; but ``B`` sends that index to ``M``, where ``A`` is ``2M``.

Each claim "the algorithm's layout equals ``A ∘ B`` on ``B``'s domain" is refuted by Z3 with
a counterexample re-checked by evaluation, as this entry expects; and
``layout_algebra.interop.cute.algebra.composition`` is checked to refuse both at every ``M, N`` in
``{2, 3, 4, 6}`` (the entry fails otherwise).
"""

import _cute
import sympy

from layout_algebra.interop.cute.algebra import composition

CLAIM = "CuTe's composition algorithm builds a wrong layout where shape divisibility or left distributivity fails (refuted on A = (M,N):(1,2M))"
EXPECTED = ("refuted", "refuted")


def prove_claim():
    M, N, x = _cute.size("M"), _cute.size("N"), _cute.index("x")
    A = ((M, N), (1, 2 * M))
    sizes = list(_cute.samples((M, N), (2, 3, 4, 6)))
    cases = [
        ("shape divisibility", (M + 1, 1), (M, 1), M + 1, "shape divisibility fails"),
        ("left distributivity", ((M, 2), (1, 1)), ((M, 2), (1, 1)), 2 * M, "carries into the next mode"),
    ]
    results = []
    for condition, B, built, domain, reason in cases:
        _cute.refused_by_the_algebra(composition, [A, B], sizes, reason)
        results.append(
            _cute.law(
                f"without {condition}, {_cute.text(built)} equals {_cute.text(A)} ∘ {_cute.text(B)} on [0, {domain})",
                sympy.Eq(_cute.at_offset(built, x), _cute.at_offset(A, _cute.at_offset(B, x))),
                {x: domain},
                assume=[M >= 2, N >= 2],
            )
        )
    return results
