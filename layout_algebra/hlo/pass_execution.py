"""Refutations behind cut points: running the two *whole* modules of a pair.

Pass validation replaces each paired compute op (``dot``, ``reduce``...) by one fresh
parameter, so a difference the verifier finds *before* such an op reaches the root only
through the cut op: "the roots differ unless the outputs of dot coincide". Whether they do
depends on the real op. :func:`whole_module_difference` runs both modules, uncut, with the
NumPy executor (which computes ``dot``, ``reduce``, ``sort``... by XLA's semantics,
:mod:`~layout_algebra.hlo.execute_compute`) on the same random parameters: a root element that
differs is a refutation found by execution, with both values; agreement proves nothing.

>>> before = '''HloModule m
... ENTRY e {
...   x = f32[4,8]{1,0} parameter(0)
...   c = f32[] constant(3)
...   b = f32[4,8]{1,0} broadcast(c), dimensions={}
...   d = f32[4,8]{1,0} divide(x, b)
...   w = f32[8,2]{1,0} parameter(1)
...   ROOT r = f32[4,2]{1,0} dot(d, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
... }'''
>>> after = before.replace("constant(3)", "constant(0.333333343)").replace("divide(x, b)", "multiply(x, b)")
>>> cex = whole_module_difference(before, after, "logical")
>>> cex["element"] is not None, cex["before"] != cex["after"]
(True, True)
>>> whole_module_difference(before, before, "logical") is None
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from layout_algebra.hlo.ir import HloModule
from layout_algebra.model.shapes import ArrayShape, TupleShape

__all__ = ["MAX_ELEMENTS", "TRIALS", "computed_elements", "whole_module_difference", "whole_module_text"]

#: Random parameter sets tried on the whole modules (each runs both modules once).
TRIALS = 2

#: Whole modules that compute more elements than this (summed over every instruction, fused
#: ones included) are not run for a pair: a train step's ~37 million cost ~10 s per run.
MAX_ELEMENTS = 4_000_000


def computed_elements(module: HloModule) -> int:
    """How many elements ``module``'s instructions compute, summed (a dot's contraction counted once).

    >>> from layout_algebra.hlo.parser import parse_module
    >>> computed_elements(parse_module('''HloModule m
    ... ENTRY e {
    ...   x = f32[4,8]{1,0} parameter(0)
    ...   ROOT n = f32[4,8]{1,0} negate(x)
    ... }'''))
    64
    """
    total = 0
    for _, instruction in module.instructions():
        stack = [instruction.shape]
        while stack:
            shape = stack.pop()
            if isinstance(shape, TupleShape):
                stack.extend(shape.elements)
            elif isinstance(shape, ArrayShape) and all(isinstance(d, int) for d in shape.dimensions):
                total += math.prod(shape.dimensions)  # (symbolic sizes: chosen small when run)
    return total


def whole_module_difference(
    before: HloModule | str, after: HloModule | str, mode: str, sizes: Mapping[str, int] | None = None
) -> dict[str, Any] | str | None:
    """Run both whole modules on the same random parameters (``mode`` as for
    :func:`~layout_algebra.hlo.execute_compare.compare`).

    Returns the counterexample when a root element differs (``element``, ``before``,
    ``after``, ``execution``: the executor's report, ``seed`` and ``trial``: the parameters are
    ``random_array`` draws of ``numpy.random.default_rng(seed)``, the ``trial``-th set),
    ``None`` when every trial agrees, or a string saying why the modules could not be run."""
    from layout_algebra.hlo.execute_compare import compare
    from layout_algebra.hlo.parser import parse_module

    modules = [parse_module(m) if isinstance(m, str) else m for m in (before, after)]
    if sizes is None:  # symbolic sizes are chosen by the executor, small
        largest = max(computed_elements(m) for m in modules)
        if largest > MAX_ELEMENTS:
            return (
                f"the whole modules are not run: they compute {largest:,} elements, more than the "
                f"{MAX_ELEMENTS:,} the executor is given for one pair"
            )
    before, after = modules
    try:
        comparison = compare(
            before,
            after,
            mode="physical" if mode == "physical" else "logical",
            sizes=sizes,
            max_trials=TRIALS,
        )
    except (ValueError, NotImplementedError, MemoryError) as err:
        return f"the executor cannot run the whole modules: {err}"
    if comparison.same is None:
        return f"the executor cannot run the whole modules: {comparison.reason}"
    if comparison.same:
        return None
    detail = comparison.detail
    leaf = re.search(r" \(tuple element (\d+)\)$", detail)
    if leaf:
        detail = detail[: leaf.start()]
    values = re.match(r"root element \([^)]*\): before (.*), after (.*?)(?: \(stored bits.*)?$", detail)
    return {
        "element": None if comparison.element is None else tuple(comparison.element),
        "output": (int(leaf.group(1)),) if leaf else (),
        "before": values.group(1) if values else "",
        "after": values.group(2) if values else "",
        "execution": f"whole modules run by the executor: {comparison.detail}",
        "sizes": dict(comparison.sizes),
        "seed": 0,
        "trial": comparison.trials,
    }


def whole_module_text(outcome: dict[str, Any] | str | None) -> str:
    """What running the whole modules showed, for an ``unknown`` reason."""
    if outcome is None:
        return f"running both whole modules with the real ops on {TRIALS} random inputs shows no difference"
    if isinstance(outcome, str):
        return outcome
    return f"running both whole modules shows a difference: {outcome['execution']}"
