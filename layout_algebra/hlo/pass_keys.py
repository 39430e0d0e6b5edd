"""Pass validation's structural keys: a module or computation as a key that is equal exactly when the
program is the same (names, instruction order and metadata aside), each node hashed once.
"""

from __future__ import annotations

import hashlib
import re

from layout_algebra.hlo.ir import (
    COMPUTATION_REFERENCE_ATTRIBUTES,
    HloInstruction,
    HloModule,
)
from layout_algebra.hlo.opcodes import (
    INERT_ATTRIBUTES,
    LAYOUT_SENSITIVE_OPCODES,
)
from layout_algebra.hlo.pass_canonical import (
    defines_computation,
)
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape


# ------------------------------------------------------------------------ structure
def plain_text(shape: Shape) -> str:
    """A shape's element type and dimensions, without its layout."""
    if isinstance(shape, TupleShape):
        return "(" + ", ".join(plain_text(s) for s in shape.elements) + ")"
    if isinstance(shape, ArrayShape):
        return f"{shape.element_type.text}[{','.join(map(str, shape.dimensions))}]"
    return str(shape)


def _has_layout_sensitive(module: HloModule, name: str, seen: set[str] | None = None) -> bool:
    seen = set() if seen is None else seen
    if name in seen:
        return False
    seen.add(name)
    computation = module.computation(name)
    for i in computation.instructions:
        if i.opcode == "bitcast" or i.opcode in LAYOUT_SENSITIVE_OPCODES:
            return True
        if any(
            _has_layout_sensitive(module, c, seen)
            for c in i.called_computations
            if defines_computation(module, c)
        ):
            return True
    return False


def computation_key(
    module: HloModule, name: str, _memo: dict[tuple[str, bool], str] | None = None, *, layouts: bool = False
) -> str:
    """A computation's structure as a hash of its root's expression DAG.

    Names and the order of the instructions (which schedulers change) do not matter;
    parameters are known by number. Layouts are part of it only when ``layouts`` or when
    the computation holds a ``bitcast`` or another layout-sensitive op (elsewhere layouts
    do not change what a computation computes)."""
    memo = {} if _memo is None else _memo
    key = (name, layouts)
    if key in memo:
        return memo[key]
    memo[key] = f"<recursive {name}>"
    computation = module.computation(name)
    with_layouts = layouts or _has_layout_sensitive(module, name)
    by_name = {i.name: i for i in computation.instructions}
    done: dict[str, str] = {}
    stack = [computation.root.name]
    while stack:
        top = stack[-1]
        if top in done:
            stack.pop()
            continue
        instr = by_name[top]
        pending = [o.name for o in instr.operands if o.name not in done and o.name in by_name]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        shape = str(instr.shape) if with_layouts else plain_text(instr.shape)
        ops = ",".join(done.get(o.name, o.name) for o in instr.operands)
        own = instr.parameter_number if instr.opcode == "parameter" else (instr.literal or "")
        text = f"{shape} {instr.opcode}({ops}) {own} {attributes_key(module, instr, memo)}"
        done[top] = hashlib.sha1(text.encode()).hexdigest()[:20]
    memo[key] = done[computation.root.name]
    return memo[key]


def attributes_key(module: HloModule, instr: HloInstruction, memo: dict[tuple[str, bool], str]) -> str:
    parts = []
    for key, value in sorted(instr.attributes.items()):
        if key in INERT_ATTRIBUTES and not (instr.opcode == "custom-call" and key == "backend_config"):
            continue
        if key in COMPUTATION_REFERENCE_ATTRIBUTES:
            names = re.findall(r"%?([A-Za-z0-9_][\w.\-]*)", value)
            value = ",".join(
                computation_key(module, n, memo) if defines_computation(module, n) else n for n in names
            )
        parts.append(f"{key}={value}")
    return ",".join(parts)


def module_key(module: HloModule) -> str:
    """The module as a program: equal keys mean the same computation, names and metadata aside."""
    memo: dict[tuple[str, bool], str] = {}
    entry = computation_key(module, module.entry.name, memo, layouts=True)
    layout = str(module.entry_computation_layout) if module.entry_computation_layout else ""
    return layout + entry
