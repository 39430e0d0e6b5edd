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
layout_algebra.hlo.parser_scanner.HloParseError: cannot parse HLO module at line 3, column 28: attribute 'E' must come before 'S' (XLA's order is D T L # * E S SC P M)
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
expression (``FLAT_INSTRUCTION``), whose groups are exactly what the careful reader would
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
from layout_algebra.hlo.parser_scanner import (
    ARRAY_HEAD,
    COMPUTATION_HEAD,
    COMPUTATION_NAME,
    ENTRY_LAYOUT,
    FLAT_ATTRIBUTE,
    FLAT_INSTRUCTION,
    GAP_START,
    INSTRUCTION_HEAD,
    INT,
    LAYOUT_START,
    LINE_OF_CLOSER,
    LISTED_SHAPE,
    NAME,
    NO_ATTRIBUTES,
    NO_FIELD,
    NO_READ_FIELDS,
    OPCODE,
    OPCODE_OPEN,
    OPERAND_NAME,
    OPERAND_NAMES,
    READ_ATTRIBUTES,
    READ_FIELD_INDEX,
    ROOT,
    SECTION_ENTRIES,
    SECTION_ENTRY,
    SHAPELESS,
    SHAPES,
    SIGNATURE,
    SIGNATURE_PARAMETER,
    SIMPLE_OPERANDS,
    TYPED_OPERAND,
    WORD,
    Scanner,
)
from layout_algebra.model.shapes import Shape, TupleShape

__all__ = ["SECTION_NAMES", "HloModuleStream", "iter_computations", "parse_module"]

#: The stack-frame tables printed after the module header by recent XLA versions.
SECTION_NAMES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def _clear_caches() -> None:
    """Forget the shapes and attribute values this module has read (for cold-start
    measurements; ``parse_shape`` keeps a cache of its own)."""
    SHAPES.clear()
    _attribute_field.cache_clear()


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


class _Parser(Scanner):
    def __init__(self, text: str, record_shapes: bool) -> None:
        self.text = text
        self.pos = 0
        self.shapes = SHAPES
        self.record_shapes = record_shapes
        self.recorded: list[tuple[str, Shape]] = []
        self.long_string: tuple[int, int] | None = None  # the last string read over lines

    # -------------------------------------------------------------------- module
    def header(
        self,
    ) -> tuple[str, dict[str, str], EntryComputationLayout | None, dict[str, tuple[tuple[int, str], ...]]]:
        """``HloModule name, key=value, ...`` and the stack-frame sections after it."""
        pos = self.skip()
        if not self.text.startswith("HloModule", pos) or WORD.match(self.text, pos).group() != "HloModule":  # type: ignore[union-attr]
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
        fast = ENTRY_LAYOUT.match(self.text, start)
        if fast is not None:  # shapes that are arrays or tuples of arrays, on one line
            shapes = tuple(
                self.shape_text(p.start(1), p.end(1))
                for p in LISTED_SHAPE.finditer(self.text, fast.start(1), fast.end(1))
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
            m = WORD.match(self.text, pos)
            if m is None or m.group() not in SECTION_NAMES:
                return sections
            self.pos = m.end()
            if self.peek() in ("{", "("):  # a computation that happens to have this name
                self.pos = pos
                return sections
            entries: list[tuple[int, str]] = []
            body = SECTION_ENTRIES.match(self.text, self.pos)  # the common entries, in one match
            if body is not None and body.end() > self.pos:
                entries = [(int(n), v) for n, v in SECTION_ENTRY.findall(self.text, self.pos, body.end())]
                self.pos = body.end()
            while True:
                pos = self.skip()
                number = INT.match(self.text, pos)
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
        head = COMPUTATION_HEAD.match(self.text, pos)  # "[ENTRY] name" and a '(' or '{' after it
        if head is not None:
            is_entry, name = head.group(1) is not None, head.group(2)
            self.pos = head.end()
        else:
            is_entry = False
            m = WORD.match(self.text, pos)
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
        flat_match = FLAT_INSTRUCTION.match
        while True:
            pos = self.pos
            if pos >= size or text[pos] in GAP_START:  # (a one-match instruction ends at a token)
                pos = self.skip()
            if text.startswith("}", pos):
                self.pos = pos + 1
                break
            if pos >= len(text):
                reason = f"computation '{name}' (its '{{' is at {self.where(opened)}) is never closed: expected '}}'"
                if instructions and LINE_OF_CLOSER.search(text, start, pos):  # it took the body's '}'
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
        """The ``(name, shape)`` pairs ``SIGNATURE`` matched between ``start`` and ``end``."""
        if not self.record_shapes:
            shapes = self.shapes
            try:  # shapes read before: looked up by their text alone
                return tuple(
                    [
                        (name, shapes[shape])
                        for name, shape in SIGNATURE_PARAMETER.findall(self.text, start, end)
                    ]
                )
            except KeyError:
                pass
        return tuple(
            (p.group(1), self.shape_text(p.start(2), p.end(2)))
            for p in SIGNATURE_PARAMETER.finditer(self.text, start, end)
        )

    def signature(self) -> tuple[tuple[tuple[str, Shape], ...], Shape]:
        fast = SIGNATURE.match(self.text, self.skip())
        if fast is not None:
            end = fast.end(2)
            # The careful reader would take a layout after a gap ("f32[2] {0}") as an array
            # result's: then it reads this header (the body's '{' never looks like one).
            if self.text[end - 1] in "})" or LAYOUT_START.match(self.text, end) is None:
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
        flat = FLAT_INSTRUCTION.match(self.text, pos)
        if flat is not None:
            instruction = self.flat_instruction(flat)
            if instruction is not None:
                return instruction
            self.pos = pos
        return self.instruction_by_parts(pos)

    def flat_instruction(self, m: re.Match[str]) -> HloInstruction | None:
        """The instruction ``FLAT_INSTRUCTION`` matched, or ``None`` where the match is not
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
            operands = tuple(map(trusted_operand, OPERAND_NAMES.findall(names)))
        else:  # names, commas and blanks only: '%' starts a name, blanks are not in one
            bare = names.replace("%", "").replace(" ", "").replace("\t", "")
            operands = tuple(map(trusted_operand, bare.split(",")))
        fields = NO_READ_FIELDS
        if attribute_text:
            if self.text.find("=", m.start(6), m.start(7)) < 0:  # one attribute: the last
                attributes = {last_key: last_value}
            else:
                pairs = FLAT_ATTRIBUTE.findall(attribute_text)
                attributes = dict(pairs)
                if len(attributes) < len(pairs):
                    return None  # a key given twice: reported by the piece-by-piece reader
            if not READ_ATTRIBUTES.isdisjoint(attributes):
                read = self.read_fields(attributes)
                if read is None:
                    return None  # a bad value: reported by the piece-by-piece reader
                fields = read
            view = MappingProxyType(attributes)
        else:
            view = NO_ATTRIBUTES
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
        """The operands ``FLAT_INSTRUCTION`` matched between ``start`` and ``end`` where
        some have shapes (``f32[2]{0} %a, %b``); ``()`` if a name is not what ``name`` reads."""
        found: list[tuple[str, int, int]] = []  # (name, shape start, shape end; -1 if none)
        for o in TYPED_OPERAND.finditer(self.text, start, end):
            plain = OPERAND_NAME.fullmatch(o.group(2))
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
        fields = list(NO_READ_FIELDS)
        for key, value in attributes.items():
            if key in READ_ATTRIBUTES:
                try:
                    found = _attribute_field(key, value)
                except AttributeValueError:
                    return None
                if found is not NO_FIELD:
                    fields[READ_FIELD_INDEX[key]] = found
        return tuple(fields)

    def instruction_by_parts(self, pos: int) -> HloInstruction:
        text = self.text
        head = INSTRUCTION_HEAD.match(text, pos)  # "[ROOT] name = " on one line
        if head is not None:
            is_root, name = head.group(1) is not None, head.group(2)
            self.pos = head.end()
        else:
            root = ROOT.match(text, pos)
            is_root = root is not None
            if root is not None:
                self.pos = root.end()
            m = NAME.match(text, self.skip())
            if m is None:
                raise self.error(f"expected an instruction name or '}}', found {self.found()}")
            name = m.group(1)
            self.pos = m.end()
            self.expect("=", f"after the instruction name '{name}'")
        shapeless = SHAPELESS.match(text, self.skip())
        if shapeless is not None and shapeless.group(1) != "b":  # 'b(' opens a buffer shape
            raise self.error(
                f"instruction '{name}' has no result shape before its opcode '{shapeless.group(1)}': "
                "XLA infers the shape of some opcodes, this parser reads it from the text "
                f"(write it: '{name} = f32[2]{{0}} {shapeless.group(1)}(...)')"
            )
        shape = self.shape()
        op = OPCODE_OPEN.match(text, self.pos)  # " opcode(" on one line
        if op is not None:
            opcode = op.group(1)
            self.pos = op.end()
        else:
            pos = self.skip()
            op = OPCODE.match(text, pos)
            if op is None:
                raise self.error(f"expected an opcode after the shape of '{name}', found {self.found(pos)}")
            opcode = op.group()
            self.pos = op.end()
            self.expect("(", f"after the opcode '{opcode}'")
        operands: tuple[HloOperand, ...] = ()
        parameter_number = literal = None
        if opcode == "parameter":
            number = INT.match(text, self.skip())
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
        simple = SIMPLE_OPERANDS.match(text, self.pos)
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
            if c == "(" or ARRAY_HEAD.match(text, pos) or text.startswith("b(", pos):
                shape = self.shape()
            operands.append(HloOperand(self.name("an operand name"), shape))
            if self.accept(")"):
                return tuple(operands)
            self.expect(",", "or ')' between operands")

    def parsed_attributes(self, attributes: dict[str, str], starts: dict[str, int]) -> dict[str, Any]:
        """The fields of ``HloInstruction`` read from the attributes that have them."""
        parsed: dict[str, Any] = {}
        for key, value in attributes.items():
            if key in READ_ATTRIBUTES:
                try:
                    found = _attribute_field(key, value)
                except AttributeValueError as e:
                    raise self.error(f"in attribute '{key}': {e.reason}", starts[key] + e.offset) from None
                if found is not NO_FIELD:
                    parsed[key] = found
        return parsed


@functools.lru_cache(maxsize=16384)
def _attribute_field(key: str, value: str) -> Any:
    """What the attribute ``key=value`` sets in ``HloInstruction``'s field ``key``
    (``NO_FIELD`` for references checked but kept only as text: ``condition``, ``body``,
    ...); ``AttributeValueError`` if the value is wrong. Cached: dumps repeat the same
    ``slice={[0:8], [0:128]}`` and ``index=0`` thousands of times, and the values are
    immutable.

    >>> _attribute_field("slice", "{[0:2]}"), _attribute_field("calls", "%f"), _attribute_field("index", "1")
    ((SliceDimension(start=0, limit=2, stride=1),), ('f',), 1)
    """
    if key == "calls" or key == "to_apply":
        plain = COMPUTATION_NAME.fullmatch(value)  # '%name': what computation_names reads
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
    return NO_FIELD


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
