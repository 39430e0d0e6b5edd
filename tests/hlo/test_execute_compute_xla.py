"""The executor's compute ops against XLA:CPU itself: each case of tests/data/xla_compute/cases.json
(written by scripts/make_xla_compute_fixtures.py with jax on CPU) holds the HLO text JAX
lowered for one op with random dimension numbers, its inputs and XLA's outputs; the executor
runs the same text on the same inputs.

How values are compared (the README of tests/data/xla_compute says the same):

* ``exact``: bit for bit (integers, max/min, gathers, sorts, rounding, ...), a NaN equal to any NaN;
* ``sum``: accumulations (float dot, convolution, add-reductions, scatter-add): XLA sums in
  f32 in its own order, the executor in float64 rounded once, so they agree to within
  ``2**-17`` of the largest magnitude of the case's output (an f32 sum of a few dozen terms of
  this size rounds well inside that);
* ``ulps``: functions XLA approximates itself (``tan``, ``erf``, ``power``...): within 4 units in
  the last place of f32, a NaN equal to any NaN.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from layout_algebra.hlo.execute import run

CASES = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "xla_compute" / "cases.json").read_text()
)


def decode(entry: dict[str, Any]) -> np.ndarray:
    name = entry["dtype"]
    dtype = (
        np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) and name != "bool" else np.dtype(name)
    )
    return np.frombuffer(bytes.fromhex(entry["hex"]), dtype=dtype).reshape(entry["shape"]).copy()


def leaves(value: Any) -> list[Any]:
    return [leaf for v in value for leaf in leaves(v)] if isinstance(value, tuple) else [value]


def raw_bytes(a: np.ndarray) -> np.ndarray:
    """Each element's bytes, one row per element (an array of any rank, 0 included)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(*a.shape, a.dtype.itemsize)


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def agree(mine: np.ndarray, xla: np.ndarray, how: str) -> np.ndarray:
    """Per element: does the executor's value agree with XLA's, as ``how`` says?"""
    assert mine.dtype == xla.dtype and mine.shape == xla.shape
    if xla.dtype.kind not in "fV" or xla.dtype == np.bool_:
        return mine == xla
    m, x = mine.astype(np.float64), xla.astype(np.float64)
    both_nan = np.isnan(m) & np.isnan(x)
    if how == "exact":
        same_bits = raw_bytes(mine) == raw_bytes(xla)
        return both_nan | same_bits.all(axis=-1)
    if how == "ulps":
        return both_nan | (m == x) | (ulps_apart(mine, xla) <= 4)
    scale = np.nanmax(np.abs(np.where(np.isfinite(x), x, 0)), initial=1.0)
    return both_nan | (m == x) | (np.abs(m - x) <= scale * 2.0**-17)


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_executor_agrees_with_xla_cpu(case: dict[str, Any]) -> None:
    inputs = [decode(e) for e in case["inputs"]]
    expected = [decode(e) for e in case["outputs"]]
    out = leaves(run(case["hlo"], inputs))
    assert len(out) == len(expected)
    for k, (buffer, want) in enumerate(zip(out, expected, strict=True)):
        assert buffer.defined.all()
        ok = agree(buffer.array, want, case["compare"])
        bad = np.argwhere(~ok)
        assert not bad.size, (
            f"{case['name']} output {k} at {tuple(bad[0])}: executor {buffer.array[tuple(bad[0])]!r}, "
            f"XLA {want[tuple(bad[0])]!r}"
        )


def test_the_fixtures_cover_every_compute_op() -> None:
    ops = {c["op"] for c in CASES["cases"]}
    wanted = {"dot", "convolution", "reduce", "reduce-window", "select-and-scatter", "gather", "scatter", "sort",
              "round-nearest-even", "round-nearest-afz", "power", "atan2", "count-leading-zeros", "popcnt",
              "reduce-precision", "iota"}  # fmt: skip
    assert wanted <= ops
    assert all(f" {c['op']}(" in c["hlo"] for c in CASES["cases"] if c["op"] != "iota")
