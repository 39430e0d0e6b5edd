"""Build, simplify, print, read back and certify one closed form: :func:`codegen`.

The steps, for ``generate_code(shape, lang, direction, unit)``:

1. **build**: run the layout's stages on expression trees (``TreeArithmetic``): the
   forward map from the index variables ``i0, i1, ...``; the inverse and the padding
   predicate from the offset variable ``p``;
2. **simplify** with the ranges ``0 <= i_k < d_k`` / ``0 <= p < size``
   (:mod:`~layout_algebra.codegen.simplify`), then factor common strides;
3. **print** each expression and wrap them in a complete function (or map);
4. **read back** the printed expressions into SymPy
   (:mod:`~layout_algebra.codegen.readback`) and **certify** them against the layout map
   (:func:`~layout_algebra.codegen.certification.certify`).

The four steps by hand, for the element at byte offset ``p`` of an s4 array (two
elements per byte, so the stages start from bit ``8p`` and divide by 4 bits):

>>> from layout_algebra.codegen.printers import printer
>>> m = layout_map("s4[64,256]{1,0:T(64,128)(8,1)E(4)}")
>>> (raw,) = build_expressions(m, "forward", "byte")
>>> ops(raw), printer("c").expr(raw)
(22, '(65536*(i0 / 64) + 32768*(i1 / 128) + 4096*((i0 % 64) / 8) + 32*((i1 % 128) / 1) + 4*((i0 % 64) % 8) + 4*((i1 % 128) % 1)) / 8')
>>> rules = []
>>> simple = factor_strides(simplify(raw, _bounds(m, "forward", "byte"), rules))
>>> ops(simple), printer("c").expr(simple)
(11, '4096*(i1 / 128) + 512*(i0 / 8) + 4*(i1 % 128) + (i0 / 2) % 4')
>>> sorted(set(rules))
['division_by_one', 'floordiv_of_mod', 'multiples_out_of_floordiv', 'quotient_fixed_by_range', 'remainder_below_divisor']
>>> text = printer("c").expr(simple)
>>> certify(m, "forward", "byte", read_back("c", text, rank=2)).status
'proved'

``i0 < 64`` makes ``i0 / 64`` zero and ``i0 % 64`` just ``i0``, and then ``(i0 / 8) % 8``
just ``i0 / 8``; the division by 8 bits per byte goes through the sum (its multiples of 8
come out), leaving ``4*(i0 % 8) / 8``, which is ``(i0 / 2) % 4``.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from layout_algebra.codegen.certification import DIRECTIONS, PROVER_TIMEOUT_MS, Certification, certify
from layout_algebra.codegen.expr import (
    OFFSET,
    TREE,
    Bool,
    Const,
    Expr,
    Ge,
    Or,
    Var,
    floordiv,
    index_vars,
    lift,
    ops,
    scale,
    variables,
)
from layout_algebra.codegen.printers import (
    JS_SAFE_LIMIT,
    LANGUAGES,
    largest_value,
    latex_name,
    negate_condition,
    printer,
)
from layout_algebra.codegen.readback import read_back
from layout_algebra.codegen.simplify import Bounds, factor_strides, simplify
from layout_algebra.meaning.layout_map import UNITS, LayoutMap, layout_map
from layout_algebra.model.shapes import Shape

__all__ = ["GeneratedCode", "build_expressions", "generate_code"]

_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "bool true false int64_t uint64_t index".split()
)

#: Words a JavaScript function or parameter may not be named (reserved words, and the globals
#: the generated code calls).
_JS_RESERVED = frozenset(
    "await break case catch class const continue debugger default delete do else enum export extends false "
    "finally for function if import in instanceof let new null return static super switch this throw true try "
    "typeof var void while with yield implements interface package private protected public arguments eval "
    "Math BigInt Number undefined NaN Infinity".split()
)

_DEFAULT_NAMES = {"forward": "{unit}_offset", "inverse": "logical_index", "padding": "is_padding"}


@dataclass(frozen=True)
class GeneratedCode:
    """Code for one closed form of one layout, with what it was made from and whether it is right.

    ``text``: the complete code (a C function, a Python/NumPy function, an MLIR map alias,
    a LaTeX equation). ``expressions``: the trees that were printed (one for forward and
    padding, one per dimension for the inverse); ``expression_texts``: each printed on its
    own; ``op_counts``: operations in each (see :func:`~layout_algebra.codegen.expr.ops`);
    ``unsimplified_op_counts``: the same for the stages' expressions before simplification;
    ``read_back``: the SymPy values of the printed text; ``certification``: the check of
    ``read_back`` against the layout map; ``rules``: the simplification rules used.
    """

    text: str
    lang: str
    direction: str
    unit: str
    name: str
    shape: str
    parameters: tuple[str, ...]
    expressions: tuple[Expr, ...]
    expression_texts: tuple[str, ...]
    op_counts: tuple[int, ...]
    unsimplified_op_counts: tuple[int, ...]
    read_back: Any
    certification: Certification
    rules: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        return self.text

    @property
    def op_count(self) -> int:
        """Operations in all emitted expressions together."""
        return sum(self.op_counts)

    @property
    def certified(self) -> bool:
        return self.certification.status == "proved"

    def summary(self) -> str:
        """One line: operations and certification, e.g. for a comment under the code."""
        counts = "+".join(map(str, self.op_counts)) if len(self.op_counts) > 1 else str(self.op_count)
        before = sum(self.unsimplified_op_counts)
        return f"{counts} operations ({before} before simplification); certification: {self.certification}"

    def comment(self) -> str:
        """``summary()`` as a comment in the code's own language."""
        lead = {"c": "//", "python": "#", "numpy": "#", "mlir": "//", "latex": "%", "js": "//"}[self.lang]
        return f"{lead} {self.summary()}"


# ------------------------------------------------------------------------------ building
def build_expressions(m: LayoutMap, direction: str, unit: str) -> tuple[Expr, ...]:
    """The stages' own closed form as trees, before simplification.

    >>> m = layout_map("f32[3,5]{1,0:T(2,2)}")
    >>> build_expressions(m, "forward", "element")
    (Sum(FloorDiv(i0, 2)*12 + FloorDiv(i1, 2)*4 + Mod(i0, 2)*2 + Mod(i1, 2)),)
    >>> build_expressions(layout_map("f32[8]{0:T(4)(2)}"), "inverse", "element")
    (Sum(FloorDiv(FloorDiv(p, 2), 2)*4 + Mod(FloorDiv(p, 2), 2)*2 + Mod(p, 2)),)
    """
    last = len(m.stages) - 1
    if direction == "forward":
        if unit == "element":
            return (lift(m.apply(index_vars(m.rank), TREE, through=last)[0]),)
        bits = lift(m.apply(index_vars(m.rank), TREE)[0])
        return (bits if unit == "bit" else floordiv(bits, 8),)
    if unit == "element":
        index, padding = m.unapply((OFFSET,), TREE, start=last)
    else:
        bit = OFFSET if unit == "bit" else scale(OFFSET, 8)
        index, padding = m.unapply((bit,), TREE)
    if direction == "padding":
        return (lift(padding),)
    return tuple(lift(v) for v in index)


def _bounds(m: LayoutMap, direction: str, unit: str) -> Bounds:
    if direction == "forward":
        names = [str(v) for v in index_vars(m.rank)]
        return Bounds(
            {
                n: (0, max(d - 1, 0) if isinstance(d, int) else None)
                for n, d in zip(names, m.shape.dimensions, strict=True)
            }
        )
    size = m.size_in(unit)
    return Bounds({OFFSET.name: (0, max(size - 1, 0) if isinstance(size, int) else None)})


# ------------------------------------------------------------------------------ checking input
def _check_arguments(lang: str, direction: str, unit: str) -> None:
    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r} is not one of {', '.join(LANGUAGES)}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is not one of {', '.join(UNITS)}")


def _check_names(m: LayoutMap, name: str, sizes: Sequence[str], lang: str = "c") -> None:
    reserved = {str(v) for v in index_vars(m.rank)} | {OFFSET.name, "np", "out", "index"}
    if lang == "js":
        for word in (name, *sizes):
            if word in _JS_RESERVED:
                raise ValueError(
                    f"{m.shape}: {word!r} is a reserved word or global in JavaScript; choose another name"
                )
    if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) or keyword.iskeyword(name) or name in _C_KEYWORDS:
        raise ValueError(f"function name {name!r} is not usable in C and Python: use letters, digits and '_'")
    for s in sizes:
        if s in reserved or s == name or keyword.iskeyword(s) or s in _C_KEYWORDS or re.fullmatch(r"i\d+", s):
            raise ValueError(
                f"{m.shape}: the dimension name {s!r} clashes with a name the generated code uses "
                f"(index variables i0, i1, ..., the offset p, the function name); rename it"
            )
        if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", s):
            raise ValueError(f"{m.shape}: the dimension name {s!r} is not an identifier in C and Python")


# ------------------------------------------------------------------------------ the entry point
def generate_code(
    shape: Shape | str,
    lang: str,
    direction: str = "forward",
    unit: str = "element",
    name: str | None = None,
    *,
    simplified: bool = True,
    check: bool = True,
    timeout_ms: int = PROVER_TIMEOUT_MS,
) -> GeneratedCode:
    """Closed-form index code for ``shape``'s layout in ``lang``, certified equal to the layout.

    ``lang``: ``"c"``, ``"python"``, ``"numpy"``, ``"mlir"``, ``"latex"`` or ``"js"``. ``direction``:
    ``"forward"`` (logical index → offset), ``"inverse"`` (offset → logical index; its
    value at a padding offset is meaningless) or ``"padding"`` (offset → is it padding).
    ``unit``: offsets in ``"element"`` slots, ``"byte"`` or ``"bit"``. Symbolic dimensions
    become parameters after the index (or offset) arguments. ``simplified=False`` prints
    the stages' expression as built; ``check=False`` skips certification; ``timeout_ms``
    bounds each prover query (only shapes too large to enumerate, or symbolic, need one).

    >>> print(generate_code("f32[3,5]{1,0:T(2,2)}", "python").text, end="")
    def element_offset(i0, i1):
        \"\"\"Element offset of f32[3,5]{1,0:T(2,2)} at logical index (i0, i1), for 0 <= i0 < 3, 0 <= i1 < 5.\"\"\"
        return 12*(i0 // 2) + 4*(i1 // 2) + 2*(i0 % 2) + i1 % 2
    """
    _check_arguments(lang, direction, unit)
    m = layout_map(shape)
    sizes = tuple(map(str, m.shape.size_symbols))
    name = name if name is not None else _DEFAULT_NAMES[direction].format(unit=unit)
    _check_names(m, name, sizes, lang)
    raw = build_expressions(m, direction, unit)
    rules: list[str] = []
    if simplified:
        bounds = _bounds(m, direction, unit)
        final = tuple(factor_strides(simplify(e, bounds, rules)) for e in raw)
    else:
        final = raw
    emitted = _emit(m, lang, direction, unit, name, sizes, final)
    readback = _read_back(m, lang, direction, sizes, emitted)
    if check:
        certification = certify(m, direction, unit, readback, timeout_ms=timeout_ms)
    else:
        certification = Certification("unknown", "none", "not checked (check=False)")
    return GeneratedCode(
        text=emitted.text,
        lang=lang,
        direction=direction,
        unit=unit,
        name=name,
        shape=str(m.shape),
        parameters=emitted.parameters,
        expressions=final,
        expression_texts=emitted.expressions,
        op_counts=tuple(ops(e) for e in final),
        unsimplified_op_counts=tuple(ops(e) for e in raw),
        read_back=readback,
        certification=certification,
        rules=tuple(rules),
    )


def _read_back(m: LayoutMap, lang: str, direction: str, sizes: Sequence[str], emitted: _Emitted) -> Any:
    offset = direction != "forward"
    if lang == "mlir":
        value = read_back("mlir", emitted.text, rank=m.rank, dims=sizes, offset=offset)
        if direction == "padding":
            return sympy.Not(value)
        if direction == "inverse":
            return value if isinstance(value, tuple) else (value,)
        return value
    parts = tuple(read_back(lang, t, rank=m.rank, dims=sizes) for t in emitted.expressions)
    return parts if direction == "inverse" else parts[0]


# ------------------------------------------------------------------------------ emitting
@dataclass(frozen=True)
class _Emitted:
    text: str
    expressions: tuple[str, ...]
    parameters: tuple[str, ...]


def _describe(m: LayoutMap, direction: str, unit: str, shape: str, inputs: Sequence[str], lang: str) -> str:
    if direction == "forward":
        ranges = ", ".join(f"0 <= {v} < {d}" for v, d in zip(inputs, m.shape.dimensions, strict=True))
        where = f" at logical index ({', '.join(inputs)})" if inputs else ""
        text = f"{unit.capitalize()} offset of {shape}{where}"
        return text + (f", for {ranges}" if ranges else "")
    size = m.size_in(unit)
    size_text = str(size).replace("**", "^")
    if direction == "inverse":
        return (
            f"Logical index of the element at {unit} offset p of {shape}, for 0 <= p < {size_text} "
            f"(meaningless where p is padding)"
        )
    if lang == "mlir":
        return (
            f"The {unit} offsets p of {shape} that hold an element, for 0 <= p < {size_text} "
            f"(the complement of the padding predicate: an integer set has no disjunction)"
        )
    return f"Whether {unit} offset p of {shape} is padding (holds no element), for 0 <= p < {size_text}"


def _emit(
    m: LayoutMap,
    lang: str,
    direction: str,
    unit: str,
    name: str,
    sizes: Sequence[str],
    exprs: Sequence[Expr],
) -> _Emitted:
    shape = str(m.shape)
    inputs = [str(v) for v in index_vars(m.rank)] if direction == "forward" else [OFFSET.name]
    params = (*inputs, *sizes)
    about = _describe(m, direction, unit, shape, inputs, lang)
    if lang == "mlir":
        return _mlir(m, direction, name, inputs, sizes, exprs, about)
    if lang == "js":
        return _js_function(m, direction, unit, name, params, exprs, about)
    p = printer(lang)
    texts = tuple(p.expr(e) for e in exprs)
    if lang == "c":
        return _Emitted(
            _c_function(m, direction, name, params, sizes, inputs, texts, exprs, about), texts, params
        )
    if lang == "python":
        return _Emitted(_python_function(m, direction, name, params, texts, about), texts, params)
    if lang == "numpy":
        return _Emitted(_numpy_function(m, direction, name, params, inputs, texts, about), texts, params)
    return _Emitted(_latex(m, direction, name, inputs, texts), texts, params)


def _comment_safe(text: str) -> str:
    return text.replace("*/", "* /")


def _c_function(
    m: LayoutMap,
    direction: str,
    name: str,
    params: Sequence[str],
    sizes: Sequence[str],
    inputs: Sequence[str],
    texts: Sequence[str],
    exprs: Sequence[Expr],
    about: str,
) -> str:
    used: set[str] = set()
    for e in exprs:
        used |= {v.name for v in variables(e)}
    rank = m.rank
    args = [f"uint64_t {q}" for q in params]
    if direction == "inverse":
        args.append(f"uint64_t index[{rank}]" if rank else "uint64_t *index")
    head = (
        "#include <stdbool.h>\n#include <stdint.h>\n" if direction == "padding" else "#include <stdint.h>\n"
    )
    result = {"forward": "uint64_t", "inverse": "void", "padding": "bool"}[direction]
    lines = [
        head,
        f"/* {_comment_safe(about)}.",
        " * Unsigned integer arithmetic only: every quantity is non-negative, so C's / and % are",
        " * floor division and modulo (and by powers of two, shifts and masks). */",
        f"{result} {name}({', '.join(args) or 'void'}) {{",
    ]
    lines += [f"    (void){q};" for q in params if q not in used]
    if direction == "inverse":
        if not rank:
            lines.append("    (void)index;")
        lines += [f"    index[{k}] = {t};" for k, t in enumerate(texts)]
    else:
        lines.append(f"    return {texts[0]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _js_arithmetic(m: LayoutMap, direction: str, unit: str, exprs: Sequence[Expr]) -> tuple[bool, str]:
    """``(bigint, why)``: BigInt when some value the code computes may reach 2^53."""
    if m.is_symbolic:
        return False, (
            "Number arithmetic: exact while every value computed stays below 2^53 (with these sizes "
            "unknown, that is for you to check; generated for concrete sizes, the code is checked and "
            "switches to BigInt when needed)"
        )
    bounds = _bounds(m, direction, unit)
    values = [largest_value(e, bounds) for e in exprs]
    largest = max((v for v in values if v is not None), default=0)
    if None not in values and largest < JS_SAFE_LIMIT:
        return False, (
            f"Number arithmetic, exact: every value computed is a non-negative integer of at most "
            f"{largest} (below 2^53), where Math.floor(a / b) is floor division and % the modulo"
        )
    return True, (
        f"BigInt arithmetic: values reach {largest}, past the 2^53 that Numbers hold exactly, so pass "
        f"BigInt arguments (5n) and get BigInts back; on these non-negative values / is floor division"
    )


def _js_function(
    m: LayoutMap,
    direction: str,
    unit: str,
    name: str,
    params: Sequence[str],
    exprs: Sequence[Expr],
    about: str,
) -> _Emitted:
    bigint, why = _js_arithmetic(m, direction, unit, exprs)
    p = printer("js", bigint=bigint)
    texts = tuple(p.expr(e) for e in exprs)
    body = texts[0] if direction != "inverse" else "[" + ", ".join(texts) + "]"
    lines = [
        "/**",
        f" * {_comment_safe(about)}.",
        f" * {_comment_safe(why)}.",
        " */",
        f"function {name}({', '.join(params)}) {{",
        f"    return {body};",
        "}",
    ]
    return _Emitted("\n".join(lines) + "\n", texts, tuple(params))


def _python_function(
    m: LayoutMap, direction: str, name: str, params: Sequence[str], texts: Sequence[str], about: str
) -> str:
    body = (
        texts[0]
        if direction != "inverse"
        else "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    )
    return f'def {name}({", ".join(params)}):\n    """{about}."""\n    return {body}\n'


def _numpy_function(
    m: LayoutMap,
    direction: str,
    name: str,
    params: Sequence[str],
    inputs: Sequence[str],
    texts: Sequence[str],
    about: str,
) -> str:
    lines = [
        "import numpy as np",
        "",
        "",
        f"def {name}({', '.join(params)}):",
        f'    """{about}.',
        "",
        f"    Vectorised: {', '.join(inputs)} may be integer arrays (broadcast together); "
        f"returns {'bool' if direction == 'padding' else 'int64'} arrays.",
        '    """',
    ]
    lines += [f"    {v} = np.asarray({v}, dtype=np.int64)" for v in inputs]
    shape = f"np.broadcast_shapes({', '.join(f'{v}.shape' for v in inputs)})" if inputs else "()"
    if direction == "inverse":
        lines.append(f"    index = np.empty(({m.rank}, *{shape}), dtype=np.int64)")
        lines += [f"    index[{k}] = {t}" for k, t in enumerate(texts)]
        lines.append("    return tuple(index)")
    else:
        dtype = "bool" if direction == "padding" else "np.int64"
        lines.append(f"    out = np.empty({shape}, dtype={dtype})")
        lines.append(f"    out[...] = {texts[0]}")
        lines.append("    return out")
    return "\n".join(lines) + "\n"


def _latex(m: LayoutMap, direction: str, name: str, inputs: Sequence[str], texts: Sequence[str]) -> str:
    fn = "\\operatorname{" + name.replace("_", "\\_") + "}"
    args = ", ".join(latex_name(v) for v in inputs)
    if direction == "forward":
        return f"{fn}({args}) = {texts[0]}"
    if direction == "padding":
        return f"{fn}({args}) \\iff {texts[0]}"
    return f"{fn}({args}) = \\left({', '.join(texts)}\\right)"


def _mlir(
    m: LayoutMap,
    direction: str,
    name: str,
    inputs: Sequence[str],
    sizes: Sequence[str],
    exprs: Sequence[Expr],
    about: str,
) -> _Emitted:
    names = {v: f"d{k}" for k, v in enumerate(inputs)}
    names.update({s: f"s{k}" for k, s in enumerate(sizes)})
    p = printer("mlir", names)
    dims = "(" + ", ".join(names[v] for v in inputs) + ")"
    symbols = "[" + ", ".join(f"s{k}" for k in range(len(sizes))) + "]" if sizes else ""
    legend = ", ".join(f"{names[v]} = {v}" for v in (*inputs, *sizes))
    if direction == "padding":
        constraints = tuple(p.expr(c) + " >= 0" for c in _element_constraints(exprs[0], inputs))
        body = f"affine_set<{dims}{symbols} : ({', '.join(constraints)})>"
        texts = constraints
    else:
        texts = tuple(p.expr(e) for e in exprs)
        body = f"affine_map<{dims}{symbols} -> ({', '.join(texts)})>"
    text = f"// {about}; {legend}\n#{name} = {body}\n"
    return _Emitted(text, texts, (*inputs, *sizes))


def _element_constraints(padding: Expr, inputs: Sequence[str]) -> tuple[Expr, ...]:
    """``not padding`` as a conjunction of ``expr >= 0`` (an MLIR integer set has no disjunction)."""
    if padding == Bool(False):
        return (Var(inputs[0]),)  # d0 >= 0: every offset holds an element
    if padding == Bool(True):
        return (Const(-1),)  # -1 >= 0: no offset does
    holes = padding.args if isinstance(padding, Or) else (padding,)
    if not all(isinstance(h, Ge) for h in holes):
        raise ValueError(f"cannot write the padding predicate {padding!r} as an MLIR integer set")
    return tuple(negate_condition(h) for h in holes)
