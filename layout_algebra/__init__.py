"""layout_algebra: XLA array layouts as mathematics you can compute with.

Parse a shape as XLA prints it, check it, and ask what it costs in memory:

>>> import layout_algebra as la
>>> s = la.parse_shape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
>>> str(s)
'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'
>>> la.physical_size_in_bytes(s)          # exact: every tile level, packing, L(n)
335544320
>>> la.physical_size_in_bytes("f32[3,5]{1,0:T(2,2)}")
96
>>> la.xla.byte_size_of("f32[3,5]{1,0:T(2,2)}")   # XLA's ShapeUtil::ByteSizeOf ignores tiles
60

What a layout means, as a map from logical index to memory and back:

>>> la.linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3))   # XLA's tiled-layout document: 17
17
>>> la.layout_map("f32[3,5]{1,0:T(2,2)}").inverse(17)
(2, 3)

The package is organised as the layouts are: ``model`` (data model and text syntax),
``stages`` (the small index maps every layout is built from), interpreters of the stages
(``layout_map`` for concrete values and SymPy closed forms; ``references`` computes the
same positions independently), ``sizes`` and ``explain``, XLA's own C++ helpers with their
quirks kept apart in ``xla``, and the command line ``cli`` on top.
"""

import importlib
from typing import TYPE_CHECKING

# first: the moment before any other module of the package is read (prove.lemma_cache)
import layout_algebra.model._loaded  # noqa: F401
from layout_algebra.model import (
    COMBINE_DIMENSION,
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    InvalidLayoutError,
    Layout,
    LayoutSemanticsError,
    OpaqueShape,
    ParseError,
    PrimitiveType,
    Shape,
    SplitConfig,
    Tile,
    TokenShape,
    TupleShape,
    as_shape,
    layout_problems,
    parse_layout,
    parse_shape,
    primitive_type,
    questions,
    validate,
)
from layout_algebra.model.version import VERSION

#: Public names loaded on first use (module ``__getattr__``), so that ``import layout_algebra``
#: stays fast: SymPy, Z3, NumPy and matplotlib are imported only when something asks for them.
_LAZY: dict[str, str] = {
    "hlo": "layout_algebra.hlo",
    "interop": "layout_algebra.interop",
    "prove": "layout_algebra.prove",
    "conditions": "layout_algebra.decide.conditions",
    "tpu": "layout_algebra.target.tpu",
    "xla": "layout_algebra.xla",
    "bitcast_is_valid": "layout_algebra.decide.bitcast",
    "reshape_is_bitcast": "layout_algebra.decide.bitcast",
    "suggest_bitcast_layout": "layout_algebra.decide.views",
    "transpose_is_bitcast": "layout_algebra.decide.bitcast",
    "generate_code": "layout_algebra.codegen.generate",
    "draw": "layout_algebra.teach.draw",
    "explain": "layout_algebra.teach.explain",
    "LayoutMap": "layout_algebra.meaning.layout_map",
    "delinearize": "layout_algebra.meaning.layout_map",
    "layout_map": "layout_algebra.meaning.layout_map",
    "linear_index": "layout_algebra.meaning.layout_map",
    "pack": "layout_algebra.pack.numpy_eval",
    "unpack": "layout_algebra.pack.numpy_eval",
    "SizeReport": "layout_algebra.meaning.sizes",
    "physical_size_in_bits": "layout_algebra.meaning.sizes",
    "physical_size_in_bytes": "layout_algebra.meaning.sizes",
    "size_report": "layout_algebra.meaning.sizes",
    "tiled_dimensions": "layout_algebra.meaning.sizes",
    "views": "layout_algebra.decide.views",
    "normal_form": "layout_algebra.decide.normal_form",
    "algebra": "layout_algebra.interop.cute.algebra",
    "access": "layout_algebra.target.access",
}


#: Sub-packages exported as themselves (every other lazy name is a function or class).
_SUBPACKAGES = frozenset(
    {"access", "algebra", "conditions", "hlo", "interop", "prove", "tpu", "views", "xla"}
)


def __getattr__(name: str) -> object:
    """Load a lazily exported name (a sub-package, or a name from its module) on first use."""
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if name in _SUBPACKAGES else getattr(module, name)
    globals()[name] = value  # later look-ups find it without calling this function
    return value


def _find_condition(question: questions.Question) -> object:
    """``result.condition`` of every decision (see ``model/questions.py``): the package
    installs this finder because only this layer may import both the decisions' condition
    search (``conditions``) and the rewrite claims (``hlo.rewrite_conditions``)."""
    from layout_algebra.decide import conditions

    if question.kind == "rewrite":
        from layout_algebra.hlo.rewrite_conditions import rewrite_claim

        return conditions.condition_of(rewrite_claim(*question.arguments, **dict(question.options)))
    return conditions.condition_of(conditions.claim_for(question))


questions.install_condition_finder(_find_condition)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs, which do not run __getattr__
    from layout_algebra import hlo, interop, prove, xla
    from layout_algebra.codegen.generate import generate_code
    from layout_algebra.decide import conditions, views
    from layout_algebra.decide.bitcast import (
        bitcast_is_valid,
        reshape_is_bitcast,
        transpose_is_bitcast,
    )
    from layout_algebra.decide.normal_form import normal_form
    from layout_algebra.decide.views import suggest_bitcast_layout
    from layout_algebra.meaning.layout_map import LayoutMap, delinearize, layout_map, linear_index
    from layout_algebra.meaning.sizes import (
        SizeReport,
        physical_size_in_bits,
        physical_size_in_bytes,
        size_report,
        tiled_dimensions,
    )
    from layout_algebra.pack.numpy_eval import pack, unpack
    from layout_algebra.target import tpu
    from layout_algebra.teach.draw import draw
    from layout_algebra.teach.explain import explain

__version__ = VERSION

__all__ = [
    "COMBINE_DIMENSION",
    "UNBOUNDED_SIZE",
    "ArrayShape",
    "BufferShape",
    "InvalidLayoutError",
    "Layout",
    "LayoutMap",
    "LayoutSemanticsError",
    "OpaqueShape",
    "ParseError",
    "PrimitiveType",
    "Shape",
    "SizeReport",
    "SplitConfig",
    "Tile",
    "TokenShape",
    "TupleShape",
    "access",
    "algebra",
    "as_shape",
    "bitcast_is_valid",
    "conditions",
    "delinearize",
    "draw",
    "explain",
    "generate_code",
    "hlo",
    "interop",
    "layout_map",
    "layout_problems",
    "linear_index",
    "normal_form",
    "pack",
    "parse_layout",
    "parse_shape",
    "physical_size_in_bits",
    "physical_size_in_bytes",
    "primitive_type",
    "prove",
    "reshape_is_bitcast",
    "size_report",
    "suggest_bitcast_layout",
    "tiled_dimensions",
    "tpu",
    "transpose_is_bitcast",
    "unpack",
    "validate",
    "views",
    "xla",
]


def _show_pictures_in_ipython() -> None:
    """In IPython (a Jupyter notebook), shapes and layout maps display as their pictures
    (``layout_algebra.teach.notebook``); elsewhere nothing is imported or registered."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is not None:
        from layout_algebra.teach.notebook import register

        register(shell)


_show_pictures_in_ipython()
