"""Your own maps (``prove.function_map``) over symbolic sizes: a counterexample is re-checked.

A function map cannot be rebuilt at concrete sizes the way a layout's stage pipeline can, so
the solver's model used to be thrown away ("did not survive concrete re-evaluation (an
encoding problem)") and every symbolic question about such a map that was false came back
``unknown``. The model is now re-checked by running the function with the sizes as SymPy
symbols and giving them the model's values, exactly; a refutation is reported only when that
concrete evaluation shows it. The oracle here is independent: plain Python formulas for the
functions and packing distinct ids with ``numpy_eval.pack`` for the layouts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layout_algebra import prove
from layout_algebra.model.symbols import dim_symbol
from layout_algebra.model.syntax import as_shape
from layout_algebra.packing.numpy_eval import pack

N, M = dim_symbol("N"), dim_symbol("M")

#: Functions of (i, j) on an N x M box, as (name, map for the prover, plain Python at sizes).
FUNCTIONS = {
    "row-major": (lambda i, ar: i[0] * ar.lift(M) + i[1], lambda i, j, n, m: i * m + j),
    "column-major": (lambda i, ar: i[1] * ar.lift(N) + i[0], lambda i, j, n, m: j * n + i),
    "row stride 4": (lambda i, ar: i[0] * 4 + i[1], lambda i, j, n, m: 4 * i + j),
    "rows of 2 columns": (
        lambda i, ar: ar.floordiv(i[1], 2) * 2 * ar.lift(N) + i[0] * 2 + ar.mod(i[1], 2),
        lambda i, j, n, m: (j // 2) * 2 * n + i * 2 + j % 2,
    ),
}
LAYOUTS = ["{1,0}", "{0,1}", "{0,1:T(1,2)}", "{1,0:T(2,2)}"]


def layout_positions(layout: str, n: int, m: int) -> np.ndarray:
    """Element position of every (i, j) of ``f32[n,m]`` with ``layout``: pack distinct ids
    and find each in the buffer (no stage pipeline, no prover code)."""
    shape = as_shape(f"f32[{n},{m}]{layout}")
    ids = np.arange(1, 1 + n * m, dtype=np.uint32).reshape(n, m)
    words = pack(ids.view(np.float32), shape, fill=0).view(np.uint32)
    where = np.zeros(n * m, dtype=np.int64)
    filled = np.nonzero(words)[0]
    where[words[filled].astype(np.int64) - 1] = filled
    return where.reshape(n, m)


def test_regression_a_function_map_counterexample_is_rechecked_not_dropped() -> None:
    """Old: ``unknown`` ("the solver's model did not survive concrete re-evaluation (an
    encoding problem)") for a row-major function against a column-major layout."""
    f = prove.function_map("f32[N,M]", FUNCTIONS["row-major"][0], name="row-major")
    r = prove.equivalent(f, "f32[N,M]{0,1}")
    assert r.status == "refuted", r.reason
    cex = r.counterexample
    n, m = cex["sizes"]["N"], cex["sizes"]["M"]
    i, j = cex["element"]
    assert cex["position"] == i * m + j == FUNCTIONS["row-major"][1](i, j, n, m)
    assert cex["other_position"] == layout_positions("{0,1}", n, m)[i, j] != cex["position"]
    assert prove.equivalent(f, "f32[N,M]{1,0}").status == "proved"


def test_injectivity_and_bounds_of_a_function_map_are_refuted_with_checked_sizes() -> None:
    f = prove.function_map("f32[N,M]", FUNCTIONS["row stride 4"][0], name="row stride 4")
    r = prove.injective(f)
    assert r.status == "refuted", r.reason  # old: unknown (an encoding problem)
    cex = r.counterexample
    a, b = cex["element"], cex["other_element"]
    assert a != b and 4 * a[0] + a[1] == 4 * b[0] + b[1] == cex["position"]
    assert all(x < cex["sizes"]["N"] for x in (a[0], b[0])) and all(
        y < cex["sizes"]["M"] for y in (a[1], b[1])
    )
    assert prove.injective(f, assume="M <= 4").status == "proved"


def test_a_function_that_cannot_be_evaluated_stays_unknown() -> None:
    """A map SymPy cannot evaluate to an integer at the model's sizes is not refuted."""
    from layout_algebra.prove.core import _position_at

    half = prove.function_map("f32[N]", lambda i, ar: i[0] * ar.lift(N) / 2, name="half")
    assert _position_at(half, {N: 3}, (1,)) is None  # 3/2: not a position
    assert _position_at(half, {N: 4}, (1,)) == 2


@pytest.mark.slow
@settings(max_examples=30, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(FUNCTIONS)), layout=st.sampled_from(LAYOUTS))
def test_function_map_equivalence_agrees_with_brute_force(name, layout) -> None:
    """Refuted: the element's positions differ at the sizes given, by plain evaluation.
    Proved: the positions agree at every size 1..6 x 1..6. Never unknown here."""
    prover_map, plain = FUNCTIONS[name]
    r = prove.equivalent(prove.function_map("f32[N,M]", prover_map, name=name), f"f32[N,M]{layout}")
    if r.status == "refuted":
        n, m = r.counterexample["sizes"]["N"], r.counterexample["sizes"]["M"]
        i, j = r.counterexample["element"]
        assert 0 <= i < n and 0 <= j < m
        assert plain(i, j, n, m) == r.counterexample["position"]
        assert layout_positions(layout, n, m)[i, j] == r.counterexample["other_position"]
        assert r.counterexample["position"] != r.counterexample["other_position"]
    else:
        assert r.status == "proved", r.reason
        for n in range(1, 7):
            for m in range(1, 7):
                positions = layout_positions(layout, n, m)
                assert all(plain(i, j, n, m) == positions[i, j] for i in range(n) for j in range(m))
