"""Refutations behind cut points: running the two *whole* modules of a pair.

Pass validation replaces each paired compute op (``dot``, ``reduce``...) by one fresh
parameter, so a difference the verifier finds *before* such an op reaches the root only
through the cut op: "the roots differ unless the outputs of dot coincide". Whether they do
depends on the real op. :func:`whole_module_difference` runs both modules, uncut, with the
NumPy executor (which computes ``dot``, ``reduce``, ``sort``... by XLA's semantics,
:mod:`~layout_algebra.hlo.execute_compute`) on the same random parameters: a root element that
differs is a refutation found by execution, with both values; agreement proves nothing.

XLA does not fix the order in which a ``dot``, a convolution or a float reduction adds up, so
a difference found with the executor's float64 accumulation is run once more with
accumulation in the narrow type (f32, in NumPy's order): it is kept only at an element where
no value of the earlier module equals any value of the later one (NaNs all alike). Two orders
are tried, not every one: the run is made only when the verifier has already found a real
difference of the exactly-defined ops before the cut op, and this check keeps the refutations
where that difference, not the summation order, changes the root.

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
from collections.abc import Mapping
from typing import Any

import numpy as np

from layout_algebra.hlo.ir import HloModule
from layout_algebra.model.shapes import ArrayShape, TupleShape

__all__ = [
    "MAX_ELEMENTS",
    "SEED",
    "TRIALS",
    "computed_elements",
    "whole_module_difference",
    "whole_module_text",
]

#: Random parameter sets tried on the whole modules (each runs both modules once).
TRIALS = 2
#: The seed of ``numpy.random.default_rng`` the parameters are drawn from (``random_array``).
SEED = 0
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


def _leaves(value: Any) -> list[Any]:
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, tuple) else [value]


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per element: the same bits, or both NaN."""
    bx = np.ascontiguousarray(x).reshape(-1).view(np.uint8).reshape(*x.shape, x.dtype.itemsize)
    by = np.ascontiguousarray(y).reshape(-1).view(np.uint8).reshape(*y.shape, y.dtype.itemsize)
    same: np.ndarray = np.all(bx == by, axis=-1)
    if x.dtype.kind in "fcV" and x.dtype != np.bool_:
        with np.errstate(all="ignore"):
            same |= np.isnan(x.astype(np.float64)) & np.isnan(y.astype(np.float64))
    return same


def _show(values: list[Any]) -> str:
    shown = list(dict.fromkeys(repr(v.item()) if hasattr(v, "item") else repr(v) for v in values))
    return shown[0] if len(shown) == 1 else " or ".join(shown)


def whole_module_difference(
    before: HloModule | str, after: HloModule | str, mode: str, sizes: Mapping[str, int] | None = None
) -> dict[str, Any] | str | None:
    """Run both whole modules on the same random parameters, accumulating floats both ways.

    Returns the counterexample when a root element differs whatever the accumulation order
    (``element``, ``output``: the tuple leaf, ``before`` and ``after``: the values, ``execution``,
    ``seed`` and ``trial``: the parameters are :func:`random_array` draws of
    ``numpy.random.default_rng(seed)``, the ``trial``-th set), ``None`` when every trial agrees,
    or a string saying why there is no answer (an op the executor does not run, a difference
    only where the order decides). ``mode`` is the pair's: its roots are compared as logical
    arrays (a physical pair has one entry computation layout, so the same root array is the
    same root buffer)."""
    from layout_algebra.hlo.execute import array_shape_at, as_module, inferred_sizes, run
    from layout_algebra.hlo.execute_compare import random_array
    from layout_algebra.hlo.execute_compute import accumulating
    from layout_algebra.hlo.execute_ops import ExecutionError

    def shape_of(shape: Any) -> Any:
        if isinstance(shape, TupleShape):
            return TupleShape(tuple(shape_of(s) for s in shape.elements))
        return array_shape_at(shape, values, "a parameter")

    def draw(shape: Any, rng: np.random.Generator) -> Any:
        if isinstance(shape, TupleShape):
            return tuple(draw(s, rng) for s in shape.elements)
        return random_array(shape, rng)

    order_only = ""
    try:
        a, b = as_module(before), as_module(after)
    except ValueError as err:
        return f"the executor cannot read the whole modules: {err}"
    if sizes is None:  # (symbolic sizes are chosen small by the executor)
        largest = max(computed_elements(a), computed_elements(b))
        if largest > MAX_ELEMENTS:
            return (
                f"the whole modules are not run: they compute {largest:,} elements, more than the "
                f"{MAX_ELEMENTS:,} the executor is given for one pair"
            )
    try:
        values = dict(sizes or {})
        for m in (a, b):
            values = inferred_sizes(m, (), values)
        params = {
            i.parameter_number: shape_of(i.shape)
            for i in a.entry.instructions
            if i.opcode == "parameter" and i.parameter_number is not None
        }
        rng = np.random.default_rng(SEED)
        for trial in range(1, TRIALS + 1):
            args = [draw(params[k], rng) for k in sorted(params)]
            runs = []
            for kind in ("float64", "narrow"):
                with accumulating(kind):
                    runs.append((_leaves(run(a, args, sizes=values)), _leaves(run(b, args, sizes=values))))
                if kind == "float64" and all(
                    x.array.shape == y.array.shape
                    and x.array.dtype == y.array.dtype
                    and _same(x.array, y.array).all()
                    for x, y in zip(*runs[0], strict=True)
                ):
                    break
            if len(runs) == 1:
                continue
            for k in range(len(runs[0][0])):
                xs = [r[0][k] for r in runs]
                ys = [r[1][k] for r in runs]
                if xs[0].array.shape != ys[0].array.shape or xs[0].array.dtype != ys[0].array.dtype:
                    return f"the whole modules' roots differ in type or dimensions (output {k})"
                defined = np.logical_and.reduce([v.defined for v in (*xs, *ys)])
                apart = defined.copy()
                for x in xs:
                    for y in ys:
                        apart &= ~_same(x.array, y.array)
                if apart.any():
                    index = tuple(int(i) for i in np.argwhere(apart)[0])
                    shown_a, shown_b = (
                        _show([x.array[index] for x in xs]),
                        _show([y.array[index] for y in ys]),
                    )
                    return {
                        "element": index,
                        "output": (k,) if len(runs[0][0]) > 1 else (),
                        "before": shown_a,
                        "after": shown_b,
                        "execution": f"whole modules run by the executor (trial {trial}): root element {index}"
                        f"{f' of output {k}' if len(runs[0][0]) > 1 else ''}: before {shown_a}, after {shown_b}, "
                        "with floats accumulated in float64 and in f32",
                        "sizes": values,
                        "seed": SEED,
                        "trial": trial,
                    }
                differs = np.argwhere(defined & ~_same(xs[0].array, ys[0].array))
                if differs.size and not order_only:
                    order_only = f"root element {tuple(int(i) for i in differs[0])} (output {k})"
    except (ExecutionError, ValueError, NotImplementedError, MemoryError) as err:
        return f"the executor cannot run the whole modules: {err}"
    if order_only:
        return (
            f"running both whole modules shows differences only where the accumulation order of a dot, "
            f"convolution or reduction decides, e.g. at {order_only}"
        )
    return None


def whole_module_text(outcome: dict[str, Any] | str | None) -> str:
    """What running the whole modules showed, for an ``unknown`` reason."""
    if outcome is None:
        return f"running both whole modules with the real ops on {TRIALS} random inputs shows no difference"
    if isinstance(outcome, str):
        return outcome
    return f"running both whole modules shows a difference: {outcome['execution']}"
