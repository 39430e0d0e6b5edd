"""Red team of session 26's verdict-producing changes: each verdict against an independent oracle.

The changes attacked: XLA's bitcast size rule (``hlo.bitcast_rule``: ``ShapeUtil::ArraySize``
with first-tile padding, ``L(n)`` only with tiles, packed ``E(n)`` bytes), sizes >= 0
everywhere (``N == 0`` admitted), function-map counterexamples re-checked by SymPy
substitution, physical-mode placement in the rewrite verifier, the bitcast fast path on
stage pipelines, and the NumPy evaluator's ``E(n)`` wider than the type.

The oracles share no code with the provers: a transcription of ``ArraySize`` from
``xla-facts.md`` §4.2 (its pseudocode and test values), packing real arrays of distinct
values with ``numpy_eval.pack``, plain Python evaluation of your own functions, and the
NumPy HLO executor (``hlo.execute.compare``) at concrete sizes. The tests named
``test_regression_*`` each pin a defect found here (the docstring says what the old code
answered); the others keep making attacks that found nothing.
"""

from __future__ import annotations

import pytest

from layout_algebra import prove
from layout_algebra.hlo.execute import compare
from layout_algebra.hlo.verify import verify_rewrite
from layout_algebra.model.symbols import dim_symbol

N = dim_symbol("N")


def copy_module(parameter: str, root: str, op: str = "copy(p)") -> str:
    return f"HloModule m\nENTRY e {{\n  p = {parameter} parameter(0)\n  ROOT r = {root} {op}\n}}\n"


# ------------------------------------------------- physical mode: E(n) of an empty root
@pytest.mark.parametrize("dims", ["0", "4*N"])
def test_regression_roots_with_other_element_sizes_differ_even_when_empty(dims: str) -> None:
    """DESIGN.md: in physical mode the two root buffers agree in ``E(n)``. The verifier
    refuted ``s4[4*N]{0:E(4)}`` against ``s4[4*N]{0}`` at N = 0 ("element size in bits");
    the old executor answered ``same`` there (both buffers 0 bytes), so the two oracles of
    one contract disagreed. At N = 1 the bytes themselves show it (2 bytes against 4)."""
    before = copy_module(f"s4[{dims}]{{0:E(4)}}", f"s4[{dims}]{{0:E(4)}}")
    after = copy_module(f"s4[{dims}]{{0:E(4)}}", f"s4[{dims}]{{0}}")
    sizes = {"N": 0} if "N" in dims else None
    comparison = compare(before, after, sizes=sizes)
    assert comparison.same is False and "element sizes differ: 4 bits before, 8 after" in comparison.detail
    result = verify_rewrite(before, after)
    assert result.status == "refuted" and result.counterexample["property"] == "element size in bits"
    if sizes:
        assert compare(before, after, sizes={"N": 1}).same is False
    assert compare(before, before, sizes=sizes).same is True


# ------------------------------------------- your own maps: divisions by sizes or indices
def _plain(function, n: int) -> list:
    """``function`` run on Python ints at N = n for every index (the caught error, if any)."""

    class Ints:
        def lift(self, size):
            return n if size == N else size

        def floordiv(self, a, b):
            return a // b

        def mod(self, a, b):
            return a % b

    values = []
    for i in range(n):
        try:
            values.append(function((i,), Ints()))
        except ZeroDivisionError:
            values.append("division by zero")
    return values


def _by_n_minus_5(i, ar):
    return ar.floordiv(i[0], ar.lift(N) - 5) + i[0]


def _mod_n_minus_5(i, ar):
    return ar.mod(i[0], ar.lift(N) - 5)


def test_regression_a_symbolic_divisor_that_may_be_negative_is_no_proof() -> None:
    """``i // (N-5) + i`` is not injective at N = 3 (Python: 0 // -2 + 0 == 1 // -2 + 1 == 0)
    and ``i % (N-5)`` leaves the buffer there (1 % -2 == -1); the old prover **proved** both,
    because its integer encoding reads a division by ``b <= 0`` as quotient 0, remainder ``a``.
    A symbolic divisor of your function is now an obligation ``b > 0``."""
    assert _plain(_by_n_minus_5, 3)[:2] == [0, 0]
    assert _plain(_mod_n_minus_5, 3)[1] == -1
    assert _plain(_mod_n_minus_5, 5)[0] == "division by zero"
    f = prove.function_map("f32[N]", _by_n_minus_5, name="i // (N-5) + i")
    g = prove.function_map("f32[N]", _mod_n_minus_5, name="i % (N-5)")
    assert prove.injective(f).status != "proved"  # old: proved
    assert prove.in_bounds(g).status != "proved"  # old: proved
    # where the assumptions make the divisor positive, the claims are true and proved
    assert prove.injective(f, assume="N >= 6").status == "proved"
    assert prove.in_bounds(g, assume="N >= 6").status == "proved"
    for n in range(6, 20):
        values = _plain(_by_n_minus_5, n)
        assert len(set(values)) == n and all(0 <= v < n for v in _plain(_mod_n_minus_5, n))


@pytest.mark.parametrize(
    ("function", "claim"),
    [
        (lambda i, ar: ar.mod(7, i[0]) * 0 + i[0], "equivalent"),  # 7 % 0 at i = 0
        (lambda i, ar: ar.floordiv(i[0], i[0]) * 0 + i[0], "injective"),  # 0 // 0
        (lambda i, ar: ar.mod(i[0], 3 - i[0]) * 0 + i[0], "in_bounds"),  # 0 at i = 3
    ],
)
def test_regression_a_concrete_divisor_that_may_be_zero_is_no_proof(function, claim) -> None:
    """The function raises ``ZeroDivisionError`` at one element of ``f32[4]`` (plain Python),
    so it is no map there; the old prover proved these claims (the bit-vector encoding
    reads ``a / 0`` as quotient 0, remainder ``a``). Now ``unknown``, saying why."""
    with pytest.raises(ZeroDivisionError):
        for i in range(4):
            function((i,), _Python())
    f = prove.function_map("f32[4]", function, name="divides by an index")
    result = prove.equivalent(f, "f32[4]{0}") if claim == "equivalent" else getattr(prove, claim)(f)
    assert result.status == "unknown" and "divisor" in result.reason


class _Python:
    def lift(self, size):
        return size

    def floordiv(self, a, b):
        return a // b

    def mod(self, a, b):
        return a % b


def test_regression_a_sympy_function_on_solver_terms_is_unknown_not_an_error() -> None:
    """``sympy.Min`` of a Z3 term raised ``SympifyError`` out of ``prove.injective``."""
    import sympy

    f = prove.function_map("f32[N]", lambda i, ar: sympy.Min(i[0], ar.lift(N)), name="min")
    result = prove.injective(f)
    assert result.status == "unknown" and "SympifyError" in result.reason
