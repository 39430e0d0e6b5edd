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

The public names are functions and the classes of their results (``__all__``, which is what
``dir()`` shows); every result serializes with ``to_dict()``, and every error the package raises
on purpose derives from :class:`LayoutAlgebraError`:

>>> la.size_report("f32[3,5]{1,0:T(2,2)}").to_dict()["physical_bytes"]
96
>>> issubclass(la.ParseError, la.LayoutAlgebraError) and issubclass(la.ParseError, ValueError)
True

Everything else is imported by its path. The folders are the layers (docs/architecture.md):
``model`` (data and text), ``meaning`` (the stage pipeline and its first readers) and ``xla``
(XLA's own C++ helpers, quirks kept), ``prove``, ``packing`` and ``target``, ``decide`` and
``codegen``, ``hlo``, ``interop`` and ``teach``, and the command line ``cli`` on top. The
sub-packages the documentation reaches as attributes (``la.xla``, ``la.prove``, ``la.hlo``,
``la.interop``, ``la.conditions``, ``la.tpu``) load on first use.
"""

from importlib import import_module
from typing import TYPE_CHECKING

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
    validate,
)
from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.version import VERSION

#: Public names loaded on first use (module ``__getattr__``), so that ``import layout_algebra``
#: stays fast: SymPy, Z3, NumPy and matplotlib are imported only when something asks for them.
#: Functions, and the classes of the results they return.
_LAZY: dict[str, str] = {
    # questions and their answers
    "bitcast_is_valid": "layout_algebra.decide.bitcast",
    "reshape_is_bitcast": "layout_algebra.decide.bitcast",
    "transpose_is_bitcast": "layout_algebra.decide.bitcast",
    "BitcastVerdict": "layout_algebra.decide.bitcast",
    "suggest_bitcast_layout": "layout_algebra.decide.suggest",
    "Suggestion": "layout_algebra.decide.suggest",
    "condition_of": "layout_algebra.hlo.rewrite_conditions",
    "normal_form": "layout_algebra.decide.normal_form",
    "NormalForm": "layout_algebra.decide.normal_form",
    "Condition": "layout_algebra.decide.conditions",
    "ProofResult": "layout_algebra.prove.result",
    # what a layout means, and what it costs
    "LayoutMap": "layout_algebra.meaning.layout_map",
    "delinearize": "layout_algebra.meaning.layout_map",
    "layout_map": "layout_algebra.meaning.layout_map",
    "linear_index": "layout_algebra.meaning.layout_map",
    "SizeReport": "layout_algebra.meaning.sizes",
    "physical_size_in_bits": "layout_algebra.meaning.sizes",
    "physical_size_in_bytes": "layout_algebra.meaning.sizes",
    "size_report": "layout_algebra.meaning.sizes",
    "tiled_dimensions": "layout_algebra.meaning.sizes",
    # bytes, code, explanations and pictures
    "pack": "layout_algebra.packing.numpy_eval",
    "unpack": "layout_algebra.packing.numpy_eval",
    "generate_code": "layout_algebra.codegen.generate",
    "GeneratedCode": "layout_algebra.codegen.generate",
    "Certification": "layout_algebra.codegen.certification",
    "explain": "layout_algebra.teach.explain",
    "Explanation": "layout_algebra.teach.explain",
    "draw": "layout_algebra.teach.draw",
    # the results of HLO modules' audit, rewrite and pass validation, and execution
    "AuditReport": "layout_algebra.hlo.audit",
    "MovementVerdict": "layout_algebra.hlo.audit",
    "PassResult": "layout_algebra.hlo.passes",
    "ValidationReport": "layout_algebra.hlo.passes",
    "Comparison": "layout_algebra.hlo.execute_compare",
    # kernel writers' questions about a TPU layout
    "DimensionAccess": "layout_algebra.target.access",
    "VectorWidth": "layout_algebra.target.access",
    "VregPosition": "layout_algebra.target.access",
    "WordPosition": "layout_algebra.target.access",
}

#: Sub-packages and modules reached as attributes, for the documentation's ``la.xla.array_size``,
#: ``la.prove.injective``, ``la.tpu.default_layout``...: loaded on first use, and neither in
#: ``__all__`` nor in ``dir()`` (the public names are functions and result classes; every other
#: module is imported by its path, e.g. ``from layout_algebra.decide import views``).
_MODULES: dict[str, str] = {
    "conditions": "layout_algebra.decide.conditions",
    "hlo": "layout_algebra.hlo",
    "interop": "layout_algebra.interop",
    "prove": "layout_algebra.prove",
    "tpu": "layout_algebra.target.tpu",
    "xla": "layout_algebra.xla",
}


def __getattr__(name: str) -> object:
    """Load a lazily exported name (a function or class, or a sub-package) on first use."""
    if name in _MODULES:
        value: object = import_module(_MODULES[name])
    elif name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups find it without calling this function
    return value


def __dir__() -> list[str]:
    """The public names (:data:`__all__`) and the module's dunders, nothing else."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs, which do not run __getattr__
    from layout_algebra import hlo as hlo
    from layout_algebra import interop as interop
    from layout_algebra import prove as prove
    from layout_algebra import xla as xla
    from layout_algebra.codegen.certification import Certification
    from layout_algebra.codegen.generate import GeneratedCode, generate_code
    from layout_algebra.decide import conditions as conditions
    from layout_algebra.decide.bitcast import (
        BitcastVerdict,
        bitcast_is_valid,
        reshape_is_bitcast,
        transpose_is_bitcast,
    )
    from layout_algebra.decide.conditions import Condition
    from layout_algebra.decide.normal_form import NormalForm, normal_form
    from layout_algebra.decide.suggest import Suggestion, suggest_bitcast_layout
    from layout_algebra.hlo.audit import AuditReport, MovementVerdict
    from layout_algebra.hlo.execute_compare import Comparison
    from layout_algebra.hlo.passes import PassResult, ValidationReport
    from layout_algebra.hlo.rewrite_conditions import condition_of
    from layout_algebra.meaning.layout_map import LayoutMap, delinearize, layout_map, linear_index
    from layout_algebra.meaning.sizes import (
        SizeReport,
        physical_size_in_bits,
        physical_size_in_bytes,
        size_report,
        tiled_dimensions,
    )
    from layout_algebra.packing.numpy_eval import pack, unpack
    from layout_algebra.prove.result import ProofResult
    from layout_algebra.target import tpu as tpu
    from layout_algebra.target.access import DimensionAccess, VectorWidth, VregPosition, WordPosition
    from layout_algebra.teach.draw import draw
    from layout_algebra.teach.explain import Explanation, explain

__version__ = VERSION

__all__ = [
    "COMBINE_DIMENSION",
    "UNBOUNDED_SIZE",
    "ArrayShape",
    "AuditReport",
    "BitcastVerdict",
    "BufferShape",
    "Certification",
    "Comparison",
    "Condition",
    "DimensionAccess",
    "Explanation",
    "GeneratedCode",
    "InvalidArgumentError",
    "InvalidLayoutError",
    "Layout",
    "LayoutAlgebraError",
    "LayoutMap",
    "LayoutSemanticsError",
    "MovementVerdict",
    "NormalForm",
    "OpaqueShape",
    "ParseError",
    "PassResult",
    "PrimitiveType",
    "ProofResult",
    "Shape",
    "SizeReport",
    "SplitConfig",
    "Suggestion",
    "Tile",
    "TokenShape",
    "TupleShape",
    "ValidationReport",
    "VectorWidth",
    "VregPosition",
    "WordPosition",
    "as_shape",
    "bitcast_is_valid",
    "condition_of",
    "delinearize",
    "draw",
    "explain",
    "generate_code",
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
    "reshape_is_bitcast",
    "size_report",
    "suggest_bitcast_layout",
    "tiled_dimensions",
    "transpose_is_bitcast",
    "unpack",
    "validate",
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
