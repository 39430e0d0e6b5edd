"""``verify_rewrite`` over symbolic sizes: which sizes it quantifies over, checked by running.

The domain is one, for every prover path: a size is an integer >= 0 (XLA allows zero-size
dimensions), and a parameter's dimension formula must itself be such a size (``f32[N/8,128]``
is an array only where ``8 | N``): an implicit fact, as for the layout-level questions
(``prove.core.shape_facts``). Assumptions no such sizes satisfy raise
``AssumptionsAdmitNoSizes`` instead of giving a vacuous proof.

The oracle is the NumPy HLO executor (``hlo.execute_compare.compare``), which runs both modules on
real packed bytes at concrete sizes and shares no code with the verifier's encoding, and
plain evaluation of the dimension formulas and assumptions at every size in a box.
"""

from __future__ import annotations

import re

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.hlo.verify import verify_rewrite
from layout_algebra.model.symbols import as_sympy
from layout_algebra.model.syntax import as_shape
from layout_algebra.prove.assumptions import AssumptionsAdmitNoSizes, assumptions_hold, parse_assumptions

N = sympy.Symbol("N", integer=True, nonnegative=True)


def copy_module(parameter: str, root: str, op: str = "copy(p)") -> str:
    return f"HloModule m\nENTRY e {{\n  p = {parameter} parameter(0)\n  ROOT r = {root} {op}\n}}\n"


def _dims_are_sizes(shape_text: str, n: int) -> bool:
    """Every dimension formula of the shape is a whole number >= 0 at N = n (plain evaluation)."""
    for d in as_shape(shape_text).dimensions:
        value = sympy.nsimplify(as_sympy(d)).subs({sympy.Symbol("N"): n, N: n})
        if not (value.is_Integer and value >= 0):
            return False
    return True


def _admitted(shape_text: str, assume: str | None, n: int) -> bool:
    if not _dims_are_sizes(shape_text, n):
        return False
    return assume is None or assumptions_hold(parse_assumptions(assume), {N: n, sympy.Symbol("N"): n})


# --------------------------------------------- a parameter's dimension formulas are facts
def test_regression_no_vacuous_proof_where_a_parameter_dimension_is_no_size() -> None:
    """Old code proved copy {1,0} = copy {0,1} of ``f32[N/8,128]`` under ``N == 3`` (no such
    array exists: the proof was vacuous) although the two differ at every N = 8k, k >= 2."""
    before = copy_module("f32[N/8,128]{1,0}", "f32[N/8,128]{1,0}")
    after = copy_module("f32[N/8,128]{1,0}", "f32[N/8,128]{0,1}")
    assert compare(before, after, sizes={"N": 16}).same is False
    for assume in ("N == 3", "N % 8 == 4"):  # old: 'proved', and 'unknown' (a side condition)
        with pytest.raises(AssumptionsAdmitNoSizes, match=r"admit no sizes of f32\[N/8,128\]"):
            verify_rewrite(before, after, assume=assume)
    assert verify_rewrite(before, after).status == "refuted"


def test_regression_a_counterexample_has_every_parameter_dimension_a_size() -> None:
    """Old code refuted the tiled copy of ``f32[N/8,128]`` at N = 4 (0.5 rows: no array,
    and the executor cannot run it) and of ``f32[N-1,128]`` at N = 0 (-1 rows, "-512 bytes")."""
    for rows in ("N/8", "N-1", "N/4-2"):
        before = copy_module(f"f32[{rows},128]{{1,0}}", f"f32[{rows},128]{{1,0:T(8,128)}}")
        after = copy_module(f"f32[{rows},128]{{1,0}}", f"f32[{rows},128]{{1,0}}")
        result = verify_rewrite(before, after)
        assert result.status == "refuted", result
        n = result.counterexample["sizes"]["N"]
        assert _dims_are_sizes(f"f32[{rows},128]", n), (rows, n)
        assert "-" not in result.counterexample["before"] + result.counterexample["after"]
        assert compare(before, after, sizes={"N": n}).same is False  # the executor runs it


def test_regression_an_intermediate_dimension_formula_must_be_a_size_too() -> None:
    """``t = f32[N/8,8,128] reshape(p)`` of ``p = f32[N,128]`` is invalid HLO where 8 does not
    divide N; old code answered ``unknown`` (a side condition not proved) without saying so,
    and under ``N == 3`` (where only the rewritten module is invalid) the same."""
    before = copy_module("f32[N,128]{1,0}", "f32[N,128]{1,0}")
    after = (
        "HloModule m\nENTRY e {\n  p = f32[N,128]{1,0} parameter(0)\n"
        "  t = f32[N/8,8,128]{2,1,0} reshape(p)\n  ROOT r = f32[N,128]{1,0} reshape(t)\n}\n"
    )
    for assume, n in ((None, None), ("N == 3", 3), ("N <= 7 or N == 16", None)):
        r = verify_rewrite(before, after, assume=assume)  # the rewritten module is invalid there
        assert r.status == "refuted", str(r)
        problem = r.counterexample["invalid_hlo"]
        assert re.search(r"reshape t: f32\[N/8,8,128\]\{2,1,0\} has a dimension", problem), problem
        found = int(re.search(r"at N=(\d+)", problem).group(1))
        assert r.counterexample["sizes"] == {"N": found}
        assert found % 8 != 0 and (n is None or found == n)
        with pytest.raises(InvalidHlo, match=r"reshape t: f32\[N/8,8,128\]"):  # as the input: bad input
            verify_rewrite(after, after, assume=assume)
        with pytest.raises(InvalidHlo):  # the executor cannot run it there either
            compare(before, after, sizes={"N": found})
    assert verify_rewrite(before, after, assume="N % 8 == 0").status == "proved"
    assert compare(before, after, sizes={"N": 16}).same is True


# --------------------------------------------------- the domain: sizes are integers >= 0
TILED = copy_module("f32[N,128]{1,0}", "f32[N,128]{1,0:T(8,128)}")
PLAIN = copy_module("f32[N,128]{1,0}", "f32[N,128]{1,0}")


@pytest.mark.parametrize("assume", ["N == 0", "N < 1", "N <= 0 or N % 8 == 0"])
def test_zero_size_dimensions_are_sizes(assume) -> None:
    """XLA allows ``f32[0,128]``; the prover always quantified over N >= 0, and the check
    that sizes exist now agrees (it refused ``N == 0``)."""
    assert verify_rewrite(TILED, PLAIN, assume=assume).status == "proved"
    assert compare(TILED, PLAIN, sizes={"N": 0}).same is True  # both buffers are 0 bytes


@pytest.mark.parametrize("assume", ["N == -1", "N < 0", "N == 0 and N == 1", "N + 1 < 1"])
def test_assumptions_without_sizes_are_still_refused(assume) -> None:
    with pytest.raises(AssumptionsAdmitNoSizes, match="every size is an integer >= 0") as info:
        verify_rewrite(TILED, PLAIN, assume=assume)
    assert assume in str(info.value)


def test_a_dimension_formula_may_be_zero_but_not_negative() -> None:
    before = copy_module("f32[N-2,128]{1,0}", "f32[N-2,128]{1,0:T(8,128)}")
    after = copy_module("f32[N-2,128]{1,0}", "f32[N-2,128]{1,0}")
    assert verify_rewrite(before, after, assume="N == 2").status == "proved"  # zero rows
    with pytest.raises(AssumptionsAdmitNoSizes, match="admit no sizes of"):
        verify_rewrite(before, after, assume="N <= 1")


# ------------------------------------------------------ random symbolic instances, run
_ROWS = ["N", "N/2", "N/4", "2*N", "N-1", "N-3", "N+1", "N/2-1"]
_LAYOUTS = ["{1,0}", "{0,1}", "{1,0:T(2,2)}", "{0,1:T(4,1)}", "{1,0:T(4,2)}"]
_ASSUMPTIONS = [None, "N % 4 == 0", "N <= 5", "N == 0", "N == 3", "N >= 6", "N % 2 == 1", "N == 2 or N == 9"]


_BODIES = {  # the root from p (rows x cols), in layout {root}
    "copy": "  ROOT r = f32[{rows},{cols}]{root} copy(p)",
    "reverse rows": "  ROOT r = f32[{rows},{cols}]{root} reverse(p), dimensions={{0}}",
    "reverse columns": "  ROOT r = f32[{rows},{cols}]{root} reverse(p), dimensions={{1}}",
    "transpose twice": "  t = f32[{cols},{rows}]{{1,0}} transpose(p), dimensions={{1,0}}\n"
    "  ROOT r = f32[{rows},{cols}]{root} transpose(t), dimensions={{1,0}}",
}


def _rewrite_module(parameter: str, body: str, rows: str, cols: int, root: str) -> str:
    text = _BODIES[body].format(rows=rows, cols=cols, root=root)
    return f"HloModule m\nENTRY e {{\n  p = {parameter} parameter(0)\n{text}\n}}\n"


@pytest.mark.slow
@settings(max_examples=50, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.sampled_from(_ROWS),
    cols=st.integers(1, 4),
    layouts=st.tuples(*[st.sampled_from(_LAYOUTS)] * 3),
    bodies=st.tuples(*[st.sampled_from(sorted(_BODIES))] * 2),
    assume=st.sampled_from(_ASSUMPTIONS),
    mode=st.sampled_from(["physical", "logical"]),
)
def test_random_symbolic_rewrites_agree_with_the_executor(rows, cols, layouts, bodies, assume, mode) -> None:
    """Every verdict against running both modules at concrete sizes: a refusal only where
    no N in 0..40 is admitted; a refutation at admitted sizes where the executor sees a
    difference; a proof at every admitted N in 0..12 where the executor sees none."""
    shape = f"f32[{rows},{cols}]"
    p = shape + layouts[0]
    before = _rewrite_module(p, bodies[0], rows, cols, layouts[1])
    after = _rewrite_module(p, bodies[1], rows, cols, layouts[2])
    admitted = [n for n in range(0, 41) if _admitted(shape, assume, n)]
    try:
        result = verify_rewrite(before, after, assume=assume, mode=mode)
    except AssumptionsAdmitNoSizes:
        assert not admitted, (shape, assume, admitted[:3])
        return
    assert admitted, (shape, assume)
    if result.status == "refuted":
        n = result.counterexample["sizes"]["N"]
        assert n in admitted, (shape, assume, n)
        assert compare(before, after, mode=mode, sizes={"N": n}).same is False
    elif result.status == "proved":
        for n in [n for n in admitted if n <= 12]:
            assert compare(before, after, mode=mode, sizes={"N": n}).same is True, (shape, assume, n)
    else:
        pytest.fail(f"unknown on pure data movement: {result.reason}")


# -------------------------- physical mode: the same bytes, the elements placed elsewhere
# One reading, in the verifier and the executor alike: the root's layout is part of the
# result (as the parameters' layouts are part of the input), so a root element placed at
# other bits is a difference even where the two buffers hold the same bytes.
_NO_PADDING = ["{1,0}", "{0,1}", "{1,0:T(2,4)}", "{0,1:T(4,2)}", "{1,0:T(1,4)}", "{1,0:T(4,4)}"]


def _bit_of(root: str, element: tuple[int, ...]) -> int:
    """Where packing distinct ids into the layout puts ``element`` (``numpy_eval.pack``;
    the verifier's stage encoding is not read), in bits."""
    import numpy as np

    from layout_algebra.packing.numpy_eval import pack

    shape = as_shape(root)
    dims = tuple(int(d) for d in shape.dimensions)
    ids = np.arange(1, 1 + int(np.prod(dims)), dtype=np.uint32).reshape(dims)
    words = pack(ids.view(np.float32), shape, fill=0).view(np.uint32)
    return 32 * int(np.nonzero(words == ids[element])[0][0])


@pytest.mark.slow
@settings(max_examples=30, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(la=st.sampled_from(_NO_PADDING), lb=st.sampled_from(_NO_PADDING), symbolic=st.booleans())
def test_the_same_bytes_with_elements_placed_apart_is_a_difference(la, lb, symbolic) -> None:
    """``copy`` into one layout against a ``bitcast`` of that copy into another: bit for bit
    the same buffer. The old verifier answered ``unknown`` ("the values stored there agree")
    while the executor said different; now both say different exactly where the layouts
    place some element apart, and the same where they place every element alike."""
    dims = "4*N,8" if symbolic else "8,8"
    p = f"f32[{dims}]{{1,0}}"
    before = copy_module(p, f"f32[{dims}]{la}")
    after = (
        f"HloModule m\nENTRY e {{\n  p = {p} parameter(0)\n  c = f32[{dims}]{la} copy(p)\n"
        f"  ROOT r = f32[{dims}]{lb} bitcast(c)\n}}\n"
    )
    result = verify_rewrite(before, after)
    assert result.status in ("proved", "refuted"), result.reason
    sizes = result.counterexample["sizes"] if result.status == "refuted" else {"N": 2} if symbolic else {}
    concrete = {"N": sizes.get("N", 2)} if symbolic else {}
    assert compare(before, after, sizes=concrete or None).same is (result.status == "proved")
    if result.status == "refuted":
        cex = result.counterexample
        rows = 4 * concrete["N"] if symbolic else 8
        roots = [f"f32[{rows},8]{layout}" for layout in (la, lb)]
        element = tuple(cex["element"])
        bits = [_bit_of(root, element) for root in roots]
        assert bits[0] != bits[1], (roots, element)
        assert cex["placement"] == f"root element {element} is at bit {bits[0]} before, bit {bits[1]} after"
        assert cex["before"].startswith(f"bit {bits[0]}: ") and cex["after"].startswith(f"bit {bits[1]}: ")
