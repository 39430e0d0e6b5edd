"""The parsed form of an HLO module: plain frozen values, nothing executable.

A module is a list of computations; a computation is a list of instructions, one of
them the root; an instruction has a name, a result shape, an opcode, operands and
attributes. Shapes are this package's ``Shape`` values (parsed by ``parse_shape``).

>>> from layout_algebra.hlo import parse_module
>>> m = parse_module('''
... HloModule tiny
... ENTRY main {
...   p = f32[8,128]{1,0:T(8,128)} parameter(0)
...   ROOT t = f32[128,8]{0,1:T(8,128)} transpose(p), dimensions={1,0}
... }''')
>>> t = m.entry.root
>>> t.opcode, str(t.shape), t.dimensions, [o.name for o in t.operands]
('transpose', 'f32[128,8]{0,1:T(8,128)}', (1, 0), ['p'])
>>> t.attributes["dimensions"]                  # every attribute is also kept as raw text
'{1,0}'
>>> m.entry.instruction("p").parameter_number
0

Attributes that layout analysis needs are parsed (``dimensions``, ``slice``,
``padding``, ``index``, ``calls``, ``to_apply`` and the other references to
computations); all others, ``metadata`` and ``backend_config`` included, are kept only
as raw text in ``attributes``.

``to_text()`` prints a module (a computation, an instruction) back as HLO text, one
instruction a line, that parses to an equal value:

>>> print(t.to_text())
ROOT %t = f32[128,8]{0,1:T(8,128)} transpose(%p), dimensions={1,0}
>>> parse_module(m.to_text()) == m
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from types import MappingProxyType

from layout_algebra.hlo.attributes import PaddingDimension, SliceDimension, computation_names
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import Shape

__all__ = [
    "COMPUTATION_REFERENCE_ATTRIBUTES",
    "NATIVE_START_OPCODES",
    "EntryComputationLayout",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloOperand",
    "PaddingDimension",
    "SliceDimension",
]

#: Attributes whose value names one computation, or a ``{%a, %b}`` list of them.
COMPUTATION_REFERENCE_ATTRIBUTES = (
    "calls",
    "to_apply",
    "condition",
    "body",
    "branch_computations",
    "true_computation",
    "false_computation",
    "called_computations",
)
#: ``*-start`` opcodes that are instructions of their own. Any other ``X-start`` is XLA's
#: shorthand for ``async-start`` wrapping an ``X``, whose wrapped computation the parser
#: creates (``hlo.parser``) and ``HloModule.to_text`` leaves out again.
NATIVE_START_OPCODES = frozenset(
    {"async-start", "all-gather-start", "all-reduce-start", "collective-permute-start", "copy-start"}
)


@dataclass(frozen=True, slots=True)
class HloOperand:
    """An operand: the name of the instruction it refers to, and its shape if the text gave it."""

    name: str
    shape: Shape | None = None

    def __str__(self) -> str:
        return f"{self.shape} %{self.name}" if self.shape is not None else f"%{self.name}"


@dataclass(frozen=True, slots=True)
class HloInstruction:
    """``[ROOT] name = shape opcode(operands), attribute=value, ...``.

    ``operands`` holds instruction references. A ``parameter``'s number is in
    ``parameter_number`` and a ``constant``'s literal text in ``literal``; they have no
    operands. ``attributes`` maps every attribute name to its raw value text.
    """

    name: str
    shape: Shape
    opcode: str
    operands: tuple[HloOperand, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    is_root: bool = False
    parameter_number: int | None = None
    literal: str | None = None
    dimensions: tuple[int, ...] | None = None
    slice: tuple[SliceDimension, ...] | None = None
    padding: tuple[PaddingDimension, ...] | None = None
    index: int | None = None
    calls: tuple[str, ...] = ()
    to_apply: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.attributes, MappingProxyType):
            object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))

    @property
    def metadata(self) -> str | None:
        """The raw ``metadata={...}`` text, if any."""
        return self.attributes.get("metadata")

    @property
    def operand_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.operands)

    @property
    def called_computations(self) -> tuple[str, ...]:
        """Names of every computation this instruction refers to: ``calls``, ``to_apply``,
        then ``condition``, ``body``, branches, ... in attribute order, without repeats."""
        names: list[str] = list(self.calls)
        if self.to_apply is not None:
            names.append(self.to_apply)
        for key, value in self.attributes.items():
            if key in COMPUTATION_REFERENCE_ATTRIBUTES and key not in ("calls", "to_apply"):
                names.extend(computation_names(value))
        return tuple(dict.fromkeys(names))

    @property
    def is_async_shorthand(self) -> bool:
        """``X-start(...)`` standing for an ``async-start`` that wraps an ``X`` (its last
        ``calls`` entry names the computation the parser made for it)."""
        return self.opcode.endswith("-start") and self.opcode not in NATIVE_START_OPCODES

    def to_text(self) -> str:
        """The instruction as one line of HLO text (names with ``%``, attributes raw)."""
        if self.opcode == "parameter":
            inside = str(self.parameter_number)
        elif self.opcode == "constant":
            inside = self.literal or ""
        else:
            inside = ", ".join(map(str, self.operands))
        attributes = "".join(f", {key}={value}" for key, value in self.attributes.items())
        root = "ROOT " if self.is_root else ""
        return f"{root}%{self.name} = {self.shape} {self.opcode}({inside}){attributes}"


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[object, object], None], ...]:
    """The ``__set__`` of each named slot of ``cls``: writes that bypass a frozen class's ``__setattr__``."""
    return tuple(vars(cls)[name].__set__ for name in names)


_OPERAND_SETTERS = _slot_setters(HloOperand, ("name", "shape"))
_INSTRUCTION_FIELDS = tuple(f.name for f in fields(HloInstruction))
_INSTRUCTION_SETTERS = _slot_setters(HloInstruction, _INSTRUCTION_FIELDS)
(
    _set_name,
    _set_shape,
    _set_opcode,
    _set_operands,
    _set_attributes,
    _set_is_root,
    _set_parameter_number,
    _set_literal,
    _set_dimensions,
    _set_slice,
    _set_padding,
    _set_index,
    _set_calls,
    _set_to_apply,
) = _INSTRUCTION_SETTERS
_new = object.__new__


def trusted_operand(name: str, shape: Shape | None = None) -> HloOperand:
    """``HloOperand(name, shape)``, made in a third of the time (no ``__init__``).

    >>> trusted_operand("p") == HloOperand("p")
    True
    """
    operand = _new(HloOperand)
    _OPERAND_SETTERS[0](operand, name)
    _OPERAND_SETTERS[1](operand, shape)
    return operand


def trusted_instruction(
    name: str,
    shape: Shape,
    opcode: str,
    operands: tuple[HloOperand, ...],
    attributes: MappingProxyType[str, str],
    is_root: bool,
    parameter_number: int | None,
    literal: str | None,
    dimensions: tuple[int, ...] | None,
    slice: tuple[SliceDimension, ...] | None,
    padding: tuple[PaddingDimension, ...] | None,
    index: int | None,
    calls: tuple[str, ...],
    to_apply: str | None,
) -> HloInstruction:
    """``HloInstruction`` from all its fields, in order, without ``__init__``: for the
    parser, whose ``attributes`` are already a read-only mapping. Four times faster than
    the frozen dataclass's ``__init__`` (one slot write per field instead of
    ``object.__setattr__`` calls), and the same value:

    >>> from layout_algebra.model.syntax import parse_shape
    >>> s = parse_shape("f32[2]{0}")
    >>> made = trusted_instruction("c", s, "copy", (HloOperand("p"),), MappingProxyType({"k": "v"}),
    ...                            True, None, None, None, None, None, None, (), None)
    >>> made == HloInstruction("c", s, "copy", (HloOperand("p"),), {"k": "v"}, is_root=True)
    True
    """
    instruction = _new(HloInstruction)
    _set_name(instruction, name)
    _set_shape(instruction, shape)
    _set_opcode(instruction, opcode)
    _set_operands(instruction, operands)
    _set_attributes(instruction, attributes)
    _set_is_root(instruction, is_root)
    _set_parameter_number(instruction, parameter_number)
    _set_literal(instruction, literal)
    _set_dimensions(instruction, dimensions)
    _set_slice(instruction, slice)
    _set_padding(instruction, padding)
    _set_index(instruction, index)
    _set_calls(instruction, calls)
    _set_to_apply(instruction, to_apply)
    return instruction


@dataclass(frozen=True)
class HloComputation:
    """A named list of instructions with one root.

    ``parameters`` and ``result_shape`` come from a typed header
    ``%name (p: f32[2]) -> f32[2] {``; an untyped header ``name {`` leaves them ``None``.
    """

    name: str
    instructions: tuple[HloInstruction, ...]
    is_entry: bool = False
    parameters: tuple[tuple[str, Shape], ...] | None = None
    result_shape: Shape | None = None
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not self.instructions:
            raise InvalidArgumentError(f"computation {self.name!r} has no instructions")
        if not isinstance(self.attributes, MappingProxyType):
            object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))

    @property
    def root(self) -> HloInstruction:
        """The ``ROOT`` instruction, or the last one when none is marked (as XLA does)."""
        for instruction in self.instructions:
            if instruction.is_root:
                return instruction
        return self.instructions[-1]

    @cached_property
    def _by_name(self) -> dict[str, HloInstruction]:
        return {i.name: i for i in self.instructions}

    def instruction(self, name: str) -> HloInstruction:
        """The instruction called ``name`` (a leading ``%`` is ignored)."""
        try:
            return self._by_name[name.removeprefix("%")]
        except KeyError:
            raise KeyError(f"computation {self.name!r} has no instruction {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.removeprefix("%") in self._by_name

    def to_text(self) -> str:
        """The computation as HLO text: its header, one instruction a line, ``}``."""
        head = f"{'ENTRY ' if self.is_entry else ''}%{self.name}"
        if self.parameters is not None and self.result_shape is not None:
            named = ", ".join(f"{name}: {shape}" for name, shape in self.parameters)
            head += f" ({named}) -> {self.result_shape}"
        body = "".join(f"  {i.to_text()}\n" for i in self.instructions)
        attributes = "".join(f", {key}={value}" for key, value in self.attributes.items())
        return f"{head} {{\n{body}}}{attributes}"


def trusted_computation(
    name: str,
    instructions: tuple[HloInstruction, ...],
    is_entry: bool,
    parameters: tuple[tuple[str, Shape], ...] | None,
    result_shape: Shape | None,
    attributes: MappingProxyType[str, str],
) -> HloComputation:
    """``HloComputation`` from all its fields, without ``__init__``'s checks: for the parser,
    which has checked that there are instructions and made ``attributes`` read-only.

    >>> from layout_algebra.model.syntax import parse_shape
    >>> p = HloInstruction("p", parse_shape("f32[2]"), "parameter", parameter_number=0)
    >>> trusted_computation("c", (p,), True, None, None, MappingProxyType({})) == HloComputation("c", (p,), True)
    True
    """
    computation = _new(HloComputation)
    vars(computation).update(
        name=name,
        instructions=instructions,
        is_entry=is_entry,
        parameters=parameters,
        result_shape=result_shape,
        attributes=attributes,
    )
    return computation


@dataclass(frozen=True)
class EntryComputationLayout:
    """The module header's ``entry_computation_layout={(params...)->result}``."""

    parameter_shapes: tuple[Shape, ...]
    result_shape: Shape

    def __str__(self) -> str:
        return "{(" + ", ".join(map(str, self.parameter_shapes)) + f")->{self.result_shape}}}"


@dataclass(frozen=True)
class HloModule:
    """``HloModule name, key=value, ...`` followed by its computations.

    ``entry`` is the computation marked ``ENTRY``, or the last one when none is (XLA's
    rule). ``attributes`` keeps every header attribute as raw text; the stack-frame
    tables of recent dumps (``FileNames``, ``FunctionNames``, ``FileLocations``,
    ``StackFrames``) are kept raw in ``sections``: table name -> ((id, text), ...).
    """

    name: str
    computations: tuple[HloComputation, ...]
    entry: HloComputation
    entry_computation_layout: EntryComputationLayout | None = None
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    sections: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name in ("attributes", "sections"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    @cached_property
    def _by_name(self) -> dict[str, HloComputation]:
        return {c.name: c for c in self.computations}

    def computation(self, name: str) -> HloComputation:
        """The computation called ``name`` (a leading ``%`` is ignored)."""
        try:
            return self._by_name[name.removeprefix("%")]
        except KeyError:
            raise KeyError(f"module {self.name!r} has no computation {name!r}") from None

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    def instructions(self) -> Iterator[tuple[HloComputation, HloInstruction]]:
        """Every (computation, instruction) pair, in text order."""
        for computation in self.computations:
            for instruction in computation.instructions:
                yield computation, instruction

    def to_text(self) -> str:
        """The module as HLO text that parses to an equal module: the header and its
        attributes (raw), the stack-frame sections, then every computation except those
        the parser made for shorthand async starts (``call-start(...)``), which parsing
        the text makes again."""
        made = {i.calls[-1] for _, i in self.instructions() if i.is_async_shorthand and i.calls}
        header = f"HloModule {self.name}" + "".join(f", {k}={v}" for k, v in self.attributes.items())
        sections = [
            name + "".join(f"\n{number} {text}" for number, text in entries)
            for name, entries in self.sections.items()
        ]
        computations = [c.to_text() for c in self.computations if c.name not in made]
        return "\n\n".join([header, *sections, *computations]) + "\n"
