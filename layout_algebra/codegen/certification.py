"""Certification: is an emitted expression equal to the layout map? Proved, refuted, or unknown.

:func:`certify` is the one place that decides. It compares an expression (read back from
printed code, as SymPy) with the layout map of the same direction and unit:

* **concrete shape, at most** ``EXHAUSTIVE_LIMIT`` **points**: evaluate both on *every*
  logical index (forward) or offset (inverse, padding) with exact integer NumPy
  arithmetic. The reference side is the stage pipeline itself run on NumPy arrays,
  not a closed form. Agreement everywhere is a proof for that shape (method
  ``"exhaustive"``); the first disagreement is a counterexample.
* **otherwise** (large or symbolic shapes): :func:`layout_algebra.prove.expressions_equal`
  with the layout map's SymPy closed form, the index bounds, "not padding" as the domain
  of the inverse, and every size ``>= 1`` assumed (method ``"prover"``).
* if the prover cannot decide, the answer is ``"unknown"`` with its reason; for symbolic
  shapes the expression is then still checked exhaustively on a few small sizes, and a
  disagreement there is a real counterexample (``"refuted"``).

>>> import sympy
>>> from layout_algebra.meaning.layout_map import layout_map
>>> m = layout_map("f32[3,5]{1,0:T(2,2)}")
>>> i0, i1 = m.index_symbols
>>> good = 12 * sympy.floor(i0 / 2) + 4 * sympy.floor(i1 / 2) + 2 * sympy.Mod(i0, 2) + sympy.Mod(i1, 2)
>>> certify(m, "forward", "element", good)
Certification(proved: 'exhaustive')
>>> print(certify(m, "forward", "element", good))
proved (exhaustive): equal on all 15 logical indices
>>> wrong = good.subs(12, 10)
>>> r = certify(m, "forward", "element", wrong)
>>> r.status, r.counterexample
('refuted', {'i0': 2, 'i1': 0, 'emitted': 10, 'expected': 12})

The inverse is compared where the offset holds an element; the padding predicate on
every offset:

>>> p = sympy.Symbol("p", integer=True, nonnegative=True)
>>> certify(m, "padding", "element", sympy.false).counterexample
{'p': 9, 'emitted': False, 'expected': True}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sympy

from layout_algebra.meaning.layout_map import LayoutMap, layout_map
from layout_algebra.meaning.stages.pipeline import TILE
from layout_algebra.meaning.stages.stages import Combine, Linearize, PrependUnitDims, Split
from layout_algebra.meaning.stages.symbolic import OFFSET_SYMBOL, SYMPY_ARITHMETIC
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import Shape
from layout_algebra.model.symbols import as_sympy

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DIRECTIONS", "EXHAUSTIVE_LIMIT", "PROVER_TIMEOUT_MS", "Certification", "certify", "evaluate"]

#: Directions of a closed form: index → offset, offset → index, offset → is it padding.
DIRECTIONS = ("forward", "inverse", "padding")

#: Largest number of points checked one by one (a proof for that concrete shape).
EXHAUSTIVE_LIMIT = 1 << 20

#: Time the prover may take per query before the answer is "unknown".
PROVER_TIMEOUT_MS = 10_000

#: Sizes tried for symbolic dimensions when no proof is available (a check, not a proof).
SAMPLE_SIZES = (1, 2, 3, 7, 130)


@dataclass(frozen=True)
class Certification:
    """The answer for one emitted expression (or tuple of them).

    ``status``: ``"proved"``, ``"refuted"`` (with ``counterexample``: the input values,
    ``emitted`` and ``expected``) or ``"unknown"``. ``method``: ``"exhaustive"``,
    ``"prover"``, ``"samples"`` (symbolic, checked on sample sizes only) or ``"none"``.
    """

    status: str
    method: str
    detail: str
    counterexample: dict[str, Any] | None = None

    def __bool__(self) -> bool:
        return self.status == "proved"

    def __str__(self) -> str:
        text = f"{self.status} ({self.method}): {self.detail}"
        if self.counterexample:
            text += "; counterexample " + ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
        return text

    def __repr__(self) -> str:
        return f"Certification({self.status}: {self.method!r})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``status``, ``method``, ``detail`` and ``counterexample`` (``null`` or its values)."""
        from layout_algebra.prove.result import json_value  # here: importing prove loads Z3

        return {
            "status": self.status,
            "method": self.method,
            "detail": self.detail,
            "counterexample": None if self.counterexample is None else json_value(self.counterexample),
        }


# ------------------------------------------------------------------------ exact evaluation
def evaluate(expr: Any, env: dict[sympy.Symbol, Any]) -> Any:
    """The exact value of an integer SymPy expression on NumPy integer arrays (no floats).

    Rationals are carried as (numerator, denominator) pairs, so ``floor(p/49)`` is exact
    where ``numpy.floor(p/49)`` is not (``49 * (1/49) < 1`` in floating point).

    >>> import numpy as np
    >>> p = sympy.Symbol("p", integer=True, nonnegative=True)
    >>> evaluate(sympy.floor(p / 49) + sympy.Mod(p, 7), {p: np.arange(47, 52)})
    array([5, 6, 1, 2, 3])
    """
    import numpy as np  # here: code generation without certification needs no NumPy

    value = _ev(as_sympy(expr), env)
    if isinstance(value, tuple):
        num, den = value
        if not np.all(np.asarray(num) % den == 0):
            raise InvalidArgumentError(f"{expr} is not an integer")
        return np.asarray(num // den)
    return np.asarray(value)


def _ev(e: Any, env: dict[Any, Any]) -> Any:
    """A number as ``(num, den)`` with ``den > 0``; a condition as a bool array."""
    import numpy as np

    if e is sympy.true or e is sympy.false:
        return np.bool_(e is sympy.true)
    if e.is_Integer:
        return (int(e), 1)
    if e.is_Rational:
        return (int(e.p), int(e.q))
    if e.is_Symbol:
        if e not in env:
            raise InvalidArgumentError(f"no value for {e}")
        return (env[e], 1)
    if e.is_Add:
        num, den = 0, 1
        for a in e.args:
            n, d = _ev(a, env)
            if isinstance(den, int) and isinstance(d, int):
                common = math.lcm(den, d)
                num, den = num * (common // den) + n * (common // d), common
            else:
                num, den = num * d + n * den, den * d
        return (num, den)
    if e.is_Mul:
        num, den = 1, 1
        for a in e.args:
            n, d = _ev(a, env)
            num, den = num * n, den * d
        return (num, den)
    if e.is_Pow and e.exp.is_Integer:
        n, d = _ev(e.base, env)
        k = int(e.exp)
        if k < 0:
            if not np.all(np.asarray(n) > 0):
                raise InvalidArgumentError(f"{e}: negative power of a non-positive value")
            n, d, k = d, n, -k
        return (n**k, d**k)
    if isinstance(e, sympy.floor):
        n, d = _ev(e.args[0], env)
        return (n // d, 1)
    if isinstance(e, sympy.ceiling):
        n, d = _ev(e.args[0], env)
        return (-((-n) // d), 1)
    if isinstance(e, sympy.Mod):
        (an, ad), (bn, bd) = _ev(e.args[0], env), _ev(e.args[1], env)
        return ((an * bd) % (bn * ad), ad * bd)
    if isinstance(e, sympy.core.relational.Relational):
        (an, ad), (bn, bd) = _ev(e.lhs, env), _ev(e.rhs, env)
        diff = an * bd - bn * ad
        compare = {
            sympy.GreaterThan: np.greater_equal,
            sympy.StrictGreaterThan: np.greater,
            sympy.LessThan: np.less_equal,
            sympy.StrictLessThan: np.less,
            sympy.Equality: np.equal,
            sympy.Unequality: np.not_equal,
        }[type(e)]
        return compare(diff, 0)
    if isinstance(e, sympy.Or):
        return np.logical_or.reduce([_ev(a, env) for a in e.args])
    if isinstance(e, sympy.And):
        return np.logical_and.reduce([_ev(a, env) for a in e.args])
    if isinstance(e, sympy.Not):
        return np.logical_not(_ev(e.args[0], env))
    raise InvalidArgumentError(f"cannot evaluate {e} ({type(e).__name__})")


def _values(expr: Any, env: dict[Any, Any], shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    value = _ev(as_sympy(expr), env)
    if isinstance(value, tuple):
        num, den = value
        value = np.asarray(num) // den if not isinstance(den, int) or den != 1 else np.asarray(num)
    return np.broadcast_to(np.asarray(value), shape)


# ------------------------------------------------------------------------ the layout side
def _reference_forward(m: LayoutMap, index: tuple[np.ndarray, ...], unit: str) -> np.ndarray:
    import numpy as np

    position = np.asarray(m.apply(index, through=len(m.stages) - 1)[0])
    return np.asarray(m.offset_of_position(position, unit))


def _reference_inverse(m: LayoutMap, p: np.ndarray, unit: str) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    import numpy as np

    index, padding = m.unapply((m.position_of_offset(p, unit),), start=len(m.stages) - 1)
    shape = p.shape
    return tuple(np.broadcast_to(np.asarray(v), shape) for v in index), np.broadcast_to(
        np.asarray(padding), shape
    )


def _point(names: list[str], columns: list[np.ndarray], k: int) -> dict[str, Any]:
    return {n: int(c[k]) for n, c in zip(names, columns, strict=True)}


def _exhaustive(
    m: LayoutMap, direction: str, unit: str, emitted: Any, sizes: dict[Any, int] | None = None
) -> Certification:
    import numpy as np

    if direction == "forward":
        dims = tuple(int(d) for d in m.shape.dimensions)
        count = math.prod(dims, start=1)
        grid = np.indices(dims, dtype=np.int64).reshape(len(dims), -1) if dims else np.zeros((0, 1), np.int64)
        columns = [grid[k] for k in range(len(dims))]
        shape = (count,)
        env = {**(sizes or {}), **dict(zip(m.index_symbols, columns, strict=True))}
        expected = np.broadcast_to(_reference_forward(m, tuple(columns), unit), shape)
        got = _values(emitted, env, shape)
        bad = np.flatnonzero(got != expected)
        what = f"all {count} logical {'index' if count == 1 else 'indices'}"
        names = [str(s) for s in m.index_symbols]
        if bad.size:
            k = int(bad[0])
            return _refuted(
                {**_point(names, columns, k), "emitted": int(got[k]), "expected": int(expected[k])}
            )
        return Certification("proved", "exhaustive", f"equal on {what}")
    size = int(m.size_in(unit))
    p = np.arange(size, dtype=np.int64)
    env = {**(sizes or {}), OFFSET_SYMBOL: p}
    index, padding = _reference_inverse(m, p, unit)
    if direction == "padding":
        got = _values(emitted, env, p.shape).astype(bool)
        bad = np.flatnonzero(got != padding)
        if bad.size:
            k = int(bad[0])
            return _refuted({"p": k, "emitted": bool(got[k]), "expected": bool(padding[k])})
        return Certification("proved", "exhaustive", f"equal on all {size} {unit} offsets")
    parts = emitted if isinstance(emitted, tuple) else (emitted,)
    if len(parts) != len(index):
        return _refuted({"emitted_rank": len(parts), "expected_rank": len(index)})
    holds = ~padding
    values = [_values(e, env, p.shape) for e in parts]
    wrong = np.zeros(p.shape, dtype=bool)
    for g, want in zip(values, index, strict=True):
        wrong |= holds & (g != want)
    bad = np.flatnonzero(wrong)
    if bad.size:
        k = int(bad[0])
        return _refuted(
            {
                "p": k,
                "emitted": tuple(int(g[k]) for g in values),
                "expected": tuple(int(v[k]) for v in index),
            }
        )
    elements = int(holds.sum())
    return Certification(
        "proved", "exhaustive", f"equal on all {elements} {unit} offsets that hold an element"
    )


def _refuted(counterexample: dict[str, Any]) -> Certification:
    return Certification(
        "refuted", "exhaustive", "the emitted code and the layout map differ", counterexample
    )


def _points(m: LayoutMap, direction: str, unit: str) -> int:
    if direction == "forward":
        return math.prod((int(d) for d in m.shape.dimensions), start=1)
    return int(m.size_in(unit))


# ------------------------------------------------------------------------ the prover side
def _claim(m: LayoutMap, direction: str, unit: str) -> tuple[Any, dict[Any, Any], Any]:
    """``(reference, bounds, where)`` for :func:`layout_algebra.prove.expressions_equal`.

    The reference is the stages run on SymPy (the stages' SymPy arithmetic, whose ``Mod``
    avoids SymPy 1.14's bug) from the offset in ``unit`` (``ToBits`` included), so
    nested floors are merged as the stages go (``⌊⌊p/4⌋/128⌋ = ⌊p/512⌋``): substituting
    ``p -> ⌊8p/bits⌋`` into the element-offset closed form instead gives a formula the
    solver finds much harder.
    """
    last = len(m.stages) - 1
    if direction == "forward":
        bounds = dict(zip(m.index_symbols, m.shape.dimensions, strict=True))
        if unit == "element":
            return as_sympy(m.apply(m.index_symbols, SYMPY_ARITHMETIC, through=last)[0]), bounds, None
        bits = as_sympy(m.apply(m.index_symbols, SYMPY_ARITHMETIC)[0])
        return (bits if unit == "bit" else SYMPY_ARITHMETIC.floordiv(bits, 8)), bounds, None
    p = OFFSET_SYMBOL
    if unit == "element":
        index, padding = m.unapply((p,), SYMPY_ARITHMETIC, start=last)
    else:
        index, padding = m.unapply((p if unit == "bit" else 8 * p,), SYMPY_ARITHMETIC)
    bounds = {p: m.size_in(unit)}
    padding = as_sympy(padding)
    if direction == "padding":
        return padding, bounds, None
    return tuple(as_sympy(e) for e in index), bounds, sympy.Not(padding)


def _prove(m: LayoutMap, direction: str, unit: str, emitted: Any, timeout_ms: int) -> Certification:
    """Ask :func:`layout_algebra.prove.expressions_equal`; ``unknown`` (with why) if it cannot answer."""
    try:
        from layout_algebra.prove import expressions_equal
    except ImportError as err:
        return Certification("unknown", "none", f"no prover available ({err})")
    reference, bounds, where = _claim(m, direction, unit)
    assume = tuple(sympy.Ge(s, 1) for s in m.shape.size_symbols)
    if direction == "padding":
        # booleans as values: "0 == 1 wherever emitted and reference disagree" holds iff they never do
        a, b = as_sympy(emitted), as_sympy(reference)
        differ = sympy.Or(sympy.And(a, sympy.Not(b)), sympy.And(sympy.Not(a), b))
        lhs, rhs, where = sympy.Integer(0), sympy.Integer(1), differ
    else:
        lhs, rhs = emitted, reference
    radix: Any = None
    if m.is_symbolic:
        radix = _offset_radix(m, unit) if direction != "forward" else _index_radix(m)
    try:
        result = expressions_equal(
            lhs, rhs, bounds, where=where, assume=assume, radix=radix, timeout_ms=timeout_ms
        )
    except (ValueError, TypeError, NotImplementedError) as err:
        return Certification("unknown", "prover", f"the prover cannot encode this expression ({err})")
    counterexample = dict(result.counterexample) if result.counterexample else None
    if direction == "padding" and counterexample is not None:
        counterexample = {k: v for k, v in counterexample.items() if k not in ("lhs", "rhs")}
    detail = f"{result.encoding}, {result.seconds * 1000:.0f} ms"
    if result.reason:
        detail += f": {result.reason}"
    return Certification(result.status, "prover", detail, counterexample)


def _index_radix(m: LayoutMap) -> dict[sympy.Symbol, tuple[Any, ...]] | None:
    """Each logical index as (tile number, place in the first tile), where the tile cuts it.

    The first tile's sizes line up with the minor-most dimensions (``minor_to_major``);
    index ``i`` of a dim of size ``d`` cut by ``t`` is read as digits of the box
    ``(ceiling(d/t), t)``, so ``⌊i/t⌋`` and ``i mod t`` (and their refinements by factors
    of ``t``) are exact. Any box would be sound (the prover checks values past it);
    ``None`` when the first tile combines dims (``*``) or there is no tile.
    """
    tiles = [step for step in m.steps if step.role == TILE]
    if not tiles or any(isinstance(stage, Combine) for stage in tiles[0].stages):
        return None
    order = m.physical_order  # physical dim j holds logical dim order.permutation[j]
    prepended = sum(stage.count for stage in tiles[0].stages if isinstance(stage, PrependUnitDims))
    split = next(stage for stage in tiles[0].stages if isinstance(stage, Split))
    radix: dict[sympy.Symbol, tuple[Any, ...]] = {}
    for k, t in enumerate(split.tile):
        physical = split.start + k - prepended
        if t > 1 and physical >= 0:  # (a prepended unit dim is no logical dim)
            dim = order.permutation[physical]
            radix[m.index_symbols[dim]] = (sympy.ceiling(as_sympy(m.shape.dimensions[dim]) / t), t)
    return radix or None


def _offset_radix(m: LayoutMap, unit: str) -> tuple[Any, ...] | None:
    """Sizes whose row-major numbers are the offsets in ``unit`` below the tiled buffer's end.

    The box the layout linearizes (tile counts, then tile dims), refined by the unit:
    ``bits`` more digits per element in bits, ``bytes`` per element in bytes, or, for
    sub-byte elements in bytes, the shortest tail of the box that fills whole bytes
    merged into one size, divided by the elements per byte. The
    prover then quantifies an offset as its digits, so every division by a suffix
    product is exact (any sizes would be sound: offsets past their product are a
    second query). ``None`` when no such refinement exists.
    """
    box = next((tuple(s.domain) for s in reversed(m.stages) if isinstance(s, Linearize)), None)
    if box is None:
        return None
    bits = m.element_bits
    if unit == "element":
        return box
    if unit == "bit":
        return (*box, bits)
    if bits % 8 == 0:
        return (*box, bits // 8)
    per_byte = 8 // bits if 8 % bits == 0 else 0
    for k in range(1, len(box) + 1):  # the shortest tail of the box whose elements fill whole bytes
        tail = box[-k:]
        if not per_byte or not all(isinstance(d, int) for d in tail):
            return None
        if math.prod(tail) % per_byte == 0:
            return (*box[:-k], math.prod(tail) // per_byte)
    return None


def _samples(
    m: LayoutMap, direction: str, unit: str, emitted: Any, limit: int
) -> tuple[Certification | None, list[dict[str, int]]]:
    """Exhaustive checks of a symbolic shape's expression at a few sizes: a refutation or the sizes tried."""
    symbols = m.shape.size_symbols
    tried: list[dict[str, int]] = []
    assignments = [dict.fromkeys(symbols, v) for v in SAMPLE_SIZES]
    assignments.append({s: v for s, v in zip(symbols, (5, 3, 9, 2, 7, 4), strict=False)})
    for values in assignments:
        concrete = m.specialize({str(k): v for k, v in values.items()})
        if _points(concrete, direction, unit) > limit:
            continue
        # sizes go in as values, never by ``subs``, which would re-evaluate (and re-break) a Mod
        result = _exhaustive(concrete, direction, unit, emitted, sizes=values)
        named = {str(k): v for k, v in values.items()}
        if result.status == "refuted":
            return Certification(
                "refuted", "samples", f"differs at sizes {named}", {**named, **(result.counterexample or {})}
            ), tried
        tried.append(named)
    return None, tried


def certify(
    shape: Shape | str | LayoutMap,
    direction: str,
    unit: str,
    emitted: Any,
    *,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
    use_prover: bool = True,
    timeout_ms: int = PROVER_TIMEOUT_MS,
) -> Certification:
    """Whether ``emitted`` (SymPy; a tuple for the inverse) equals ``shape``'s map in ``direction`` and ``unit``.

    Symbols: the index ``i0, i1, ...`` (forward) or the offset ``p`` in ``unit``
    (inverse, padding), and the dimension symbols of a symbolic shape.
    """
    m = shape if isinstance(shape, LayoutMap) else layout_map(shape)
    if direction not in DIRECTIONS:
        raise InvalidArgumentError(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    if not m.is_symbolic and _points(m, direction, unit) <= exhaustive_limit:
        return _exhaustive(m, direction, unit, emitted)
    if use_prover:
        proved = _prove(m, direction, unit, emitted, timeout_ms)
        if proved.status != "unknown":
            return proved
        why = proved.detail
    else:
        why = "the prover was not asked"
    if not m.is_symbolic:
        count = _points(m, direction, unit)
        return Certification("unknown", "none", f"{count} points are too many to enumerate; {why}")
    refuted, tried = _samples(m, direction, unit, emitted, exhaustive_limit)
    if refuted is not None:
        return refuted
    sizes = "; ".join(", ".join(f"{k}={v}" for k, v in t.items()) for t in tried)
    return Certification("unknown", "samples", f"{why}; equal at every point for the sizes {sizes}")
