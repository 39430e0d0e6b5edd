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

import numpy as np
import pytest

from layout_algebra import prove
from layout_algebra.hlo.bitcast_rule import xla_shape_size
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


# ------------------------------------------------ XLA's ShapeUtil::ArraySize, transcribed
_BITS = {"f32": 32, "bf16": 16, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "pred": 8, "f64": 64, "s2": 2}


def _array_size(element: str, dims, m2m, tiles, alignment: int, e: int) -> int:
    """xla-facts.md 4.2 line by line: the first tile only, tile dims beyond the rank pad a
    size-1 dim, ``L(n)`` only with tiles, ``ceil(n*E/8)`` with ``E(n)``, else a whole byte
    (or more) per element."""

    def round_up(a: int, b: int) -> int:
        return -(-a // b) * b

    byte_width = max(1, _BITS[element] // 8)
    n = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if tiles:
        t, k = tiles[0], len(tiles[0])
        n = 1
        for p in range(k):
            n *= round_up(dims[m2m[p]] if p < len(dims) else 1, t[k - 1 - p])
        for p in range(k, len(dims)):
            n *= dims[m2m[p]]
        if alignment != 1:
            n = round_up(n, alignment)
    return -(-n * e // 8) if e else n * byte_width


def _shape_text(element: str, dims, m2m, tiles, alignment: int, e: int, space: int) -> str:
    attrs = ("T" + "".join("(" + ",".join(map(str, t)) + ")" for t in tiles)) if tiles else ""
    attrs += (f"L({alignment})" if alignment != 1 else "") + (f"E({e})" if e else "")
    attrs += f"S({space})" if space else ""
    body = ",".join(map(str, m2m)) + (":" + attrs if attrs else "")
    return f"{element}[{','.join(map(str, dims))}]{{{body}}}"


@pytest.mark.parametrize(
    ("shape", "size"),
    [  # xla-facts.md 4.2's test values, and a 0 dimension gives 0
        ("s4[9216,6144]{1,0:T(64,128)(8,1)E(4)}", 28311552),
        ("s4[64,128]{1,0:E(4)}", 4096),
        ("f32[0,128]{1,0:T(8,128)}", 0),
        ("f32[3,0]{1,0:T(8,128)L(1024)}", 0),
    ],
)
def test_the_size_rule_gives_xla_facts_test_values(shape: str, size: int) -> None:
    assert xla_shape_size(shape) == size


def test_the_size_rule_agrees_with_array_size_transcribed_on_random_layouts() -> None:
    """600 derandomized layouts: later tiles that do not divide, tiles of higher rank than
    the shape (scalars too), unit and zero dims, ``L(n)`` with and without tiles, packed and
    unpacked sub-byte types, ``E(n)`` wider than the type, memory spaces. (Out of the suite:
    12,000 more, no difference.)"""
    rng = np.random.default_rng(26)
    checked = 0
    for _ in range(600):
        element = str(rng.choice(sorted(_BITS)))
        rank = int(rng.integers(0, 4))
        dims = [int(rng.choice([0, 1, 1, 2, 3, 5, 8, 9, 17])) for _ in range(rank)]
        m2m = [int(x) for x in rng.permutation(rank)]
        tiles = [
            tuple(int(rng.choice([1, 2, 3, 4, 8])) for _ in range(int(rng.integers(1, 4))))
            for _ in range(int(rng.choice([0, 0, 1, 1, 2, 3])))
        ]
        alignment = int(rng.choice([1, 1, 2, 3, 4, 8]))
        width = _BITS[element]
        e = (
            int(rng.choice([0, 0, width, width + 1, 2 * width]))
            if width <= 8
            else int(rng.choice([0, width]))
        )
        space = int(rng.choice([0, 0, 1, 5]))
        text = _shape_text(element, dims, m2m, tiles, alignment, e, space)
        try:
            size = xla_shape_size(text)
        except ValueError:
            continue  # a layout XLA refuses too (e.g. E(n) narrower than the type)
        assert size == _array_size(element, dims, m2m, tiles, alignment, e), text
        checked += 1
    assert checked >= 500


# ---------------------------------------------------- an untiled L(n) in the bitcast command
def test_regression_an_untiled_alignment_does_not_make_a_bitcast_xla_rejects() -> None:
    """``f32[5]{0:L(4)}`` -> ``f32[5]{0:T(4)}``: both stage pipelines take 32 bytes, but
    XLA's ``ArraySize`` ignores an untiled ``L(n)`` (20 bytes against 32), so XLA's verifier
    rejects the bitcast (``hlo.bitcast_rule`` says so). The old ``bitcast_is_valid`` said
    "bitcast", for ``f32[N]`` "for all sizes", and ``when_reshape_is_bitcast`` "always"."""
    from layout_algebra.bitcast import bitcast_is_valid, reshape_is_bitcast
    from layout_algebra.conditions import when_reshape_is_bitcast
    from layout_algebra.hlo.bitcast_rule import bitcast_size_problem

    src, dst = "f32[5]{0:L(4)}", "f32[5]{0:T(4)}"
    assert _array_size("f32", [5], [0], [], 4, 0) == 20 != _array_size("f32", [5], [0], [(4,)], 1, 0) == 32
    assert bitcast_size_problem(src, dst) is not None
    assert bitcast_is_valid(src, dst).verdict == "not a bitcast"  # old: bitcast
    symbolic = reshape_is_bitcast("f32[N]{0:L(4)}", "f32[N]{0:T(4)}")
    assert symbolic.verdict == "not a bitcast"  # old: bitcast, for all sizes
    assert reshape_is_bitcast("f32[N]{0:L(4)}", "f32[N]{0:T(4)}", assume="N % 4 == 0").verdict == "bitcast"
    condition = when_reshape_is_bitcast("f32[N]{0:L(4)}", "f32[N]{0:T(4)}")
    assert condition.status == "exact"  # old: True (always)
    for n in range(0, 17):  # the condition against the transcribed ArraySize and the concrete verdict
        same = _array_size("f32", [n], [0], [], 4, 0) == _array_size("f32", [n], [0], [(4,)], 1, 0)
        assert condition.holds_at({"N": n}) is same, n
        assert reshape_is_bitcast(f"f32[{n}]{{0:L(4)}}", f"f32[{n}]{{0:T(4)}}").verdict == (
            "bitcast" if same else "not a bitcast"
        )
    # the other direction was already refused (the buffer with its L(4) is larger)
    assert bitcast_is_valid(src, "f32[5]{0}").verdict == "not a bitcast"
