"""Internal names never meet user names: one supply (``model.internal_names``), and every
prover path answers the same whatever the user calls the sizes.

Z3 knows a constant by its name and SymPy a symbol by its name and assumptions, so an
internal name a user can spell is the user's size. Three false proofs came from that
(index names ``x0``/``j0``, the start index ``param1``, the substitution ``N = 8*N_8``).
Here: (1) no module but the supply makes an internal Z3 or SymPy name; (2) user size
names drawn from every pattern the package uses or used internally are checked on the
prover paths against independent oracles (arithmetic written out here, XLA's nested
tiling in ``tests/support/oracles.py``, the NumPy executor).
"""

from __future__ import annotations

import itertools
import math
import pathlib
import re

import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st
from support.oracles import nested_linear_index

from layout_algebra import prove
from layout_algebra.decide import conditions
from layout_algebra.decide.bitcast import reshape_is_bitcast
from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.rewrite_conditions import when_rewrite_is_safe
from layout_algebra.hlo.verify import verify_rewrite
from layout_algebra.model import internal_names
from layout_algebra.model.symbols import dim_symbol
from layout_algebra.model.syntax import ParseError

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "layout_algebra"

#: Names the package builds (or built) for itself, and their look-alikes: each a legal size name.
INTERNAL_LOOKALIKES = (
    "x0", "y0", "j0", "j1", "k", "K", "q", "r", "q_1", "r_1", "A", "D", "a1", "b1",
    "param1", "param0", "N_8", "N_8_1", "N8", "N_16", "M_by8", "x0_d0", "p_d0", "literal",
    "start", "lemma", "_x", "_1", "N__8",
)  # fmt: skip

#: Z3 constants and SymPy symbols made from a name written in the source
_NAME_MADE = re.compile(
    r"z3\.(?:Int|Ints|Real|Reals|Bool|Bools|BitVec|BitVecs|Const|Consts)\(\s*f?[\"']"
    r"|Symbol\(\s*f[\"']|dim_symbol\(\s*f[\"']"
    r"|[\"'][^\"'\s]*(?<!<)!(?![rsa]\})[A-Za-z0-9{][^\"']*[\"']"  # the supply's mark, outside a !r} or <!
)

#: Index symbols of the closed forms, refused as size names where they are made
#: (``layout_map`` raises for a size named ``i0`` or ``p``), and the views' result index
#: (``decide/views.py``, maintained with the views): each place must stay listed here
#: until it draws from the supply, and no other may appear.
_GUARDED = {
    "layout_algebra/meaning/digits.py",
    "layout_algebra/meaning/stages/symbolic.py",
    "layout_algebra/decide/views.py",
}


def test_no_internal_name_is_made_outside_the_supply() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if rel == "layout_algebra/model/internal_names.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0] if not line.lstrip().startswith(">>>") else ""
            if _NAME_MADE.search(code):
                found.setdefault(rel, []).append(f"{n}: {line.strip()}")
    assert set(found) <= _GUARDED, {k: v for k, v in found.items() if k not in _GUARDED}


def test_the_scan_sees_the_old_patterns() -> None:
    """The scan's pattern matches each way an internal name was made before the supply."""
    for old in (
        'k * dim_symbol(f"{s}_{k}")',
        'z3.Int(f"param{n}!")',
        'z3.Int(f"q!{self._fresh}")',
        'z3.Ints("A D a1 b1 a2 b2")',
        'sympy.Symbol(f"{s}!{modulus}", integer=True)',
        'z3.Real(f"literal!{v}")',
    ):
        assert _NAME_MADE.search(old), old
    assert not _NAME_MADE.search('raise ValueError(f"{name!r} is not a size")')


def test_no_user_name_is_internal() -> None:
    """Every name the size grammar accepts is outside the supply's namespace, and every
    name the supply makes is refused by the grammar."""
    made = [
        internal_names.index_variable("x0"),
        internal_names.quotient_name("N", 8),
        internal_names.multiple_name("N", 8),
        *internal_names.division_names(1),
        internal_names.start_name(1),
        internal_names.literal_name("nan"),
        *internal_names.lemma_names("A", "D").split(),
    ]
    assert len(set(made)) == len(made)
    for name in made:
        assert internal_names.is_internal(name)
        with pytest.raises(ParseError):
            prove.injective(f"f32[{name}]{{0}}")
    for name in INTERNAL_LOOKALIKES:
        assert not internal_names.is_internal(name)


@given(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True))
def test_size_names_with_digits_and_underscores_are_user_names(name: str) -> None:
    assert not internal_names.is_internal(name)
    assert internal_names.multiple_size(dim_symbol(name), 8) != dim_symbol(f"{name}_8")


@pytest.mark.parametrize("name", ["Ñ", "x₀", "名"])
def test_unicode_size_names_are_refused_as_bad_input(name: str) -> None:
    """The size grammar is ASCII: a unicode name is bad input, quoted, not a crash."""
    with pytest.raises(ParseError, match="not a size name"):
        prove.injective(f"f32[{name},4]{{1,0}}")


# ----------------------------------------------------------------- the prover paths
def _offsets(dims: tuple[int, ...], minor_to_major: tuple[int, ...], tiles) -> list[int]:
    return [
        nested_linear_index(dims, minor_to_major, tiles, i)
        for i in itertools.product(*(range(d) for d in dims))
    ]


@pytest.mark.parametrize("name", INTERNAL_LOOKALIKES)
def test_injectivity_and_equivalence_whatever_the_size_is_called(name: str) -> None:
    # the oracle: at size 2 the constant map sends 8 elements to one place, and element
    # (0, 1) is at 1 row-major but at 2 column-major (XLA's nested tiling, no tiles)
    assert len(set(_offsets((2, 4), (1, 0), []))) == 8
    assert _offsets((2, 4), (1, 0), []) != _offsets((2, 4), (0, 1), [])
    constant = prove.function_map(f"f32[{name},4]", lambda i, ar: 0 * i[0])
    r = prove.injective(constant)
    assert r.status == "refuted", name
    r = prove.equivalent(f"f32[{name},4]{{1,0}}", f"f32[{name},4]{{0,1}}")
    assert r.status == "refuted", name
    sizes = r.counterexample["sizes"]
    n = sizes[name]
    assert _offsets((n, 4), (1, 0), []) != _offsets((n, 4), (0, 1), [])
    # a tiled layout is injective and in bounds for every size: brute force at small sizes
    shape = f"f32[{name},3]{{1,0:T(2,2)}}"
    assert prove.injective(shape).status == "proved", name
    assert prove.in_bounds(shape).status == "proved", name
    for n in range(1, 6):
        offsets = _offsets((n, 3), (1, 0), [(2, 2)])
        assert len(set(offsets)) == len(offsets)
        assert max(offsets) < math.ceil(n / 2) * 2 * 4


@pytest.mark.parametrize("name", INTERNAL_LOOKALIKES)
def test_bitcast_decisions_whatever_the_size_is_called(name: str) -> None:
    """Merging ``[2, n, 128]`` into ``[2n, 128]`` under ``T(8,128)`` moves an element
    unless ``n % 8 == 0`` (the oracle: XLA's nested tiling, element by element)."""
    src, dst = f"f32[2,{name},128]{{2,1,0:T(8,128)}}", f"f32[2*{name},128]{{1,0:T(8,128)}}"

    def bitcast_at(n: int) -> bool:
        a = _offsets((2, n, 128), (2, 1, 0), [(8, 128)])
        b = _offsets((2 * n, 128), (1, 0), [(8, 128)])
        return a == b

    assert bitcast_at(8) and not bitcast_at(3)
    assert reshape_is_bitcast(src, dst, assume=f"{name} % 8 == 0").status == "proved", name
    r = reshape_is_bitcast(src, dst)
    assert r.status == "refuted", name
    assert not bitcast_at(int(r.counterexample["sizes"][name]))


@pytest.mark.parametrize("name", ["N_8", "N_8_1", "K", "x0", "q", "N_by8"])
def test_sufficiency_proofs_keep_the_users_size_apart_from_the_substitution(name: str) -> None:
    """``prove_sufficient`` substitutes ``N = 8*K`` for ``N % 8 == 0``. Old: ``K`` was the
    symbol ``N_8``, a size the user may also have, so "no padding of ``f32[N-8*N_8]{0:T(16)}``
    under ``N % 8 == 0``" was accepted; it is false at N=16, N_8=1 (8 elements in a tile of 16)."""
    n = 16 - 8 * 1
    assert math.ceil(n / 16) * 16 != n  # the oracle: padding at N=16, N_8=1
    claim = conditions.no_padding_claim(f"f32[N-8*{name}]{{0:T(16)}}")
    ok, why = conditions.prove_sufficient(claim, sympy.Eq(sympy.Mod(dim_symbol("N"), 8), 0))
    assert not ok, (name, why)


@pytest.mark.parametrize("name", ["N_8", "x0", "k", "param1"])
def test_conditions_whatever_the_size_is_called(name: str) -> None:
    c = conditions.when_no_padding(f"f32[{name}]{{0:T(8)}}")
    assert c.status == "exact", c
    for v in range(1, 40):  # the oracle: whole tiles of 8
        assert c.holds_at({name: v}) == (v % 8 == 0)


def _module(*lines: str) -> str:
    body = "\n".join(f"  {'ROOT ' if k == len(lines) - 1 else ''}{line}" for k, line in enumerate(lines))
    return f"HloModule m\nENTRY e {{\n{body}\n}}"


@pytest.mark.parametrize("name", ["param1", "j0", "x0", "N_8", "q", "literal"])
def test_rewrite_verification_whatever_the_size_is_called(name: str) -> None:
    """A dynamic-slice at a start index read from a parameter is not the reversed array's
    row 0, and a copy is not a negate: refuted, and the executor agrees at the sizes given."""
    head = (f"p = f32[{name}+1,4]{{1,0}} parameter(0)", "i = s32[] parameter(1)", "z = s32[] constant(0)")
    before = _module(*head, "d = f32[1,4]{1,0} dynamic-slice(p, i, z), dynamic_slice_sizes={1,4}")
    after = _module(
        *head,
        f"r = f32[{name}+1,4]{{1,0}} reverse(p), dimensions={{0}}",
        "d = f32[1,4]{1,0} dynamic-slice(r, z, z), dynamic_slice_sizes={1,4}",
    )
    r = verify_rewrite(before, after)
    assert r.status == "refuted", (name, r.reason)
    assert compare(before, after, sizes={name: 1}).same is False
    copy = _module(f"p = f32[{name}]{{0}} parameter(0)", f"c = f32[{name}]{{0}} copy(p)")
    negate = copy.replace("copy(p)", "negate(p)")
    r = verify_rewrite(copy, negate)
    assert r.status == "refuted", name
    sizes = {k: int(v) for k, v in r.counterexample["sizes"].items()}
    assert compare(copy, negate, sizes=sizes).same is False


def test_rewrite_condition_keeps_the_users_size_apart_from_the_substitution() -> None:
    """Old: with sizes ``N`` and ``N_8``, the sufficiency proof's ``N = 8*N_8`` made the
    user's ``N_8`` the substitution's, and ``Eq(Mod(N, 8), 0)`` came out ``exact`` for a
    rewrite the verifier refutes at N=112, N_8=1 (104 elements, the select is not a copy
    past index 100). The executor confirms the refutation there."""
    d = "max(N-8*N_8,0)"
    before = _module(
        "p = f32[N]{0} parameter(0)",
        f"q = f32[{d}]{{0}} parameter(1)",
        f"r = f32[{d}]{{0}} parameter(2)",
        "c = f32[N]{0:T(8)} copy(p)",
        f"i = s32[{d}]{{0}} iota(), iota_dimension=0",
        "k = s32[] constant(100)",
        f"kb = s32[{d}]{{0}} broadcast(k), dimensions={{}}",
        f"lt = pred[{d}]{{0}} compare(i, kb), direction=LT",
        f"s = f32[{d}]{{0}} select(lt, q, r)",
        f"t = (f32[N]{{0:T(8)}}, f32[{d}]{{0}}) tuple(c, s)",
    )
    after = _module(
        "p = f32[N]{0} parameter(0)",
        f"q = f32[{d}]{{0}} parameter(1)",
        f"r = f32[{d}]{{0}} parameter(2)",
        "c = f32[N]{0} copy(p)",
        f"s = f32[{d}]{{0}} copy(q)",
        f"t = (f32[N]{{0}}, f32[{d}]{{0}}) tuple(c, s)",
    )
    at = {"N": 112, "N_8": 1}
    assert compare(before, after, sizes=at, mode="logical").same is False
    c = when_rewrite_is_safe(before, after, budget_s=30)
    if c.expr is not None and c.status == "exact":
        assert c.holds_at(at) is False, c
