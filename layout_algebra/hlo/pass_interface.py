"""What a pass may change at a module's boundary: the interface, XLA:TPU's provisional
sub-byte tiling, precision, and bitcasts XLA's verifier refuses.

After layout assignment a pair is compared bit for bit, which needs both modules to have one
interface: :func:`interface_change` says why they do not. XLA:TPU finalizes the tiling of
8-bit and narrower entry parameters late (:func:`provisional_retiling`); passes such as
``bfloat16-propagation`` change element types on purpose (:func:`precision_changes`).

>>> from layout_algebra.hlo.parser import parse_module
>>> a = parse_module('''HloModule m, entry_computation_layout={(s8[64,128]{1,0:T(8,128)(4,1)})->s8[64,128]{1,0:T(32,128)(4,1)}}
... ENTRY e {
...   p = s8[64,128]{1,0:T(8,128)(4,1)} parameter(0)
...   ROOT c = s8[64,128]{1,0:T(32,128)(4,1)} copy(p)
... }''')
>>> interface_change(a, a)
''
>>> only_tiles_differ(a.entry.instructions[0].shape, a.entry.root.shape)
True
"""

from __future__ import annotations

import dataclasses

from layout_algebra.hlo.ir import HloModule
from layout_algebra.hlo.pass_cuts import Side
from layout_algebra.hlo.validity import bitcast_size_problem
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape

__all__ = [
    "interface_change",
    "invalid_bitcast",
    "only_tiles_differ",
    "parameter_shapes",
    "precision_changes",
    "provisional_bitcast",
    "provisional_interface",
    "provisional_parameters",
    "provisional_root_leaves",
    "retyped_instructions",
    "shape_leaves",
]


def invalid_bitcast(module: HloModule) -> str | None:
    """The first ``bitcast`` of ``module`` (concrete sizes) that changes its shape size, said."""
    for computation, instruction in module.instructions():
        if instruction.opcode != "bitcast" or len(instruction.operands) != 1:
            continue
        name = instruction.operands[0].name
        operand = computation.instruction(name).shape if name in computation else None
        if isinstance(operand, ArrayShape) and isinstance(instruction.shape, ArrayShape):
            problem = bitcast_size_problem(operand, instruction.shape)
            if problem is not None:
                return f"bitcast {instruction.name} {problem}"
    return None


def interface_change(a: HloModule, b: HloModule) -> str:
    """Why the later module's buffers cannot be compared bit for bit with the earlier's, or ``""``.

    After layout assignment the entry computation layout is fixed: a pass may not change
    it, and the root must have exactly its result layout — except for root leaves of 8 bits
    or fewer whose tiling alone differs, which XLA:TPU keeps provisional
    (:func:`provisional_interface`)."""
    la, lb = a.entry_computation_layout, b.entry_computation_layout
    if str(la) != str(lb):
        return f"the entry computation layout changed: {la} before, {lb} after"
    for module, when in ((a, "earlier"), (b, "later")):
        layout = module.entry_computation_layout
        if (
            layout is not None
            and provisional_root_leaves(module.entry.root.shape, layout.result_shape) is None
        ):
            return (
                f"the {when} module's root {module.entry.root.name} is {module.entry.root.shape}, "
                f"not the entry computation layout's result {layout.result_shape}"
            )
    return ""


def shape_leaves(shape: Shape, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Shape]]:
    """The array leaves of a (possibly nested tuple) shape, with their tuple indices.

    >>> from layout_algebra import parse_shape
    >>> [(p, str(s)) for p, s in shape_leaves(parse_shape("(f32[2]{0}, (s8[4]{0}, u8[])) "))]
    [((0,), 'f32[2]{0}'), ((1, 0), 's8[4]{0}'), ((1, 1), 'u8[]')]
    """
    if isinstance(shape, TupleShape):
        return [leaf for k, e in enumerate(shape.elements) for leaf in shape_leaves(e, (*path, k))]
    return [(path, shape)]


def provisional_root_leaves(root: Shape, declared: Shape) -> list[tuple[int, ...]] | None:
    """The leaves of ``root`` whose provisional sub-byte tiling differs from the entry
    computation layout's result ``declared``; ``None`` when ``root`` differs otherwise.

    >>> from layout_algebra import parse_shape
    >>> final = parse_shape("(bf16[8,128]{1,0:T(8,128)(2,1)}, s8[64,128]{1,0:T(32,128)(4,1)})")
    >>> provisional_root_leaves(parse_shape("(bf16[8,128]{1,0:T(8,128)(2,1)}, s8[64,128]{1,0:T(8,128)(4,1)})"), final)
    [(1,)]
    >>> provisional_root_leaves(final, final)
    []
    >>> provisional_root_leaves(parse_shape("(bf16[8,128]{1,0}, s8[64,128]{1,0:T(32,128)(4,1)})"), final) is None
    True
    """
    if str(root) == str(declared):
        return []
    ours, theirs = shape_leaves(root), shape_leaves(declared)
    if [p for p, _ in ours] != [p for p, _ in theirs]:
        return None
    found = []
    for (path, x), (_, y) in zip(ours, theirs, strict=True):
        if str(x) == str(y):
            continue
        if not only_tiles_differ(x, y):
            return None
        found.append(path)
    return found


def parameter_shapes(module: HloModule) -> dict[int, Shape]:
    return {
        i.parameter_number: i.shape
        for i in module.entry.instructions
        if i.opcode == "parameter" and i.parameter_number is not None
    }


def only_tiles_differ(x: Shape, y: Shape) -> bool:
    """Two arrays of one 8-bit or narrower type whose layouts differ in their tiles alone."""
    if not (isinstance(x, ArrayShape) and isinstance(y, ArrayShape)) or x.layout is None or y.layout is None:
        return False
    return (
        x.element_type == y.element_type
        and x.element_type.bit_width <= 8
        and x.dimensions == y.dimensions
        and dataclasses.replace(x.layout, tiles=()) == dataclasses.replace(y.layout, tiles=())
        and x.layout.tiles != y.layout.tiles
    )


def provisional_parameters(module: HloModule) -> list[int]:
    """The entry parameters of ``module`` whose tiling is still provisional: 8 bits or fewer,
    and another tiling than the entry computation layout declares for them."""
    layout = module.entry_computation_layout
    declared = layout.parameter_shapes if layout is not None else ()
    return [
        n
        for n, shape in sorted(parameter_shapes(module).items())
        if n < len(declared) and only_tiles_differ(shape, declared[n])
    ]


def provisional_interface(a: HloModule, b: HloModule) -> list[str] | str:
    """What of the interface XLA:TPU's provisional sub-byte tiling explains
    (:data:`~layout_algebra.hlo.passes.PROVISIONAL_TILING`): entry parameters whose tiling the
    pass finalized to the entry computation layout's, and root leaves whose tiling is still
    provisional (``"parameter 0"``, ``"root {1}"``); or why the interface differs otherwise.

    Physical mode compares buffers given the same parameter buffers: a parameter whose layout
    changed is a changed interface unless the provisional tiling explains it. Where it does, the
    buffers are the entry computation layout's, so the modules are compared as logical arrays,
    and only where no bitcast reads a provisional tiling (:func:`provisional_bitcast`)."""
    pa, pb = parameter_shapes(a), parameter_shapes(b)
    if sorted(pa) != sorted(pb):
        return f"the entry parameters changed: {sorted(pa)} before, {sorted(pb)} after"
    layout = b.entry_computation_layout
    declared = layout.parameter_shapes if layout is not None else ()
    said = []
    for n in sorted(pa):
        x, y = pa[n], pb[n]
        if str(x) == str(y):
            continue
        final = declared[n] if n < len(declared) else None
        if final is None or str(y) != str(final) or not only_tiles_differ(x, y):
            return (
                f"the rewrite changes the interface: parameter {n} is {x} before and {y} after "
                "(not a provisional sub-byte tiling finalized to the entry computation layout's)"
            )
        said.append(f"parameter {n}")
    roots: set[tuple[int, ...]] = set()
    for module in (a, b):
        if module.entry_computation_layout is not None:
            leaves = provisional_root_leaves(
                module.entry.root.shape, module.entry_computation_layout.result_shape
            )
            roots.update(leaves or ())
    said.extend(f"root {{{','.join(map(str, path))}}}" for path in sorted(roots))
    for module in (a, b) if said else ():
        problem = provisional_bitcast(module, bool(roots))
        if problem:
            return problem
    return said


def provisional_bitcast(module: HloModule, root_is_provisional: bool) -> str:
    """A ``bitcast`` of ``module`` whose meaning depends on a tiling that is provisional, said;
    ``""`` when there is none.

    A bitcast reinterprets bytes, so it reads its operand's tiling and writes its result's:
    where that tiling is provisional the bytes it reads are not yet decided. Refused: a bitcast
    of a provisional entry parameter, or (conservatively, since a fused or called parameter may
    be bound to one) of any fused or called parameter of 8 bits or fewer while the module has a
    provisional entry parameter; and while the root is provisional, any bitcast with a result
    of 8 bits or fewer. A bitcast to its operand's very shape is the identity and reads nothing."""
    provisional = set(provisional_parameters(module))
    for computation, instruction in module.instructions():
        if instruction.opcode != "bitcast" or instruction.operands[0].name not in computation:
            continue
        operand = computation.instruction(instruction.operands[0].name)
        if str(operand.shape) == str(instruction.shape):
            continue
        narrow_operand = isinstance(operand.shape, ArrayShape) and operand.shape.element_type.bit_width <= 8
        if operand.opcode == "parameter" and (
            (computation is module.entry and operand.parameter_number in provisional)
            or (computation is not module.entry and narrow_operand and provisional)
        ):
            return (
                f"bitcast {instruction.name} reads parameter {operand.name} through its tiling, which is "
                "provisional: the tiling matters, and it is not final"
            )
        shape = instruction.shape
        if root_is_provisional and isinstance(shape, ArrayShape) and shape.element_type.bit_width <= 8:
            return (
                f"bitcast {instruction.name} writes {shape} while the root's tiling is provisional: "
                "the tiling it writes may not be the final one"
            )
    return ""


def precision_changes(a: Side, b: Side) -> str:
    """The converts the later module has more of than the earlier, by types: what a
    precision-changing pass (``bfloat16-propagation``, ``float-type-correction``) adds."""

    def converts(side: Side) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for i in side.builder.instructions:
            if i.opcode == "convert" and i.operands and isinstance(i.shape, ArrayShape):
                source = side.builder.shapes[i.operands[0].name]
                if isinstance(source, ArrayShape) and source.element_type != i.shape.element_type:
                    key = f"{source.element_type.text}->{i.shape.element_type.text}"
                    found.setdefault(key, []).append(i.name.rsplit("/", 1)[-1])
        return found

    ca, cb = converts(a), converts(b)
    extra = [
        f"{', '.join(names[:3])} ({key})"
        for key, names in sorted(cb.items())
        if len(names) > len(ca.get(key, []))
    ]
    if not extra:
        return ""
    retyped = retyped_instructions(a, b)
    computed = f" and computes {', '.join(retyped[:4])} in another type" if retyped else ""
    return "precision change: the pass converts element types: " + "; ".join(extra) + computed + ". "


def retyped_instructions(a: Side, b: Side) -> list[str]:
    """``name (old type -> new type)`` for each instruction both modules define (same name,
    same computation) with another element type in the later one."""
    earlier = {
        a.builder.origin[i.name]: i.shape.element_type.text
        for i in a.builder.instructions
        if i.name in a.builder.origin and isinstance(i.shape, ArrayShape)
    }
    found = []
    for i in b.builder.instructions:
        key = b.builder.origin.get(i.name)
        if key in earlier and isinstance(i.shape, ArrayShape) and i.opcode != "parameter":
            if earlier[key] != i.shape.element_type.text:
                found.append(f"{i.opcode} {key[1]} ({earlier[key]} -> {i.shape.element_type.text})")
    return found
