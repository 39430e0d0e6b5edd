"""Mutants of real per-pass modules: one injected bug each, kept only when it really changes the meaning.

A mutant is the later module of a consecutive pair of per-pass dumps with ONE edit: a
bitcast's layout, a transpose's permutation, a slice window, a copy's memory space
(:data:`MOVEMENT_KINDS`, the original mutants), or one of the bugs passes are known for
(:func:`mutants` lists every kind): an edit in a ``while`` body or condition, a sort
comparator's direction or operands, a gather's dimension numbers, a provisional sub-byte
tiling finalized to another tiling, a reduce's dimensions, a dot's or convolution's
dimension numbers, a convert through another type, a pad's edges, an op of a fused
computation, a constant, swapped operands.

Every mutant is valid HLO by construction (shapes inferred for the edited op); whether it
changes what the module computes is decided by :func:`meaning_changed`: the package's NumPy
executor (``execute_compare.compare``) where it runs the two whole modules, else the
reference interpreter of :mod:`support.hlo_reference`, on random parameters. A mutant
neither can show different is not a mutant (discarded).

>>> text = '''HloModule m, entry_computation_layout={(f32[4,4]{1,0})->f32[4,4]{1,0}}
... ENTRY %e {
...   %p = f32[4,4]{1,0} parameter(0)
...   ROOT %t = f32[4,4]{1,0} transpose(%p), dimensions={1,0}
... }'''
>>> [(m.kind, m.description) for m in mutants(text, seed=0)]
[('transpose', 'transpose t permutation -> [0, 1] (e)')]
>>> meaning_changed(text, mutants(text, seed=0)[0].text, "logical")[0]
'changed'
"""

from __future__ import annotations

import itertools
import random
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from layout_algebra.hlo import parse_module
from layout_algebra.hlo.execute_compare import compare, random_array
from layout_algebra.hlo.execute_ops import MOVEMENT_SEMANTICS, ArrayValue
from layout_algebra.hlo.ir import HloModule
from layout_algebra.hlo.opcodes import EXECUTED_ELEMENTWISE_OPCODES
from layout_algebra.hlo.pass_interface import invalid_bitcast
from layout_algebra.hlo.validity import InvalidHlo, layout_problem
from layout_algebra.model.shapes import ArrayShape, TupleShape
from layout_algebra.model.syntax import parse_shape
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack
from support.hlo_reference import NotRun, ints, run_reference

#: The kinds of the original mutants (moved here from tests/hlo/test_passes.py).
MOVEMENT_KINDS = (
    "bitcast layout",
    "bitcast tiling",
    "transpose",
    "slice",
    "copy memory space",
    "copy dropped",
)
#: The kinds aimed at compute ops, loops and XLA:TPU's provisional tiling.
NEW_KINDS = (
    "loop body",
    "comparator",
    "gather dims",
    "provisional tiling",
    "reduce dims",
    "dot dims",
    "convert type",
    "pad config",
    "fusion op",
    "constant",
    "operand swap",
)


#: The kinds aimed at what the movement mutants never touch: more of them per instruction.
AIMED_KINDS = ("loop body", "comparator", "gather dims", "provisional tiling")


@dataclass(frozen=True)
class Mutant:
    """One bug injected into a module: its kind, what was done, the mutated text."""

    kind: str
    description: str
    text: str


_LINE = re.compile(r"^(\s*(?:ROOT )?%?([\w.\-]+) = )(\S+) ([a-z\-]+)\((.*)$")
_HEADER = re.compile(r"^(ENTRY )?%?([\w.\-]+) .*\{\s*$")
_OTHER_OP = {
    "add": "subtract",
    "subtract": "add",
    "multiply": "add",
    "divide": "multiply",
    "maximum": "minimum",
    "minimum": "maximum",
    "and": "or",
    "or": "and",
    "exponential": "tanh",
    "tanh": "exponential",
    "negate": "abs",
}
_SWAPPABLE = ("subtract", "divide", "compare", "power", "remainder", "shift-left", "shift-right-logical")
_FLIP = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}
_OFF_BY_ONE = {"LT": "LE", "LE": "LT", "GT": "GE", "GE": "GT"}


# ------------------------------------------------------------------ the module's structure
def roles(module: HloModule) -> dict[str, str]:
    """computation name -> ``entry``, ``loop`` (a while body or condition, or called from one),
    ``comparator``, ``reducer``, ``fused`` or ``called``."""
    role: dict[str, str] = {module.entry.name: "entry"}
    by_name = {c.name: c for c in module.computations}

    def visit(name: str, what: str) -> None:
        if name not in by_name or role.get(name) in ("loop", what):
            return
        role[name] = what
        for ins in by_name[name].instructions:
            for called in ins.called_computations:
                visit(called, _callee_role(ins.opcode, what, called, ins))

    for ins in module.entry.instructions:
        for called in ins.called_computations:
            visit(called, _callee_role(ins.opcode, "entry", called, ins))
    return role


def _callee_role(opcode: str, caller: str, name: str, ins: Any) -> str:
    if caller == "loop" or opcode == "while":
        return "loop"
    if opcode in ("sort", "custom-call"):  # a sort, or XLA:CPU's TopK: the comparator
        return "comparator"
    if opcode in ("reduce", "reduce-window", "scatter", "select-and-scatter", "all-reduce", "map"):
        return "reducer"
    return "fused" if opcode == "fusion" else "called"


def live_names(module: HloModule) -> set[tuple[str, str]]:
    """(computation, instruction) pairs the entry's root depends on, called computations included."""
    live: set[tuple[str, str]] = set()

    def walk(name: str) -> None:
        comp = module.computation(name)
        stack = [comp.root.name]
        while stack:
            n = stack.pop()
            if (comp.name, n) in live:
                continue
            live.add((comp.name, n))
            ins = comp.instruction(n)
            stack.extend(o.name for o in ins.operands)
            for called in ins.called_computations:
                if (called, module.computation(called).root.name) not in live:
                    walk(called)

    walk(module.entry.name)
    return live


def _lines_by_computation(text: str) -> Iterator[tuple[int, str, str]]:
    """(line number, computation name, line) for each instruction line."""
    current = ""
    for n, line in enumerate(text.split("\n")):
        header = _HEADER.match(line)
        if header and " = " not in line:
            current = header[2]
            continue
        if _LINE.match(line):
            yield n, current, line


# ------------------------------------------------------------------ shapes
def _shape_text_with(shape: str, element_type: str) -> str:
    return re.sub(r"^\w+\[", f"{element_type}[", shape)


def _placement_differs(shape: str, other: str) -> bool:
    """Do two layouts of one array put some element in another place? Random elements of the
    array's own type (two draws), packed by each layout, compared byte for byte."""
    try:
        a, b = parse_shape(shape), parse_shape(other)
        if not isinstance(a, ArrayShape) or not isinstance(b, ArrayShape) or layout_problem(b) is not None:
            return False
        for seed in (0, 1):
            values = random_array(a, np.random.default_rng(seed))
            x, y = pack(values, a, fill=0), pack(values, b, fill=0)
            if x.shape != y.shape or not np.array_equal(x, y):
                return True
    except ValueError:
        return False
    return False


def gather_dims(
    operand: tuple[int, ...], indices: tuple[int, ...], attrs: dict[str, Any]
) -> tuple[int, ...] | None:
    """The result dimensions of a gather (XLA's shape inference), or ``None`` if it is invalid."""
    offset, collapsed, start_map = (
        attrs["offset_dims"],
        attrs["collapsed_slice_dims"],
        attrs["start_index_map"],
    )
    ivd, sizes = attrs["index_vector_dim"], attrs["slice_sizes"]
    rank = len(operand)
    if not 0 <= ivd <= len(indices) or len(sizes) != rank:
        return None
    vector = indices[ivd] if ivd < len(indices) else 1
    if (
        len(start_map) != vector
        or len(set(start_map)) != len(start_map)
        or any(not 0 <= d < rank for d in start_map)
    ):
        return None
    if list(collapsed) != sorted(set(collapsed)) or any(not 0 <= d < rank or sizes[d] > 1 for d in collapsed):
        return None
    if any(not 0 <= s <= n for s, n in zip(sizes, operand, strict=True)):
        return None
    window = [sizes[d] for d in range(rank) if d not in collapsed]
    batch = [n for k, n in enumerate(indices) if k != ivd]
    out_rank = len(batch) + len(window)
    if (
        list(offset) != sorted(set(offset))
        or len(offset) != len(window)
        or any(not 0 <= d < out_rank for d in offset)
    ):
        return None
    out, b, w = [], iter(batch), iter(window)
    for d in range(out_rank):
        out.append(next(w) if d in offset else next(b))
    return tuple(out)


def _dims(shape: Any) -> tuple[int, ...] | None:
    if isinstance(shape, ArrayShape) and all(isinstance(d, int) for d in shape.dimensions):
        return tuple(shape.dimensions)
    return None


# ------------------------------------------------------------------ the generator
def mutants(text: str, seed: int, *, per_site: int = 2) -> list[Mutant]:
    """Every kind of one-bug mutant of ``text`` (a later module), at live instructions.

    ``seed`` picks among equivalent choices (derandomized); ``per_site`` bounds the
    mutants of one instruction. Each mutant's text differs from ``text``; whether its
    meaning does is for :func:`meaning_changed` to say."""
    module = parse_module(text)
    role = roles(module)
    live = live_names(module)
    shapes = {(c.name, i.name): i.shape for c in module.computations for i in c.instructions}
    lines = text.split("\n")
    rng = random.Random(seed)
    found: list[Mutant] = []

    def replace_line(n: int, new: str | list[str]) -> str:
        new_lines = [new] if isinstance(new, str) else new
        return "\n".join([*lines[:n], *new_lines, *lines[n + 1 :]])

    for n, comp, line in _lines_by_computation(text):
        m = _LINE.match(line)
        assert m is not None
        head, name, shape, opcode, rest = m.groups()
        if (comp, name) not in live:
            continue
        where = role.get(comp, "called")
        operands = re.findall(r"%([\w.\-]+)", rest.split(")", 1)[0])
        site: list[Mutant] = []

        def add(
            kind: str,
            description: str,
            new: str | list[str],
            site: list[Mutant] = site,
            comp: str = comp,
            n: int = n,
        ) -> None:
            site.append(Mutant(kind, f"{description} ({comp})", replace_line(n, new)))

        def op_shape(k: int, comp: str = comp, operands: list[str] = operands) -> Any:
            return shapes.get((comp, operands[k])) if k < len(operands) else None

        in_loop = where == "loop"
        # --- the movement mutants (the original kinds)
        if opcode == "bitcast":
            for kind, new_shape in (
                ("bitcast layout", _swap_layout(shape, rng)),
                ("bitcast tiling", _retile(shape)),
            ):
                if new_shape is not None and _placement_differs(shape, new_shape):
                    add(
                        kind,
                        f"bitcast {name} -> {new_shape}",
                        head + new_shape + line[len(head) + len(shape) :],
                    )
        elif opcode == "transpose":
            dm = re.search(r"dimensions=\{([\d,]+)\}", rest)
            source = _dims(op_shape(0))
            if dm and source:
                perm = [int(d) for d in dm[1].split(",")]
                pairs = [
                    (i, j)
                    for i in range(len(perm))
                    for j in range(i + 1, len(perm))
                    if source[perm[i]] == source[perm[j]] >= 2
                ]
                if pairs:
                    i, j = rng.choice(pairs)
                    perm[i], perm[j] = perm[j], perm[i]
                    new = line.replace(dm[0], "dimensions={" + ",".join(map(str, perm)) + "}")
                    add("transpose", f"transpose {name} permutation -> {perm}", new)
        elif opcode == "slice":
            sm = re.search(r"slice=\{([^}]*)\}", rest)
            source = _dims(op_shape(0))
            if sm and source:
                parts = re.findall(r"\[(\d+):(\d+)(?::(\d+))?\]", sm[1])
                for k, (lo, hi, step) in enumerate(parts):
                    if step and step != "1":
                        continue
                    lo_i, hi_i = int(lo), int(hi)
                    moved = (
                        (lo_i + 1, hi_i + 1)
                        if hi_i < source[k]
                        else (lo_i - 1, hi_i - 1)
                        if lo_i > 0
                        else None
                    )
                    if moved is None:
                        continue
                    new_parts = [f"[{a}:{b}{':' + s if s else ''}]" for a, b, s in parts]
                    new_parts[k] = f"[{moved[0]}:{moved[1]}]"
                    add(
                        "slice",
                        f"slice {name} dim {k} window -> {moved}",
                        line.replace(sm[0], "slice={" + ", ".join(new_parts) + "}"),
                    )
                    break
        elif opcode == "copy" and "S(" in shape:
            add(
                "copy memory space",
                f"copy {name} drops its memory space",
                line.replace(shape, re.sub(r"S\(\d+\)", "", shape), 1),
            )
        elif opcode == "copy" and op_shape(0) is not None and _placement_differs(str(op_shape(0)), shape):
            add(
                "copy dropped",
                f"copy {name} dropped (its operand's bytes read in place)",
                line.replace(" copy(", " bitcast(", 1),
            )

        # --- compute ops
        if opcode in _OTHER_OP and where not in ("comparator", "reducer"):
            other = _OTHER_OP[opcode]
            bad_type = re.match(r"(pred|s\d+|u\d+)\[", shape) and other in ("tanh", "exponential", "divide")
            bad_type = bad_type or (
                re.match(r"(pred|f|bf)", shape) and other in ("and", "or") and not shape.startswith("pred")
            )
            if not bad_type:
                kind = "loop body" if in_loop else "fusion op" if where == "fused" else "operand swap"
                if kind != "operand swap":
                    add(kind, f"{opcode} {name} -> {other}", line.replace(f" {opcode}(", f" {other}(", 1))
        if (
            opcode in _SWAPPABLE
            and len(operands) == 2
            and operands[0] != operands[1]
            and where != "comparator"
        ):
            a, b = op_shape(0), op_shape(1)
            if a is not None and b is not None and str(a).split("{")[0] == str(b).split("{")[0]:
                swapped = re.sub(
                    rf"\(%{re.escape(operands[0])}, %{re.escape(operands[1])}\)",
                    f"(%{operands[1]}, %{operands[0]})",
                    line,
                    count=1,
                )
                add("loop body" if in_loop else "operand swap", f"{opcode} {name} operands swapped", swapped)
        if opcode == "compare" and where != "comparator":
            dm = re.search(r"direction=(\w+)", rest)
            if dm and dm[1] in _OFF_BY_ONE and (in_loop or where == "fused" or where == "entry"):
                new = line.replace(dm[0], f"direction={_OFF_BY_ONE[dm[1]]}")
                add(
                    "loop body" if in_loop else "operand swap",
                    f"compare {name} {dm[1]} -> {_OFF_BY_ONE[dm[1]]}",
                    new,
                )
        if opcode == "constant" and re.match(r"(s32|s64|u32|f32|bf16|f16)\[\]", shape):
            cm = re.match(r"([-\d.e+]+|true|false)\)", rest)
            if cm and where not in ("comparator", "reducer"):
                value = cm[1]
                new_value = (
                    str(int(value) + 1) if re.fullmatch(r"-?\d+", value) else str(float(value) * 2 + 1)
                )
                kind = "loop body" if in_loop else "constant"
                add(
                    kind,
                    f"constant {name} {value} -> {new_value}",
                    line.replace(f"constant({value})", f"constant({new_value})", 1),
                )
        if (
            opcode == "tuple"
            and line.lstrip().startswith("ROOT")
            and in_loop
            and comp in _while_bodies(module)
        ):
            types = [str(op_shape(k)) for k in range(len(operands))]
            pairs = [
                (i, j) for i in range(len(types)) for j in range(i + 1, len(types)) if types[i] == types[j]
            ]
            for i, j in rng.sample(pairs, min(2, len(pairs))):
                swapped = list(operands)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                new = line.replace(
                    "(" + ", ".join(f"%{o}" for o in operands) + ")",
                    "(" + ", ".join(f"%{o}" for o in swapped) + ")",
                    1,
                )
                add("loop body", f"while state elements {i} and {j} swapped in {name}", new)
        if opcode in ("dynamic-update-slice", "dynamic-slice"):
            first = 2 if opcode == "dynamic-update-slice" else 1
            source, piece = (
                _dims(op_shape(0)),
                _dims(
                    shapes.get((comp, operands[1])) if opcode == "dynamic-update-slice" else _dims_of(shape)
                ),
            )
            for k, index in enumerate(operands[first:]):
                if source is None or piece is None or k >= len(source) or source[k] <= piece[k]:
                    continue
                idx_shape = str(op_shape(first + k))
                indent = line[: len(line) - len(line.lstrip())]
                one = f"{indent}%mutant.one = {idx_shape} constant(1)"
                bumped = f"{indent}%mutant.index = {idx_shape} add(%{index}, %mutant.one)"
                new = (
                    re.sub(rf"%{re.escape(index)}\b", "%mutant.index", line, count=1)
                    if operands.count(index) == 1
                    else None
                )
                if new is not None:
                    add(
                        "loop body" if in_loop else "operand swap",
                        f"{opcode} {name} index {k} off by one",
                        [one, bumped, new],
                    )
                break
        if opcode == "convert" and where not in ("comparator", "reducer"):
            src = op_shape(0)
            via = _narrower(src)
            if via is not None:
                indent = line[: len(line) - len(line.lstrip())]
                mid = f"{indent}%mutant.via = {_shape_text_with(str(src), via)} convert(%{operands[0]})"
                new = line.replace(f"convert(%{operands[0]})", "convert(%mutant.via)", 1)
                add("convert type", f"convert {name} through {via}", [mid, new])
        if opcode == "pad":
            pm = re.search(r"padding=([\d_x\-]+)", rest)
            if pm:
                dims_cfg = pm[1].split("x")
                for k, cfg in enumerate(dims_cfg):
                    parts = cfg.split("_")
                    lo, hi = int(parts[0]), int(parts[1])
                    if lo == 0 and hi == 0:
                        continue
                    new_cfg = list(dims_cfg)
                    new_cfg[k] = "_".join([str(lo + 1), str(hi - 1), *parts[2:]])
                    add(
                        "pad config",
                        f"pad {name} dim {k} edges {lo},{hi} -> {lo + 1},{hi - 1}",
                        line.replace(pm[0], "padding=" + "x".join(new_cfg), 1),
                    )
                    break
        if opcode == "reduce" and len(operands) == 2:
            source, out = _dims(op_shape(0)), _dims_of(shape)
            dm = re.search(r"dimensions=\{([\d,]*)\}", rest)
            if source and out is not None and dm:
                axes = ints(dm[0])
                for other in itertools.combinations(range(len(source)), len(axes)):
                    kept = tuple(source[d] for d in range(len(source)) if d not in other)
                    if set(other) != set(axes) and kept == out:
                        add(
                            "reduce dims",
                            f"reduce {name} dims {list(axes)} -> {list(other)}",
                            line.replace(dm[0], "dimensions={" + ",".join(map(str, other)) + "}", 1),
                        )
                        break
        if opcode == "dot":
            site += [
                Mutant("dot dims", f"{d} ({comp})", replace_line(n, new))
                for d, new in _dot_mutants(line, name, op_shape(0), op_shape(1), _dims_of(shape))
            ]
        if opcode == "convolution":
            site += [
                Mutant("dot dims", f"{d} ({comp})", replace_line(n, new))
                for d, new in _conv_mutants(line, name, op_shape(0), op_shape(1))
            ]
        if opcode == "gather":
            site += [
                Mutant("gather dims", f"{d} ({comp})", replace_line(n, new))
                for d, new in _gather_mutants(line, name, op_shape(0), op_shape(1), _dims_of(shape), rng)
            ]
        if where == "comparator":
            if opcode == "compare":
                dm = re.search(r"direction=(\w+)", rest)
                if dm and dm[1] in _FLIP:
                    add(
                        "comparator",
                        f"comparator compare {name} {dm[1]} -> {_FLIP[dm[1]]}",
                        line.replace(dm[0], f"direction={_FLIP[dm[1]]}"),
                    )
                if len(operands) == 2 and operands[0] != operands[1]:
                    swapped = line.replace(
                        f"(%{operands[0]}, %{operands[1]})", f"(%{operands[1]}, %{operands[0]})", 1
                    )
                    add("comparator", f"comparator compare {name} operands swapped", swapped)
        if opcode == "parameter" and where == "entry" and "T(" in shape:
            site += [
                Mutant("provisional tiling", d, t)
                for d, t in _tiling_mutants(text, lines, n, line, name, shape)
            ]
        if (
            line.lstrip().startswith("ROOT")
            and where == "entry"
            and "T(" in shape
            and re.match(r"(s8|u8|s4|u4|f8\w*|pred)\[", shape)
        ):
            for other in _other_tilings(shape):
                new = line.replace(shape, other, 1)
                add("provisional tiling", f"root {name} tiling {shape} -> {other}", new)
                break
        for kind in dict.fromkeys(m.kind for m in site):
            of_kind = [m for m in site if m.kind == kind]
            cap = per_site * 3 if kind in AIMED_KINDS else per_site
            found += of_kind if len(of_kind) <= cap else rng.sample(of_kind, cap)
    return [m for m in found if m.text != text and _valid(m.text)]


def _dims_of(shape_text: str) -> tuple[int, ...] | None:
    try:
        return _dims(parse_shape(shape_text))
    except ValueError:
        return None


def _while_bodies(module: HloModule) -> set[str]:
    return {
        ins.attributes["body"].strip().lstrip("%")
        for _, ins in module.instructions()
        if ins.opcode == "while" and "body" in ins.attributes
    }


def _narrower(src: Any) -> str | None:
    if not isinstance(src, ArrayShape):
        return None
    t = src.element_type.text
    return {
        "f32": "bf16",
        "f64": "f32",
        "bf16": "f8e4m3fn",
        "f16": "bf16",
        "s32": "s8",
        "s64": "s16",
        "u32": "u8",
    }.get(t)


def _swap_layout(shape: str, rng: random.Random) -> str | None:
    m = re.fullmatch(r"(\w+)\[([\d,]*)\]\{([\d,]+)(.*)\}", shape)
    if m is None:
        return None
    dims = [int(d) for d in m[2].split(",") if d]
    order = [int(d) for d in m[3].split(",")]
    big = [k for k, d in enumerate(order) if dims[d] >= 2]
    if len(big) < 2:
        return None
    i, j = rng.sample(big, 2)
    order[i], order[j] = order[j], order[i]
    return f"{m[1]}[{m[2]}]{{{','.join(map(str, order))}{m[4]}}}"


def _retile(shape: str) -> str | None:
    if "T(8,128)" in shape:
        return shape.replace("T(8,128)", "T(4,128)", 1)
    if "T(4,128)" in shape:
        return shape.replace("T(4,128)", "T(8,128)", 1)
    return None


def _other_tilings(shape: str) -> list[str]:
    """The same narrow array with another first tile (8, 16 or 32 rows) that places elements differently."""
    m = re.search(r"T\((\d+),(\d+)\)", shape)
    if m is None:
        return []
    out = []
    for rows in (8, 16, 32, 4):
        if str(rows) == m[1]:
            continue
        other = shape.replace(m[0], f"T({rows},{m[2]})", 1)
        try:
            if _placement_differs(shape, other):
                out.append(other)
        except (ValueError, InvalidHlo):
            continue
    return out


def _tiling_mutants(
    text: str, lines: list[str], n: int, line: str, name: str, shape: str
) -> list[tuple[str, str]]:
    """A narrow entry parameter read in another tiling than the entry computation layout's: its own
    layout finalized differently, or a bitcast that reads its bytes through another tiling."""
    if not re.match(r"(s8|u8|s4|u4|f8\w*|pred)\[", shape):
        return []
    out = []
    others = _other_tilings(shape)
    if others:
        other = others[0]
        head = line[: line.index(shape)]
        new = "\n".join([*lines[:n], head + other + line[line.index(shape) + len(shape) :], *lines[n + 1 :]])
        out.append(
            (f"parameter {name} finalized to {other}, not the entry computation layout's {shape}", new)
        )
    for other in others[1:2] or others[:1]:
        indent = line[: len(line) - len(line.lstrip())]
        reader = f"{indent}%mutant.read = {other} bitcast(%{name})"
        body = "\n".join(lines[n + 1 :])
        rerouted = re.sub(rf"(?<=[(, ])%{re.escape(name)}(?=[,)])", "%mutant.read", body)
        if rerouted != body:
            new = "\n".join([*lines[: n + 1], reader, rerouted])
            out.append((f"parameter {name} read through a bitcast to {other}", new))
    return out


def _dot_mutants(
    line: str, name: str, lhs: Any, rhs: Any, out: tuple[int, ...] | None
) -> list[tuple[str, str]]:
    ld, rd = _dims(lhs), _dims(rhs)
    if ld is None or rd is None or out is None:
        return []
    attrs = {k: ints(v) for k, v in re.findall(r"(l?r?hs_\w+_dims)=(\{[\d,]*\})", line)}
    lb, rb = attrs.get("lhs_batch_dims", ()), attrs.get("rhs_batch_dims", ())
    lc, rc = attrs.get("lhs_contracting_dims", ()), attrs.get("rhs_contracting_dims", ())
    found = []
    for side, dims, batch, contract in (("lhs", ld, lb, lc), ("rhs", rd, rb, rc)):
        free = [d for d in range(len(dims)) if d not in batch + contract]
        for k, c in enumerate(contract):
            for f in free:
                if dims[f] == dims[c]:  # contract another dimension of the same size: the same result shape
                    new_contract = list(contract)
                    new_contract[k] = f
                    key = f"{side}_contracting_dims"
                    new = line.replace(
                        f"{key}={{{','.join(map(str, contract))}}}",
                        f"{key}={{{','.join(map(str, new_contract))}}}",
                        1,
                    )
                    found.append((f"dot {name} {key} {list(contract)} -> {new_contract}", new))
                    break
    if len(lc) >= 2:
        swapped = [lc[1], lc[0], *lc[2:]]
        key = "lhs_contracting_dims"
        if ld[lc[0]] == ld[lc[1]]:
            new = line.replace(
                f"{key}={{{','.join(map(str, lc))}}}", f"{key}={{{','.join(map(str, swapped))}}}", 1
            )
            found.append((f"dot {name} contracting pairs swapped", new))
    return found


def _conv_mutants(line: str, name: str, lhs: Any, rhs: Any) -> list[tuple[str, str]]:
    m = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", line)
    rd = _dims(rhs)
    if m is None or rd is None:
        return []
    kernel = m[2]
    i, o = kernel.index("i"), kernel.index("o")
    found = []
    if rd[i] == rd[o]:  # the kernel read transposed: input and output features swapped
        swapped = kernel.replace("i", "#").replace("o", "i").replace("#", "o")
        found.append(
            (
                f"convolution {name} kernel labels {kernel} -> {swapped}",
                line.replace(m[0], f"dim_labels={m[1]}_{swapped}->{m[3]}", 1),
            )
        )
    return found


def _gather_mutants(
    line: str, name: str, operand: Any, indices: Any, out: tuple[int, ...] | None, rng: random.Random
) -> list[tuple[str, str]]:
    od, idd = _dims(operand), _dims(indices)
    if od is None or idd is None or out is None:
        return []
    keys = ("offset_dims", "collapsed_slice_dims", "start_index_map", "slice_sizes")
    attrs: dict[str, Any] = {}
    for k in keys:
        m = re.search(rf"\b{k}=(\{{[\d,]*\}})", line)
        if m is None:
            return []
        attrs[k] = ints(m[1])
    ivd = re.search(r"index_vector_dim=(\d+)", line)
    if ivd is None:
        return []
    attrs["index_vector_dim"] = int(ivd[1])
    if gather_dims(od, idd, attrs) != out:
        return []
    rank = len(od)
    variants: list[tuple[str, dict[str, Any]]] = []
    for start_map in itertools.permutations(range(rank), len(attrs["start_index_map"])):
        if start_map != attrs["start_index_map"]:
            variants.append(
                (f"start_index_map -> {list(start_map)}", {**attrs, "start_index_map": start_map})
            )
    for collapsed in itertools.chain.from_iterable(
        itertools.combinations(range(rank), k) for k in range(rank + 1)
    ):
        for sizes in itertools.product(
            *({1, s, n, max(1, s - 1)} for s, n in zip(attrs["slice_sizes"], od, strict=True))
        ):
            if collapsed != attrs["collapsed_slice_dims"] or sizes != attrs["slice_sizes"]:
                variants.append(
                    (f"collapsed_slice_dims -> {list(collapsed)}, slice_sizes -> {list(sizes)}",
                     {**attrs, "collapsed_slice_dims": collapsed, "slice_sizes": sizes})
                )  # fmt: skip
    for ivd_new in range(len(idd) + 1):
        if ivd_new != attrs["index_vector_dim"]:
            variants.append((f"index_vector_dim -> {ivd_new}", {**attrs, "index_vector_dim": ivd_new}))
    out_rank = len(out)
    for offset in itertools.combinations(range(out_rank), len(attrs["offset_dims"])):
        if offset != attrs["offset_dims"]:
            variants.append((f"offset_dims -> {list(offset)}", {**attrs, "offset_dims": offset}))
    valid = [(d, v) for d, v in variants if gather_dims(od, idd, v) == out]
    rng.shuffle(valid)
    found = []
    for description, v in valid[:6]:
        new = line
        for k in keys:
            new = re.sub(rf"\b{k}=\{{[\d,]*\}}", f"{k}={{{','.join(map(str, v[k]))}}}", new, count=1)
        new = re.sub(r"index_vector_dim=\d+", f"index_vector_dim={v['index_vector_dim']}", new, count=1)
        found.append((f"gather {name} {description}", new))
    return found


def _valid(text: str) -> bool:
    """Parses, and XLA's verifier would accept the bitcasts (the same shape size)."""
    try:
        module = parse_module(text)
    except ValueError:
        return False
    return invalid_bitcast(module) is None


# ------------------------------------------------------------------ the oracle
def _random_parameters(module: HloModule, rng: np.random.Generator) -> list[np.ndarray]:
    params = sorted(
        (i.parameter_number, i.shape) for i in module.entry.instructions if i.opcode == "parameter"
    )
    return _random_parameters_of([shape for _, shape in params], rng)


def _random_parameters_of(shapes: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for shape in shapes:
        if not isinstance(shape, ArrayShape):
            raise NotRun("a tuple parameter")
        if shape.element_type.text.startswith(("s", "u")) and shape.element_type.bit_width >= 8:
            top = max([8, *(int(d) for d in shape.dimensions)])
            out.append(rng.integers(0, top, tuple(shape.dimensions)).astype(numpy_dtype(shape.element_type)))
        elif shape.element_type.text == "pred" or shape.element_type.text.startswith(("s", "u")):
            out.append(random_array(shape, rng))  # uniform codes
        else:  # finite values only: one NaN in a reduction would hide every difference downstream
            values = rng.normal(0.0, 3.0, tuple(int(d) for d in shape.dimensions))
            out.append(values.astype(numpy_dtype(shape.element_type)))
    return out


def _tainted(a: HloModule, b: HloModule) -> set[str]:
    """Entry instructions of ``b`` whose value may differ from ``a``'s: the edited ones and all
    that depend on them (through operands or called computations)."""
    texts_a = {c.name: c.to_text() for c in a.computations}
    changed_comps = {c.name for c in b.computations if texts_a.get(c.name) != c.to_text()}

    def calls_changed(ins: Any, seen: set[str]) -> bool:
        for c in ins.called_computations:
            if c in changed_comps:
                return True
            if c not in seen:
                seen.add(c)
                if any(calls_changed(i, seen) for i in b.computation(c).instructions):
                    return True
        return False

    a_entry = {i.name: i.to_text() for i in a.entry.instructions}
    tainted: set[str] = set()
    for ins in b.entry.instructions:  # instructions are in definition order in the dumps
        if (
            a_entry.get(ins.name) != ins.to_text()
            or any(o.name in tainted for o in ins.operands)
            or calls_changed(ins, set())
        ):
            tainted.add(ins.name)
    return tainted


def shared_opaque(a: HloModule, b: HloModule) -> dict[str, Any]:
    """A random value (fixed by the name) for each entry op the reference interpreter does not
    run (a ``custom-call`` other than ``TopK``, an ``rng``) that is the same in both modules and
    upstream of every edit: both runs read the same value there."""
    tainted = _tainted(a, b)

    def value(shape: Any, rng: np.random.Generator) -> Any:
        if isinstance(shape, TupleShape):
            return tuple(value(s, rng) for s in shape.elements)
        if not isinstance(shape, ArrayShape):
            raise NotRun(f"an opaque value of shape {shape}")
        (data,) = _random_parameters_of([shape], rng)
        return ArrayValue(shape, data, np.ones(data.shape, bool))

    values: dict[str, Any] = {}
    for ins in b.entry.instructions:
        top_k = ins.attributes.get("custom_call_target", "").strip('"') == "TopK"
        if (
            ins.name not in tainted
            and ins.opcode in ("custom-call", "rng", "rng-bit-generator")
            and not top_k
        ):
            values[ins.name] = value(ins.shape, np.random.default_rng(zlib.crc32(ins.name.encode())))
    return values


def _differs(xs: list[Any], ys: list[Any], mode: str) -> str:
    if len(xs) != len(ys):
        return f"the roots have {len(xs)} and {len(ys)} arrays"
    for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if x.data.shape != y.data.shape or x.data.dtype != y.data.dtype:
            return f"root {k}: {x.shape} vs {y.shape}"
        if mode == "physical" and str(x.shape.effective_layout) != str(y.shape.effective_layout):
            if _placement_differs(str(x.shape), str(y.shape)):
                return f"root {k} is laid out as {y.shape}, not {x.shape}"
        bx = (
            x.data.reshape(*x.data.shape, 1).view(np.uint8)
            if x.data.ndim
            else np.atleast_1d(x.data).view(np.uint8)
        )
        by = (
            y.data.reshape(*y.data.shape, 1).view(np.uint8)
            if y.data.ndim
            else np.atleast_1d(y.data).view(np.uint8)
        )
        same_bits = np.all(bx == by, axis=-1)
        both_nan = np.zeros(x.data.shape, bool)
        if x.data.dtype.kind == "f" or "float" in str(x.data.dtype):
            with np.errstate(all="ignore"):
                fx, fy = x.data.astype(np.float64), y.data.astype(np.float64)
            both_nan = np.isnan(fx) & np.isnan(fy)
        bad = x.defined & ~(y.defined & (same_bits.reshape(x.data.shape) | both_nan))
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
            return f"root {k} element {index}: {x.data[index]!r} vs {y.data[index]!r}"
    return ""


#: What the package's executor runs (the rest: the reference interpreter).
EXECUTOR_OPCODES = frozenset(
    {"parameter", "constant", "iota", "tuple", "get-tuple-element", "fusion", "call", "bitcast"}
    | set(MOVEMENT_SEMANTICS)
    | set(EXECUTED_ELEMENTWISE_OPCODES)
)
_RUNS: dict[tuple[Any, ...], tuple[list[Any], bool]] = {}


def _reference_run(
    text: str, module: HloModule, params: list[np.ndarray], opaque: dict[str, Any], key: tuple
) -> tuple[list[Any], bool]:
    """The reference run of the unmutated module, kept for the other mutants of the same pair."""
    full = (hash(text), *key, frozenset(opaque))
    if full not in _RUNS:
        if len(_RUNS) > 64:
            _RUNS.clear()
        elided: dict[tuple[str, str], Any] = {}
        physical = key[-1] == "physical"
        _RUNS[full] = (run_reference(module, params, dict(opaque), elided, physical=physical), bool(elided))
    return _RUNS[full]


def meaning_changed(later: str, mutant: str, mode: str, *, seed: int = 0, trials: int = 2) -> tuple[str, str]:
    """(``changed``|``same``|``undecided``, evidence): does ``mutant`` compute something else
    than ``later``, the module it was made from? ``changed`` only with a root element (or the
    root's layout) shown different by running both on the same random parameters: the
    package's executor (``compare``) where it runs every op, else the reference interpreter
    (one trial: a difference shows at once or the mutant is taken as equivalent)."""
    a, b = parse_module(later), parse_module(mutant)
    ops = {i.opcode for m in (a, b) for _, i in m.instructions()}
    why = f"the executor does not run {sorted(ops - EXECUTOR_OPCODES)}"
    if ops <= EXECUTOR_OPCODES:
        try:
            result = compare(a, b, mode=mode, trials=trials, seed=seed)
        except (ValueError, InvalidHlo) as err:
            why = str(err)
        else:
            why = result.reason
            if result.same is False:
                return "changed", f"executor: {result.detail}"
            if result.same is True:
                return "same", f"executor: {result.detail}"
    rng = np.random.default_rng(seed)
    try:
        params = _random_parameters(a, rng)
        opaque = shared_opaque(a, b)
        xs, elided = _reference_run(later, a, params, opaque, (seed, mode))
        ys = run_reference(b, params, dict(opaque), {}, physical=mode == "physical")
        detail = _differs(xs, ys, mode)
        if detail:
            via = " (unchanged upstream ops given shared random values)" if opaque else ""
            via += " (elided constants given random values)" if elided else ""
            return "changed", f"reference{via}: {detail}"
    except (NotRun, InvalidHlo, KeyError, IndexError, ValueError, TypeError) as err:
        return "undecided", f"executor: {why}; reference: {type(err).__name__}: {err}"
    return "same", "reference: same on a random trial"


def kinds_of(found: list[Mutant]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in found:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    return counts


__all__ = [
    "MOVEMENT_KINDS",
    "NEW_KINDS",
    "Mutant",
    "gather_dims",
    "kinds_of",
    "live_names",
    "meaning_changed",
    "mutants",
    "roles",
    "shared_opaque",
]
