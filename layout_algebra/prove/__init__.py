"""Proofs about layouts with Z3: injectivity, bounds, equivalence — for concrete and symbolic sizes.

Every answer is a :class:`ProofResult`: ``proved`` only when Z3 answered unsat on the
encoding it names, ``refuted`` only with a counterexample re-evaluated concretely,
``unknown`` otherwise (with the reason).

>>> from layout_algebra import prove
>>> prove.injective("f32[1280,16384]{1,0:T(8,128)}").status
'proved'
>>> prove.tiling_is_pad_reshape_transpose("f32[8,8]{1,0:T(2,4)(2,1,1,1)}").status
'proved'
>>> broken = prove.function_map("f32[3,5]", lambda i, ar: i[0] * 4 + i[1], name="row stride 4")
>>> r = prove.injective(broken)
>>> r.status
'refuted'
>>> a, b = r.counterexample["element"], r.counterexample["other_element"]
>>> a != b and broken.evaluate(a) == broken.evaluate(b)
True
"""

from importlib import import_module
from typing import TYPE_CHECKING

#: Each public name and the module defining it, imported on first use (module ``__getattr__``):
#: ``from layout_algebra.prove.result import ProofResult`` (what a decision that needs no solver
#: returns) then loads neither Z3 nor SymPy; ``prove.injective`` loads them when first asked.
_LAZY: dict[str, str] = {
    "AssumptionError": "layout_algebra.prove.assumptions",
    "parse_assumptions": "layout_algebra.prove.assumptions",
    "DEFAULT_TIMEOUT_MS": "layout_algebra.prove.core",
    "equivalent": "layout_algebra.prove.core",
    "general_stage_lemma": "layout_algebra.prove.core",
    "in_bounds": "layout_algebra.prove.core",
    "injective": "layout_algebra.prove.core",
    "mixed_radix_pair_lemma": "layout_algebra.prove.core",
    "tiling_is_pad_reshape_transpose": "layout_algebra.prove.core",
    "expressions_equal": "layout_algebra.prove.expressions",
    "holds": "layout_algebra.prove.expressions",
    "no_padding": "layout_algebra.prove.expressions",
    "IndexMap": "layout_algebra.prove.maps",
    "as_index_map": "layout_algebra.prove.maps",
    "formula_reference": "layout_algebra.prove.maps",
    "function_map": "layout_algebra.prove.maps",
    "layout_index_map": "layout_algebra.prove.maps",
    "pad_reshape_transpose_reference": "layout_algebra.prove.maps",
    "ProofResult": "layout_algebra.prove.result",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    else:  # a submodule, as ``prove.core`` read before anything imported it
        try:
            value = import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value  # later look-ups find it without calling this function
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs, which do not run __getattr__
    from layout_algebra.prove.assumptions import AssumptionError, parse_assumptions
    from layout_algebra.prove.core import (
        DEFAULT_TIMEOUT_MS,
        equivalent,
        general_stage_lemma,
        in_bounds,
        injective,
        mixed_radix_pair_lemma,
        tiling_is_pad_reshape_transpose,
    )
    from layout_algebra.prove.expressions import expressions_equal, holds, no_padding
    from layout_algebra.prove.maps import (
        IndexMap,
        as_index_map,
        formula_reference,
        function_map,
        layout_index_map,
        pad_reshape_transpose_reference,
    )
    from layout_algebra.prove.result import ProofResult

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "AssumptionError",
    "IndexMap",
    "ProofResult",
    "as_index_map",
    "equivalent",
    "expressions_equal",
    "formula_reference",
    "function_map",
    "general_stage_lemma",
    "holds",
    "in_bounds",
    "injective",
    "layout_index_map",
    "mixed_radix_pair_lemma",
    "no_padding",
    "pad_reshape_transpose_reference",
    "parse_assumptions",
    "tiling_is_pad_reshape_transpose",
]
