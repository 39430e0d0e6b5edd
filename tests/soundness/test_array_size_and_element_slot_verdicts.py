"""Verdicts about array sizes and element slots, each against an independent oracle.

The changes attacked: XLA's bitcast size rule (``hlo.validity``: ``ShapeUtil::ArraySize``
with first-tile padding, ``L(n)`` only with tiles, packed ``E(n)`` bytes), sizes >= 0
everywhere (``N == 0`` admitted), function-map counterexamples re-checked by SymPy
substitution, physical-mode placement in the rewrite verifier, the bitcast fast path on
stage pipelines, and the NumPy evaluator's ``E(n)`` wider than the type.

The oracles share no code with the provers: a transcription of ``ArraySize`` from
``xla-facts.md`` §4.2 (its pseudocode and test values), packing real arrays of distinct
values with ``numpy_eval.pack``, plain Python evaluation of your own functions, and the
NumPy HLO executor (``hlo.execute_compare.compare``) at concrete sizes. The tests named
``test_regression_*`` each pin a defect found here (the docstring says what the old code
answered); the others keep making attacks that found nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from layout_algebra import prove
from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.verify import verify_rewrite
from layout_algebra.meaning.sizes import xla_shape_size
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
    rejects the bitcast (``hlo.validity`` says so). The old ``bitcast_is_valid`` said
    "bitcast", for ``f32[N]`` "for all sizes", and ``when_reshape_is_bitcast`` "always"."""
    from layout_algebra.decide.bitcast import bitcast_is_valid, reshape_is_bitcast
    from layout_algebra.decide.conditions import when_reshape_is_bitcast
    from layout_algebra.hlo.validity import bitcast_size_problem

    src, dst = "f32[5]{0:L(4)}", "f32[5]{0:T(4)}"
    assert _array_size("f32", [5], [0], [], 4, 0) == 20 != _array_size("f32", [5], [0], [(4,)], 1, 0) == 32
    assert bitcast_size_problem(src, dst) is not None
    assert bitcast_is_valid(src, dst).verdict == "not a bitcast"  # old: bitcast
    symbolic = reshape_is_bitcast("f32[N]{0:L(4)}", "f32[N]{0:T(4)}")
    assert symbolic.verdict == "not a bitcast"  # old: bitcast, for all sizes
    assert reshape_is_bitcast("f32[N]{0:L(4)}", "f32[N]{0:T(4)}", assume="N % 4 == 0").verdict == "bitcast"
    condition = when_reshape_is_bitcast("f32[N]{0:L(4)}", "f32[N]{0:T(4)}")
    assert condition.status == "exact"  # old: True (always)
    for n in range(1, 17):  # the condition (sizes >= 1) against the transcribed ArraySize and the verdict
        same = _array_size("f32", [n], [0], [], 4, 0) == _array_size("f32", [n], [0], [(4,)], 1, 0)
        assert condition.holds_at({"N": n}) is same, n
        assert reshape_is_bitcast(f"f32[{n}]{{0:L(4)}}", f"f32[{n}]{{0:T(4)}}").verdict == (
            "bitcast" if same else "not a bitcast"
        )
    assert reshape_is_bitcast("f32[0]{0:L(4)}", "f32[0]{0:T(4)}").verdict == "bitcast"  # both 0 bytes
    with pytest.raises(ValueError, match="sizes >= 1"):  # outside the condition's domain: refused
        condition.holds_at({"N": 0})
    # the other direction was already refused (the buffer with its L(4) is larger)
    assert bitcast_is_valid(src, "f32[5]{0}").verdict == "not a bitcast"


# ------------------------------------------- the NumPy evaluator: E(n) wider than the type
_WIDE = [
    ("s4", 4, 4),
    ("s4", 4, 5),
    ("s4", 4, 8),
    ("u4", 4, 7),
    ("pred", 1, 2),
    ("pred", 1, 8),
    ("u8", 8, 12),
]
_WIDE += [("bf16", 16, 16), ("bf16", 16, 24), ("f32", 32, 40), ("s8", 8, 8), ("pred", 1, 0), ("s4", 4, 0)]


def _stored_bits(values: np.ndarray, element: str, width: int) -> np.ndarray:
    """Each element's stored bits as an unsigned integer (two's complement for s4, 0/1 for pred)."""
    if element in ("f32", "bf16"):
        return values.view(np.uint32 if element == "f32" else np.uint16).astype(np.int64)
    return values.astype(np.int64) & ((1 << width) - 1)


def test_wide_element_sizes_pack_each_element_at_the_low_end_of_its_slot() -> None:
    """``pack`` against a bit-by-bit packer written here: slot ``k`` (XLA's nested-tiling
    linear index, ``tests/support/oracles.py``) takes bits ``[k*E, k*E + E)``; the element's stored
    bits sit at the low end (bit ``k*E`` is its least significant), zeros above, padding 0;
    the buffer is the tiled slots rounded up to ``L(n)``, times ``E``, in whole bytes
    (``E`` is the type's storage width without ``E(n)``: 8 bits for ``pred`` and ``s4``).
    ``unpack`` gives the array back. 120 derandomized layouts."""
    from support.oracles import nested_tiling

    from layout_algebra.model.syntax import parse_shape
    from layout_algebra.packing.formats import numpy_dtype
    from layout_algebra.packing.numpy_eval import pack, unpack

    rng = np.random.default_rng(6)
    for case in range(120):
        element, width, e = _WIDE[case % len(_WIDE)]
        rank = int(rng.integers(1, 4))
        dims = [int(rng.choice([1, 2, 3, 4, 5])) for _ in range(rank)]
        m2m = [int(x) for x in rng.permutation(rank)]
        tiles = [
            tuple(int(rng.choice([1, 2, 4])) for _ in range(int(rng.integers(1, 3))))
            for _ in range(int(rng.choice([0, 1, 2])))
        ]
        alignment = int(rng.choice([1, 1, 3, 4]))
        shape = parse_shape(_shape_text(element, dims, m2m, tiles, alignment, e, 0))
        dtype = numpy_dtype(shape.element_type)
        if element == "pred":
            values = rng.integers(0, 2, dims).astype(dtype)
        elif element in ("f32", "bf16"):
            values = rng.standard_normal(dims).astype(dtype)
        else:
            low = -(1 << (width - 1)) if element.startswith("s") else 0
            values = rng.integers(low, low + (1 << width), dims).astype(dtype)
        slot_bits = e or max(8, width)
        slots = int(np.prod(nested_tiling(dims, m2m, tiles, [0] * rank)[1]))
        slots = -(-slots // alignment) * alignment
        expected = np.zeros(-(-slots * slot_bits // 8) * 8, dtype=np.uint8)  # one entry per bit
        stored = _stored_bits(values, element, width)
        for index in np.ndindex(*dims):
            slot = nested_tiling(dims, m2m, tiles, index)[0]
            for bit in range(min(slot_bits, 8 * values.itemsize)):
                expected[slot * slot_bits + bit] = (int(stored[index]) >> bit) & 1
        expected_bytes = np.packbits(expected, bitorder="little")
        packed = pack(values, shape, fill=0)
        assert np.array_equal(packed, expected_bytes), (str(shape), values.tolist())
        assert np.array_equal(unpack(packed, shape).view(np.uint8), values.view(np.uint8)), str(shape)


# ------------------------------------------- size conditions with dimension formulas
@pytest.mark.parametrize(
    ("src", "dst", "outside"),
    [
        ("f32[N/8,128]{1,0:T(8,128)}", "f32[N/8,128]{1,0}", 12),
        ("pred[N-2,8]{1,0:T(8,8)}", "pred[8*N-16]{0:T(64)}", 1),
    ],
)
def test_regression_a_condition_search_over_a_formula_that_is_no_size(src, dst, outside) -> None:
    """The search tries N = 1, 2, ...; where a dimension formula is no size (N/8 = 1/8,
    N-2 = -1) the old code raised "no value given for []" / "dimension size -1 is
    negative" out of ``when_reshape_is_bitcast``, then answered ``unknown``. Those sizes
    are outside the question (tests/prove/test_formula_dims.py): the condition is found on the
    sizes where the arrays exist, agrees with the concrete decision at each of them, and
    ``holds_at`` refuses the others."""
    from layout_algebra.decide.bitcast import reshape_is_bitcast
    from layout_algebra.decide.conditions import when_reshape_is_bitcast

    condition = when_reshape_is_bitcast(src, dst)
    assert condition.status == "exact", condition.details
    from layout_algebra.model.syntax import parse_shape
    from layout_algebra.prove.assumptions import condition_holds

    n = dim_symbol("N")
    valid = [k for k in range(1, 65) if all(condition_holds(f, {n: k}) for f in condition.domain)]
    assert len(valid) >= 8 and outside not in valid
    for k in valid:
        a, b = parse_shape(src).specialize({n: k}), parse_shape(dst).specialize({n: k})
        assert condition.holds_at({"N": k}) is (reshape_is_bitcast(a, b).status == "proved"), k
    with pytest.raises(ValueError, match="outside the claim's domain"):
        condition.holds_at({"N": outside})


def test_conditions_with_formulas_that_are_sizes_agree_with_the_concrete_verdicts() -> None:
    """Formulas that are sizes at every grid point keep their exact conditions, each checked
    against the concrete verdict at N = 1..24 (and the transcribed ArraySize where sizes decide)."""
    from layout_algebra.decide.bitcast import reshape_is_bitcast
    from layout_algebra.decide.conditions import when_reshape_is_bitcast

    condition = when_reshape_is_bitcast("f32[N-1,2]{1,0:T(2,2)}", "f32[2*N-2]{0}")
    assert condition.status == "exact"
    for n in range(1, 25):
        same = _array_size("f32", [n - 1, 2], [1, 0], [(2, 2)], 1, 0) == _array_size(
            "f32", [2 * n - 2], [0], [], 1, 0
        )
        verdict = reshape_is_bitcast(f"f32[{n - 1},2]{{1,0:T(2,2)}}", f"f32[{2 * n - 2}]{{0}}").verdict
        assert condition.holds_at({"N": n}) is same is (verdict == "bitcast"), n


# ------------------------- verify_rewrite against the executor: bitcasts, packed types, N = 0
_ROOT_LAYOUTS = [
    "{1,0}",
    "{0,1}",
    "{1,0:T(2,4)}",
    "{0,1:T(4,2)}",
    "{1,0:T(4,4)(2,1)}",
    "{1,0:T(8)}",
    "{1,0:T(4,4)L(32)}",
]


def _with(layout: str, extra: str) -> str:
    return layout if not extra else layout[:-1] + ("" if ":" in layout else ":") + extra + "}"


@pytest.mark.slow
def test_copy_against_copy_then_bitcast_agrees_with_the_executor() -> None:
    """Physical mode, roots that differ only in layout (``copy`` into one layout against a
    ``copy`` into another then a ``bitcast``), f32/bf16/s8/s4 E(4)/pred, concrete and
    ``4*N`` rows (N = 0 included): a proof is "same" at N = 0..3, a refutation "different"
    at its sizes, invalid HLO refused by the executor too. 40 derandomized pairs (out of
    the suite: 1,300 more, no disagreement)."""
    from layout_algebra.hlo.validity import InvalidHlo

    rng = np.random.default_rng(7)
    verdicts = set()
    for _ in range(40):
        element, extra = [("f32", ""), ("bf16", ""), ("s8", ""), ("s4", "E(4)"), ("pred", "")][
            int(rng.integers(5))
        ]
        symbolic = bool(rng.integers(2))
        dims = "4*N,8" if symbolic else str(rng.choice(["8,8", "4,8", "3,5", "0,8"]))
        la, lb, lc = (_with(str(rng.choice(_ROOT_LAYOUTS)), extra) for _ in range(3))
        p = f"{element}[{dims}]{_with('{1,0}', extra)}"
        before = copy_module(p, f"{element}[{dims}]{la}")
        after = (
            f"HloModule m\nENTRY e {{\n  p = {p} parameter(0)\n  c = {element}[{dims}]{lc} copy(p)\n"
            f"  ROOT r = {element}[{dims}]{lb} bitcast(c)\n}}\n"
        )
        sizes = [{"N": n} for n in range(4)] if symbolic else [None]
        result = verify_rewrite(before, after)
        if result.status == "refuted" and "invalid_hlo" in result.counterexample:
            verdicts.add("invalid")  # the rewritten module is invalid HLO: an unsafe rewrite
            at = result.counterexample["sizes"] or None
            with pytest.raises(InvalidHlo):
                compare(before, after, sizes=at if at else sizes[-1])
            continue
        verdicts.add(result.status)
        if result.status == "proved":
            assert all(compare(before, after, sizes=s).same is True for s in sizes), (before, after)
        else:
            assert result.status == "refuted", result.reason
            at = result.counterexample["sizes"] or None
            assert compare(before, after, sizes=at).same is False, (before, after, result.counterexample)
    assert verdicts == {"proved", "refuted", "invalid"}


# ------------------------------- your own maps: random floor/mod/size formulas, brute force
M = dim_symbol("M")


def _random_formula(rng: np.random.Generator, depth: int) -> tuple:
    """A random index formula over (i, j, N, M): +, -, *, floordiv/mod by a constant or a size."""
    leaves = [("i",), ("j",), ("N",), ("M",), ("c", int(rng.choice([1, 2, 3, 4])))]
    if depth == 0 or rng.random() < 0.3:
        return leaves[int(rng.integers(len(leaves)))]
    op = str(rng.choice(["+", "-", "*", "//", "%", "// size", "% size"]))
    a = _random_formula(rng, depth - 1)
    if op in ("//", "%"):
        return (op, a, ("c", int(rng.choice([2, 3, 4]))))
    if op.endswith("size"):
        return (op[:2].strip(), a, [("N",), ("M",), ("-", ("N",), ("c", 2))][int(rng.integers(3))])
    return (op, a, _random_formula(rng, depth - 1) if op != "*" else leaves[int(rng.integers(len(leaves)))])


def _run_formula(t: tuple, i, j, ar, n, m):
    if len(t) == 1:
        return {"i": i, "j": j, "N": n, "M": m}[t[0]]
    if t[0] == "c":
        return t[1]
    a, b = _run_formula(t[1], i, j, ar, n, m), _run_formula(t[2], i, j, ar, n, m)
    if t[0] in ("+", "-", "*"):
        return a + b if t[0] == "+" else a - b if t[0] == "-" else a * b
    return ar.floordiv(a, b) if t[0] == "//" else ar.mod(a, b)


def test_random_function_maps_agree_with_brute_force() -> None:
    """Injectivity, bounds and equivalence to row-major of 30 random function maps on
    ``f32[N,M]`` (floor division and remainder by constants and by sizes, some of which
    may be 0 or negative): a proof holds at every N, M in 0..6 by plain Python (where a
    division by 0 or a negative divisor makes it fail), a refutation holds at its sizes.
    (Out of the suite: 880 more, no disagreement.)"""
    from layout_algebra.prove.assumptions import assumptions_hold, parse_assumptions

    rng = np.random.default_rng(10)
    statuses = set()
    for case in range(30):
        t = _random_formula(rng, 3)
        f = prove.function_map(
            "f32[N,M]",
            lambda idx, ar, t=t: _run_formula(t, idx[0], idx[1], ar, ar.lift(N), ar.lift(M)),
            name=str(t),
        )
        assume = [None, "N >= 3", "M % 2 == 0"][case % 3]
        question = ["injective", "in_bounds", "equivalent"][case % 3 if case < 15 else (case // 3) % 3]
        if question == "equivalent":
            result = prove.equivalent(f, "f32[N,M]{1,0}", assume=assume, timeout_ms=3000)
        else:
            result = getattr(prove, question)(f, assume=assume, timeout_ms=3000)
        statuses.add(result.status)

        def holds(n: int, m: int, t=t, question=question) -> bool:
            try:
                values = {(i, j): _run_formula(t, i, j, _Python(), n, m) for i in range(n) for j in range(m)}
            except ZeroDivisionError:
                return False
            if question == "injective":
                return len(set(values.values())) == len(values)
            if question == "in_bounds":
                return all(0 <= v < n * m for v in values.values())
            return all(v == i * m + j for (i, j), v in values.items())

        def admitted(n: int, m: int, assume=assume) -> bool:
            return assume is None or assumptions_hold(parse_assumptions(assume), {N: n, M: m})

        if result.status == "proved":
            assert all(holds(n, m) for n in range(7) for m in range(7) if admitted(n, m)), (
                t,
                question,
                assume,
            )
        elif result.status == "refuted":
            sizes = result.counterexample["sizes"]
            assert admitted(sizes["N"], sizes["M"]) and not holds(sizes["N"], sizes["M"]), (
                t,
                question,
                sizes,
            )
    assert {"proved", "refuted"} <= statuses
