"""``parse_module``: XLA's HLO text, as compilers dump it, into ``HloModule`` values.

The grammar (XLA's ``HloParserImpl``, written as it is used in real dumps)::

    module       ::= 'HloModule' name (',' attribute)* section* computation+
    section      ::= ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames')
                     (int (string | '{' ... '}'))*
    computation  ::= ['ENTRY'] name [signature] '{' instruction+ '}' (',' attribute)*
    signature    ::= '(' [name ':' shape (',' name ':' shape)*] ')' '->' shape
    instruction  ::= ['ROOT'] name '=' shape opcode '(' operands ')' (',' attribute)*
    operands     ::= [[shape] name (',' [shape] name)*]      # parameter(N), constant(literal)
    attribute    ::= key '=' value       # value: a bare word, a "string", or balanced {} [] ()

Names may carry a leading ``%``. As in XLA's lexer (``hlo_lexer.cc``), newlines are
whitespace and ``//`` and ``/* */`` comments may stand between any two tokens: an
instruction may be wrapped over several lines anywhere, a shape written ``f32 [2] {0}``
or over lines, a nested tuple shape commented (XLA prints ``/*index=5*/`` inside long
tuples and operand lists). Strings are in double or single quotes and may span lines.
Attribute values, constant literals and section entries are kept as the text gives them.
One form of XLA's is not read: an instruction without its result shape (``s = add(a, b)``,
which XLA infers for some opcodes) is an error that says so.
``HloModule.to_text()`` prints a module back, one instruction a line.

>>> from layout_algebra.hlo import parse_module
>>> m = parse_module('''
... HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}
... %add (x: f32[], y: f32[]) -> f32[] {
...   %x = f32[] parameter(0)
...   %y = f32[] parameter(1)
...   ROOT %s = f32[] add(f32[] %x, f32[] %y)
... }
... ENTRY %main (a: f32[4]) -> f32[4] {
...   %a = f32[4]{0} parameter(0)
...   ROOT %n = f32[4]{0} copy(
...       %a), metadata={op_name="jit(f)/copy"}   // wrapped, with a comment
... }''')
>>> [c.name for c in m.computations], m.entry.name, m.instruction_count
(['add', 'main'], 'main', 5)
>>> str(m.entry_computation_layout)
'{(f32[4]{0})->f32[4]{0}}'
>>> m.computation("add").root.operands[0]
HloOperand(name='x', shape=parse_shape('f32[]'))

Errors are ``HloParseError`` (a ``ValueError``): the line and column, what was expected,
and the line quoted with a caret (a shape nested more than ``MAX_SHAPE_NESTING`` = 100
parentheses deep is one too, not a ``RecursionError``). A bad shape inside a module is reported where it
stands in the module:

>>> parse_module("HloModule m\\nENTRY e {\\n  p = f32[2]{0:T(8,128)S(1)E(4)} parameter(0)\\n}")
Traceback (most recent call last):
...
layout_algebra.hlo.parser.HloParseError: cannot parse HLO module at line 3, column 28: attribute 'E' must come before 'S' (XLA's order is D T L # * E S SC P M)
    p = f32[2]{0:T(8,128)S(1)E(4)} parameter(0)
                             ^

**Why a hand-written scanner.** The target is >= 5 MB/s of module text in pure Python
on a 2-core machine. Parsing libraries were measured first, on the largest shipped
module (``03_*.hlo``, 69 KB): Lark's ``basic`` lexer *alone* (no parsing) ran at under 4 MB/s,
a Lark LALR parse of a flat token grammar at 1.5 MB/s, and a pyparsing token scan at
0.3 MB/s: a token object per token is already too slow. This parser never looks at
characters one at a time. A common one-line instruction (``[ROOT] name = shape
opcode(operands), key=value, ...`` with an array shape or a tuple (of arrays and tuples of arrays), operand names
with or without array shapes, XLA's ``/*index=5*/`` comments in lists, a braced constant
literal, attribute values that are words, strings or bracket groups nested up to five
deep, as ``backend_config`` JSON is, and comments after it) is read by ONE compiled regular
expression (``_FLAT_INSTRUCTION``), whose groups are exactly what the careful reader would
take. A computation's head and typed signature, the module's ``entry_computation_layout``,
the stack-frame section entries and one-line attributes are read the same way (the names
in ``_FAST_PATHS``). Anything else (nested tuples, wrapped lines, comments elsewhere,
strings over lines or in single quotes, errors) is read piece by piece, regular
expressions jumping over whitespace, names, strings and values: the same module, at
about half the speed (26 against 48 MB/s of CPU time on the 20 MB module with every
instruction wrapped over lines; ``benchmarks/hlo_parse.py``, the re-wrapped row). The tests check that both readers give the same module, or the same
error, on every shipped dump, on tricky values and headers and on generated instructions.
Shapes are handed, as text, to the package's one shape parser (``parse_shape``); shapes
and the attribute values read into fields (``slice``, ``dimensions``, ...) are cached per
process by their text (dumps repeat them thousands of times; the values are immutable).
Instructions are built without ``__init__`` (``ir.trusted_instruction``: slot writes).
Measured against a bare ``re.findall`` tokenizer over the same bytes (CPU time, same run):
1.4-1.7 times its speed on a 20 MB module (35-46 MB/s, on a loaded 2-core machine), and
0.7-0.9 times over every shipped module, whose short instructions and many small
computations cost the parser per instruction what costs the tokenizer per byte; see
``benchmarks/hlo_parse.py`` and ``benchmarks/README.md``. HLO's grammar is also
context dependent in ways a generic lexer handles badly: ``{`` starts a layout only
before an integer or ``:``, and attribute values such as ``bf_io->bf``, ``0_0x0_1`` or
``[2,4]<=[8]`` have their own micro-syntax.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import re
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

from layout_algebra.hlo.attributes import (
    AttributeValueError,
    computation_names,
    parse_index,
    parse_int_list,
    parse_padding,
    parse_slice,
)
from layout_algebra.hlo.ir import (
    COMPUTATION_REFERENCE_ATTRIBUTES,
    NATIVE_START_OPCODES,
    EntryComputationLayout,
    HloComputation,
    HloInstruction,
    HloModule,
    HloOperand,
    trusted_computation,
    trusted_instruction,
    trusted_operand,
)
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import Shape, TupleShape
from layout_algebra.model.syntax import ParseError, parse_shape

__all__ = ["SECTION_NAMES", "HloModuleStream", "HloParseError", "iter_computations", "parse_module"]

#: The stack-frame tables printed after the module header by recent XLA versions.
SECTION_NAMES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")

_SKIP = re.compile(r"(?:[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/)*", re.S)
_NAME = re.compile(r"%?([A-Za-z0-9_][\w.\-]*)")
_WORD = re.compile(r"[A-Za-z_][\w.\-]*")
_ROOT = re.compile(r"ROOT(?![\w.\-])")
_GAP_START = frozenset(" \t\r\n\f\v/")
# Fast paths for the common one-line forms; anything else goes token by token.
_INSTRUCTION_HEAD = re.compile(r"(ROOT[ \t]+)?%?([A-Za-z0-9_][\w.\-]*)[ \t]*=[ \t]*(?=[a-z(])")
_OPCODE_OPEN = re.compile(r"[ \t]+([a-z][a-z0-9\-]*)\(")
_ATTRIBUTE_HEAD = re.compile(r"[ \t]*,[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*(?=[^\s/])")
_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_KEY = re.compile(r"[A-Za-z_][\w.\-]*")
_INT = re.compile(r"-?[0-9]+")
# A string, as XLA's lexer reads one: in double or single quotes, over lines too, with
# backslash escapes (unrolled: fast on long strings).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'', re.S)
# An array shape without nested braces in its layout (the common case, one regex).
_GAP = r"(?:\s|/\*(?:[^*]|\*(?!/))*\*/|//[^\n]*(?:\n|$))*"  # whitespace and comments
_ARRAY_SHAPE = re.compile(
    r"[a-z][a-z0-9]*" + _GAP + r"\[[^\[\]]*\](?:" + _GAP + r"\{(?=" + _GAP + r"(?:-?[0-9]|:))[^{}]*\})?"
)
_ARRAY_HEAD = re.compile(r"[a-z][a-z0-9]*" + _GAP + r"\[")  # 'f32 [2]' is XLA's too
_LAYOUT_START = re.compile(_GAP + r"\{" + _GAP + r"(?:-?[0-9]|:)")
_SHAPELESS = re.compile(r"([a-z][a-z0-9\-]*)" + _GAP + r"\(")  # 'add(' where a shape belongs
_SPECIAL = re.compile(r"[(){}\[\]\"']|/\*|//")
_BARE = re.compile(
    r"(?:[^\s,(){}\[\]\"'%/]|/(?![/*]))+"
)  # '%' only starts a value (a name): "0%s" is 0, then %s
# An operand list of plain names, e.g. "(%a, %b)" (the common case, one regex).
_SIMPLE_OPERANDS = re.compile(r"[ \t]*((?:%?[\w.\-]+[ \t]*,[ \t]*)*%?[\w.\-]+)?[ \t]*\)")
_CLOSER = {")": "(", "]": "[", "}": "{"}
_LINE_OF_CLOSER = re.compile(r"\n[ \t]*\}[ \t]*(?:\n|$)")  # a line that is '}' alone
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
_FAST_PATHS = (
    "_FLAT_INSTRUCTION",
    "_SIGNATURE",
    "_FLAT_ATTRIBUTE",
    "_ENTRY_LAYOUT",
    "_SECTION_ENTRIES",
    "_COMPUTATION_HEAD",
)
_FLAT_ATTRIBUTE = re.compile(r"[ \t]*,[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*(" + _FLAT_VALUE + r")")
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
_TYPED_OPERAND = re.compile(_INDEX_COMMENT + r"(?:(" + _ARRAY_TEXT + r")[ \t]+)?(%?[\w.\-]+)")
_OPERAND_NAME = re.compile(r"%?([A-Za-z0-9_][\w.\-]*)")  # what _Parser.name reads
# A constant's literal in braces, nested up to three deep ("{ {1, 2}, {3, 4} }"), without
# the characters balanced_end treats specially (strings, comments, other brackets).
_PLAIN = r"[^{}()\[\]\"'/\n]"
_BRACED_LITERAL = r"\{(?:" + _PLAIN + r"|\{(?:" + _PLAIN + r"|\{" + _PLAIN + r"*\})*\})*\}"
# What may follow an instruction: whitespace and complete comments (as _SKIP reads them).
_TRAILING_GAP = r"(?:[ \t\r\n]++|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+\*/)*+"
_FLAT_INSTRUCTION = re.compile(
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
_SIGNATURE = re.compile(
    r"\([ \t]*+(" + _PARAMETER + r"(?:" + _COMMA + _PARAMETER + r")*+)?[ \t]*\)"
    r"[ \t]*->[ \t]*(" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")(?=[ \t]*\{)"
)
_SIGNATURE_PARAMETER = re.compile(
    _INDEX_COMMENT + r"%?([A-Za-z0-9_][\w.\-]*)[ \t]*:[ \t]*(" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")"
)
# The module header's entry_computation_layout={(shape, ...)->shape} on one line, every
# shape an array or a one-line tuple; _LISTED_SHAPE finds the parameter shapes in it.
_SHAPE_TEXT = r"(?:" + _ARRAY_TEXT + r"|" + _FLAT_TUPLE + r")"
_ENTRY_LAYOUT = re.compile(
    r"\{[ \t]*\([ \t]*+(" + _SHAPE_TEXT + r"(?:" + _COMMA + _SHAPE_TEXT + r")*+)?[ \t]*\)"
    r"[ \t]*->[ \t]*(" + _SHAPE_TEXT + r")[ \t]*\}"
)
_LISTED_SHAPE = re.compile(_INDEX_COMMENT + r"(" + _SHAPE_TEXT + r")")
# Entries of a stack-frame section: 'number "string"' or 'number {flat group}' (as
# _Parser.sections reads them, with only whitespace between).
_SECTION_VALUE = _STRING_BODY + r"|\{[^{}()\[\]\"'/\n]*+\}"
_SECTION_ENTRIES = re.compile(r"(?:[ \t\r\n]*+-?[0-9]+[ \t\r\n]*+(?:" + _SECTION_VALUE + r"))*+", re.S)
_SECTION_ENTRY = re.compile(r"(-?[0-9]+)[ \t\r\n]*+(" + _SECTION_VALUE + r")", re.S)
# "[ENTRY] name " before a computation's signature or body, as _WORD and name() read it.
_COMPUTATION_HEAD = re.compile(r"(ENTRY[ \t]+)?+%?([A-Za-z0-9_][\w.\-]*)[ \t]*(?=[({])")
_OPERAND_NAMES = re.compile(_INDEX_COMMENT + r"%?([\w.\-]+)")
#: Where ``_Parser.read_fields`` puts each attribute it reads (fields of ``HloInstruction``
#: after ``literal``: dimensions, slice, padding, index, calls, to_apply), and their defaults.
_READ_FIELD_INDEX = {"dimensions": 0, "slice": 1, "padding": 2, "index": 3, "calls": 4, "to_apply": 5}
_NO_READ_FIELDS: tuple[Any, ...] = (None, None, None, None, (), None)
_NO_FIELD = object()  # read (checked), but into no field: condition=, body=, ...
_NO_ATTRIBUTES: MappingProxyType[str, str] = MappingProxyType({})  # shared: a view of a dict no one has
_COMPUTATION_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")  # one name, as hlo.attributes reads it
#: The attributes whose values are read into fields of ``HloInstruction`` (or checked).
_READ_ATTRIBUTES = frozenset(
    {"dimensions", "slice", "padding", "index", "to_apply", "calls", *COMPUTATION_REFERENCE_ATTRIBUTES}
)


#: Every shape read so far in this process, by its text: dumps repeat the same few hundred
#: shape texts thousands of times, and ``Shape`` values are immutable. Only shapes that
#: parsed are kept (an error is reported where its text stands); emptied when full.
_SHAPES: dict[str, Shape] = {}
_MAX_SHAPES = 16384  # as many as parse_shape keeps


def _clear_caches() -> None:
    """Forget the shapes and attribute values this module has read (for cold-start
    measurements; ``parse_shape`` keeps a cache of its own)."""
    _SHAPES.clear()
    _attribute_field.cache_clear()


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


def parse_module(text: str) -> HloModule:
    """Parse the text of an HLO module (``HloModule name ...`` and its computations)."""
    return _parse(text)[0]


class HloModuleStream:
    """An HLO module read one computation at a time, for modules too big to hold whole.

    The header (``name``, ``attributes``, ``entry_computation_layout``, ``sections``) is
    read when the stream is made; iterating yields the computations that
    ``parse_module(text).computations`` holds, equal and in the same order, each as soon
    as the next one has been read, so that a caller which keeps only what it needs of
    each (the audit keeps sizes and verdicts, not instructions and their attribute
    texts) never holds the whole module. ``position`` is how far into ``text`` the
    reading has got (for progress bars). A stream is read once.

    >>> stream = HloModuleStream('''
    ... HloModule m
    ... %add (x: f32[], y: f32[]) -> f32[] {
    ...   %x = f32[] parameter(0)
    ...   %y = f32[] parameter(1)
    ...   ROOT %s = f32[] add(%x, %y)
    ... }
    ... main {
    ...   %a = f32[4]{0} parameter(0)
    ...   ROOT %n = f32[4]{0} copy(%a)
    ... }''')
    >>> stream.name
    'm'
    >>> [(c.name, c.is_entry, len(c.instructions)) for c in stream]   # no ENTRY: the last is the entry
    [('add', False, 3), ('main', True, 2)]
    >>> stream.position == len(stream.text)
    True

    Errors are those of ``parse_module``; one in a later computation is raised when the
    iteration reaches it, after the computations before it were yielded. One difference:
    the computation XLA creates for a shorthand async start (``call-start(...)``) is
    named ``async_wrapped`` (or ``async_wrapped.N``) avoiding the names of the
    computations read so far, where ``parse_module`` also avoids those after it.
    """

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"HloModuleStream expects a str, got {type(text).__name__}")
        self.text = text
        self._parser = _Parser(text, record_shapes=False)
        name, attributes, layout, sections = self._parser.header()
        self.name = name
        self.attributes = MappingProxyType(attributes)
        self.entry_computation_layout = layout
        self.sections = MappingProxyType(sections)
        self._read = False

    @property
    def position(self) -> int:
        """Characters of ``text`` read so far."""
        return self._parser.pos

    def __iter__(self) -> Iterator[HloComputation]:
        if self._read:
            raise RuntimeError("an HloModuleStream can be iterated only once")
        self._read = True
        computations = self._parser.stream()
        while True:
            # No cyclic garbage collection while a computation is built (see _parse);
            # the caller's own work between computations runs as the caller chose.
            collecting = gc.isenabled()
            gc.disable()
            try:
                computation = next(computations, None)
            finally:
                if collecting:
                    gc.enable()
            if computation is None:
                return
            yield computation


def iter_computations(text: str) -> Iterator[HloComputation]:
    """The computations of an HLO module one at a time: ``iter(HloModuleStream(text))``.

    >>> [c.name for c in iter_computations("HloModule m\\nENTRY e {\\n  ROOT p = f32[2]{0} parameter(0)\\n}")]
    ['e']
    """
    return iter(HloModuleStream(text))


def _parse(text: str, record_shapes: bool = False) -> tuple[HloModule, list[tuple[str, Shape]]]:
    """The module, and (if asked) every shape text in it with its parsed value."""
    if not isinstance(text, str):
        raise TypeError(f"parse_module expects a str, got {type(text).__name__}")
    parser = _Parser(text, record_shapes)
    # The parse creates many small objects and no reference cycles: the cycle collector's
    # passes over them are wasted work (25% of the time on a 10 MB module).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return parser.module(), parser.recorded
    finally:
        if collecting:
            gc.enable()


class _Parser:
    def __init__(self, text: str, record_shapes: bool) -> None:
        self.text = text
        self.pos = 0
        self.shapes = _SHAPES
        self.record_shapes = record_shapes
        self.recorded: list[tuple[str, Shape]] = []
        self.long_string: tuple[int, int] | None = None  # the last string read over lines

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
        if pos < len(self.text) and self.text[pos] not in _GAP_START:
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
        m = _NAME.match(self.text, pos)
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
        m = _NAME.match(self.text, pos)
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
                layout = _LAYOUT_START.match(text, end)
                if layout is not None:  # a layout with nested braces, e.g. {1,0:P(s32[2]{0})}
                    end = self.balanced_end(text.rindex("{", end, layout.end()))
            return end
        if c == "b" and text.startswith("b(", pos):
            return self.balanced_end(pos + 1)
        if _ARRAY_HEAD.match(text, pos):
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
            layout = _ENTRY_LAYOUT.match(text, pos)  # '{(shapes)->shape}': balanced, as read below
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
                if pos >= len(text) or text[pos] not in _GAP_START:
                    break  # the common case: no attributes
                pos = self.skip()
                if not text.startswith(",", pos):
                    break
            flat = _FLAT_ATTRIBUTE.match(text, pos)  # ", key=value" on one line, in one match
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

    # -------------------------------------------------------------------- module
    def header(
        self,
    ) -> tuple[str, dict[str, str], EntryComputationLayout | None, dict[str, tuple[tuple[int, str], ...]]]:
        """``HloModule name, key=value, ...`` and the stack-frame sections after it."""
        pos = self.skip()
        if not self.text.startswith("HloModule", pos) or _WORD.match(self.text, pos).group() != "HloModule":  # type: ignore[union-attr]
            raise self.error(f"expected 'HloModule' at the start of the module, found {self.found(pos)}")
        self.pos = pos + len("HloModule")
        name = self.name("the module name after 'HloModule'")
        attributes, starts = self.attributes()
        entry_layout = None
        if "entry_computation_layout" in attributes:
            entry_layout = self.entry_computation_layout(starts["entry_computation_layout"])
        return name, attributes, entry_layout, self.sections()

    def text_computations(self) -> Iterator[HloComputation]:
        """The computations as the text has them (no async wrappers, no default entry),
        checking names and ENTRY across the module; errors if there are none."""
        self.pending_async: list[tuple[int, HloInstruction, tuple[Shape, ...]]] = []
        self.names: set[str] = set()
        entry: str | None = None
        index = 0
        while self.skip() < len(self.text):
            start = self.pos
            self.computation_index = index
            computation = self.computation()
            if computation.name in self.names:
                raise self.error(f"computation '{computation.name}' is defined twice", start)
            self.names.add(computation.name)
            if computation.is_entry:
                if entry is not None:
                    raise self.error(
                        f"a second ENTRY computation ('{computation.name}' after '{entry}')", start
                    )
                entry = computation.name
            index += 1
            yield computation
        if not index:
            raise self.error(
                "expected a computation ('ENTRY name {' or 'name {'), found the end of the input"
            )

    def module(self) -> HloModule:
        name, attributes, entry_layout, sections = self.header()
        computations = list(self.text_computations())
        entry = next((c for c in computations if c.is_entry), None)
        if entry is None:  # XLA: without ENTRY, the last computation is the entry
            computations[-1] = entry = dataclasses.replace(computations[-1], is_entry=True)
        if self.pending_async:
            computations = self.async_wrappers(computations, self.names)
            entry = next(c for c in computations if c.is_entry)
        return HloModule(name, tuple(computations), entry, entry_layout, attributes, sections)

    def stream(self) -> Iterator[HloComputation]:
        """``module()``'s computations one at a time (see ``HloModuleStream``): each is
        yielded when the next one has been read (the last is the entry if none is marked),
        with its async wrappers before it."""
        held: list[HloComputation] = []
        entry_seen = False
        for index, computation in enumerate(self.text_computations()):
            entry_seen = entry_seen or computation.is_entry
            yield from held
            held = [computation]
            if self.pending_async:  # wrappers named after the computations read so far
                held = self.async_wrappers(held, self.names, first_index=index)
                self.pending_async.clear()
        if not entry_seen:
            held[-1] = dataclasses.replace(held[-1], is_entry=True)
        yield from held

    def async_wrappers(
        self, computations: list[HloComputation], names: set[str], first_index: int = 0
    ) -> list[HloComputation]:
        """Give every shorthand async start (``call-start(...)``) its wrapped computation.

        XLA's parser reads ``%s = ((operands), result, state) call-start(%x), to_apply=%f``
        as an ``async-start`` whose computation ``async_wrapped`` holds one parameter per
        operand and the wrapped ``call`` (with the remaining attributes) as its root. The
        computation is created here in the same way, so that the module has the
        computations XLA's has, and the start instruction's ``calls`` names it.
        """
        by_computation: dict[int, list[tuple[HloInstruction, tuple[Shape, ...]]]] = {}
        for index, instruction, operand_shapes in self.pending_async:
            by_computation.setdefault(index, []).append((instruction, operand_shapes))
        result: list[HloComputation] = []
        for index, computation in enumerate(computations):
            starts = by_computation.get(first_index + index)
            if not starts:
                result.append(computation)
                continue
            replaced: dict[str, HloInstruction] = {}
            for start, operand_shapes in starts:
                wrapper_name = _unique("async_wrapped", names)
                params = tuple(
                    HloInstruction(_unique("async_param", set(), i), shape, "parameter", parameter_number=i)
                    for i, shape in enumerate(operand_shapes)
                )
                shape = start.shape
                wrapped_shape = (
                    shape.elements[1] if isinstance(shape, TupleShape) and len(shape.elements) > 1 else shape
                )
                attributes = {k: v for k, v in start.attributes.items() if k != "async_execution_thread"}
                wrapped = HloInstruction(
                    start.name,
                    wrapped_shape,
                    start.opcode.removesuffix("-start"),
                    tuple(HloOperand(p.name, p.shape) for p in params),
                    attributes,
                    is_root=True,
                    dimensions=start.dimensions,
                    slice=start.slice,
                    padding=start.padding,
                    index=start.index,
                    calls=start.calls,
                    to_apply=start.to_apply,
                )
                result.append(HloComputation(wrapper_name, (*params, wrapped)))
                replaced[start.name] = dataclasses.replace(start, calls=(*start.calls, wrapper_name))
            result.append(
                dataclasses.replace(
                    computation, instructions=tuple(replaced.get(i.name, i) for i in computation.instructions)
                )
            )
        return result

    def entry_computation_layout(self, start: int) -> EntryComputationLayout:
        fast = _ENTRY_LAYOUT.match(self.text, start)
        if fast is not None:  # shapes that are arrays or tuples of arrays, on one line
            shapes = tuple(
                self.shape_text(p.start(1), p.end(1))
                for p in _LISTED_SHAPE.finditer(self.text, fast.start(1), fast.end(1))
            )
            return EntryComputationLayout(shapes, self.shape_text(fast.start(2), fast.end(2)))
        saved = self.pos
        self.pos = start
        self.expect("{", "to open entry_computation_layout")
        self.expect("(", "to open the parameter shapes of entry_computation_layout")
        params: list[Shape] = []
        if not self.accept(")"):
            while True:
                params.append(self.shape())
                if self.accept(")"):
                    break
                self.expect(",", "or ')' between parameter shapes")
        self.expect("->", "between the parameter shapes and the result shape")
        result = self.shape()
        self.expect("}", "to close entry_computation_layout")
        self.pos = saved
        return EntryComputationLayout(tuple(params), result)

    def sections(self) -> dict[str, tuple[tuple[int, str], ...]]:
        sections: dict[str, tuple[tuple[int, str], ...]] = {}
        while True:
            pos = self.skip()
            m = _WORD.match(self.text, pos)
            if m is None or m.group() not in SECTION_NAMES:
                return sections
            self.pos = m.end()
            if self.peek() in ("{", "("):  # a computation that happens to have this name
                self.pos = pos
                return sections
            entries: list[tuple[int, str]] = []
            body = _SECTION_ENTRIES.match(self.text, self.pos)  # the common entries, in one match
            if body is not None and body.end() > self.pos:
                entries = [(int(n), v) for n, v in _SECTION_ENTRY.findall(self.text, self.pos, body.end())]
                self.pos = body.end()
            while True:
                pos = self.skip()
                number = _INT.match(self.text, pos)
                if number is None:
                    break
                self.pos = number.end()
                start = self.skip()
                if self.text.startswith(('"', "'"), start):
                    end = self.string_end(start)
                elif self.text.startswith("{", start):
                    end = self.balanced_end(start)
                else:
                    raise self.error(
                        f"expected a string or '{{...}}' in {m.group()}, found {self.found(start)}"
                    )
                entries.append((int(number.group()), self.text[start:end]))
                self.pos = end
            sections[m.group()] = tuple(entries)

    def computation(self) -> HloComputation:
        pos = self.skip()
        head = _COMPUTATION_HEAD.match(self.text, pos)  # "[ENTRY] name" and a '(' or '{' after it
        if head is not None:
            is_entry, name = head.group(1) is not None, head.group(2)
            self.pos = head.end()
        else:
            is_entry = False
            m = _WORD.match(self.text, pos)
            if m is not None and m.group() == "ENTRY":
                is_entry = True
                self.pos = m.end()
            name = self.name("a computation name (or 'ENTRY')")
        parameters = result = None
        if self.peek() == "(":
            parameters, result = self.signature()
        pos = self.skip()
        if self.text.startswith("{", pos):
            self.pos = pos + 1
        else:
            self.expect("{", f"to open the body of computation '{name}'")
        instructions: list[HloInstruction] = []
        seen: dict[str, Shape] = {}
        roots = 0
        opened = start = self.pos - 1
        text = self.text
        size = len(text)
        flat_match = _FLAT_INSTRUCTION.match
        while True:
            pos = self.pos
            if pos >= size or text[pos] in _GAP_START:  # (a one-match instruction ends at a token)
                pos = self.skip()
            if text.startswith("}", pos):
                self.pos = pos + 1
                break
            if pos >= len(text):
                reason = f"computation '{name}' (its '{{' is at {self.where(opened)}) is never closed: expected '}}'"
                if instructions and _LINE_OF_CLOSER.search(text, start, pos):  # it took the body's '}'
                    reason += (
                        f"; the last instruction, '{instructions[-1].name}' at {self.where(start)}, "
                        "runs on to the end: is a bracket or a string in it never closed?"
                    )
                raise self.error(reason)
            start = pos
            flat = flat_match(text, pos)
            instruction = self.flat_instruction(flat) if flat is not None else None
            if instruction is None:
                self.pos = pos
                instruction = self.instruction_by_parts(pos)
            if instruction.name in seen:
                raise self.error(f"instruction '{instruction.name}' is defined twice in '{name}'", start)
            seen[instruction.name] = instruction.shape
            if instruction.opcode.endswith("-start") and instruction.opcode not in NATIVE_START_OPCODES:
                self.pending_async.append(
                    (self.computation_index, instruction, self.operand_shapes(instruction, seen, start))
                )
            roots += instruction.is_root
            if roots > 1 and instruction.is_root:
                raise self.error(f"a second ROOT instruction in computation '{name}'", start)
            instructions.append(instruction)
        if not instructions:
            raise self.error(f"computation '{name}' has no instructions", self.pos - 1)
        attributes, _ = self.attributes()
        return trusted_computation(
            name, tuple(instructions), is_entry, parameters, result, MappingProxyType(attributes)
        )

    def operand_shapes(
        self, instruction: HloInstruction, shapes: dict[str, Shape], start: int
    ) -> tuple[Shape, ...]:
        result = []
        for operand in instruction.operands:
            shape = operand.shape if operand.shape is not None else shapes.get(operand.name)
            if shape is None:
                raise self.error(
                    f"operand '{operand.name}' of '{instruction.name}' is not defined before it", start
                )
            result.append(shape)
        return tuple(result)

    def signature_parameters(self, start: int, end: int) -> tuple[tuple[str, Shape], ...]:
        """The ``(name, shape)`` pairs ``_SIGNATURE`` matched between ``start`` and ``end``."""
        if not self.record_shapes:
            shapes = self.shapes
            try:  # shapes read before: looked up by their text alone
                return tuple(
                    [
                        (name, shapes[shape])
                        for name, shape in _SIGNATURE_PARAMETER.findall(self.text, start, end)
                    ]
                )
            except KeyError:
                pass
        return tuple(
            (p.group(1), self.shape_text(p.start(2), p.end(2)))
            for p in _SIGNATURE_PARAMETER.finditer(self.text, start, end)
        )

    def signature(self) -> tuple[tuple[tuple[str, Shape], ...], Shape]:
        fast = _SIGNATURE.match(self.text, self.skip())
        if fast is not None:
            end = fast.end(2)
            # The careful reader would take a layout after a gap ("f32[2] {0}") as an array
            # result's: then it reads this header (the body's '{' never looks like one).
            if self.text[end - 1] in "})" or _LAYOUT_START.match(self.text, end) is None:
                named = self.signature_parameters(fast.start(1), fast.end(1))
                self.pos = end
                return named, self.shape_text(fast.start(2), end)
        self.expect("(", "to open the parameter list")
        params: list[tuple[str, Shape]] = []
        if not self.accept(")"):
            while True:
                pname = self.name("a parameter name")
                self.expect(":", f"after the parameter name '{pname}'")
                params.append((pname, self.shape()))
                if self.accept(")"):
                    break
                self.expect(",", "or ')' between parameters")
        self.expect("->", "after the parameter list")
        return tuple(params), self.shape()

    # --------------------------------------------------------------- instructions
    def instruction(self) -> HloInstruction:
        pos = self.skip()
        flat = _FLAT_INSTRUCTION.match(self.text, pos)
        if flat is not None:
            instruction = self.flat_instruction(flat)
            if instruction is not None:
                return instruction
            self.pos = pos
        return self.instruction_by_parts(pos)

    def flat_instruction(self, m: re.Match[str]) -> HloInstruction | None:
        """The instruction ``_FLAT_INSTRUCTION`` matched, or ``None`` where the match is not
        the whole instruction or the text is wrong (the caller then reads it piece by piece
        and reports the error): what ``instruction_by_parts`` gives on the same text, from
        one match. The match ends after the line break, at the next token."""
        root, name, shape_text, opcode, names, attribute_text, last_key, last_value = m.groups()
        # The shape first: where it is wrong, that is the error the careful reader reports.
        shape = None if self.record_shapes else self.shapes.get(shape_text)
        if shape is None:
            shape = self.shape_text(m.start(3), m.end(3))
        operands: tuple[HloOperand, ...] = ()
        parameter_number = literal = None
        if opcode == "parameter":
            if names is None or not names.isdigit() or not names.isascii():
                return None
            parameter_number = int(names)
        elif opcode == "constant":
            literal = names or ""
        elif not names:
            pass
        elif names[0] == "{":
            return None  # a literal where operands belong: reported by the piece-by-piece reader
        elif "[" in names:  # some operands have shapes: names read as _Parser.name does
            operands = self.typed_operands(m.start(5), m.end(5))
            if not operands:
                return None  # an error: reported by the piece-by-piece reader
        elif "/" in names:  # '/*index=5*/' comments
            operands = tuple(map(trusted_operand, _OPERAND_NAMES.findall(names)))
        else:  # names, commas and blanks only: '%' starts a name, blanks are not in one
            bare = names.replace("%", "").replace(" ", "").replace("\t", "")
            operands = tuple(map(trusted_operand, bare.split(",")))
        fields = _NO_READ_FIELDS
        if attribute_text:
            if self.text.find("=", m.start(6), m.start(7)) < 0:  # one attribute: the last
                attributes = {last_key: last_value}
            else:
                pairs = _FLAT_ATTRIBUTE.findall(attribute_text)
                attributes = dict(pairs)
                if len(attributes) < len(pairs):
                    return None  # a key given twice: reported by the piece-by-piece reader
            if not _READ_ATTRIBUTES.isdisjoint(attributes):
                read = self.read_fields(attributes)
                if read is None:
                    return None  # a bad value: reported by the piece-by-piece reader
                fields = read
            view = MappingProxyType(attributes)
        else:
            view = _NO_ATTRIBUTES
        self.pos = m.end()
        return trusted_instruction(
            name,
            shape,
            opcode,
            operands,
            view,
            root is not None,
            parameter_number,
            literal,
            *fields,
        )

    def typed_operands(self, start: int, end: int) -> tuple[HloOperand, ...]:
        """The operands ``_FLAT_INSTRUCTION`` matched between ``start`` and ``end`` where
        some have shapes (``f32[2]{0} %a, %b``); ``()`` if a name is not what ``name`` reads."""
        found: list[tuple[str, int, int]] = []  # (name, shape start, shape end; -1 if none)
        for o in _TYPED_OPERAND.finditer(self.text, start, end):
            plain = _OPERAND_NAME.fullmatch(o.group(2))
            if plain is None:
                return ()
            found.append((plain.group(1), o.start(1), o.end(1)))
        return tuple(
            trusted_operand(name, self.shape_text(start, end) if start >= 0 else None)
            for name, start, end in found
        )

    def read_fields(self, attributes: dict[str, str]) -> tuple[Any, ...] | None:
        """``(dimensions, slice, padding, index, calls, to_apply)`` read from the attributes
        that have them, as ``parsed_attributes`` reads them; ``None`` if a value is wrong."""
        fields = list(_NO_READ_FIELDS)
        for key, value in attributes.items():
            if key in _READ_ATTRIBUTES:
                try:
                    found = _attribute_field(key, value)
                except AttributeValueError:
                    return None
                if found is not _NO_FIELD:
                    fields[_READ_FIELD_INDEX[key]] = found
        return tuple(fields)

    def instruction_by_parts(self, pos: int) -> HloInstruction:
        text = self.text
        head = _INSTRUCTION_HEAD.match(text, pos)  # "[ROOT] name = " on one line
        if head is not None:
            is_root, name = head.group(1) is not None, head.group(2)
            self.pos = head.end()
        else:
            root = _ROOT.match(text, pos)
            is_root = root is not None
            if root is not None:
                self.pos = root.end()
            m = _NAME.match(text, self.skip())
            if m is None:
                raise self.error(f"expected an instruction name or '}}', found {self.found()}")
            name = m.group(1)
            self.pos = m.end()
            self.expect("=", f"after the instruction name '{name}'")
        shapeless = _SHAPELESS.match(text, self.skip())
        if shapeless is not None and shapeless.group(1) != "b":  # 'b(' opens a buffer shape
            raise self.error(
                f"instruction '{name}' has no result shape before its opcode '{shapeless.group(1)}': "
                "XLA infers the shape of some opcodes, this parser reads it from the text "
                f"(write it: '{name} = f32[2]{{0}} {shapeless.group(1)}(...)')"
            )
        shape = self.shape()
        op = _OPCODE_OPEN.match(text, self.pos)  # " opcode(" on one line
        if op is not None:
            opcode = op.group(1)
            self.pos = op.end()
        else:
            pos = self.skip()
            op = _OPCODE.match(text, pos)
            if op is None:
                raise self.error(f"expected an opcode after the shape of '{name}', found {self.found(pos)}")
            opcode = op.group()
            self.pos = op.end()
            self.expect("(", f"after the opcode '{opcode}'")
        operands: tuple[HloOperand, ...] = ()
        parameter_number = literal = None
        if opcode == "parameter":
            number = _INT.match(text, self.skip())
            if number is None or number.group().startswith("-"):
                raise self.error(f"expected a parameter number in 'parameter(N)', found {self.found()}")
            parameter_number = int(number.group())
            self.pos = number.end()
            self.expect(")", "after the parameter number")
        elif opcode == "constant":
            end = self.balanced_end(self.pos - 1)
            literal = text[self.pos : end - 1].strip()
            self.pos = end
        else:
            operands = self.operands()
        attributes, starts = self.attributes()
        parsed = self.parsed_attributes(attributes, starts) if attributes else {}
        return HloInstruction(
            name,
            shape,
            opcode,
            operands,
            MappingProxyType(attributes),
            is_root,
            parameter_number,
            literal,
            **parsed,
        )

    def operands(self) -> tuple[HloOperand, ...]:
        text = self.text
        simple = _SIMPLE_OPERANDS.match(text, self.pos)
        if simple is not None:
            self.pos = simple.end()
            names = simple.group(1)
            if not names:
                return ()
            return tuple(HloOperand(n.strip().removeprefix("%")) for n in names.split(","))
        operands: list[HloOperand] = []
        if self.accept(")"):
            return ()
        while True:
            pos = self.skip()
            shape = None
            c = text[pos] if pos < len(text) else ""
            if c == "(" or _ARRAY_HEAD.match(text, pos) or text.startswith("b(", pos):
                shape = self.shape()
            operands.append(HloOperand(self.name("an operand name"), shape))
            if self.accept(")"):
                return tuple(operands)
            self.expect(",", "or ')' between operands")

    def parsed_attributes(self, attributes: dict[str, str], starts: dict[str, int]) -> dict[str, Any]:
        """The fields of ``HloInstruction`` read from the attributes that have them."""
        parsed: dict[str, Any] = {}
        for key, value in attributes.items():
            if key in _READ_ATTRIBUTES:
                try:
                    found = _attribute_field(key, value)
                except AttributeValueError as e:
                    raise self.error(f"in attribute '{key}': {e.reason}", starts[key] + e.offset) from None
                if found is not _NO_FIELD:
                    parsed[key] = found
        return parsed


@functools.lru_cache(maxsize=16384)
def _attribute_field(key: str, value: str) -> Any:
    """What the attribute ``key=value`` sets in ``HloInstruction``'s field ``key``
    (``_NO_FIELD`` for references checked but kept only as text: ``condition``, ``body``,
    ...); ``AttributeValueError`` if the value is wrong. Cached: dumps repeat the same
    ``slice={[0:8], [0:128]}`` and ``index=0`` thousands of times, and the values are
    immutable.

    >>> _attribute_field("slice", "{[0:2]}"), _attribute_field("calls", "%f"), _attribute_field("index", "1")
    ((SliceDimension(start=0, limit=2, stride=1),), ('f',), 1)
    """
    if key == "calls" or key == "to_apply":
        plain = _COMPUTATION_NAME.fullmatch(value)  # '%name': what computation_names reads
        if plain is not None:
            return (plain.group(1),) if key == "calls" else plain.group(1)
        if key == "calls":
            return computation_names(value)
        return _one_name(value)[0]
    if key == "dimensions":
        return parse_int_list(value)
    if key == "slice":
        return parse_slice(value)
    if key == "padding":
        return parse_padding(value)
    if key == "index":
        return parse_index(value)
    computation_names(value)  # a reference: checked here, read via .called_computations
    return _NO_FIELD


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


def _unique(base: str, taken: set[str], number: int = 0) -> str:
    """``base``, or ``base.N`` with the least N that is free (XLA's name uniquifier style)."""
    name = base if number == 0 else f"{base}.{number}"
    while name in taken:
        number += 1
        name = f"{base}.{number}"
    taken.add(name)
    return name


def _one_name(value: str) -> tuple[str]:
    names = computation_names(value)
    if len(names) != 1:
        raise AttributeValueError(f"expected one computation name, found {len(names)}")
    return (names[0],)
