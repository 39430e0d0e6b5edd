"""Scanning HLO text: the token patterns, the one-match fast paths for common one-line forms, the
parse error with its caret, and the :class:`Scanner` the module parser is built on (skipping gaps and
comments, names, balanced groups, shapes and attribute values).
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

from layout_algebra.hlo.ir import (
    COMPUTATION_REFERENCE_ATTRIBUTES,
)
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import Shape, TupleShape
from layout_algebra.model.syntax import ParseError, parse_shape

_SKIP = re.compile(r"(?:[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/)*", re.S)
NAME = re.compile(r"%?([A-Za-z0-9_][\w.\-]*)")
WORD = re.compile(r"[A-Za-z_][\w.\-]*")
ROOT = re.compile(r"ROOT(?![\w.\-])")
GAP_START = frozenset(" \t\r\n\f\v/")
# Fast paths for the common one-line forms; anything else goes token by token.
INSTRUCTION_HEAD = re.compile(r"(ROOT[ \t]+)?%?([A-Za-z0-9_][\w.\-]*)[ \t]*=[ \t]*(?=[a-z(])")
OPCODE_OPEN = re.compile(r"[ \t]+([a-z][a-z0-9\-]*)\(")
_ATTRIBUTE_HEAD = re.compile(r"[ \t]*,[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*(?=[^\s/])")
OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_KEY = re.compile(r"[A-Za-z_][\w.\-]*")
INT = re.compile(r"-?[0-9]+")
# A string, as XLA's lexer reads one: in double or single quotes, over lines too, with
# backslash escapes (unrolled: fast on long strings).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'', re.S)
# An array shape without nested braces in its layout (the common case, one regex).
_GAP = r"(?:\s|/\*(?:[^*]|\*(?!/))*\*/|//[^\n]*(?:\n|$))*"  # whitespace and comments
_ARRAY_SHAPE = re.compile(
    r"[a-z][a-z0-9]*" + _GAP + r"\[[^\[\]]*\](?:" + _GAP + r"\{(?=" + _GAP + r"(?:-?[0-9]|:))[^{}]*\})?"
)
ARRAY_HEAD = re.compile(r"[a-z][a-z0-9]*" + _GAP + r"\[")  # 'f32 [2]' is XLA's too
LAYOUT_START = re.compile(_GAP + r"\{" + _GAP + r"(?:-?[0-9]|:)")
SHAPELESS = re.compile(r"([a-z][a-z0-9\-]*)" + _GAP + r"\(")  # 'add(' where a shape belongs
_SPECIAL = re.compile(r"[(){}\[\]\"']|/\*|//")
_BARE = re.compile(
    r"(?:[^\s,(){}\[\]\"'%/]|/(?![/*]))+"
)  # '%' only starts a value (a name): "0%s" is 0, then %s
# An operand list of plain names, e.g. "(%a, %b)" (the common case, one regex).
SIMPLE_OPERANDS = re.compile(r"[ \t]*((?:%?[\w.\-]+[ \t]*,[ \t]*)*%?[\w.\-]+)?[ \t]*\)")
_CLOSER = {")": "(", "]": "[", "}": "{"}
LINE_OF_CLOSER = re.compile(r"\n[ \t]*\}[ \t]*(?:\n|$)")  # a line that is '}' alone
_PAREN = re.compile(r"[()]")
#: Deepest nesting of parentheses (tuples, layout attributes) accepted in one shape; XLA's
#: real shapes nest a few levels. Deeper text would exhaust the recursive reader's stack.
MAX_SHAPE_NESTING = 100
# The whole of a common one-line instruction in one match: "[ROOT] name = shape opcode(names)"
# and attributes whose values are a bare word, a string or a flat "{...}" group (no
# brackets or comments inside outside strings). Anything else is parsed piece by piece.
_STRING_BODY = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'


def _group_contents(depth: int, round_depth: int) -> str:
    """A regex for the contents of a group on one line: other groups nested at most ``depth``
    deep ('(...)' only in the outer ``round_depth`` levels: JSON nests '{' and '[' deeper).

    Each opener is closed by its own closer, strings are skipped, comments are not allowed:
    where a group ``'{' contents '}'`` matches, it ends where ``_Parser.balanced_end`` does.
    """
    inner = r"(?:[^{}()\[\]\"'/\n]++|/(?![/*])|" + _STRING_BODY
    if depth > 0:
        nested = _group_contents(depth - 1, round_depth - 1)
        inner += r"|\{" + nested + r"\}|\[" + nested + r"\]"
        if round_depth > 0:
            inner += r"|\(" + nested + r"\)"
    return inner + r")*+"


_FLAT_VALUE = (
    r"(?:%?(?:[^\s,(){}\[\]\"'%/]++|/(?![/*]))++"  # a bare word (what _BARE reads, no groups)
    r"|" + _STRING_BODY + r"|\{" + _group_contents(5, 2) + r"\})"
)
#: The one-match readers (regular expressions), each read the same text as the careful
#: piece-by-piece reader that runs where they do not match; the tests turn them off
#: (replacing each by a pattern that never matches) to compare the two.
FAST_PATHS = (
    "FLAT_INSTRUCTION",
    "SIGNATURE",
    "FLAT_ATTRIBUTE",
    "ENTRY_LAYOUT",
    "SECTION_ENTRIES",
    "COMPUTATION_HEAD",
)
FLAT_ATTRIBUTE = re.compile(r"[ \t]*,[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*(" + _FLAT_VALUE + r")")
# An array shape inside a tuple: its layout's parentheses balanced (what balanced_end reads).
_TUPLE_ELEMENT = r"[a-z][a-z0-9]*+\[[^\[\]\n]*+\](?:\{(?=-?[0-9]|:)(?:[^{}()\n]++|\([^{}()\n]*+\))*+\})?"
# A comma between tuple elements, operands or parameters, and the "/*index=5*/" XLA prints
# before every fifth one.
_COMMA = r"[ \t]*,[ \t]*(?:/\*index=[0-9]+\*/[ \t]*)?"
_INDEX_COMMENT = r"(?:/\*index=[0-9]+\*/[ \t]*)?"
# A tuple on one line: "(", elements, ")" (what balanced_end reads), each element an array
# or a tuple of arrays (the state of a while loop, an async start's "((operands), ...)").
_ARRAY_TUPLE = r"\([ \t]*(?:" + _TUPLE_ELEMENT + r"(?:" + _COMMA + _TUPLE_ELEMENT + r")*)?[ \t]*\)"
_TUPLE_ITEM = r"(?:" + _TUPLE_ELEMENT + r"|" + _ARRAY_TUPLE + r")"
_FLAT_TUPLE = r"\([ \t]*(?:" + _TUPLE_ITEM + r"(?:" + _COMMA + _TUPLE_ITEM + r")*)?[ \t]*\)"
# An operand in the one-match form: a name, or an array shape (layout without nested braces) and a name.
_ARRAY_TEXT = r"[a-z][a-z0-9]*+\[[^\[\]\n]*+\](?:\{(?=-?[0-9]|:)[^{}\n]*+\})?"
_OPERAND = r"(?:" + _ARRAY_TEXT + r"[ \t]++)?%?[\w.\-]++"
TYPED_OPERAND = re.compile(_INDEX_COMMENT + r"(?:(" + _ARRAY_TEXT + r")[ \t]+)?(%?[\w.\-]+)")
OPERAND_NAME = re.compile(r"%?([A-Za-z0-9_][\w.\-]*)")  # what _Parser.name reads
# A constant's literal in braces, nested up to three deep ("{ {1, 2}, {3, 4} }"), without
# the characters balanced_end treats specially (strings, comments, other brackets).
_PLAIN = r"[^{}()\[\]\"'/\n]"
_BRACED_LITERAL = r"\{(?:" + _PLAIN + r"|\{(?:" + _PLAIN + r"|\{" + _PLAIN + r"*\})*\})*\}"
# What may follow an instruction: whitespace and complete comments (as _SKIP reads them).
_TRAILING_GAP = r"(?:[ \t\r\n]++|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)*+"
FLAT_INSTRUCTION = re.compile(
    r"(ROOT[ \t]+)?%?([A-Za-z0-9_][\w.\-]*+)[ \t]*+=[ \t]*+"  # [ROOT] name =
    r"(" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")"  # an array shape or a tuple of arrays
    r"[ \t]++([a-z][a-z0-9\-]*+)\("  # opcode(
    r"[ \t]*+("
    + _OPERAND
    + r"(?:"
    + _COMMA
    + _OPERAND
    + r")*+|"
    + _BRACED_LITERAL
    + r")?[ \t]*\)"  # operands)
    r"((?:[ \t]*,[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*(" + _FLAT_VALUE + r"))*+)"  # , key=value ...
    # (groups 7 and 8: the last key and value)
    r"(?![(\[])"  # not when the last value goes on with a group: 'bf_io->bf', '[2,4]<=[8]'
    + _TRAILING_GAP  # the line break after it, comments
    + r"(?![,/\f\v])",  # and no more attributes (nor an unterminated comment)
    re.S,
)
# A computation's typed header "(name: shape, ...) -> shape" on one line, every shape an
# array or a one-line tuple: one match, as the careful reader would read it.
_PARAMETER = r"%?[A-Za-z0-9_][\w.\-]*+[ \t]*+:[ \t]*+(?:" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")"
SIGNATURE = re.compile(
    r"\([ \t]*+(" + _PARAMETER + r"(?:" + _COMMA + _PARAMETER + r")*+)?[ \t]*\)"
    r"[ \t]*->[ \t]*(" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")(?=[ \t]*\{)"
)
SIGNATURE_PARAMETER = re.compile(
    _INDEX_COMMENT + r"%?([A-Za-z0-9_][\w.\-]*)[ \t]*:[ \t]*(" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")"
)
# The module header's entry_computation_layout={(shape, ...)->shape} on one line, every
# shape an array or a one-line tuple; LISTED_SHAPE finds the parameter shapes in it.
_SHAPE_TEXT = r"(?:" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")"
ENTRY_LAYOUT = re.compile(
    r"\{[ \t]*\([ \t]*+(" + _SHAPE_TEXT + r"(?:" + _COMMA + _SHAPE_TEXT + r")*+)?[ \t]*\)"
    r"[ \t]*->[ \t]*(" + _SHAPE_TEXT + r")[ \t]*\}"
)
LISTED_SHAPE = re.compile(_INDEX_COMMENT + r"(" + _SHAPE_TEXT + r")")
# Entries of a stack-frame section: 'number "string"' or 'number {flat group}' (as
# _Parser.sections reads them, with only whitespace between).
_SECTION_VALUE = _STRING_BODY + r"|\{[^{}()\[\]\"'/\n]*+\}"
SECTION_ENTRIES = re.compile(r"(?:[ \t\r\n]*+-?[0-9]+[ \t\r\n]*+(?:" + _SECTION_VALUE + r"))*+", re.S)
SECTION_ENTRY = re.compile(r"(-?[0-9]+)[ \t\r\n]*+(" + _SECTION_VALUE + r")", re.S)
# "[ENTRY] name " before a computation's signature or body, as WORD and name() read it.
COMPUTATION_HEAD = re.compile(r"(ENTRY[ \t]+)?+%?([A-Za-z0-9_][\w.\-]*)[ \t]*(?=[({])")
OPERAND_NAMES = re.compile(_INDEX_COMMENT + r"%?([\w.\-]+)")
#: Where ``_Parser.read_fields`` puts each attribute it reads (fields of ``HloInstruction``
#: after ``literal``: dimensions, slice, padding, index, calls, to_apply), and their defaults.
READ_FIELD_INDEX = {"dimensions": 0, "slice": 1, "padding": 2, "index": 3, "calls": 4, "to_apply": 5}
NO_READ_FIELDS: tuple[Any, ...] = (None, None, None, None, (), None)
NO_FIELD = object()  # read (checked), but into no field: condition=, body=, ...
NO_ATTRIBUTES: MappingProxyType[str, str] = MappingProxyType({})  # shared: a view of a dict no one has
COMPUTATION_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")  # one name, as hlo.attributes reads it
#: The attributes whose values are read into fields of ``HloInstruction`` (or checked).
READ_ATTRIBUTES = frozenset(
    {"dimensions", "slice", "padding", "index", "to_apply", "calls", *COMPUTATION_REFERENCE_ATTRIBUTES}
)


#: Every shape read so far in this process, by its text: dumps repeat the same few hundred
#: shape texts thousands of times, and ``Shape`` values are immutable. Only shapes that
#: parsed are kept (an error is reported where its text stands); emptied when full.
SHAPES: dict[str, Shape] = {}
_MAX_SHAPES = 16384  # as many as parse_shape keeps


class HloParseError(LayoutAlgebraError, ValueError):
    """HLO module text that cannot be parsed.

    ``str(err)`` gives the line and column, what was expected, and the line quoted with
    a caret under the fault. ``line`` and ``column`` are 1-based; ``position`` is the
    0-based offset in the text; ``reason`` is the message alone.
    """

    def __init__(self, reason: str, text: str, position: int) -> None:
        position = max(0, min(position, len(text)))
        self.reason = reason
        self.position = position
        self.line = text.count("\n", 0, position) + 1
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        self.column = position - line_start + 1
        self.source_line = text[line_start : line_end if line_end >= 0 else len(text)]
        super().__init__(self._render())

    def _render(self) -> str:
        line, column = self.source_line, self.column - 1
        window = 70
        if len(line) > 2 * window:  # show a window around the fault on very long lines
            lo, hi = max(0, column - window), min(len(line), column + window)
            prefix = "..." if lo else ""
            line = prefix + line[lo:hi] + ("..." if hi < len(line) else "")
            column = column - lo + len(prefix)
        line = "".join(c if c.isprintable() else " " for c in line)
        return (
            f"cannot parse HLO module at line {self.line}, column {self.column}: {self.reason}\n"
            f"  {line}\n  {' ' * column}^"
        )


def _deepest_opener(source: str) -> int | None:
    """Where ``source`` opens a parenthesis ``MAX_SHAPE_NESTING + 1`` deep, if it does."""
    depth = 0
    for m in _PAREN.finditer(source):
        if m.group() == "(":
            depth += 1
            if depth > MAX_SHAPE_NESTING:
                return m.start()
        else:
            depth -= 1
    return None


class Scanner:
    """Reads tokens of HLO text from ``self.pos`` on (mixed into the module parser)."""

    text: str
    pos: int
    shapes: dict[str, Shape]
    record_shapes: bool
    recorded: list[tuple[str, Shape]]
    long_string: tuple[int, int] | None

    # ------------------------------------------------------------------ scanning
    def error(self, reason: str, position: int | None = None) -> HloParseError:
        position = self.pos if position is None else position
        if self.long_string is not None:  # a string over lines just before: a quote missing?
            start, end = self.long_string
            if start < position and self.text.count("\n", end, position) <= 1:
                reason += (
                    f" (the string at {self.where(start)} runs on to line "
                    f"{self.text.count(chr(10), 0, end) + 1}: is its closing quote missing?)"
                )
        return HloParseError(reason, self.text, position)

    def string_end(self, pos: int) -> int:
        """The end of the string opening at ``pos`` (remembered if it spans lines)."""
        s = _STRING.match(self.text, pos)
        if s is None:
            raise self.error("unterminated string", pos)
        end = s.end()
        if self.text.find("\n", pos, end) >= 0:
            self.long_string = (pos, end)
        return end

    def skip(self) -> int:
        """Move past whitespace and comments; return the new position."""
        pos = self.pos
        if pos < len(self.text) and self.text[pos] not in GAP_START:
            return pos  # the common case: already at a token
        pos = _SKIP.match(self.text, pos).end()  # type: ignore[union-attr]
        if self.text.startswith("/*", pos):
            raise self.error("unterminated comment: '/*' has no closing '*/'", pos)
        self.pos = pos
        return pos

    def found(self, pos: int | None = None) -> str:
        """What stands at ``pos``, for error messages."""
        if pos is None:
            pos = self.skip()
        if pos >= len(self.text):
            return "the end of the input"
        m = NAME.match(self.text, pos)
        if m:
            return repr(m.group())
        return repr(self.text[pos])

    def peek(self) -> str:
        pos = self.skip()
        return self.text[pos] if pos < len(self.text) else ""

    def expect(self, token: str, context: str) -> None:
        pos = self.skip()
        if not self.text.startswith(token, pos):
            raise self.error(f"expected '{token}' {context}, found {self.found(pos)}")
        self.pos = pos + len(token)

    def accept(self, token: str) -> bool:
        pos = self.skip()
        if self.text.startswith(token, pos):
            self.pos = pos + len(token)
            return True
        return False

    def name(self, what: str) -> str:
        pos = self.skip()
        m = NAME.match(self.text, pos)
        if m is None:
            raise self.error(f"expected {what}, found {self.found(pos)}")
        self.pos = m.end()
        return m.group(1)

    def balanced_end(self, pos: int) -> int:
        """The end of the bracketed group opening at ``pos``; strings and comments skipped."""
        text = self.text
        stack = [pos]
        i = pos + 1
        search = _SPECIAL.search
        while True:
            m = search(text, i)
            if m is None:
                opener = stack[-1]
                raise self.error(f"'{text[opener]}' is never closed", opener)
            token, j = m.group(), m.start()
            if token in "({[":
                stack.append(j)
                i = j + 1
            elif token in ")}]":
                opener = stack.pop()
                if text[opener] != _CLOSER[token]:
                    raise self.error(
                        f"'{token}' closes the '{text[opener]}' opened at {self.where(opener)}", j
                    )
                if not stack:
                    return j + 1
                i = j + 1
            elif token in "\"'":
                i = self.string_end(j)
            elif token == "/*":
                k = text.find("*/", j + 2)
                if k < 0:
                    raise self.error("unterminated comment: '/*' has no closing '*/'", j)
                i = k + 2
            else:  # '//'
                k = text.find("\n", j)
                i = len(text) if k < 0 else k + 1

    def where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos) + 1
        return f"line {line}, column {pos - self.text.rfind(chr(10), 0, pos)}"

    # ------------------------------------------------------------------- shapes
    def shape_end(self, pos: int) -> int:
        text = self.text
        c = text[pos] if pos < len(text) else ""
        if c == "(":
            return self.balanced_end(pos)
        m = _ARRAY_SHAPE.match(text, pos)
        if m is not None:
            end = m.end()
            if text[end - 1] != "}":
                layout = LAYOUT_START.match(text, end)
                if layout is not None:  # a layout with nested braces, e.g. {1,0:P(s32[2]{0})}
                    end = self.balanced_end(text.rindex("{", end, layout.end()))
            return end
        if c == "b" and text.startswith("b(", pos):
            return self.balanced_end(pos + 1)
        if ARRAY_HEAD.match(text, pos):
            raise self.error("'[' is never closed", text.index("[", pos))
        raise self.error(
            f"expected a shape such as 'f32[2,3]{{1,0}}' or a tuple '(...)', found {self.found(pos)}"
        )

    def shape(self) -> Shape:
        start = self.skip()
        end = self.shape_end(start)
        self.pos = end
        return self.shape_text(start, end)

    def shape_text(self, start: int, end: int) -> Shape:
        source = self.text[start:end]
        shape = self.shapes.get(source)
        if shape is None:
            shape = self.parse_shape_at(source, start)
            if len(self.shapes) >= _MAX_SHAPES:
                self.shapes.clear()
            self.shapes[source] = shape
        if self.record_shapes:
            self.recorded.append((source, shape))
        return shape

    def parse_shape_at(self, source: str, start: int) -> Shape:
        if source.count("(") > MAX_SHAPE_NESTING:
            deepest = _deepest_opener(source)
            if deepest is not None:
                raise self.error(
                    f"shape nested more than {MAX_SHAPE_NESTING} levels deep (tuples in tuples); "
                    "XLA's shapes are far shallower",
                    start + deepest,
                )
        if source.startswith("(") and len(source) > 512:
            # Long tuples: parse element by element, so that parse_shape's cache serves
            # the elements (repeated everywhere in a module) instead of one long text.
            return self.tuple_by_elements(start, start + len(source))
        try:
            return parse_shape(source)
        except ParseError as e:
            raise self.error(e.reason, start + e.position) from None

    def tuple_by_elements(self, start: int, end: int) -> TupleShape:
        saved = self.pos
        self.pos = start + 1
        elements: list[Shape] = []
        if not self.accept(")"):
            while True:
                elements.append(self.shape())
                if self.accept(")"):
                    break
                self.expect(",", "or ')' between the elements of a tuple shape")
        if self.pos != end:  # pragma: no cover - shape_end found this extent
            raise self.error("unexpected text in a tuple shape", self.pos)
        self.pos = saved
        return TupleShape(tuple(elements))

    # ---------------------------------------------------------------- attributes
    def value_end(self, pos: int) -> int:
        """The end of an attribute value starting at ``pos``.

        A value is one ``{...}`` group, one string, or a run of bare characters and
        ``[...]``/``(...)`` groups with no space between them (``[2,4]<=[8]``, ``bf_io->bf``).
        """
        text = self.text
        if text.startswith("{", pos):
            layout = ENTRY_LAYOUT.match(text, pos)  # '{(shapes)->shape}': balanced, as read below
            return layout.end() if layout is not None else self.balanced_end(pos)
        if text.startswith(('"', "'"), pos):
            return self.string_end(pos)
        i = pos + 1 if text.startswith("%", pos) else pos
        n = len(text)
        while i < n:
            c = text[i]
            if c in "([":
                i = self.balanced_end(i)
            else:
                m = _BARE.match(text, i)
                if m is None:
                    break
                i = m.end()
        if i == pos:
            raise self.error(f"expected a value after '=', found {self.found(pos)}", pos)
        return i

    def attributes(self) -> tuple[dict[str, str], dict[str, int]]:
        """``(',' key '=' value)*``: raw values, and where each value starts."""
        values: dict[str, str] = {}
        starts: dict[str, int] = {}
        text = self.text
        while True:
            pos = self.pos
            if not text.startswith(",", pos):
                if pos >= len(text) or text[pos] not in GAP_START:
                    break  # the common case: no attributes
                pos = self.skip()
                if not text.startswith(",", pos):
                    break
            flat = FLAT_ATTRIBUTE.match(text, pos)  # ", key=value" on one line, in one match
            if flat is not None and text[flat.end() : flat.end() + 1] not in ("(", "["):
                key = flat.group(1)
                if key in values:
                    raise self.error(f"attribute '{key}' is given twice", flat.start(1))
                values[key] = flat.group(2)
                starts[key] = flat.start(2)
                self.pos = flat.end()
                continue
            fast = _ATTRIBUTE_HEAD.match(text, pos)  # ", key=" on one line
            if fast is not None:
                pos, key = fast.start(1), fast.group(1)
                self.pos = fast.end()
            else:
                self.pos = pos + 1  # after the ','
                pos = self.skip()
                m = _KEY.match(text, pos)
                if m is None:
                    raise self.error(f"expected an attribute name after ',', found {self.found(pos)}")
                key = m.group()
                self.pos = m.end()
                self.expect("=", f"after the attribute name '{key}'")
            start = self.skip()
            end = self.value_end(start)
            if key in values:
                raise self.error(f"attribute '{key}' is given twice", pos)
            values[key] = self.text[start:end]
            starts[key] = start
            self.pos = end
        return values, starts
