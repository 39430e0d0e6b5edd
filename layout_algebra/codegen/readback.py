"""Read printed code back into SymPy, so that certification checks the text, not our intentions.

Translation validation compares what was *printed* with the layout map. Python and NumPy
text is parsed by Python's own parser (``ast``: ``//`` is ``floor``, ``%`` is ``Mod``, ``|``
is ``Or``); C, MLIR and LaTeX by the small precedence-climbing parser below, which knows
each language's spelling of the same operations. C's ``/`` is read as floor division: every
C quantity the printer emits is non-negative, where truncation and floor agree.

Not ``sympy.parse_expr``: it evaluates ``%`` with SymPy's ``Mod``, which in SymPy 1.14 turns
``(2*(p % 5)) % 3`` into ``Mod(2*Mod(p, 5)**2, 3)`` (see
:func:`~layout_algebra.codegen.expr.safe_mod`); a correct line of code would then be
"refuted". Every ``Mod`` read back here is built by ``safe_mod``.

>>> from layout_algebra.model.symbols import dim_symbol
>>> read_back("c", "128*(i0 % 8) + i1 / 128", rank=2)
128*(Mod(i0, 8)) + floor(i1/128)
>>> read_back("python", "128*(i0 % 8) + i1 // 128", rank=2)
128*(Mod(i0, 8)) + floor(i1/128)
>>> read_back("python", "(2*(p % 5)) % 3").subs(OFFSET_SYMBOL, 2)
1
>>> read_back("mlir", "#m = affine_map<(d0)[s0] -> (d0 floordiv (s0 ceildiv 8), d0 mod 8)>", dims=("N",), offset=True)
(floor(p/ceiling(N/8)), Mod(p, 8))
>>> read_back("latex", "\\\\left\\\\lfloor \\\\frac{p}{8} \\\\right\\\\rfloor \\\\bmod 4", rank=0)
Mod(floor(p/8), 4)

JavaScript is read with its own semantics: on ``Number``, ``/`` is *real* division, so a
quotient must be the argument of ``Math.floor`` (a bare one would be a fraction, and is
refused rather than silently floored); on ``BigInt`` (every literal ends in ``n``), ``/``
truncates, which is floor division on the non-negative values the printer emits. Mixing
the two is a ``TypeError`` in JavaScript and an error here:

>>> read_back("js", "128*Math.floor(i0 / 8) + Math.floor((i1 + 127) / 128)", rank=2)
128*floor(i0/8) + floor(i1/128 + 127/128)
>>> read_back("js", "128n*(i0 / 8n)", rank=1)
128*floor(i0/8)
>>> read_back("js", "i0 / 8 + 1", rank=1)
Traceback (most recent call last):
    ...
layout_algebra.codegen.readback.ReadBackError: a JavaScript Number division outside Math.floor is a fraction: 'i0 / 8 + 1'

MLIR text is a whole map (or set); the other languages are read one expression at a time.
An MLIR ``affine_map`` over ``(d0, ...)`` reads ``d_k`` as the index ``i_k`` when it has
as many inputs as the rank and no offset is asked for; with ``offset=True`` (inverse and
padding) ``d0`` is the offset ``p``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import Any

import sympy

from layout_algebra.codegen.expr import safe_mod
from layout_algebra.meaning.layout_map import OFFSET_SYMBOL, index_symbols
from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.symbols import dim_symbol

__all__ = ["ReadBackError", "read_back"]


class ReadBackError(LayoutAlgebraError, ValueError):
    """Printed text that does not read back: a printer bug."""


def _names(rank: int, dims: Sequence[str]) -> dict[str, Any]:
    table: dict[str, Any] = {str(s): s for s in index_symbols(rank)}
    table[str(OFFSET_SYMBOL)] = OFFSET_SYMBOL
    for d in dims:
        table[d] = dim_symbol(d)
    return table


def read_back(lang: str, text: str, *, rank: int = 0, dims: Sequence[str] = (), offset: bool = False) -> Any:
    """The SymPy value of printed ``text`` in ``lang`` (a tuple for an MLIR map with several results)."""
    names = _names(rank, dims)
    if lang in ("python", "numpy"):
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as err:
            raise ReadBackError(f"cannot read back Python {text!r}: {err}") from None
        return _python(tree.body, names, text)
    if lang == "c":
        return _Parser(_tokens(text, _C_TOKENS), _C_BINARY, names).whole()
    if lang == "latex":
        return _Parser(_tokens(text, _LATEX_TOKENS), _LATEX_BINARY, names, primary=_latex_primary).whole()
    if lang == "mlir":
        return _read_mlir(text, rank, dims, offset)
    if lang == "js":
        return _read_js(text, names)
    raise InvalidArgumentError(f"no reader for language {lang!r}")


# --------------------------------------------------------------------------- Python
_PY_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: sympy.floor(a / b),
    ast.Mod: safe_mod,
    ast.BitOr: lambda a, b: sympy.Or(a, b),
}


def _python(node: ast.AST, names: dict[str, Any], text: str) -> Any:
    """SymPy value of a Python expression made of the operators the printers use."""
    if isinstance(node, ast.BinOp) and type(node.op) in _PY_BINARY:
        return _PY_BINARY[type(node.op)](_python(node.left, names, text), _python(node.right, names, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_python(node.operand, names, text)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.GtE):
        return sympy.Ge(_python(node.left, names, text), _python(node.comparators[0], names, text))
    if isinstance(node, ast.Tuple):
        return tuple(_python(e, names, text) for e in node.elts)
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return sympy.true if node.value else sympy.false
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return sympy.Integer(node.value)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    raise ReadBackError(f"cannot read back Python {text!r}: unexpected {ast.dump(node)}")


# --------------------------------------------------------------------------- tokens
_C_TOKENS = r"\d+|[A-Za-z_][A-Za-z_0-9]*|\|\||>=|[-+*/%()]"
_MLIR_TOKENS = r"\d+|[A-Za-z_][A-Za-z_0-9]*|>=|==|->|[-+*()\[\],:<>=#]"
_LATEX_TOKENS = (
    r"\\left\\lfloor|\\right\\rfloor|\\left\\lceil|\\right\\rceil|\\left\(|\\right\)"
    r"|\\mathit\{(?:[^{}])*\}|\\mathrm\{(?:true|false)\}|i_\{\d+\}|\\[A-Za-z]+|\d+|[A-Za-z]|[-+(){}]"
)


def _tokens(text: str, pattern: str) -> list[str]:
    out: list[str] = []
    pos = 0
    regex = re.compile(pattern)
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        m = regex.match(text, pos)
        if not m:
            raise ReadBackError(f"unexpected character {text[pos]!r} at {pos} in {text!r}")
        out.append(m.group())
        pos = m.end()
    return out


def _floor(a: Any, b: Any) -> Any:
    return sympy.floor(a / b)


def _ceiling(a: Any, b: Any) -> Any:
    return sympy.ceiling(a / b)


Binary = dict[str, tuple[int, Callable[[Any, Any], Any]]]

_C_BINARY: Binary = {
    "||": (1, lambda a, b: sympy.Or(a, b)),
    ">=": (2, lambda a, b: sympy.Ge(a, b)),
    "+": (3, lambda a, b: a + b),
    "-": (3, lambda a, b: a - b),
    "*": (4, lambda a, b: a * b),
    "/": (4, _floor),
    "%": (4, safe_mod),
}
_MLIR_BINARY: Binary = {
    "+": (3, lambda a, b: a + b),
    "-": (3, lambda a, b: a - b),
    "*": (4, lambda a, b: a * b),
    "floordiv": (4, _floor),
    "ceildiv": (4, _ceiling),
    "mod": (4, safe_mod),
}
_LATEX_BINARY: Binary = {
    "\\lor": (1, lambda a, b: sympy.Or(a, b)),
    "\\geq": (2, lambda a, b: sympy.Ge(a, b)),
    "+": (3, lambda a, b: a + b),
    "-": (3, lambda a, b: a - b),
    "\\cdot": (4, lambda a, b: a * b),
    "\\bmod": (4, safe_mod),
}


class _Parser:
    """Precedence climbing over a token list; all binary operators associate to the left."""

    def __init__(self, tokens: list[str], binary: Binary, names: dict[str, Any], primary=None) -> None:
        self.tokens = tokens
        self.pos = 0
        self.binary = binary
        self.names = names
        self.primary_hook = primary

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ReadBackError(
                f"expected {expected or 'more input'} at token {self.pos} of {' '.join(self.tokens)!r}"
            )
        self.pos += 1
        return token

    def whole(self) -> Any:
        value = self.expression()
        if self.peek() is not None:
            raise ReadBackError(f"unexpected {self.peek()!r} in {' '.join(self.tokens)!r}")
        return value

    def expression(self, min_prec: int = 1) -> Any:
        left = self.unary()
        while (token := self.peek()) in self.binary and self.binary[token][0] >= min_prec:
            prec, make = self.binary[self.take()]
            right = self.expression(prec + 1)
            left = make(left, right)
        return left

    def unary(self) -> Any:
        if self.peek() == "-":
            self.take()
            return -self.unary()
        return self.primary()

    def primary(self) -> Any:
        if self.primary_hook is not None:
            value = self.primary_hook(self)
            if value is not None:
                return value
        token = self.take()
        if token.isdigit():
            return sympy.Integer(int(token))
        if token == "(":
            value = self.expression()
            self.take(")")
            return value
        if token in ("true", "True"):
            return sympy.true
        if token in ("false", "False"):
            return sympy.false
        if token in self.names:
            return self.names[token]
        raise ReadBackError(f"unknown name {token!r} in {' '.join(self.tokens)!r}")


def _latex_primary(p: _Parser) -> Any:
    token = p.peek()
    pairs = {
        "\\left\\lfloor": ("\\right\\rfloor", sympy.floor),
        "\\left\\lceil": ("\\right\\rceil", sympy.ceiling),
    }
    if token in pairs:
        closing, make = pairs[p.take()]
        value = p.expression()
        p.take(closing)
        return make(value)
    if token == "\\left(":
        p.take()
        value = p.expression()
        p.take("\\right)")
        return value
    if token == "\\frac":
        p.take()
        p.take("{")
        num = p.expression()
        p.take("}")
        p.take("{")
        den = p.expression()
        p.take("}")
        return num / den
    if token is not None:
        m = re.fullmatch(r"i_\{(\d+)\}", token)
        if m:
            p.take()
            return p.names[f"i{m[1]}"]
        m = re.fullmatch(r"\\mathit\{(.*)\}", token)
        if m:
            p.take()
            return p.names[m[1].replace("\\_", "_")]
        if token in ("\\mathrm{true}", "\\mathrm{false}"):
            p.take()
            return sympy.true if token.endswith("true}") else sympy.false
    return None


# --------------------------------------------------------------------------- JavaScript
_JS_TOKENS = r"Math\.floor|\d+n?|[A-Za-z_][A-Za-z_0-9]*|\|\||>=|[-+*/%()]"


class _Fraction:
    """A JavaScript ``Number`` quotient ``a / b``: real division, only usable inside ``Math.floor``."""

    def __init__(self, num: Any, den: Any) -> None:
        self.num, self.den = num, den

    def __neg__(self) -> Any:
        raise ReadBackError("a JavaScript Number division outside Math.floor is a fraction")


def _read_js(text: str, names: dict[str, Any]) -> Any:
    tokens = _tokens(text, _JS_TOKENS)
    literals = [t for t in tokens if t[0].isdigit()]
    bigint = any(t.endswith("n") for t in literals)
    if bigint and not all(t.endswith("n") for t in literals):
        raise ReadBackError(f"JavaScript mixes BigInt and Number literals (a TypeError): {text!r}")

    def integer(value: Any) -> Any:
        if isinstance(value, _Fraction):
            raise ReadBackError(f"a JavaScript Number division outside Math.floor is a fraction: {text!r}")
        return value

    def lift(make: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        return lambda a, b: make(integer(a), integer(b))

    binary: Binary = {op: (prec, lift(make)) for op, (prec, make) in _C_BINARY.items()}
    if not bigint:
        binary["/"] = (4, lambda a, b: _Fraction(integer(a), integer(b)))

    def primary(p: _Parser) -> Any:
        if p.peek() == "Math.floor":
            if bigint:
                raise ReadBackError(f"Math.floor of a BigInt is a TypeError in JavaScript: {text!r}")
            p.take()
            p.take("(")
            value = p.expression()
            p.take(")")
            if isinstance(value, _Fraction):
                return sympy.floor(value.num / value.den)
            return sympy.floor(value)
        token = p.peek()
        if token is not None and token[0].isdigit():
            p.take()
            return sympy.Integer(int(token.rstrip("n")))
        return None

    return integer(_Parser(tokens, binary, names, primary=primary).whole())


# --------------------------------------------------------------------------- MLIR
_MLIR_HEADER = re.compile(
    r"^\s*(?:#[\w$.-]+\s*=\s*)?(?P<kind>affine_map|affine_set)<\((?P<dims>[^)]*)\)"
    r"(?:\[(?P<symbols>[^\]]*)\])?\s*(?P<arrow>->|:)\s*\((?P<body>.*)\)>\s*$",
    re.DOTALL,
)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _read_mlir(text: str, rank: int, dims: Sequence[str], offset: bool) -> Any:
    lines = [line for line in text.splitlines() if line.strip() and not line.strip().startswith("//")]
    m = _MLIR_HEADER.match(" ".join(lines))
    if not m:
        raise ReadBackError(f"not an affine_map or affine_set: {text!r}")
    dim_ids = [d.strip() for d in m["dims"].split(",") if d.strip()]
    symbol_ids = [s.strip() for s in (m["symbols"] or "").split(",") if s.strip()]
    if len(symbol_ids) != len(dims):
        raise ReadBackError(f"{len(symbol_ids)} symbols for {len(dims)} symbolic dimensions in {text!r}")
    names: dict[str, Any] = {}
    if offset:
        if dim_ids != ["d0"]:
            raise ReadBackError(f"an offset map has one input d0, not {dim_ids}")
        names["d0"] = OFFSET_SYMBOL
    else:
        if dim_ids != [f"d{k}" for k in range(rank)]:
            raise ReadBackError(f"expected inputs d0..d{rank - 1}, found {dim_ids}")
        names.update({f"d{k}": s for k, s in enumerate(index_symbols(rank))})
    for k, d in enumerate(dims):
        if symbol_ids[k] != f"s{k}":
            raise ReadBackError(f"expected symbol s{k}, found {symbol_ids[k]}")
        names[f"s{k}"] = dim_symbol(d)
    pieces = _split_top_level(m["body"])
    if m["kind"] == "affine_set":
        if m["arrow"] != ":":
            raise ReadBackError(f"an affine_set needs ':' before its constraints: {text!r}")
        constraints = []
        for piece in pieces:
            lhs, sep, rhs = piece.rpartition(">=")
            if not sep or rhs.strip() != "0":
                raise ReadBackError(f"an affine_set constraint must read 'expr >= 0', not {piece!r}")
            constraints.append(sympy.Ge(_read_mlir_expr(lhs, names), 0))
        return sympy.And(*constraints)
    parts = [_read_mlir_expr(piece, names) for piece in pieces]
    if m["arrow"] != "->":
        raise ReadBackError(f"an affine_map needs '->' before its results: {text!r}")
    return parts[0] if len(parts) == 1 else tuple(parts)


def _read_mlir_expr(text: str, names: dict[str, Any]) -> Any:
    return _Parser(_tokens(text, _MLIR_TOKENS), _MLIR_BINARY, names).whole()
