"""XLA's text syntax for shapes and layouts: parsing, with errors written for people.

The grammar is XLA's (``HloParserImpl::ParseShape`` / ``ParseLayout``)::

    shape   ::= array | '(' [shape (',' shape)*] ')' | 'b(' shape ')'
    array   ::= type '[' [dim (',' dim)*] ']' [layout]
    dim     ::= int | '<=' int | '?' | formula             # formula: this package's symbolic dims
    layout  ::= '{' [int (',' int)*] [':' attrs] '}'
    attrs   ::= [D(..)] [T(..)(..)..] [L(n)] [#(t)] [*(t)] [E(n)] [S(n)] [SC(..)..] [P(shape)] [M(n)]

Attributes must come in that order, each at most once. Whitespace and ``/* */`` or
``//`` comments may separate any two tokens.

>>> from layout_algebra import parse_shape, parse_layout
>>> str(parse_shape("f32[ 1, 2,3]{0, 1, 2 }"))
'f32[1,2,3]{0,1,2}'
>>> str(parse_shape("f32[123,<=456]"))          # the default layout is filled in
'f32[123,<=456]{1,0}'
>>> str(parse_layout("{1,0:D(D,C)T(8,128)}"))   # legacy D(...) is parsed and dropped
'{1,0:T(8,128)}'

Errors are ``ParseError`` (a ``ValueError``) that quote the input with a caret:

>>> parse_shape("f32[2,3]{1,0:S(1)T(8,128)}")
Traceback (most recent call last):
...
layout_algebra.model.syntax.ParseError: cannot parse shape: attribute 'T' must come before 'S' (XLA's order is D T L # * E S SC P M)
  f32[2,3]{1,0:S(1)T(8,128)}
                   ^

Symbolic dimensions (an extension; XLA accepts only integers) become SymPy symbols
that stand for non-negative integers:

>>> s = parse_shape("f32[N,M]{1,0:T(8,128)}")
>>> s.dimensions, s.is_symbolic
((N, M), True)

A dimension may be an integer formula of names, as a reshape of a symbolic array needs
(``f32[N,128]`` viewed as ``f32[N/8,8,128]``)::

    formula ::= sum
    sum     ::= ['-'] product (('+' | '-') product)*
    product ::= power (('*' | '/' | '//') power)*
    power   ::= atom ['**' int]
    atom    ::= int | name | '(' sum ')' | ('floor' | 'ceiling') '(' sum ')'

``/`` is exact division: ``N/8`` is the SymPy expression ``N/8``, an integer only when 8
divides ``N``. An array with such a dimension exists only there, so that is where a
question about it is asked: the prover's domain is the sizes at which every dimension
formula is a whole number >= 0 (:func:`divisibility_conditions` lists the divisibilities;
``prove.core.shape_facts`` makes them facts of every query), so ``f32[N/8]`` is about
every ``N`` divisible by 8, and a counterexample is always such an ``N``. ``//`` is floor division (``(N+7)//8`` is ``floor(N/8 + 7/8)``), and
``floor``/``ceiling`` are written as SymPy prints them, so every shape prints as text
that parses back to the same shape:

>>> s = parse_shape("f32[N/8, 8, (N+7)//8, 2*M, N*M, M+1]")
>>> str(s)
'f32[N/8,8,floor(N/8 + 7/8),2*M,M*N,M + 1]{5,4,3,2,1,0}'
>>> parse_shape(str(s)) == s
True
>>> divisibility_conditions(s)
('N % 8 == 0',)

A formula that is a plain number must be a whole, non-negative size; errors point at it:

>>> parse_shape("f32[N/0]")
Traceback (most recent call last):
...
layout_algebra.model.syntax.ParseError: cannot parse shape: division by 0 (a literal divisor must be a positive integer)
  f32[N/0]
        ^
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Callable
from typing import NoReturn, TypeVar

from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.primitive_types import ARRAY_TYPE_NAMES, PrimitiveType, primitive_type
from layout_algebra.model.shapes import (
    COMBINE_DIMENSION,
    INT64_MAX,
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    Dim,
    Layout,
    OpaqueShape,
    Shape,
    SplitConfig,
    Tile,
    TokenShape,
    TupleShape,
    default_layout,
)

__all__ = [
    "MAX_INPUT_LENGTH",
    "MAX_NESTING_DEPTH",
    "ParseError",
    "as_layout",
    "as_shape",
    "divisibility_conditions",
    "parse_layout",
    "parse_shape",
]

#: Deepest nesting of tuples / buffers / ``P(...)`` accepted (XLA allows 32768; Python's
#: stack does not, so we stop earlier with a clear error instead of crashing).
MAX_NESTING_DEPTH = 200
#: Longest input accepted, in characters.
MAX_INPUT_LENGTH = 10_000_000

_SPACE_START = frozenset(" \t\r\n/")
_INT = re.compile(r"-?[0-9]+")
_ATTRIBUTE_ORDER = ("D", "T", "L", "#", "*", "E", "S", "SC", "P", "M")
_DIM_LEVEL_LETTERS = "DCSH"
#: A dimension that is a plain integer or a plain name, right before ',' or ']'.
_PLAIN_DIMENSION = re.compile(r"(?:(-?[0-9]+)|([A-Za-z_][A-Za-z0-9_]*))[ \t]*(?=[,\]])")
#: Words that are not plain size names (functions and Python's words): the formula reader
#: says why.
_FORMULA_WORDS = frozenset(keyword.kwlist) | {"floor", "ceiling", "ceil", "min", "max", "Min", "Max", "Mod"}

T = TypeVar("T")


class ParseError(LayoutAlgebraError, ValueError):
    """Shape or layout text that XLA's grammar does not accept.

    ``str(err)`` names what was being parsed, says what is wrong, and shows the input
    with a caret under the fault. ``err.text``, ``err.position`` (0-based character
    offset) and ``err.reason`` give the parts.
    """

    def __init__(self, reason: str, text: str, position: int, what: str = "shape") -> None:
        self.reason = reason
        self.text = text
        self.position = position
        self.what = what
        super().__init__(self._render())

    def _render(self) -> str:
        line_start = self.text.rfind("\n", 0, self.position) + 1
        line_end = self.text.find("\n", self.position)
        if line_end < 0:
            line_end = len(self.text)
        line = self.text[line_start:line_end]
        column = self.position - line_start
        # Keep very long inputs readable: show a window around the fault.
        window = 70
        if len(line) > 2 * window:
            lo = max(0, column - window)
            hi = min(len(line), column + window)
            prefix = "..." if lo > 0 else ""
            line = prefix + line[lo:hi] + ("..." if hi < len(line) else "")
            column = column - lo + len(prefix)
        line = line.replace("\t", " ")
        return f"cannot parse {self.what}: {self.reason}\n  {line}\n  {' ' * column}^"


class _Parser:
    """A scannerless recursive-descent parser over one input string."""

    def __init__(self, text: str, what: str) -> None:
        self.text = text
        self.pos = 0
        self.what = what
        self.depth = 0
        self.symbols: dict[str, Dim] = {}

    # ----------------------------------------------------------------- scanning
    def error(self, reason: str, position: int | None = None) -> ParseError:
        """A ``ParseError`` whose caret sits on the offending token (not on space before it)."""
        pos = self.pos if position is None else position
        return ParseError(reason, self.text, _next_token(self.text, pos), self.what)

    def skip_space(self) -> None:
        text, pos = self.text, self.pos
        if pos >= len(text) or text[pos] not in _SPACE_START:
            return  # the common case: already at a token
        pos = _next_token(text, pos)
        if text.startswith("/*", pos) and text.find("*/", pos + 2) < 0:
            raise ParseError("unterminated comment '/*'", text, pos, self.what)
        self.pos = pos

    def peek(self) -> str:
        """The next significant character ('' at the end)."""
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at(self, s: str) -> bool:
        self.skip_space()
        return self.text.startswith(s, self.pos)

    def expect(self, s: str, context: str) -> None:
        if not self.at(s):
            raise self.error(f"expected '{s}' {context}, found {self.describe_here()}")
        self.pos += len(s)

    def accept(self, s: str) -> bool:
        if self.at(s):
            self.pos += len(s)
            return True
        return False

    def describe_here(self) -> str:
        self.skip_space()
        if self.pos >= len(self.text):
            return "the end of the input"
        c = self.text[self.pos]
        word = self.read_word(peek_only=True)
        return repr(word) if word else repr(c)

    def read_word(self, peek_only: bool = False) -> str:
        self.skip_space()
        start = end = self.pos
        text = self.text
        while end < len(text) and (text[end].isalnum() or text[end] == "_") and text[end].isascii():
            end += 1
        if not peek_only:
            self.pos = end
        return text[start:end]

    def read_int(self, what: str, allow_negative: bool = True) -> int:
        self.skip_space()
        start = self.pos
        match = _INT.match(self.text, start)
        if match is None:
            raise self.error(f"expected an integer ({what}), found {self.describe_here()}")
        end = match.end()
        if end < len(self.text) and (self.text[end].isalpha() or self.text[end] == "_"):
            raise self.error(f"expected an integer ({what}), found {self.text[start : end + 1]!r}...", start)
        if end - start > 25:
            raise self.error(f"{what} has too many digits to fit in a 64-bit integer", start)
        value = int(match.group())
        if not -(2**63) <= value <= INT64_MAX:
            raise self.error(f"{what} {value} does not fit in a 64-bit integer", start)
        if value < 0 and not allow_negative:
            raise self.error(f"{what} must not be negative, got {value}", start)
        self.pos = end
        return value

    def starts_int(self) -> bool:
        c = self.peek()
        if c.isdigit() and c.isascii():
            return True
        return c == "-" and self.pos + 1 < len(self.text) and self.text[self.pos + 1].isdigit()

    def nested(self, parse: Callable[[], T]) -> T:
        self.depth += 1
        if self.depth > MAX_NESTING_DEPTH:
            raise self.error(f"shapes are nested more than {MAX_NESTING_DEPTH} levels deep")
        try:
            return parse()
        finally:
            self.depth -= 1

    # ------------------------------------------------------------------ shapes
    def shape(self, allow_physical_shape: bool = False) -> Shape:
        c = self.peek()
        if c == "(":
            return self.nested(self.tuple_shape)
        start = self.pos
        name = self.read_word()
        if not name:
            raise self.error(
                f"expected a shape (an element type such as 'f32', or '('), found {self.describe_here()}"
            )
        if name == "b" and self.at("("):
            return self.nested(self.buffer_shape)
        if name not in ARRAY_TYPE_NAMES:
            try:
                primitive_type(name)
                raise self.error(f"{name!r} is not a type a shape can be written with", start)
            except ValueError as e:
                if isinstance(e, ParseError):
                    raise
                raise self.error(str(e), start) from None
        element_type = primitive_type(name)
        if not self.at("["):
            raise self.error(f"expected '[' after element type {name!r}, found {self.describe_here()}")
        if element_type in (PrimitiveType.TOKEN, PrimitiveType.OPAQUE_TYPE):
            self.expect("[", f"after {name!r}")
            if not self.accept("]"):
                raise self.error(f"a {name} shape has no dimensions: write '{name}[]'")
            return TokenShape() if element_type is PrimitiveType.TOKEN else OpaqueShape()
        return self.array_shape(element_type, allow_physical_shape)

    def tuple_shape(self) -> TupleShape:
        self.expect("(", "to open a tuple")
        elements: list[Shape] = []
        if self.accept(")"):
            return TupleShape(())
        while True:
            elements.append(self.shape())
            if self.accept(")"):
                return TupleShape(tuple(elements))
            if not self.accept(","):
                raise self.error(f"expected ',' or ')' in a tuple shape, found {self.describe_here()}")

    def buffer_shape(self) -> BufferShape:
        self.expect("(", "after 'b'")
        start = self.pos
        inner = self.shape()
        if not isinstance(inner, ArrayShape):
            raise self.error("a buffer shape b(...) holds exactly one array shape", start)
        self.expect(")", "to close the buffer shape b(...)")
        return BufferShape(inner)

    def array_shape(self, element_type: PrimitiveType, allow_physical_shape: bool) -> ArrayShape:
        self.expect("[", "to open the dimensions")
        dims: list[Dim] = []
        dynamic: list[bool] = []
        if not self.accept("]"):
            while True:
                size, is_dynamic = self.dimension()
                dims.append(size)
                dynamic.append(is_dynamic)
                if self.accept("]"):
                    break
                if not self.accept(","):
                    raise self.error(f"expected ',' or ']' between dimensions, found {self.describe_here()}")
        layout = None
        layout_start = self.pos
        # XLA takes '{' as a layout only when an integer or ':' follows it.
        if self.at("{"):
            save = self.pos
            self.pos += 1
            is_layout = self.starts_int() or self.peek() == ":"
            self.pos = save
            if is_layout:
                layout_start = self.pos
                layout = self.layout()
        if layout is None:
            layout = default_layout(len(dims))
        else:
            if len(layout.minor_to_major) != len(dims):
                raise self.error(
                    f"the shape has {len(dims)} dimensions but minor_to_major "
                    f"{{{','.join(map(str, layout.minor_to_major))}}} lists {len(layout.minor_to_major)}",
                    layout_start,
                )
            if layout.physical_shape is not None and not allow_physical_shape:
                raise self.error(
                    "layout has a physical shape P(...), which XLA allows only for sparse arrays",
                    layout_start,
                )
        return ArrayShape(element_type, tuple(dims), tuple(dynamic), layout)

    def dimension(self) -> tuple[Dim, bool]:
        start = self.pos
        if self.accept("?"):
            return UNBOUNDED_SIZE, True
        if self.accept("<="):
            return self.read_int("dimension bound", allow_negative=False), True
        c = self.peek()
        if not (c.isalnum() or c in "_(-"):
            raise self.error(
                "expected a dimension size (an integer, '<=N', '?', a name or a formula such as N/8), "
                f"found {self.describe_here()}"
            )
        plain = _PLAIN_DIMENSION.match(self.text, self.pos)
        if plain is not None:  # the common case: an integer or a name, never the formula reader
            start = self.pos
            if plain.group(1) is not None:
                return self.checked_dimension(self.read_int("dimension size"), start), False
            name = plain.group(2)
            if name not in _FORMULA_WORDS and not name.startswith("__"):
                self.pos = plain.end(2)
                return self.symbol(name), False
        return self.formula_dimension(), False

    def formula_dimension(self) -> Dim:
        """A dimension written as a formula, read by the shared grammar of
        :mod:`layout_algebra.model.formulas` (it stops before ',' or ']')."""
        from layout_algebra.model.formulas import ConditionInTerm

        start = self.pos
        reader = _dimension_formula_reader()(self.text, start, self.what)
        try:
            value = reader.formula()
        except ConditionInTerm as wrapped:
            raise wrapped.error from None
        self.pos = reader.pos
        return self.checked_dimension(value, start)

    def checked_dimension(self, value: object, start: int) -> Dim:
        """A formula's value as a size: a non-negative int, or an expression that may be one."""
        if not isinstance(value, int):
            if value.is_Integer:  # type: ignore[attr-defined]
                value = int(value)  # type: ignore[call-overload]
            elif value.is_number or value.is_integer is False:  # type: ignore[attr-defined]
                raise self.error(f"dimension {value} is not a whole number", start)
            elif value.is_negative or value.is_nonpositive:  # type: ignore[attr-defined]
                raise self.error(f"dimension {value} is negative (or 0 at best)", start)
        if isinstance(value, int):
            if value < 0:
                raise self.error(f"dimension size must be >= 0, got {value}", start)
            if value > INT64_MAX:
                raise self.error(f"dimension size {value} does not fit in a 64-bit integer", start)
        return value

    def symbol(self, name: str) -> Dim:
        if name not in self.symbols:
            from layout_algebra.model.symbols import dim_symbol

            self.symbols[name] = dim_symbol(name)
        return self.symbols[name]

    # ----------------------------------------------------------------- layouts
    def layout(self) -> Layout:
        self.expect("{", "to open a layout")
        minor_to_major: list[int] = []
        if self.starts_int():
            while True:
                minor_to_major.append(self.read_int("minor_to_major entry"))
                if not self.accept(","):
                    break
        fields: dict[str, object] = {}
        if self.accept(":"):
            fields = self.attributes()
        if not self.accept("}"):
            raise self.error(f"expected '}}' to end the layout, found {self.describe_here()}")
        return Layout(tuple(minor_to_major), **fields)  # type: ignore[arg-type]

    def attributes(self) -> dict[str, object]:
        fields: dict[str, object] = {}
        last = -1
        seen: dict[str, int] = {}
        while True:
            start = self.pos
            name = self.attribute_name()
            if name is None:
                return fields
            rank = _ATTRIBUTE_ORDER.index(name)
            if name in seen:
                raise self.error(f"attribute '{name}' appears twice in one layout", start)
            if rank < last:
                later = _ATTRIBUTE_ORDER[last]
                raise self.error(
                    f"attribute '{name}' must come before '{later}' "
                    f"(XLA's order is {' '.join(_ATTRIBUTE_ORDER)})",
                    start,
                )
            seen[name] = start
            last = rank
            self.attribute(name, fields)

    def attribute_name(self) -> str | None:
        c = self.peek()
        if c in ("#", "*"):
            self.pos += 1
            return c
        if c.isalpha() and c.isascii():
            start = self.pos
            word = self.read_word()
            if word in _ATTRIBUTE_ORDER:
                return word
            raise self.error(
                f"unknown layout attribute {word!r} (expected one of {', '.join(_ATTRIBUTE_ORDER)})", start
            )
        if c == "}":
            return None
        raise self.error(f"expected a layout attribute or '}}', found {self.describe_here()}")

    def attribute(self, name: str, fields: dict[str, object]) -> None:
        if name == "D":
            self.dim_level_types()
        elif name == "T":
            fields["tiles"] = self.tiles()
        elif name == "L":
            self.expect("(", "after 'L'")
            start = self.pos
            value = self.read_int("L(n) tail padding alignment")
            if value < 1:
                raise self.error(
                    f"L(n) needs n >= 1 (elements of tail padding alignment), got {value}", start
                )
            self.expect(")", "to close 'L('")
            fields["tail_padding_alignment_in_elements"] = value
        elif name in ("#", "*"):
            self.expect("(", f"after '{name}'")
            start = self.pos
            type_name = self.read_word()
            try:
                t = primitive_type(type_name)
            except ValueError as e:
                raise self.error(f"{e} in '{name}(...)'", start) from None
            if not t.is_array_type:
                raise self.error(f"{type_name!r} is not an element type", start)
            self.expect(")", f"to close '{name}('")
            # XLA's parser records, then ignores, an error for non-unsigned types here.
            fields["index_primitive_type" if name == "#" else "pointer_primitive_type"] = t
        elif name == "E":
            fields["element_size_in_bits"] = self.parenthesized_int("E", "E(n) element size in bits")
        elif name == "S":
            value = self.parenthesized_int("S", "S(n) memory space")
            fields["memory_space"] = (value + 128) % 256 - 128  # stored as int8_t, as in XLA
        elif name == "SC":
            fields["split_configs"] = self.split_configs()
        elif name == "P":
            self.expect("(", "after 'P'")
            fields["physical_shape"] = self.nested(lambda: self.shape(allow_physical_shape=True))
            self.expect(")", "to close 'P('")
        elif name == "M":
            fields["dynamic_shape_metadata_prefix_bytes"] = self.parenthesized_int(
                "M", "M(n) metadata prefix bytes"
            )

    def parenthesized_int(self, name: str, what: str) -> int:
        self.expect("(", f"after '{name}'")
        value = self.read_int(what)
        self.expect(")", f"to close '{name}('")
        return value

    def tiles(self) -> tuple[Tile, ...]:
        tiles: list[Tile] = []
        if not self.at("("):
            raise self.error(f"expected '(' after 'T', found {self.describe_here()}")
        while self.accept("("):
            dims: list[int] = []
            if not self.accept(")"):
                while True:
                    if self.accept("*"):
                        dims.append(COMBINE_DIMENSION)
                    else:
                        start = self.pos
                        value = self.read_int("tile dimension")
                        if value < 0:
                            raise self.error(f"tile dimension must be a size >= 0 or '*', got {value}", start)
                        dims.append(value)
                    if self.accept(")"):
                        break
                    if not self.accept(","):
                        raise self.error(f"expected ',' or ')' in a tile, found {self.describe_here()}")
            tiles.append(Tile(tuple(dims)))
        return tuple(tiles)

    def split_configs(self) -> tuple[SplitConfig, ...]:
        configs: list[SplitConfig] = []
        if not self.at("("):
            raise self.error(f"expected '(' after 'SC', found {self.describe_here()}")
        while self.accept("("):
            dimension = self.read_int("split config dimension")
            self.expect(":", "after the split config dimension, as in SC(0:3)")
            indices: list[int] = []
            if not self.accept(")"):
                while True:
                    indices.append(self.read_int("split index"))
                    if self.accept(")"):
                        break
                    if not self.accept(","):
                        raise self.error(
                            f"expected ',' or ')' in a split config, found {self.describe_here()}"
                        )
            configs.append(SplitConfig(dimension, tuple(indices)))
        return tuple(configs)

    def dim_level_types(self) -> None:
        self.expect("(", "after 'D'")
        while True:
            c = self.peek()
            if not (c and c in _DIM_LEVEL_LETTERS):
                raise self.error(
                    f"expected a DimLevelType abbreviation (D, C, S or H), found {self.describe_here()}"
                )
            self.pos += 1
            self.accept("+")
            self.accept("~")
            if self.accept(")"):
                return
            if not self.accept(","):
                raise self.error(f"expected ',' or ')' in D(...), found {self.describe_here()}")

    def finish(self, what: str) -> None:
        if self.peek():
            raise self.error(f"extra content after the {what}: {self.describe_here()}")


@functools.cache
def _dimension_formula_reader() -> type:
    """The shared formula reader, fitted to shape text (made on first use: SymPy loads late)."""
    from layout_algebra.model.formulas import FormulaReader

    class DimensionFormula(FormulaReader):
        """A formula inside shape text: errors are ``ParseError`` with a caret into the
        whole text, and ``/* */`` / ``//`` comments may separate tokens, as in XLA's text.

        XLA's text takes ``//`` as the start of a comment. In a formula it is floor
        division when it touches what comes before it (``(N+7)//8``) or when the formula
        has a name (``N // 8``); in an integer formula, `` // text`` stays XLA's comment.
        """

        expecting = "a dimension formula"

        def __init__(self, text: str, pos: int, what: str) -> None:
            super().__init__(text, pos)
            self.what = what

        def fail(self, reason: str, position: int) -> NoReturn:
            raise ParseError(reason, self.text, _next_token(self.text, position), self.what)

        def skip_space(self, pos: int) -> int:
            text = self.text
            if pos >= len(text) or text[pos] not in _SPACE_START:
                return pos
            start = pos
            while True:
                while pos < len(text) and text[pos] in " \t\r\n":
                    pos += 1
                if text.startswith("/*", pos):
                    end = text.find("*/", pos + 2)
                    if end < 0:
                        raise ParseError("unterminated comment '/*'", text, pos, self.what)
                    pos = end + 2
                    continue
                if text.startswith("//", pos) and pos > start and not self.has_name:
                    return _next_token(text, pos)
                return pos

    return DimensionFormula


def divisibility_conditions(shape: Shape | str) -> tuple[str, ...]:
    """What must hold for every dimension formula of ``shape`` to be a whole number, as
    assumption text for the prover (``N/8`` needs ``N % 8 == 0``).

    >>> divisibility_conditions("f32[N*M/128, 2*K]")
    ('M*N % 128 == 0',)
    """
    found: list[str] = []

    def visit(s: Shape) -> None:
        if isinstance(s, TupleShape):
            for e in s.elements:
                visit(e)
        elif isinstance(s, BufferShape):
            visit(s.array)
        elif isinstance(s, ArrayShape):
            for d in s.dimensions:
                if isinstance(d, int):
                    continue
                import sympy

                numerator, denominator = sympy.fraction(sympy.together(d))
                if denominator != 1:
                    condition = f"{_operand(numerator)} % {denominator} == 0"
                    if condition not in found:
                        found.append(condition)

    visit(as_shape(shape))
    return tuple(found)


def _operand(e: object) -> str:
    """``e`` as the left operand of ``%``: a sum in parentheses."""
    text = str(e)
    return f"({text})" if getattr(e, "is_Add", False) else text


def _next_token(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not space or inside a comment."""
    n = len(text)
    while pos < n:
        if text[pos] in " \t\r\n":
            pos += 1
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0:
                return pos
            pos = end + 2
        elif text.startswith("//", pos):
            end = text.find("\n", pos)
            pos = n if end < 0 else end + 1
        else:
            break
    return min(pos, n)


def _run(text: str, what: str, parse: Callable[[_Parser], T]) -> T:
    if not isinstance(text, str):
        raise TypeError(f"parse_{what} expects a str, got {type(text).__name__}")
    if len(text) > MAX_INPUT_LENGTH:
        raise ParseError(
            f"input is {len(text)} characters long; the limit is {MAX_INPUT_LENGTH}", text[:80], 0, what
        )
    parser = _Parser(text, what)
    try:
        result = parse(parser)
        parser.finish(what)
    except RecursionError:
        raise parser.error("input is nested too deeply") from None
    return result


def parse_shape(text: str) -> Shape:
    """Parse XLA shape text such as ``bf16[8,128]{1,0:T(8,128)(2,1)}``.

    Arrays written without a layout get XLA's default descending layout ``{n-1,...,0}``.
    Raises ``ParseError`` for text XLA's ``ParseShape`` rejects. Shapes are immutable,
    so results for short texts are cached (compiler dumps repeat the same shapes).
    """
    if isinstance(text, str) and len(text) <= _CACHED_LENGTH:
        return _parse_shape_cached(text)
    return _run(text, "shape", lambda p: p.shape())


_CACHED_LENGTH = 512


@functools.lru_cache(maxsize=16384)
def _parse_shape_cached(text: str) -> Shape:
    return _run(text, "shape", lambda p: p.shape())


def parse_layout(text: str) -> Layout:
    """Parse XLA layout text such as ``{1,0:T(8,128)(2,1)S(1)}``.

    Like XLA's ``ParseLayout``, this accepts ``P(shape)``, which ``parse_shape`` rejects
    on a dense array.
    """
    return _run(text, "layout", lambda p: p.layout())


def as_shape(shape: Shape | str) -> Shape:
    """A ``Shape`` from a ``Shape`` or from shape text (for functions that accept both)."""
    if isinstance(shape, Shape):
        return shape
    if isinstance(shape, str):
        return parse_shape(shape)
    raise TypeError(f"expected a Shape or shape text, got {type(shape).__name__}: {shape!r}")


def as_layout(layout: Layout | str) -> Layout:
    """A ``Layout`` from a ``Layout`` or from layout text (for functions that accept both)."""
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        return parse_layout(layout)
    raise TypeError(f"expected a Layout or layout text, got {type(layout).__name__}: {layout!r}")
